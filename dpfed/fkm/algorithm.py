"""FKM (Flaxman-Kalai-McMahan) bandit convex optimisation, vectorised over independent runs (notes C.2).

Each round: draw ``v`` uniform on the unit sphere, play ``y_t = x_t + delta v``, observe one scalar
``f_t(y_t)``, form the one-point estimate ``(n/delta) f_t(y_t) v`` and take a projected gradient step
onto the shrunk ball ``K_delta`` of radius ``R - delta``. The learner starts at ``x_1 = 0``.

Transcript (per round t, 1-based): ``learner -> environment`` "play" (``y_t``, shape (runs, d)) and
``environment -> learner`` "loss" (the value the learner receives, shape (runs,)). In the private
variants the "loss" message is the output of the mechanism (``dpfed.fkm.private``), so the transcript
shows every release. Regret is measured at the played points against the best fixed point in
hindsight of the horizon (notes C.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.mechanisms import Composition
from dpfed.fkm.config import FKMConfig, regret_bound
from dpfed.fkm.losses import SyntheticLosses, project_ball
from dpfed.streams import spawn_generators
from dpfed.transcript import Transcript

LEARNER, ENVIRONMENT = "learner", "environment"
STREAMS = ("losses", "directions", "privacy")
CHUNK = 512


class SequenceFeedback:
    """An oblivious adversary's sequence: round t's loss is ``losses`` function t, observed exactly."""

    mechanism = None

    def __init__(self, losses: SyntheticLosses):
        self.losses = losses

    @property
    def feedback_bound(self) -> float:
        return self.losses.bound

    def observe(self, t: int, points: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
        """(true loss, observed value) at ``points`` (runs, d) in round ``t`` (0-based)."""
        value = self.losses.value(t, points)
        return value, value

    def comparator_losses(self, horizon: int) -> np.ndarray:
        """f_t(x*) for t < horizon, x* the best fixed point in hindsight of the horizon."""
        best = self.losses.best_fixed_point(horizon)
        return self.losses.values_all(best)[:horizon]

    def composition(self, horizon: int) -> Composition | None:
        return None


def make_losses(config: FKMConfig, rng, count: int | None = None) -> SyntheticLosses:
    """The synthetic loss functions of ``config`` (one per round unless ``count`` is given)."""
    return SyntheticLosses.generate(
        config.loss,
        count or config.horizon,
        config.dim,
        rng,
        radius=config.radius,
        lipschitz=config.lipschitz,
        spread=config.spread,
    )


def sphere_directions(rng: np.random.Generator, rounds: int, runs: int, dim: int) -> np.ndarray:
    """``rounds x runs`` independent directions uniform on the unit sphere, shape (rounds, runs, d)."""
    g = rng.standard_normal((rounds, runs, dim))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def one_point_gradient(observed: np.ndarray, directions: np.ndarray, exploration: float) -> np.ndarray:
    """The one-point estimate ``(n / delta) f(x + delta v) v`` (rows: runs), unbiased for the gradient of
    the smoothed loss ``E f(x + delta u)``, u uniform in the unit ball (notes C.2)."""
    dim = directions.shape[-1]
    return (dim / exploration) * np.asarray(observed)[..., None] * directions


@dataclass
class FKMRun:
    """One batch of ``runs`` independent runs (same losses). ``played_losses`` (T, runs) are the true
    losses at the played points, ``comparator_losses`` (T,) those of the best fixed point."""

    algorithm: str
    config: FKMConfig
    exploration: float
    step: float
    bound: float
    played_losses: np.ndarray
    comparator_losses: np.ndarray
    transcript: Transcript
    feedback: object = field(repr=False)
    parameters: dict = field(default_factory=dict)

    @property
    def mechanism(self):
        return self.feedback.mechanism

    @property
    def regret(self) -> np.ndarray:
        """Cumulative regret over rounds, shape (runs, T)."""
        return np.cumsum(self.played_losses - self.comparator_losses[:, None], axis=0).T

    @property
    def final_regret(self) -> np.ndarray:
        return self.regret[:, -1]

    def composition(self) -> Composition:
        """What the run released, through what (ValueError for the non-private algorithm)."""
        composition = self.feedback.composition(self.config.horizon)
        if composition is None:
            raise ValueError(f"{self.algorithm} is not a private algorithm: nothing to account")
        return composition

    def summary(self) -> dict:
        final = self.final_regret
        return {
            "algorithm": self.algorithm,
            "dim": self.config.dim,
            "horizon": self.config.horizon,
            "loss": self.config.loss,
            "runs": int(final.size),
            "exploration": self.exploration,
            "step": self.step,
            "regret_bound": self.bound,
            "final_regret": final.tolist(),
            "parameters": self.parameters,
        }


def run_fkm(
    config: FKMConfig,
    seed=None,
    *,
    feedback=None,
    runs: int = 1,
    directions=None,
    privacy_rng=None,
    shared_directions: bool = False,
    record_transcript: bool = True,
    algorithm: str = "fkm",
    on_rounds=None,
) -> FKMRun:
    """Run FKM ``runs`` times in one vectorised loop.

    ``seed`` derives independent streams for the losses, the directions and the privacy noise;
    ``directions`` / ``privacy_rng`` (Generator or seed) replace the last two (probes replay public
    directions in both worlds and draw only the noise). ``shared_directions`` gives every run the same
    directions. ``feedback`` (default: exact feedback of ``config``'s loss sequence) decides what the
    learner observes; its ``feedback_bound`` tunes delta and eta. ``on_rounds(n)``, if given, is called
    after each block of ``n`` rounds (for a progress display).
    """
    streams = spawn_generators(seed, STREAMS)
    feedback = feedback or SequenceFeedback(make_losses(config, streams["losses"]))
    direction_rng = streams["directions"] if directions is None else np.random.default_rng(directions)
    noise_rng = streams["privacy"] if privacy_rng is None else np.random.default_rng(privacy_rng)
    losses = feedback.losses
    delta, eta = config.parameters(losses.diameter, losses.lipschitz, feedback.feedback_bound)
    transcript = Transcript()
    played = _play(
        config,
        feedback,
        delta,
        eta,
        runs=runs,
        direction_runs=1 if shared_directions else runs,
        direction_rng=direction_rng,
        noise_rng=noise_rng,
        transcript=transcript if record_transcript else None,
        on_rounds=on_rounds,
    )
    T = config.horizon
    bound = regret_bound(config.dim, T, losses.diameter, losses.lipschitz, feedback.feedback_bound, delta, eta)
    parameters = {
        "G": losses.lipschitz,
        "B": losses.bound,
        "D": losses.diameter,
        "feedback_bound": feedback.feedback_bound,
    }
    comparator = feedback.comparator_losses(T)
    return FKMRun(algorithm, config, delta, eta, bound, played, comparator, transcript, feedback, parameters)


def _play(
    config: FKMConfig,
    feedback,
    delta,
    eta,
    *,
    runs,
    direction_runs,
    direction_rng,
    noise_rng,
    transcript,
    on_rounds=None,
) -> np.ndarray:
    """FKM's rounds from ``x_1 = 0`` with exploration radius ``delta`` and step ``eta`` (``direction_runs``
    independent direction sequences). Returns the true losses at the played points, shape (T, runs), and
    records the plays and observations in ``transcript`` unless it is None."""
    T, d = config.horizon, config.dim
    x = np.zeros((int(runs), d))
    played = np.empty((T, int(runs)))
    inner = config.radius - delta
    for start in range(0, T, CHUNK):
        block = sphere_directions(direction_rng, min(CHUNK, T - start), direction_runs, d)
        for i, v in enumerate(block):
            t = start + i
            y = x + delta * v
            played[t], observed = feedback.observe(t, y, noise_rng)
            if transcript is not None:
                transcript.add(t + 1, LEARNER, ENVIRONMENT, "play", y)
                transcript.add(t + 1, ENVIRONMENT, LEARNER, "loss", observed)
            x = project_ball(x - eta * one_point_gradient(observed, v, delta), inner)
        if on_rounds is not None:
            on_rounds(len(block))
    return played
