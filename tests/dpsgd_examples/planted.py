"""Planted bugs around opacus's MNIST example (``mnist.py``, as published but for its data), for the ``train`` form.

Each function runs the example's own ``main()`` (its argparse, loop, loader and ``make_private`` call) with one
thing changed from outside, as a user's mistake or a "speed-up" would change it; ``mnist.py`` itself is not edited:

- ``half_noise``: opacus's noise generator scaled by 1/2 behind its accountant;
- ``shuffled``: ``make_private(poisson_sampling=False)`` (shuffled batches, accounted as Poisson);
- ``duplicated``: every training record twice (one person, two records);
- ``head_outside``: the model's last layer left out of the optimizer given to ``make_private`` and trained by a
  plain SGD on its raw gradient after each private step.
"""

from __future__ import annotations

import contextlib

import torch
from opacus import PrivacyEngine
from opacus.optimizers import optimizer as opacus_optimizer

import mnist  # noqa: E402 - the example beside this file (the audit imports this file from its folder)


@contextlib.contextmanager
def _patched(owner, name, value):
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def half_noise():
    generate = opacus_optimizer._generate_noise

    def halved(std, *args, **kwargs):
        return generate(std / 2, *args, **kwargs)

    def called(*args, **kwargs):  # opacus passes std by keyword
        if "std" in kwargs:
            return halved(kwargs.pop("std"), *args, **kwargs)
        return halved(*args, **kwargs)

    with _patched(opacus_optimizer, "_generate_noise", called):
        mnist.main()


def shuffled():
    make_private = PrivacyEngine.make_private
    with _patched(PrivacyEngine, "make_private",
                  lambda self, **kwargs: make_private(self, **{**kwargs, "poisson_sampling": False})):
        mnist.main()


class _Twice(torch.utils.data.Dataset):
    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return 2 * len(self.inner)

    def __getitem__(self, index):
        return self.inner[index % len(self.inner)]


def duplicated():
    synthetic = mnist.datasets.MNIST

    def twice(*args, **kwargs):
        data = synthetic(*args, **kwargs)
        return _Twice(data) if kwargs.get("train", True) else data

    with _patched(mnist.datasets, "MNIST", twice):
        mnist.main()


def head_outside():
    make_private = PrivacyEngine.make_private

    def head_kept_out(self, **kwargs):
        params = list(kwargs["module"].parameters())
        body, head = params[:-2], params[-2:]  # the last layer's weight and bias
        lr = kwargs["optimizer"].param_groups[0]["lr"]
        model, optimizer, loader = make_private(self, **{**kwargs, "optimizer": torch.optim.SGD(body, lr=lr)})
        plain = torch.optim.SGD(head, lr=lr)  # the head trained by a plain optimizer, on its raw gradient
        step = optimizer.step

        def both(*args, **kw):
            out = step(*args, **kw)
            plain.step()
            plain.zero_grad()
            for p in head:  # opacus keeps per-sample gradients for every parameter of its module: cleared here
                p.grad_sample = None
            return out

        optimizer.step = both
        return model, optimizer, loader

    with _patched(PrivacyEngine, "make_private", head_kept_out):
        mnist.main()
