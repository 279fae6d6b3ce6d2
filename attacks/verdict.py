"""The empirical verdict on a claim: VIOLATION, PASS or INCONCLUSIVE, with a p-value for the claim.

These are the words of the audit's empirical verdict (``reports.audit.verdicts``), so `dpaudit attack`
and `dpaudit audit` say the same thing about the same evidence; PASS/INCONCLUSIVE are the audit's overall
verdicts, which also weigh the accountants.

Null hypothesis: the mechanism is (claim_epsilon, claim_delta)-DP. Each rigorous bound that carries
its evidence (the threshold tests of Clopper-Pearson, the counts of one-run) yields a valid p-value
for this null at the claimed delta; when several rigorous bounds are combined the smallest p-value is
Bonferroni-corrected by their number. VIOLATION when that p-value is at most 1 - confidence (for a
single Clopper-Pearson bound: exactly when its bound exceeds the claim); otherwise INCONCLUSIVE when
the ceiling of the estimators that ran (``estimator_ceiling``: what they could certify with a perfect
attack at this budget) cannot exceed the claim; otherwise PASS (no evidence
against the claim). Model-based and Bayesian bounds are never used to declare a violation.
"""

from __future__ import annotations

from dataclasses import dataclass

from accounting.errors import require_number
from attacks.estimators.binomial import tests_p_value
from attacks.estimators.one_run import one_run_p_value
from attacks.estimators.types import EpsilonBound, _plain
from attacks.planner import bonferroni_ceiling, max_certifiable_epsilon, perfect_test_ceiling

VIOLATION, PASS, INCONCLUSIVE = "VIOLATION", "PASS", "INCONCLUSIVE"
STATUSES = (VIOLATION, PASS, INCONCLUSIVE)


@dataclass(frozen=True)
class Verdict:
    status: str                      # one of STATUSES
    p_value: float | None            # for the null "the claim holds"; None without rigorous evidence
    best_bound: EpsilonBound | None  # the largest rigorous bound (None if there is none)
    ceiling: float                   # the most the estimators that ran could certify with these trials
    reason: str

    def to_dict(self) -> dict:
        return {"status": self.status, "p_value": self.p_value,
                "best_bound": None if self.best_bound is None else self.best_bound.to_dict(),
                "ceiling": _plain(self.ceiling), "reason": self.reason}


def bound_p_value(bound: EpsilonBound, claim_epsilon: float, claim_delta: float) -> float | None:
    """A valid p-value for "(claim_epsilon, claim_delta)-DP" from one rigorous bound, if computable.

    Falls back, for a rigorous bound without stored evidence, to the conservative "1 - confidence if
    the bound exceeds the claim at a delta >= the claimed one, else 1".
    """
    if not bound.rigorous:
        return None
    details = bound.details or {}
    if "claim_p_value" in details and details.get("claim_epsilon") == claim_epsilon and bound.delta == claim_delta:
        return float(details["claim_p_value"])  # computed by the estimator for this claim (one-run-weighted)
    if "tests" in details:
        return tests_p_value(details["tests"], claim_epsilon, claim_delta)
    if bound.method == "one-run" and {"canaries", "guesses", "correct"} <= set(details):
        p = one_run_p_value(claim_epsilon, claim_delta, details["canaries"], details["guesses"],
                            details["correct"])
        return min(1.0, p * details.get("corrected_for", 1))
    if bound.method == "one-run-split-median" and "split_counts" in details:
        from attacks.estimators.one_run_split import split_median_p_value

        return split_median_p_value(details, claim_epsilon, claim_delta)
    exceeds = bound.epsilon > claim_epsilon and bound.delta >= claim_delta * (1 - 1e-12)
    return 1.0 - bound.confidence if exceeds else 1.0


def violation_reason(decider: tuple, rigorous: int, claim_epsilon: float, claim_delta: float, confidence: float,
                     best: tuple | None = None) -> str:
    """Why a claim is a VIOLATION, naming the test that rejected it: ``decider`` = (method, its bound, the bound's
    confidence, its p-value for the claim), the rigorous estimator with the smallest p-value; ``rigorous``: how many
    rigorous p-values the Bonferroni correction is over; ``best``: (method, epsilon) of the largest rigorous bound,
    named too when another estimator gave it."""
    method, bound, bound_confidence, p_own = decider
    level = 1.0 - confidence
    text = f"{method} rejects the claim epsilon = {claim_epsilon:g} at delta = {claim_delta:g}: p = {p_own:.3g}"
    if rigorous > 1:
        text += f", {min(1.0, rigorous * p_own):.3g} after Bonferroni over {rigorous} rigorous estimators,"
    text += f" at most {level:.3g} ({confidence:.0%} confidence); "
    if bound > claim_epsilon:
        text += f"it certifies epsilon >= {bound:.4g} with {bound_confidence:.4g} confidence"
    else:  # the bound must reject every epsilon from 0 up, the test only the claim
        text += (f"its own lower bound, {bound:.4g} with {bound_confidence:.4g} confidence, stops below the claim "
                 "(the bound must reject every smaller epsilon too)")
    if best is not None and best[0] != method and best[1] > bound:
        text += f"; best rigorous bound {best[1]:.4g} ({best[0]})"
    return text + "."


