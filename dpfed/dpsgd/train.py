"""Training through opacus's ``PrivacyEngine`` (Poisson sampling, per-example clipping, Gaussian noise).

``train_gradient_canaries`` records the canary coordinates after every optimizer step (the adversary who
sees all iterates); ``train_input_canary`` returns the final model only. Both use ``make_private`` with
``loss_reduction="sum"`` and plain SGD at ``learning_rate / expected batch size``, so a step is
``w -= lr / E[B] * (sum of clipped gradients + N(0, (z C)^2))``, the textbook DP-SGD update.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from accounting.errors import ConfigurationError
from dpfed.dpsgd.canaries import CanaryCoordinates, canary_inputs, canary_loss
from dpfed.dpsgd.setup import DpsgdSetup


@dataclass
class OpacusRecord:
    """What opacus reported for one run: its accountant's history and the steps actually taken."""

    noise_multiplier: float
    sample_rate: float
    steps: int


@dataclass
class GradientCanaryRun:
    """Canary coordinates of one run: ``trajectory`` (steps + 1, canaries) after each step (row 0: the
    initial zeros); ``step_scale`` = lr / E[B] * z * C, the standard deviation of one step's noise on a
    coordinate, so ``diff(trajectory) / step_scale`` is ``b_t / z + N(0, 1)`` for a canary sampled
    (``b_t = 1``) or not at step t."""

    trajectory: np.ndarray
    included: np.ndarray
    step_scale: float
    opacus: OpacusRecord

    def normalised_updates(self) -> np.ndarray:
        """Per-step updates of each canary coordinate in units of the noise (steps, canaries)."""
        return np.diff(self.trajectory, axis=0) / self.step_scale


class BatchedTensorDataset(torch.utils.data.TensorDataset):
    """A ``TensorDataset`` that fetches a whole batch at once (one indexing per tensor rather than one
    per example); ``unbatched`` is its collate function."""

    def __getitems__(self, indices):
        index = torch.as_tensor(indices, dtype=torch.long)
        return tuple(tensor[index] for tensor in self.tensors)

    @staticmethod
    def unbatched(batch):
        return batch


def _private_training(setup: DpsgdSetup, model, dataset, seed: int, device: str = "cpu"):
    """opacus's model, optimizer and Poisson data loader for ``dataset`` at the setup's sample rate (the model
    and the dataset's tensors already on ``device``; opacus's noise drawn there)."""
    from opacus import PrivacyEngine

    size = len(dataset)
    batch = math.ceil(size / setup.batches_per_epoch)
    generator = torch.Generator().manual_seed(int(seed))
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, generator=generator,
                                         collate_fn=BatchedTensorDataset.unbatched)
    if len(loader) != setup.batches_per_epoch:
        raise ConfigurationError("sample_rate", f"{size} examples cannot be split into {setup.batches_per_epoch} "
                                 "batches of equal nominal size; choose a larger data set or rate")
    optimizer = torch.optim.SGD(model.parameters(), lr=setup.learning_rate / setup.expected_batch_size)
    noise = torch.Generator(device=torch.device(device)).manual_seed(int(seed) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # secure RNG off (seeded runs) and other advice
        engine = PrivacyEngine(accountant="prv")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=setup.noise_multiplier,
            max_grad_norm=setup.clip, poisson_sampling=True, loss_reduction="sum", noise_generator=noise,
        )
    return engine, model, optimizer, loader


