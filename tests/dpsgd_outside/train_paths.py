"""Small DP-SGD trainings on opacus's other documented paths, written the way opacus's documentation and tutorials
write them: a two-layer network on synthetic data, plain torch and opacus (nothing of dpfed-audit inside).

- ``ghost``: ghost clipping, ``make_private(..., criterion=criterion, grad_sample_mode="ghost")`` returning the
  model, optimizer, criterion and loader; the loss from the returned criterion. Correct; prints its epsilon.
- ``ghost_half_noise``: the same with a planted bug: the noise generator ghost clipping draws from halved behind
  opacus's accountant (a "speed-up").
- ``functorch``: ``grad_sample_mode="functorch"``. Correct; prints its epsilon.
- ``more_epochs_than_asked``: ``make_private_with_epsilon(target_epsilon=3, epochs=2)``, then 4 epochs trained;
  never asks for its epsilon.
- ``as_asked``: the same trained for the 2 epochs asked; never asks for its epsilon. Correct.
- ``silent``: ``make_private`` with a noise multiplier, never asks for its epsilon (no claim anywhere). Correct.
- ``clip_raised``: a planted bug: the optimizer's clip raised 3 times only while opacus clips the per-sample
  gradients (the noise still scaled to the clip accounted).
"""

import torch
from opacus import PrivacyEngine
from opacus.optimizers import optimizer_fast_gradient_clipping
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

RECORDS, FEATURES, BATCH, LR, CLIP, NOISE, DELTA = 512, 16, 64, 0.5, 1.0, 1.0, 1e-5
TARGET_EPSILON, TARGET_EPOCHS = 3.0, 2


def _data():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(RECORDS, FEATURES, generator=generator)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 2))


def _loop(model, optimizer, criterion, loader, epochs):
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()


def ghost(epochs=2):
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    criterion = nn.CrossEntropyLoss()
    privacy_engine = PrivacyEngine()
    model, optimizer, criterion, train_loader = privacy_engine.make_private(
        module=model, optimizer=optimizer, data_loader=_data(), criterion=criterion, noise_multiplier=NOISE,
        max_grad_norm=CLIP, grad_sample_mode="ghost")
    _loop(model, optimizer, criterion, train_loader, epochs)
    print(f"ghost clipping, {epochs} epochs: epsilon {privacy_engine.get_epsilon(DELTA):.3f} at delta {DELTA}")


def ghost_half_noise():
    generate = optimizer_fast_gradient_clipping._generate_noise

    def halved(std, *args, **kwargs):
        return generate(std / 2, *args, **kwargs)

    optimizer_fast_gradient_clipping._generate_noise = lambda *a, **k: halved(k.pop("std"), *a, **k)
    try:
        ghost()
    finally:
        optimizer_fast_gradient_clipping._generate_noise = generate


def functorch(epochs=2):
    model = _model()
    privacy_engine = PrivacyEngine()
    model, optimizer, train_loader = privacy_engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR), data_loader=_data(),
        noise_multiplier=NOISE, max_grad_norm=CLIP, grad_sample_mode="functorch")
    _loop(model, optimizer, nn.CrossEntropyLoss(), train_loader, epochs)
    print(f"functorch, {epochs} epochs: epsilon {privacy_engine.get_epsilon(DELTA):.3f} at delta {DELTA}")


def _with_epsilon(epochs):
    model = _model()
    privacy_engine = PrivacyEngine()
    model, optimizer, train_loader = privacy_engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR), data_loader=_data(),
        target_epsilon=TARGET_EPSILON, target_delta=DELTA, epochs=TARGET_EPOCHS, max_grad_norm=CLIP)
    _loop(model, optimizer, nn.CrossEntropyLoss(), train_loader, epochs)


def more_epochs_than_asked():
    _with_epsilon(2 * TARGET_EPOCHS)


def as_asked():
    _with_epsilon(TARGET_EPOCHS)


def silent():
    model = _model()
    model, optimizer, train_loader = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR), data_loader=_data(),
        noise_multiplier=NOISE, max_grad_norm=CLIP)
    _loop(model, optimizer, nn.CrossEntropyLoss(), train_loader, TARGET_EPOCHS)


def clip_raised(factor=3.0):
    model = _model()
    privacy_engine = PrivacyEngine()
    model, optimizer, train_loader = privacy_engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR), data_loader=_data(),
        noise_multiplier=NOISE, max_grad_norm=CLIP / 4)
    clip_and_accumulate = optimizer.clip_and_accumulate

    def raised():
        optimizer.max_grad_norm = factor * CLIP / 4
        try:
            clip_and_accumulate()
        finally:
            optimizer.max_grad_norm = CLIP / 4

    optimizer.clip_and_accumulate = raised
    _loop(model, optimizer, nn.CrossEntropyLoss(), train_loader, TARGET_EPOCHS)
    print(f"clip raised while clipping: epsilon {privacy_engine.get_epsilon(DELTA):.3f} at delta {DELTA}")
