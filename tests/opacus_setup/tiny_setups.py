"""Tiny opacus set-ups for the tests (synthetic data, a 5-feature logistic regression): one correct, and one
per planted mistake (the shipped configs/opacus_breast_cancer.py has the same plants at a realistic size)."""

import warnings

import torch
from opacus import PrivacyEngine
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

DELTA = 1e-5


def _dataset(records=200, minority=20):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(records, 5, generator=generator)
    y = torch.zeros(records, dtype=torch.long)
    y[:minority] = 1
    return TensorDataset(x, y)


def _private(loader, loop_epochs=1, accountant="rdp", **kwargs):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant=accountant)
    generator = torch.Generator().manual_seed(2)
    if "target_epsilon" in kwargs:
        out = engine.make_private_with_epsilon(module=model, optimizer=optimizer, data_loader=loader,
                                               target_delta=DELTA, max_grad_norm=1.0, noise_generator=generator,
                                               **kwargs)
    else:
        out = engine.make_private(module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
                                  max_grad_norm=1.0, noise_generator=generator, **kwargs)
    model, optimizer, loader = out
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": loop_epochs, "delta": DELTA}


def correct():
    torch.manual_seed(3)
    return _private(DataLoader(_dataset(), batch_size=20), loop_epochs=2)


def weighted_sampler():
    torch.manual_seed(3)
    data = _dataset(minority=40)
    labels = data.tensors[1]
    weights = (1.0 / torch.bincount(labels).double())[labels]
    sampler = WeightedRandomSampler(weights, num_samples=2 * len(data), replacement=True)
    return _private(DataLoader(data, batch_size=20, sampler=sampler), target_epsilon=4.0, epochs=1,
                    poisson_sampling=False)


def shuffled():
    torch.manual_seed(3)
    return _private(DataLoader(_dataset(), batch_size=20, shuffle=True), loop_epochs=2, poisson_sampling=False)


def realised_normalisation():
    torch.manual_seed(3)
    setup = _private(DataLoader(_dataset(records=40, minority=4), batch_size=4), loop_epochs=10)
    optimizer = setup["optimizer"]

    def scale_by_realised_batch():
        for p in optimizer.params:
            p.grad /= max(len(p.grad_sample), 1)

    optimizer.scale_grad = scale_by_realised_batch
    return setup


def halved_noise():
    setup = correct()
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


def step_mismatch():
    setup = correct()
    setup["accounted_steps"] = 10
    return setup


def not_opacus():
    data = _dataset()
    model = torch.nn.Linear(5, 2)
    return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "data_loader": DataLoader(data, batch_size=20), "privacy_engine": None, "epochs": 1}


def unknown_key():
    setup = correct()
    setup["batchsize"] = 20
    return setup


def issue_813():
    """opacus #813 as reported: a WeightedRandomSampler of 64 draws, batch 16, make_private_with_epsilon with
    the default poisson_sampling=True (opacus replaces the sampler by Poisson at 1 / len(loader) = 1/4)."""
    torch.manual_seed(3)
    data = _dataset()
    sampler = WeightedRandomSampler(torch.ones(len(data)), num_samples=64, replacement=True)
    setup = _private(DataLoader(data, batch_size=16, sampler=sampler), target_epsilon=4.0, epochs=1)
    setup["accounted_epochs"] = 1
    return setup


def understated_claim():
    setup = correct()
    setup["claim_epsilon"] = 1.0
    return setup


def gdp_accountant():
    """Correct, but accounted by opacus's gdp accountant (a central-limit approximation: it understates)."""
    torch.manual_seed(3)
    return _private(DataLoader(_dataset(), batch_size=20), loop_epochs=2, accountant="gdp")


def accounted_epochs_below_one_step():
    return {**correct(), "accounted_epochs": 1e-9}


def exits():
    raise SystemExit(0)


def subset_sampler():
    """Batches of a SubsetRandomSampler (a train split) kept with poisson_sampling=False: a scheme no analysis
    of ours covers (corrected epsilon infinite)."""
    from torch.utils.data import SubsetRandomSampler

    torch.manual_seed(3)
    return _private(DataLoader(_dataset(), batch_size=20, sampler=SubsetRandomSampler(range(150))),
                    poisson_sampling=False)
