"""Example opacus set-ups for ``dpaudit opacus-check``: logistic regression with DP-SGD on scikit-learn's
breast-cancer data (569 records, 30 features, standardised).

``make_setup`` is a correct set-up (opacus's Poisson ``DPDataLoader``). Each ``make_*`` below plants one
mistake that silently breaks the reported epsilon:

- ``make_weighted_sampler_setup``: a class-rebalancing ``WeightedRandomSampler`` that oversamples
  (``num_samples`` = 4 x the records) kept with ``poisson_sampling=False``: opacus takes the sample rate
  as 1 / len(data_loader) = batch / (4 N) (opacus #813), while a minority record joins a batch far more often;
- ``make_shuffled_setup``: ``shuffle=True`` batches kept with ``poisson_sampling=False``, accounted as Poisson;
- ``make_realised_normalisation_setup``: the noisy gradient divided by the realised batch size instead of
  the expected one (opacus #571), on a small subset (40 records) where the batch size says much;
- ``make_halved_noise_setup``: the noise scaled down by 2 behind opacus's back (its accountant still
  reads the configured multiplier);
- ``make_step_mismatch_setup``: the noise calibrated by ``make_private_with_epsilon`` for 3 epochs, the
  loop runs 6.
"""

import warnings

import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_breast_cancer
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

BATCH = 32
EPOCHS = 3
DELTA = 1e-5
NOISE = 1.0
CLIP = 1.0


def _dataset(records=None):
    x, y = load_breast_cancer(return_X_y=True)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    if records is not None:
        x, y = x[:records], y[:records]
    return TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.long))


def _private(loader, **kwargs):
    torch.manual_seed(0)
    model = torch.nn.Linear(30, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus's secure-RNG notice
        engine = PrivacyEngine(accountant="rdp")
    epsilon = kwargs.pop("target_epsilon", None)
    if epsilon is None:
        model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                       noise_multiplier=NOISE, max_grad_norm=CLIP, **kwargs)
    else:
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=epsilon, target_delta=DELTA,
            max_grad_norm=CLIP, **kwargs)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": EPOCHS, "delta": DELTA}


def make_setup():
    """Correct: Poisson sampling at batch / N through opacus's DPDataLoader."""
    return _private(DataLoader(_dataset(), batch_size=BATCH))


def make_weighted_sampler_setup():
    """Rebalancing WeightedRandomSampler (num_samples = 4N) kept: rate 1/len(loader) = B/(4N) is told."""
    data = _dataset()
    labels = data.tensors[1]
    counts = torch.bincount(labels).double()
    weights = (1.0 / counts)[labels]
    sampler = WeightedRandomSampler(weights, num_samples=4 * len(data), replacement=True)
    setup = _private(DataLoader(data, batch_size=BATCH, sampler=sampler), target_epsilon=4.0,
                     epochs=EPOCHS, poisson_sampling=False)
    setup["accounted_epochs"] = EPOCHS
    return setup


def make_shuffled_setup():
    """Shuffled fixed-size batches (poisson_sampling=False), accounted by opacus as Poisson."""
    return _private(DataLoader(_dataset(), batch_size=BATCH, shuffle=True), poisson_sampling=False)


def make_realised_normalisation_setup():
    """Poisson batches, but the noisy sum is divided by the realised batch size (opacus #571)."""
    setup = _private(DataLoader(_dataset(records=40), batch_size=4))
    optimizer = setup["optimizer"]

    def scale_by_realised_batch():
        for p in optimizer.params:
            p.grad /= max(len(p.grad_sample), 1)

    optimizer.scale_grad = scale_by_realised_batch
    setup["epochs"] = 10
    return setup


def make_halved_noise_setup():
    """Poisson batches; the noise is generated at half the multiplier the accountant reads."""
    setup = _private(DataLoader(_dataset(), batch_size=BATCH))
    optimizer = setup["optimizer"]
    add_noise = optimizer.add_noise

    def add_half_noise():
        told = optimizer.noise_multiplier
        optimizer.noise_multiplier = told / 2
        try:
            add_noise()
        finally:
            optimizer.noise_multiplier = told

    optimizer.add_noise = add_half_noise
    return setup


def make_step_mismatch_setup():
    """make_private_with_epsilon(epochs=3) calibrates for 3 epochs; the loop runs 6."""
    setup = _private(DataLoader(_dataset(), batch_size=BATCH), target_epsilon=2.0, epochs=EPOCHS)
    setup["accounted_epochs"] = EPOCHS
    setup["epochs"] = 2 * EPOCHS
    return setup
