"""opacus: Training with Sample-Level Differential Privacy using Opacus Privacy Engine."""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from tqdm import tqdm

fds = None  # Cache FederatedDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def load_data(partition_id: int, num_partitions: int):
    # dpfed-audit fixture: offline synthetic stand-in for the FederatedDataset
    # ("uoft-cs/cifar10", IidPartitioner) partition. Same batch format as the
    # original: dicts {"img": float32 [B, 3, 32, 32] (ToTensor + Normalize((0.5,)*3, (0.5,)*3)
    # of uint8 pixels), "label": int64 [B] in 0..9}; 80% train / 20% test split;
    # batch_size=32. Seeded by partition_id (each partition distinct, deterministic).
    num_examples = 160  # per partition: 128 train, 32 test
    generator = torch.Generator().manual_seed(20_000 + int(partition_id))
    pixels = torch.randint(0, 256, (num_examples, 3, 32, 32), generator=generator)
    images = (pixels.to(torch.float32) / 255.0 - 0.5) / 0.5  # ToTensor + Normalize
    labels = torch.randint(0, 10, (num_examples,), generator=generator)  # int64
    examples = [{"img": images[i], "label": labels[i]} for i in range(num_examples)]
    # Divide data on each node: 80% train, 20% test
    num_train = int(num_examples * 0.8)
    train_loader = DataLoader(examples[:num_train], batch_size=32, shuffle=True)
    test_loader = DataLoader(examples[num_train:], batch_size=32)
    return train_loader, test_loader


def train(net, train_loader, privacy_engine, optimizer, target_delta, device, epochs=1):
    criterion = torch.nn.CrossEntropyLoss()
    net.to(device)
    net.train()
    for _ in range(epochs):
        for batch in tqdm(train_loader, "Training"):
            images = batch["img"]
            labels = batch["label"]
            optimizer.zero_grad()
            criterion(net(images.to(device)), labels.to(device)).backward()
            optimizer.step()

    epsilon = privacy_engine.get_epsilon(delta=target_delta)
    return epsilon


def test(net, test_loader, device):
    net.to(device)
    criterion = torch.nn.CrossEntropyLoss()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for batch in tqdm(test_loader, "Testing"):
            images = batch["img"].to(device)
            labels = batch["label"].to(device)
            outputs = net(images)
            loss += criterion(outputs, labels).item()
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    accuracy = correct / len(test_loader.dataset)
    return loss, accuracy
