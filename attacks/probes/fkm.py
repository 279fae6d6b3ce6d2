"""FKM and DP-FKM probes (notes C.5, D). The private variants are our design (``dpfed.fkm.private``).

* ``fkm-loss`` (mechanism level): one loss is the constant -sB (world 0) or +sB (world 1), s =
  ``canary_scale`` (s > 1: beyond the clip, which a correct implementation brings back to +-B); the probe runs
  the algorithm's own event-level feedback (clip to [-B, B], ``accounting.Gaussian.release``) and scores
  the released value. ``private=False`` runs the exact feedback of non-private FKM.
* ``fkm-end-to-end`` (shared-randomness replay): the whole (DP-)FKM run, vectorised over the trials (every
  trial's released loss is drawn by the algorithm's own feedback), with the canary loss +-sB at round
  ``canary_round``; both worlds replay the same public losses and directions (``public_seed``), only the
  mechanism noise differs. The observer sees the played points ``y_t`` and the public directions, so
  ``x_t = y_t - delta v_t``, and while the step is interior the released loss is exactly
  ``-(delta/(eta d)) <x_{s+1} - x_s, v_s>``: a Gaussian with shift 1/sigma, so the audit can be tight.
  The step size is a probe parameter, small enough that the projection stays inactive.
* ``fkm-dataset-end-to-end``: the dataset-level variant; the canary record is +B or a zero-loss record
  (equivalent to its absence under add/remove), the other records are zero-loss (the accountant's worst
  case); every round's release is reconstructed from the plays and scored by the summed log-likelihood
  ratio of the Poisson-subsampled Gaussian.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import require_number
from attacks.probes.base import Probe, check_world, log_mixture_ratio


def _delta(value) -> float:
    return require_number("delta", value, low=0, high=1, low_open=True, high_open=True)


def _scale(value) -> float:
    """The canary's size in units of the clip bound B (>= 1; > 1 puts it beyond the clip)."""
    return require_number("canary_scale", value, low=1.0, high=1e6)


def _config(dim, horizon, exploration, step, lipschitz=1.0, radius=1.0):
    """The probe's FKM problem; ``lipschitz`` x ``radius`` sets the clip bound B of the linear family."""
    from dpfed.fkm import FKMConfig

    return FKMConfig(dim=dim, horizon=horizon, exploration=exploration, step=step, lipschitz=lipschitz, radius=radius)


def reconstruct_released_losses(run, directions: np.ndarray) -> np.ndarray:
    """The loss each round fed back, read from the plays ``y_t`` and the public directions ``v_t``
    (T, d): ``-(delta/(eta d)) <x_{t+1} - x_t, v_t>``; exact while the projection is inactive.
    Returns shape (T - 1, runs)."""
    plays = np.stack(run.transcript.payloads("play"))  # (T, runs, d)
    iterates = plays - run.exploration * directions[:, None, :]
    moves = np.einsum("trd,td->tr", iterates[1:] - iterates[:-1], directions[:-1])
    return -run.exploration / (run.step * plays.shape[-1]) * moves


def _public_directions(public_seed: int, horizon: int, dim: int) -> np.ndarray:
    from dpfed.fkm.algorithm import sphere_directions
    from dpfed.streams import named_generator

    return sphere_directions(named_generator(public_seed, "directions"), horizon, 1, dim)[:, 0]


@dataclass
class FkmLossProbe(Probe):
    """One loss is -B or +B; the released (clipped, noised) loss is the score."""

    epsilon: float = 2.0
    delta: float = 1e-5
    noise_multiplier: float | None = None
    private: bool = True
    canary_scale: float = 1.0
    lipschitz: float = 1.0
    radius: float = 1.0

    name = "fkm-loss"
    threat_model = "output only"
    description = "DP-FKM event level: one loss is -B (world 0) or +B (world 1); score: the released loss"
    batch_size = 1_000_000

    def __post_init__(self):
        from dpfed.fkm import event_mechanism

        self.delta = self.default_delta = _delta(self.delta)
        self.canary_scale = _scale(self.canary_scale)
        self._config = _config(3, 1, 0.5 * self.radius, 1e-3, self.lipschitz, self.radius)
        self._mechanism = event_mechanism(self._config, self.epsilon, self.delta, self.noise_multiplier)

    def mechanism(self):
        return self._mechanism if self.private else None

    def true_epsilon(self, delta: float) -> float | None:
        from dpfed.fkm import event_release_epsilon

        return event_release_epsilon(self._mechanism, _delta(delta))[1] if self.private else math.inf

    def scores(self, world, trials, rng):
        from dpfed.fkm import EventLevelFeedback, SequenceFeedback, make_losses

        losses = make_losses(self._config, 0)
        value = self.canary_scale * losses.bound
        canary = losses.with_constants({0: value if check_world(world) else -value})
        feedback = EventLevelFeedback(canary, self._mechanism) if self.private else SequenceFeedback(canary)
        return feedback.observe(0, np.zeros((int(trials), 3)), rng)[1]


