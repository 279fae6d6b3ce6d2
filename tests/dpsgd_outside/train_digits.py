"""DP-SGD trainings written the way an opacus user writes them, as whole training functions (their own loop,
loader and optimizers), outside this repository's style: an MLP on scikit-learn's handwritten digits with plain
torch and opacus (nothing of dpfed-audit inside). Each function trains and prints the epsilon its engine reports.

``train`` is correct: ``make_private_with_epsilon`` for epsilon 3 over 2 epochs, and 2 epochs trained. The others
plant one bug each: ``train_half_noise`` (opacus's noise halved behind its accountant),
``train_half_noise_toggled`` (the optimizer's noise multiplier halved only while the noise is drawn),
``train_more_epochs`` (4 epochs trained against the 2 the epsilon was computed for), ``train_head_outside`` (the
output layer kept outside ``make_private`` and trained by a plain optimizer in the same loop), ``train_shuffled``
(``poisson_sampling=False``),
``train_duplicated`` (every record twice: one person, two records; correct per record, not per person).
``train_reapplied`` is correct too: a second optimizer applies the private (noisy) gradient once more after each
private step, which is post-processing.
"""

import torch
from opacus import PrivacyEngine
from opacus.optimizers import optimizer as opacus_optimizer
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH, CLIP, EPOCHS, TARGET_EPSILON, DELTA, LR = 64, 1.0, 2, 3.0, 1e-5, 0.5


def _data(copies: int = 1):
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32).repeat(copies, 1)
    return TensorDataset(x, torch.tensor(y, dtype=torch.long).repeat(copies))


def _train(epochs=EPOCHS, accounted_epochs=EPOCHS, poisson=True, copies=1, head_outside=False, reapply=False,
           plant=None):
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
    head = nn.Linear(32, 10)
    model = body if head_outside else nn.Sequential(body, head)
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR),
        data_loader=DataLoader(_data(copies), batch_size=BATCH, shuffle=True), target_epsilon=TARGET_EPSILON,
        target_delta=DELTA, epochs=accounted_epochs, max_grad_norm=CLIP, poisson_sampling=poisson)
    if plant is not None:
        plant(optimizer)
    head_optimizer = torch.optim.SGD(head.parameters(), lr=LR) if head_outside else None
    again = torch.optim.SGD(model.parameters(), lr=LR / 2) if reapply else None
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            out = head(model(x)) if head_outside else model(x)
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            if head_optimizer is not None:
                head_optimizer.step()
                head_optimizer.zero_grad()
            if again is not None:  # the private (noisy) gradient applied once more: post-processing
                again.step()
    print(f"trained {epochs} epochs: epsilon {engine.get_epsilon(DELTA):.3f} at delta {DELTA}")


def train():
    _train()


def train_half_noise():
    generate = opacus_optimizer._generate_noise
    opacus_optimizer._generate_noise = lambda std, reference, *a, **k: generate(std / 2, reference, *a, **k)
    try:
        _train()
    finally:
        opacus_optimizer._generate_noise = generate


def _halve_while_adding_noise(optimizer):
    """The noise multiplier halved only while opacus draws the noise, restored before its accountant reads it."""
    add_noise = optimizer.add_noise

    def halved():
        z = optimizer.noise_multiplier
        optimizer.noise_multiplier = z / 2
        try:
            add_noise()
        finally:
            optimizer.noise_multiplier = z

    optimizer.add_noise = halved


def train_half_noise_toggled():
    _train(plant=_halve_while_adding_noise)


def train_more_epochs():
    _train(epochs=4)


def train_head_outside():
    _train(head_outside=True)


def train_shuffled():
    _train(poisson=False)


def train_duplicated():
    _train(copies=2)


def train_reapplied():
    _train(reapply=True)
