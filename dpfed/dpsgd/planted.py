"""Planted bug for DP-SGD audits: opacus's Gaussian noise scaled down behind its back.

The optimizer (and so opacus's accountant) still reports the configured noise multiplier while the
noise actually added is ``factor`` times smaller in standard deviation.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def scaled_noise(factor: float):
    """Within the block, every noise draw of opacus's DP optimizers has its standard deviation multiplied
    by ``factor`` (``factor=0.5``: half the noise)."""
    from opacus.optimizers import optimizer as dp_optimizer

    original = dp_optimizer._generate_noise

    def weaker(std, reference, generator=None, secure_mode=False):
        return original(std * factor, reference, generator=generator, secure_mode=secure_mode)

    dp_optimizer._generate_noise = weaker
    try:
        yield
    finally:
        dp_optimizer._generate_noise = original