@dataclass
class FkmEndToEndProbe(Probe):
    """The whole (DP-)FKM run with a +-B canary loss, replayed with shared public randomness."""

    epsilon: float = 2.0
    delta: float = 1e-5
    noise_multiplier: float | None = None
    private: bool = True
    dim: int = 5
    horizon: int = 12
    canary_round: int = 10
    exploration: float = 0.5
    step: float = 1e-3
    public_seed: int = 0
    canary_scale: float = 1.0
    lipschitz: float = 1.0
    radius: float = 1.0

    name = "fkm-end-to-end"
    threat_model = "output only"
    description = (
        "(DP-)FKM end to end with shared-randomness replay: one loss is -B or +B; the observer "
        "reconstructs the fed-back loss from the played points and the public directions"
    )
    batch_size = 50_000

    def __post_init__(self):
        from dpfed.fkm import event_mechanism

        self.delta = self.default_delta = _delta(self.delta)
        self.canary_scale = _scale(self.canary_scale)
        self.canary_round = int(
            require_number("canary_round", self.canary_round, low=0, high=self.horizon - 2, integer=True)
        )
        self._config = _config(self.dim, self.horizon, self.exploration, self.step, self.lipschitz, self.radius)
        self._mechanism = event_mechanism(self._config, self.epsilon, self.delta, self.noise_multiplier)
        self._directions = _public_directions(self.public_seed, self.horizon, self.dim)

    def mechanism(self):
        return self._mechanism if self.private else None

    def true_epsilon(self, delta: float) -> float | None:
        from dpfed.fkm import event_release_epsilon

        return event_release_epsilon(self._mechanism, _delta(delta))[1] if self.private else math.inf

    def scores(self, world, trials, rng):
        from dpfed.fkm import SequenceFeedback, make_losses, run_dp_fkm, run_fkm

        value = self.canary_scale * make_losses(self._config, 0, count=1).bound
        canary = {self.canary_round: value if check_world(world) else -value}
        common = dict(runs=int(trials), shared_directions=True, privacy_rng=rng)
        if self.private:
            run = run_dp_fkm(self._config, self.public_seed, mechanism=self._mechanism, canary=canary, **common)
        else:
            from dpfed.fkm.algorithm import STREAMS
            from dpfed.streams import spawn_generators

            losses = make_losses(self._config, spawn_generators(self.public_seed, STREAMS)["losses"])
            run = run_fkm(
                self._config, self.public_seed, feedback=SequenceFeedback(losses.with_constants(canary)), **common
            )
        return reconstruct_released_losses(run, self._directions)[self.canary_round]


@dataclass
class FkmDatasetEndToEndProbe(Probe):
    """Dataset-level DP-FKM end to end: canary record +B or zero-loss; summed mixture log-likelihood
    ratio of every round's reconstructed release."""

    rate: float = 0.8
    noise_multiplier: float = 2.0
    records: int = 10
    dim: int = 5
    horizon: int = 4
    exploration: float = 0.5
    step: float = 1e-3
    public_seed: int = 0
    delta: float = 1e-5

    name = "fkm-dataset-end-to-end"
    threat_model = "output only"
    description = (
        "dataset-level DP-FKM end to end with shared-randomness replay: one record's loss is +B "
        "or 0; score: the summed log-likelihood ratio of the reconstructed releases"
    )
    batch_size = 50_000

    def __post_init__(self):
        from accounting.mechanisms import SubsampledGaussian

        self.delta = self.default_delta = _delta(self.delta)
        self._config = _config(self.dim, self.horizon + 1, self.exploration, self.step)
        self._mechanism = SubsampledGaussian(self.rate, self.noise_multiplier, clip=1.0)
        self._directions = _public_directions(self.public_seed, self.horizon + 1, self.dim)

    def mechanism(self):
        from accounting.mechanisms import Composition

        return Composition.of(self._mechanism, self.horizon)

    def true_epsilon(self, delta: float) -> float:
        from dpfed.fkm import dataset_release_epsilon

        return dataset_release_epsilon(self._mechanism, self.horizon, _delta(delta))[1]

    def scores(self, world, trials, rng):
        from dpfed.fkm import run_dp_fkm

        canary = {k: 0.0 for k in range(self.records)}
        canary[0] = 1.0 if check_world(world) else 0.0
        run = run_dp_fkm(
            self._config,
            self.public_seed,
            unit="dataset",
            mechanism=self._mechanism,
            records=self.records,
            canary=canary,
            runs=int(trials),
            shared_directions=True,
            privacy_rng=rng,
        )
        released = reconstruct_released_losses(run, self._directions)[: self.horizon]
        whitened = released * self.rate * self.records / self.noise_multiplier  # sum / (sigma C), C = B = 1
        mu = 1.0 / self.noise_multiplier
        return log_mixture_ratio(whitened * mu, mu**2, self.rate).sum(axis=0)