def _batches(loader, epochs: int):
    """The loader's Poisson batches over ``epochs`` epochs (torch's advice on full backward hooks of a
    model whose inputs need no gradient, which opacus's hooks trigger, silenced)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook")
        for _ in range(epochs):
            yield from loader


def _record(engine, steps_taken: int) -> OpacusRecord:
    (noise, rate, steps), = engine.accountant.history
    if steps != steps_taken:
        raise RuntimeError(f"opacus accounted {steps} steps, {steps_taken} were taken")
    return OpacusRecord(float(noise), float(rate), int(steps))


@contextlib.contextmanager
def one_thread():
    """torch on one intra-op thread within the block (restored after): these trainings are many small
    operations, for which a second thread only adds synchronisation (and spins on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _seeded_model(factory, seed: int):
    with torch.random.fork_rng():
        torch.manual_seed(int(seed) + 2)
        return factory()


def train_gradient_canaries(setup: DpsgdSetup, canaries: int, included, seed: int,
                            device: str = "cpu") -> GradientCanaryRun:
    """Train once with ``canaries`` canary coordinates (see ``_train_gradient_canaries``), on one thread (the
    host's part when ``device`` is a CUDA device)."""
    with one_thread():
        return _train_gradient_canaries(setup, canaries, included, seed, device)


def _train_gradient_canaries(setup: DpsgdSetup, canaries: int, included, seed: int,
                             device: str = "cpu") -> GradientCanaryRun:
    """Train once with ``canaries`` canary coordinates; canary k's example is in the data set where
    ``included[k]`` (world 0 of a multi-run audit: none; world 1: all; one-run: a fair coin each)."""
    included = np.asarray(included, dtype=bool).ravel()
    if included.size != canaries or canaries < 1:
        raise ConfigurationError("canaries", "needs one inclusion flag per canary, at least one canary")
    inputs, labels, flags = canary_inputs(setup.features, setup.labels, canaries, torch.from_numpy(included))
    dataset = BatchedTensorDataset(inputs.to(device), labels.to(device), flags.to(device))
    model = CanaryCoordinates(_seeded_model(setup.model_factory, seed), setup.features.shape[1], canaries).to(device)
    engine, model, optimizer, loader = _private_training(setup, model, dataset, seed, device)
    coordinates = model._module.canary.weight
    trajectory = [coordinates.detach()[0].double().clone()]
    for batch_inputs, batch_labels, batch_flags in _batches(loader, setup.epochs):
        optimizer.zero_grad()
        canary_loss(setup.loss, model(batch_inputs), batch_labels, batch_flags).backward()
        optimizer.step()
        trajectory.append(coordinates.detach()[0].double().clone())
    record = _record(engine, len(trajectory) - 1)
    step_scale = setup.learning_rate / setup.expected_batch_size * setup.noise_multiplier * setup.clip
    return GradientCanaryRun(torch.stack(trajectory).cpu().numpy(), included, step_scale, record)


def train_input_canary(setup: DpsgdSetup, canary, canary_label, include: bool, seed: int,
                       init_seed: int | None = None):
    """Train once on the real data plus, if ``include``, the crafted example (``_train_input_canary``)."""
    with one_thread():
        return _train_input_canary(setup, canary, canary_label, include, seed, init_seed)


def _train_input_canary(setup: DpsgdSetup, canary, canary_label, include: bool, seed: int,
                        init_seed: int | None = None):
    """Train once on the real data, plus the crafted example ``(canary, canary_label)`` if ``include``;
    returns (final model, opacus record). ``init_seed`` fixes the model's initialisation (default: drawn
    from ``seed``)."""
    features, labels = setup.features, setup.labels
    if include:
        features = torch.cat([features, canary.reshape(1, -1).to(features.dtype)])
        labels = torch.cat([labels, torch.as_tensor([canary_label], dtype=labels.dtype)])
    dataset = BatchedTensorDataset(features, labels)
    model = _seeded_model(setup.model_factory, seed if init_seed is None else init_seed)
    engine, private, optimizer, loader = _private_training(setup, model, dataset, seed)
    steps = 0
    for batch_features, batch_labels in _batches(loader, setup.epochs):
        optimizer.zero_grad()
        setup.loss(private(batch_features), batch_labels).sum().backward()
        optimizer.step()
        steps += 1
    return model, _record(engine, steps)
