"""DP-FedZero: our private variants of FedZero (notes B.5 and D; the seed has no privacy).

Each worker's only data-dependent output per round is the scalar ``s = (y - y')/(2h)`` (or ``y/h``);
the direction is public (shared seed). Under the seed's assumptions the two-point scalar has
``|s| <= L``, so clipping it at ``C = L`` is bias-free; the one-point scalar ``y/h`` has no such bound
(clipping it at L biases the estimate; choose C for it explicitly).

* **Worker level, scalar noise** (default): neighbours add/remove one worker (all its data). Every
  worker slot releases ``1[sampled] clip_C(s) + N(0, (sigma C)^2)`` through
  ``SubsampledGaussian(q_w, sigma, clip=C)``; the sample is each worker's secret Poisson coin and an
  unsampled slot sends pure noise, so the server cannot tell who took part (if the server chose the
  sample, account with q_w = 1). ``g = d/(q_w m) sum_j s~_j w_j``. Per worker: n rounds of SGM.
* **Worker level, vector noise** (the comparison of B.5): a trusted aggregator releases
  ``sum_j d clip_C(s_j) w_j + N(0, (sigma d C ||w||)^2 I)``, sensitivity ``d C ||w||`` (``d^(3/2) C`` for
  sign vectors). Same accounting; noise energy ``d^4 sigma^2 C^2/m^2`` vs ``d^3 sigma^2 C^2/m`` for scalar
  noise, so scalar noise wins when m < d.
* **Record level**: worker j holds ``records`` records, Poisson-samples them at rate q each round (all
  sharing the round's direction) and releases ``sum clip_C(s_c) + N(0, (sigma C)^2)``, rescaled by
  ``1/(q records)``. n rounds of SGM per worker, parallel composition across workers.

``composition()`` is ``Composition.of(mechanism, n)`` in every case: the guarantee of one unit.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, SubsampledGaussian
from dpfed.fedzero.algorithm import FedZeroRun, run_fedzero
from dpfed.fedzero.config import FedZeroConfig
from dpfed.release import repeated_release_epsilon
from dpfed.transcript import SERVER, agent_name

UNITS = ("worker", "record")
NOISE_SPACES = ("scalar", "vector")
AGGREGATOR = "aggregator"


class _PrivateUplink:
    def __init__(self, mechanism: SubsampledGaussian):
        self.mechanism = mechanism

    def composition(self, rounds: int) -> Composition:
        return Composition.of(self.mechanism, rounds)

    def _per_worker(self, t, noisy, weights, transcript, scale):
        if transcript is not None:
            for j in range(noisy.shape[1]):
                transcript.add(t, agent_name(j), SERVER, "scalar", noisy[:, j].copy())
        factor = weights.shape[-1] * scale / noisy.shape[1]
        return factor * np.einsum("rm,rmd->rd", noisy, np.broadcast_to(weights, noisy.shape + weights.shape[-1:]))


class WorkerScalarUplink(_PrivateUplink):
    """Worker level, noise in scalar space: one SGM release per worker slot per round."""

    all_records = False

    def aggregate(self, t, raw, scalars, weights, rng, transcript, name):
        noisy = self.mechanism.release(scalars[..., :1, None], rng)[..., 0]  # (runs, m)
        return self._per_worker(t, noisy, weights, transcript, 1.0 / self.mechanism.rate)


class RecordLevelUplink(_PrivateUplink):
    """Record level: each worker's Poisson-sampled records, clipped, summed and noised."""

    all_records = True

    def aggregate(self, t, raw, scalars, weights, rng, transcript, name):
        noisy = self.mechanism.release(scalars[..., None], rng)[..., 0]  # (runs, m)
        return self._per_worker(t, noisy, weights, transcript, 1.0 / (self.mechanism.rate * scalars.shape[-1]))


class WorkerVectorUplink(_PrivateUplink):
    """Worker level, noise in vector space: a trusted aggregator noises the sum of d clip(s) w."""

    all_records = False

    def __init__(self, mechanism: SubsampledGaussian, scalar_clip: float):
        super().__init__(mechanism)
        self.scalar_clip = scalar_clip

    def aggregate(self, t, raw, scalars, weights, rng, transcript, name):
        dim = weights.shape[-1]
        s = np.clip(scalars[..., 0], -self.scalar_clip, self.scalar_clip)
        noisy = self.mechanism.release(dim * s[..., None] * weights, rng)  # (runs, d)
        if transcript is not None:
            transcript.add(t, AGGREGATOR, SERVER, "noisy_sum", noisy.copy())
        return noisy / (self.mechanism.rate * scalars.shape[1])


def direction_norm(config: FedZeroConfig) -> float:
    """||w||_2 of the vector a scalar multiplies: sqrt(d) for sign vectors, 1 for l2 directions."""
    return math.sqrt(config.dim) if config.randomisation == "l1" else 1.0


def dp_uplink(
    config: FedZeroConfig,
    unit: str = "worker",
    noise: str = "scalar",
    rate: float = 1.0,
    noise_multiplier: float = 1.0,
    clip: float = 1.0,
):
    """The private uplink of ``unit`` and ``noise`` space with its ``SubsampledGaussian`` mechanism."""
    if unit not in UNITS:
        raise ConfigurationError("unit", f"unknown {unit!r}; choose one of {', '.join(UNITS)}")
    if noise not in NOISE_SPACES:
        raise ConfigurationError("noise", f"unknown {noise!r}; choose one of {', '.join(NOISE_SPACES)}")
    if unit == "record":
        if noise == "vector":
            raise ConfigurationError("noise", "record level releases per-worker scalars; use noise = scalar")
        return RecordLevelUplink(SubsampledGaussian(rate, noise_multiplier, clip=clip))
    if noise == "scalar":
        return WorkerScalarUplink(SubsampledGaussian(rate, noise_multiplier, clip=clip))
    vector_clip = config.dim * clip * direction_norm(config)
    return WorkerVectorUplink(SubsampledGaussian(rate, noise_multiplier, clip=vector_clip), clip)


#: (Composition of n SGM rounds, its tight epsilon at delta): what a DP-FedZero run releases about one unit
release_epsilon = repeated_release_epsilon


def run_dp_fedzero(
    config: FedZeroConfig,
    seed=None,
    *,
    unit: str = "worker",
    noise: str = "scalar",
    rate: float = 1.0,
    noise_multiplier: float = 1.0,
    clip: float = 1.0,
    **kwargs,
) -> FedZeroRun:
    """Run DP-FedZero (see the module docstring); other keywords go to ``run_fedzero``."""
    uplink = dp_uplink(config, unit, noise, rate, noise_multiplier, clip)
    return run_fedzero(config, seed, uplink=uplink, algorithm=f"dp-fedzero ({unit} level, {noise} noise)", **kwargs)


def dp_fedzero_release(
    config: FedZeroConfig,
    delta: float,
    unit: str = "worker",
    noise: str = "scalar",
    rate: float = 1.0,
    noise_multiplier: float = 1.0,
    clip: float = 1.0,
):
    """For an audit target: the composition a DP-FedZero run of ``config`` releases about one unit (built
    by the same ``dp_uplink`` the run uses) and its tight epsilon at ``delta``."""
    uplink = dp_uplink(config, unit, noise, rate, noise_multiplier, clip)
    return release_epsilon(uplink.mechanism, config.rounds, delta)
