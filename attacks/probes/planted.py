"""Deliberately broken mechanisms ("planted bugs") that the probes must catch.

Each is a subclass of the correct mechanism object from ``accounting`` whose *description* (the fields
the accountants read) is unchanged while its *execution* is wrong, exactly the kind of drift an audit
exists to detect:

- ``WeakNoiseGaussian`` / ``WeakNoiseSubsampledGaussian``: noise ``noise_reduction`` times smaller
  than the description claims;
- ``UnclippedSubsampledGaussian``: skips clipping, so a canary above the clip moves the sum by its
  full norm;
- ``UniformFallbackSubsampledGaussian``: on an empty sample, releases ``U[0, 1)^d`` per block instead
  of pure noise (the DP-FTS-DE reference code's fallback, ``seed_dpftsde.md`` F4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.mechanisms import Gaussian, Laplace, SubsampledGaussian, as_generator

BUGS = ("weak-noise", "no-clip", "uniform-fallback")


@dataclass(frozen=True)
class WeakNoiseGaussian(Gaussian):
    """Gaussian mechanism that adds ``noise_reduction`` times less noise than described."""

    noise_reduction: float = 10.0

    def release(self, values, rng) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        std = self.noise_std / self.noise_reduction
        return values + as_generator(rng).normal(0.0, std, size=values.shape)


@dataclass(frozen=True)
class WeakNoiseLaplace(Laplace):
    """Laplace mechanism whose scale is ``noise_reduction`` times smaller than described."""

    noise_reduction: float = 10.0

    def release(self, values, rng) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        return values + as_generator(rng).laplace(0.0, self.scale / self.noise_reduction, size=values.shape)


@dataclass(frozen=True)
class WeakNoiseSubsampledGaussian(SubsampledGaussian):
    """Subsampled Gaussian whose noise is ``noise_reduction`` times smaller than described."""

    noise_reduction: float = 10.0

    def add_noise(self, sums, rng, weights=None) -> np.ndarray:
        sums = np.asarray(sums, dtype=float)
        std = np.asarray(self.block_noise_std(weights)) / self.noise_reduction
        if weights is not None and np.ndim(weights) == 2:
            std = std[:, None]
        return sums + as_generator(rng).standard_normal(sums.shape) * std


@dataclass(frozen=True)
class UnclippedSubsampledGaussian(SubsampledGaussian):
    """Subsampled Gaussian that forgets to clip (the noise is still scaled to ``clip``)."""

    def clip_vectors(self, vectors) -> np.ndarray:
        return np.asarray(vectors, dtype=float)


@dataclass(frozen=True)
class UniformFallbackSubsampledGaussian(SubsampledGaussian):
    """Subsampled Gaussian that releases ``U[0,1)`` per coordinate when nobody is sampled.

    Mirrors the reference DP-FTS-DE code (``np.random.random(M)`` for every sub-region, unscaled).
    """

    def release(self, contributions, rng, weights=None, *, scale: float = 1.0, return_mask: bool = False):
        rng = as_generator(rng)
        noisy, mask = super().release(contributions, rng, weights, scale=scale, return_mask=True)
        empty = ~mask.any(axis=-1)
        if np.any(empty):
            extra = noisy.ndim - empty.ndim
            uniform = rng.random(noisy.shape)
            noisy = np.where(empty.reshape(empty.shape + (1,) * extra), uniform, noisy)
        return (noisy, mask) if return_mask else noisy


def with_bug(mechanism, bug: str | None, noise_reduction: float = 10.0):
    """The implementation a probe runs: ``mechanism`` itself, or its planted-bug twin."""
    from accounting.errors import ConfigurationError, require_number

    if bug is None or bug == "none":
        return mechanism
    fields = {k: getattr(mechanism, k) for k in mechanism.__dataclass_fields__}
    if bug == "weak-noise":  # the noise divided by noise_reduction: a positive factor
        noise_reduction = require_number("noise_reduction", noise_reduction, low=0, low_open=True)
        cls = {Gaussian: WeakNoiseGaussian, Laplace: WeakNoiseLaplace, SubsampledGaussian: WeakNoiseSubsampledGaussian}[
            type(mechanism)
        ]
        return cls(**fields, noise_reduction=noise_reduction)
    if bug == "no-clip" and isinstance(mechanism, SubsampledGaussian):
        return UnclippedSubsampledGaussian(**fields)
    if bug == "uniform-fallback" and isinstance(mechanism, SubsampledGaussian):
        return UniformFallbackSubsampledGaussian(**fields)
    raise ConfigurationError(
        "bug", f"{bug!r} is not a planted bug for {type(mechanism).__name__}; choose from {', '.join(BUGS)} or none"
    )
