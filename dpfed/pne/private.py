"""DP-Fed-PNE: Fed-PNE whose clients clip every reward to [0, 1] and add Gaussian noise to it.

Privacy unit and argument (event level, as in the seed's Appendix D): neighbouring reward tables
differ in one reward of one client at one time step, with any values. After clipping, that reward has
sensitivity 1 and enters exactly one release, ``clip(r) + N(0, sigma^2)`` made by the
``accounting.Gaussian`` mechanism; which node and phase a reward belongs to is decided by earlier
(already private) outputs only, so the local means, the server's decisions, the broadcasts and every
client's future actions are post-processing (adaptive parallel composition over disjoint rewards).
The whole run is therefore exactly as private as *one* Gaussian release:
``composition() == Composition.of(mechanism, 1)``. This says nothing about client-level or
record-level neighbours (there the same noise composes over T rewards or over every node).

Calibration: ``analytic`` (exact Gaussian profile, default) or ``classic``
(``sigma = sqrt(2 ln(1.25/delta)) / epsilon``, proven only for epsilon < 1 and invalid from about
epsilon = 8.4 at delta = 1e-5; ``accounting.calibration.check_classic_calibration`` gives the true delta).

Utility: by default the confidence constant is inflated by the factor the seed's Lemma D.3 applies to
the sub-Gaussian proxy, ``c_dp = c sqrt(1 + 4 sigma^2)`` (1/4 for a [0,1] reward, plus sigma^2); set
``noise_aware_c=False`` to keep ``c`` unchanged. This affects utility only, never privacy.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from accounting.calibration import calibrate_gaussian
from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, Gaussian
from dpfed.pne.objectives import Objective
from dpfed.pne.results import BanditRun

REWARD_LOW, REWARD_HIGH = 0.0, 1.0


# Deliberate implementation bugs, each existing only to be audited (see ``RewardPrivatizer``):
PLANTED_BUGS = ("none", "unnoised-final-upload", "noise-shared-across-nodes")


@dataclass(frozen=True)
class RewardPrivatizer:
    """Clip raw rewards to [0, 1], then release each one through ``mechanism`` (independent noise per
    reward, per client, per node, per phase: one call draws fresh noise for the whole array).

    ``final`` privatises the partial rewards of a phase cut by the horizon (uploaded only with
    ``final_upload=True``) exactly the same way. Planted bugs (only to be audited; the accountants
    still analyse the correct mechanism):

    * ``unnoised-final-upload``: ``final`` clips but adds no noise, so a client uploads the un-noised
      local means of its final phase;
    * ``noise-shared-across-nodes``: one noise draw per client and phase is broadcast over all of that
      client's nodes and pulls (a shape slip), so differences of a client's uploads are noise-free.
    """

    mechanism: Gaussian
    planted_bug: str = "none"

    def __post_init__(self):
        if self.planted_bug not in PLANTED_BUGS:
            raise ConfigurationError("planted_bug", f"choose one of {', '.join(PLANTED_BUGS)}")

    def __call__(self, rewards: np.ndarray, rng) -> np.ndarray:
        """Rewards of shape (..., clients, nodes, pulls), clipped and noised."""
        clipped = np.clip(rewards, REWARD_LOW, REWARD_HIGH)
        if self.planted_bug == "noise-shared-across-nodes":
            return clipped + self.mechanism.release(np.zeros(clipped.shape[:-2] + (1, 1)), rng)
        return self.mechanism.release(clipped, rng)

    def final(self, rewards: np.ndarray, rng) -> np.ndarray:
        """The partial rewards of the phase cut by the horizon (the client's final upload)."""
        if self.planted_bug == "unnoised-final-upload":
            return np.clip(rewards, REWARD_LOW, REWARD_HIGH)
        return self(rewards, rng)


def dp_mechanism(epsilon: float, dp_delta: float, calibration: str = "analytic") -> Gaussian:
    """The per-reward Gaussian mechanism (sensitivity 1: one clipped reward in [0, 1])."""
    return calibrate_gaussian(epsilon, dp_delta, sensitivity=REWARD_HIGH - REWARD_LOW, method=calibration)


def event_level_composition(mechanism: Gaussian) -> Composition:
    """Event-level guarantee of a whole DP-Fed-PNE run: one release of ``mechanism`` (see module doc)."""
    return Composition.of(mechanism, 1)


def noise_aware_c(c: float, mechanism: Gaussian) -> float:
    """``c sqrt(1 + 4 sigma^2)``: the confidence constant scaled for the injected noise (Lemma D.3)."""
    return c * math.hypot(1.0, 2.0 * mechanism.noise_std)  # sqrt(1 + 4 sigma^2) without overflow


def run_dp_fed_pne(
    objective: str | Objective = "garland", clients: int = 10, horizon: int = 1000, *, seed=None, **settings
) -> BanditRun:
    """Run DP-Fed-PNE once; ``settings`` as for ``run_dp_fed_pne_batch``.

    The returned run has ``mechanism`` set and ``composition()`` equal to one Gaussian release.
    """
    return run_dp_fed_pne_batch(objective, clients, horizon, [seed], **settings)[0]


def run_dp_fed_pne_batch(
    objective: str | Objective,
    clients: int,
    horizon: int,
    seeds,
    *,
    epsilon: float = 1.0,
    dp_delta: float = 1e-5,
    calibration: str = "analytic",
    c: float = 0.1,
    scale_c_for_noise: bool = True,
    planted_bug: str = "none",
    **settings,
) -> list[BanditRun]:
    """Independent DP-Fed-PNE runs, one per seed, vectorised together (``dpfed.pne.engine``).

    ``epsilon``/``dp_delta`` are the event-level privacy target (``dp_delta`` is unrelated to the
    confidence level ``conf_delta``); ``planted_bug`` selects a deliberate privatisation bug
    (``PLANTED_BUGS``), only for audits. Other settings go to ``run_fed_pne_batch`` (Fed-PNE constants,
    ``config``, ``reward_override``, ``record_transcript``, ...).
    """
    from dpfed.pne.algorithm import run_fed_pne_batch

    mechanism = dp_mechanism(epsilon, dp_delta, calibration)
    c_used = noise_aware_c(c, mechanism) if scale_c_for_noise else c
    settings = _with_confidence_constant(settings, c_used)
    privatizer = RewardPrivatizer(mechanism, planted_bug)
    runs = run_fed_pne_batch(
        objective, clients, horizon, seeds, privatizer=privatizer, algorithm="dp-fed-pne", **settings
    )
    parameters = {
        "epsilon": float(epsilon),
        "dp_delta": float(dp_delta),
        "calibration": calibration,
        "noise_std": mechanism.noise_std,
        "c_base": c,
        "scale_c_for_noise": scale_c_for_noise,
        "planted_bug": planted_bug,
    }
    for run in runs:
        run.mechanism = mechanism
        run.parameters.update(parameters)
    return runs


def _with_confidence_constant(settings: dict, c: float) -> dict:
    """Fed-PNE ``settings`` with the confidence constant set to ``c``: in their ``config`` if they hold one,
    else as the ``c`` keyword (``config`` is then None)."""
    config = settings.pop("config", None)
    if config is not None:
        return {**settings, "config": dataclasses.replace(config, c=c)}
    return {**settings, "config": None, "c": c}
