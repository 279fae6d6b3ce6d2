"""fl_dp_sa: Flower Example using Differential Privacy and Secure Aggregation."""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

fds = None  # Cache FederatedDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size = x.size(0)
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(batch_size, -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def load_data(partition_id: int, num_partitions: int):
    """Load partition MNIST data.

    dpfed-audit fixture: offline synthetic stand-in for the FederatedDataset
    ("ylecun/mnist", IidPartitioner) partition. Same batch format as the
    original: dicts {"image": float32 [B, 1, 28, 28] (ToTensor + Normalize((0.5,), (0.5,))
    of uint8 pixels), "label": int64 [B] in 0..9}; 80% train / 20% test split;
    batch_size=32. Seeded by partition_id (each partition distinct, deterministic).
    """
    num_examples = 160  # per partition: 128 train, 32 test
    generator = torch.Generator().manual_seed(10_000 + int(partition_id))
    pixels = torch.randint(0, 256, (num_examples, 1, 28, 28), generator=generator)
    images = (pixels.to(torch.float32) / 255.0 - 0.5) / 0.5  # ToTensor + Normalize
    labels = torch.randint(0, 10, (num_examples,), generator=generator)  # int64
    examples = [{"image": images[i], "label": labels[i]} for i in range(num_examples)]
    # Divide data on each node: 80% train, 20% test
    num_train = int(num_examples * 0.8)
    trainloader = DataLoader(examples[:num_train], batch_size=32, shuffle=True)
    testloader = DataLoader(examples[num_train:], batch_size=32)
    return trainloader, testloader


def train(net, trainloader, valloader, epochs, device):
    """Train the model on the training set."""
    net.to(device)  # move model to GPU if available
    criterion = torch.nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.Adam(net.parameters())
    net.train()
    for _ in range(epochs):
        for batch in trainloader:
            images = batch["image"].to(device)
            labels = batch["label"].to(device)
            optimizer.zero_grad()
            loss = criterion(net(images), labels)
            loss.backward()
            optimizer.step()

    train_loss, train_acc = test(net, trainloader, device)
    val_loss, val_acc = test(net, valloader, device)

    results = {
        "train_loss": train_loss,
        "train_accuracy": train_acc,
        "val_loss": val_loss,
        "val_accuracy": val_acc,
    }
    return results


def test(net, testloader, device):
    """Validate the model on the test set."""
    net.to(device)
    criterion = torch.nn.CrossEntropyLoss()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for batch in testloader:
            images = batch["image"].to(device)
            labels = batch["label"].to(device)
            outputs = net(images.to(device))
            labels = labels.to(device)
            loss += criterion(outputs, labels).item()
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    accuracy = correct / len(testloader.dataset)
    return loss, accuracy


def get_weights(net):
    return [val.cpu().numpy() for _, val in net.state_dict().items()]


def set_weights(net, parameters):
    params_dict = zip(net.state_dict().keys(), parameters)
    state_dict = OrderedDict({k: torch.tensor(v) for k, v in params_dict})
    net.load_state_dict(state_dict, strict=True)