def deciding_test(bounds, p_values) -> tuple | None:
    """``(method, epsilon, confidence, p)`` of the rigorous bound with the smallest p-value (``p_values``: one per
    bound, None where not computable), the test a Bonferroni verdict rests on; None without any p-value."""
    pairs = [(p, b) for b, p in zip(bounds, p_values, strict=True) if p is not None]
    if not pairs:
        return None
    p, b = min(pairs, key=lambda pair: pair[0])
    get = b.get if isinstance(b, dict) else lambda key: getattr(b, key)
    return get("method"), float(get("epsilon")), float(get("confidence")), float(p)


def estimator_ceiling(bounds, trials: int, claim_delta: float, confidence: float) -> float:
    """The most the rigorous estimators that ran could certify against the claim with a perfect attack:
    each stored threshold test at the significance the verdict uses (1 - confidence over its tests and
    over the number of rigorous estimators), every trial on the right side. For the default estimator
    on scores this is ``planner.bonferroni_ceiling(trials)``, the figure ``plan`` prints. A rigorous bound
    without stored tests is capped by the single-threshold ceiling; with no rigorous bound, the default
    estimator's ceiling is reported."""
    rigorous = [b for b in bounds if b.rigorous]
    if not rigorous:
        return bonferroni_ceiling(trials, claim_delta, confidence)
    alpha = (1.0 - confidence) / len(rigorous)
    best = 0.0
    for bound in rigorous:
        tests = (bound.details or {}).get("tests")
        if not tests:
            best = max(best, max_certifiable_epsilon(trials, claim_delta, 1.0 - alpha))
            continue
        per_test = alpha / max(1, int(tests["corrected_for"]))
        for n_lower, n_upper in set(zip(tests["lower_totals"], tests["upper_totals"], strict=True)):
            best = max(best, perfect_test_ceiling(n_lower, n_upper, claim_delta, per_test))
    return best


def decide(claim_epsilon: float, claim_delta: float, bounds, trials: int,
           confidence: float = 0.95) -> Verdict:
    """Verdict on the claim from the estimators' ``bounds`` and the trials per world behind them."""
    claim_epsilon = require_number("claim_epsilon", claim_epsilon, low=0.0)
    claim_delta = require_number("claim_delta", claim_delta, low=0.0, high=1.0, low_open=True, high_open=True)
    confidence = require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    ceiling = estimator_ceiling(bounds, trials, claim_delta, confidence)
    rigorous = [b for b in bounds if b.rigorous]
    best = max(rigorous, key=lambda b: b.epsilon, default=None)
    joint = f", {confidence:.0%} confidence as the best of {len(rigorous)}" if len(rigorous) > 1 else ""
    each = [bound_p_value(b, claim_epsilon, claim_delta) for b in rigorous]
    p_values = [p for p in each if p is not None]
    p_value = min(1.0, len(p_values) * min(p_values)) if p_values else None
    level = 1.0 - confidence
    if p_value is not None and p_value <= level:
        return Verdict(VIOLATION, p_value, best, ceiling,
                       violation_reason(deciding_test(rigorous, each), len(p_values), claim_epsilon, claim_delta,
                                        confidence, (best.method, best.epsilon)))
    if ceiling <= claim_epsilon:
        return Verdict(INCONCLUSIVE, p_value, best, ceiling,
                       f"with {trials} trials per world the estimators used cannot certify more than "
                       f"epsilon = {ceiling:.4g} at delta = {claim_delta:g} even for a perfect attack, so "
                       f"the claim {claim_epsilon:g} cannot be refuted; use more trials (`dpaudit plan "
                       f"--claim-epsilon {claim_epsilon:g} --delta {claim_delta:g}`).")
    shown = "no rigorous bound" if best is None else f"best rigorous bound {best.epsilon:.4g} ({best.method}{joint})"
    return Verdict(PASS, p_value, best, ceiling,
                   f"no evidence against the claim epsilon = {claim_epsilon:g}: {shown}; the estimators used "
                   f"could certify at most {ceiling:.4g}.")
