"""One-run DP-SGD audit: many gradient canaries in one opacus training, each on its own coordinate and
included with probability 1/2; per-canary scores as the all-iterates (or last-iterate) probe's; bounds
(``attacks.estimators.CANARY_ONE_RUN_METHODS``) from Steinke et al.'s one-run estimator and the weighted guesses of
the continuous scores (both rigorous), and the Gaussian f-DP refinement (Mahloujifar et al.) and the Gaussian view of
the scores (both model-based).

Valid as those estimators require: inclusions are independent fair coins drawn before training, and a
canary's score depends only on the released iterates.

``one_run_gradient_canaries`` is the function; ``DpsgdOneRunProbe`` (``dpsgd-one-run``) is the probe of the
``dp-sgd`` audit target that runs it (a one-run probe: ``run_once``, ``attacks.probes.one_run``), on a
``DpsgdSetup`` (our loop) or on opacus-check's dict (the user's own sampler and optimizer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.estimators import CANARY_ONE_RUN_METHODS, estimate_one_run
from attacks.probes.dpsgd import DpsgdAllIteratesProbe, DpsgdLastIterateProbe
from attacks.probes.one_run import OneRunOutcome, bound_dict, one_run_decision

VIEWS = {"all-iterates": "all iterates (white box), one run", "last-iterate": "last iterate (white box), one run"}


@dataclass
class OneRunResult:
    scores: np.ndarray
    included: np.ndarray
    bounds: list
    opacus: object

    def bound(self, method: str):
        return next(b for b in self.bounds if b.method == method)


def one_run_gradient_canaries(probe: DpsgdAllIteratesProbe, canaries: int, seed: int, delta: float,
                              confidence: float = 0.95, inserted: bool = True, setup=None,
                              claim: float | None = None) -> OneRunResult:
    """Train once with ``canaries`` gradient canaries, each included with probability 1/2 (drawn from
    ``seed`` before training); score each with ``probe``'s score (its view: all iterates, or the last iterate
    for a ``DpsgdLastIterateProbe``). ``inserted=False`` draws the coins but inserts no canary (a null run).
    ``probe``'s set-up is a ``DpsgdSetup`` or opacus-check's dict (``DpsgdAllIteratesProbe.canary_run``);
    ``setup``: that set-up already built by ``probe.checked_setup()`` (default: built here); ``claim``: the epsilon
    the weighted bound also tests (its p-value, for ``one_run_decision``)."""
    from dpfed.dpsgd.planted import scaled_noise
    from dpfed.dpsgd.train import one_thread

    canaries = int(require_number("canaries", canaries, low=2, integer=True))
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    setup = probe.checked_setup() if setup is None else setup
    with scaled_noise(probe.noise_factor()), one_thread():
        updates, record = probe.canary_run(setup, included & inserted, int(rng.integers(0, 2**62)))
    scores = probe.score_updates(updates)
    bounds = estimate_one_run(scores, included, delta, confidence, methods=CANARY_ONE_RUN_METHODS, claim=claim)
    return OneRunResult(scores, included, bounds, record)


@dataclass
class DpsgdOneRunProbe(DpsgdAllIteratesProbe):
    """One training with ``trials`` gradient canaries, each in by a fair coin; scored in ``view``."""

    view: str = "all-iterates"

    name = "dpsgd-one-run"
    one_run = True
    threat_model = VIEWS["all-iterates"]
    description = ("DP-SGD on opacus, trained once with many Dirac gradient canaries (one coordinate each), each "
                   "included by an independent fair coin drawn before training; each scored as the all-iterates "
                   "(or last-iterate) probe scores it; Steinke et al.'s one-run bound and the weighted guesses of "
                   "the scores (rigorous), the Gaussian f-DP one and the Gaussian view of the scores (model-based)")

    def __post_init__(self):
        if self.view not in VIEWS:
            raise ConfigurationError("view", f"choose from {', '.join(VIEWS)}, got {self.view!r}")
        self.threat_model = VIEWS[self.view]
        super().__post_init__()

    def scores(self, world, trials, rng):
        raise ConfigurationError("probe", "dpsgd-one-run is a one-run probe: it trains once (run_once, in a "
                                 "dp-sgd audit target); for two worlds of trials use dpsgd-all-iterates")

    def simulated_power(self, trials, claim_epsilon, delta, confidence, probability):
        return None  # not planned: the multi-run gradient probes carry the half-noise power

    def score_updates(self, updates: np.ndarray) -> np.ndarray:
        if self.view == "last-iterate":
            return DpsgdLastIterateProbe.score_updates(self, updates)
        return super().score_updates(updates)

    def check_canaries(self, canaries, setup=None) -> int:
        """``canaries`` as a count this set-up holds (ConfigurationError on ``trials``, one line, before any run):
        on opacus-check's dict one coordinate and one record each, at most half the records; a ``DpsgdSetup``
        has no limit (the canary coordinates and examples are added to the user's). ``setup``: the set-up
        already built (default: built here)."""
        from attacks.probes.dpsgd_user import OpacusRun, check_canaries

        count = int(require_number("trials", canaries, low=2, integer=True))
        setup = self.training_setup() if setup is None else setup
        return check_canaries(setup, count, "trials") if isinstance(setup, OpacusRun) else count

    def run_once(self, canaries: int, seed: int, epsilon: float, delta: float, confidence: float) -> OneRunOutcome:
        """Train once with ``canaries`` canaries and test the claim ``(epsilon, delta)`` with the rigorous bound."""
        setup = self.checked_setup()  # the user's set-up, built once for the check, the run and its steps
        canaries = self.check_canaries(canaries, setup)
        run = one_run_gradient_canaries(self, canaries, int(seed), delta, confidence, setup=setup, claim=epsilon)
        bounds = [bound_dict(b, self.view.replace("-", "_"), f"Scored in the {self.view} view.") for b in run.bounds]
        status, p_value, ceiling = one_run_decision(bounds, canaries, epsilon, delta, confidence)
        record = run.opacus
        steps = setup.steps
        findings = [{"code": "opacus-reported", "severity": "info",
                     "values": {"noise_multiplier": record.noise_multiplier, "sample_rate": record.sample_rate,
                                "steps": record.steps, "expected_steps": steps},
                     "message": f"the one-run training: opacus's accountant told noise multiplier "
                                f"{record.noise_multiplier:.4g} at rate {record.sample_rate:.4g}, {record.steps} "
                                f"steps released (the set-up accounts {steps})"}]
        details = {"canaries": canaries, "included": int(run.included.sum()), "view": self.view,
                   "mean_score_in": float(run.scores[run.included].mean()) if run.included.any() else None,
                   "mean_score_out": float(run.scores[~run.included].mean()) if (~run.included).any() else None}
        return OneRunOutcome(bounds, status, p_value, ceiling, findings, details)


__all__ = ["DpsgdAllIteratesProbe", "DpsgdLastIterateProbe", "DpsgdOneRunProbe", "OneRunResult",
           "one_run_gradient_canaries"]
