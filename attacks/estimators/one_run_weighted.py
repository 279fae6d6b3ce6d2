"""One-run auditing from continuous canary signals, rigorous: weighted guesses tested against (eps, delta)-DP.

Setting as in ``one_run`` (Steinke, Nasr, Jagielski 2023): m canaries, each included by an independent fair coin
S_i drawn before the run; the auditor sees the output Y and, per canary, a continuous score s_i(Y) that depends on
the output alone (a canary-aligned signal, higher meaning "in", e.g. the log-likelihood ratio
``dpfed.dpsgd.loop_canaries`` sums). From the scores alone it guesses "in" or "out" (g_i = +1 or -1) for canaries,
gives each guess a weight G_i(Y) >= 0 (0: abstain) and counts the weight of the right guesses,
W = sum_i G_i [g_i = b_i] = (sum_i G_i + sum_i b_i g_i G_i) / 2 (b_i = +1 in, -1 out): the signed sum of the
weighted canary-aligned guesses. Steinke et al. count guesses (G_i in {0, 1}); weights let a canary count as much
as its signal stands out.

**Why the test is valid (finite sample; proved here, the counted case is Steinke et al.'s).** Let the mechanism be
(eps, delta)-DP towards each canary (add/remove, whatever the other canaries' coins), q = e^eps / (1 + e^eps), and
c_i = [guess_i = S_i]. (i) For any h(Y, S_1..S_i-1) in [0, 1]: E[h c_i] <= q E[h] + delta / (1 + e^eps). Given the
other coins, Y with canary i in and Y with it out are neighbouring outputs; the (eps, delta) inequality applied to
the tests h [guess in] and h [guess out], each world with probability 1/2, gives E[h c_i] <= e^eps E[h (1 - c_i)]
+ delta. (ii) Let A(Y) be any set of correctness vectors closed upwards and chosen from Y alone, and V_i the
probability that (c_1..c_i, C_i+1..C_m) lies in A(Y), the C_j independent Bernoulli(q). V_i grows with c_i by a
Delta_i in [0, 1] that depends on (Y, S_1..S_i-1), so by (i) E V_i <= E V_i-1 + delta / (1 + e^eps); hence
P[c in A(Y)] <= E P_C[C in A(Y)] + m delta / (1 + e^eps). With A the union, over the weight rules r, of
"W_r >= its (1 - level) quantile under independent Bernoulli(q) guesses", the test that rejects when some rule's
exact tail P_C[sum_j G_rj C_j >= W_r] is at most level = (alpha - m delta / (1 + e^eps)) / rules has size <= alpha.
Nothing here is asymptotic or assumes a shape of the signals; it needs the coins independent and fair, the scores
and weights functions of the output alone, and the claim to hold towards every canary.

**The weights** (``weight_rules``; no coin seen) grow with how extreme a canary's signal is among all the canaries:
with u_i = (rank of s_i - 1/2) / m (tied scores share their mean rank) and a threshold quantile u0 in
``THRESHOLDS``, the "in" rules guess "in" with weight (u_i - u0)_+ (the top 1 - u0 of the canaries, the highest
weighed most) and the "both" rules guess "in" above the median and "out" below it with weight
(|2 u_i - 1| - (2 u0 - 1))_+ (the same fraction at each end); the weights are rounded to the integers 0..``LEVELS``,
so the tail is a sum of scaled binomials, computed exactly by convolution. These are the continuous form of
Steinke et al.'s top-k guesses: a canary counts the more the further its signal lies from the others'. They depend
on the scores' order only, so a signal computed under the claimed noise loses nothing when the real noise is lower
and its scale (even its sign) is off; the "in" rules use that subsampled canaries are detected when present far
more surely than when absent.

**The bound**: the largest eps such that every eps' <= eps is rejected, Bonferroni over the rules. The tail grows
with eps and the delta term falls, so it is found as an increasing sequence eps_k, each step rejecting all of
[eps_k-1, eps_k] with the delta term taken at eps_k-1. Where m delta / 2 exceeds half of alpha the test cannot
reject near eps = 0 (the delta term alone uses the level), so every eps' below ``start_epsilon`` (where the delta
term is alpha / 2) is tested by the test of ``start_epsilon`` itself: valid, since a mechanism (eps', delta)-DP is
(eps, delta)-DP for every eps >= eps' (Bonferroni is unchanged: one test per eps, fixed before the data). Without
this the bound read 0 at m = 10^4, delta = 1e-5 while the test of a claim above ``start_epsilon`` still rejected.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, signal, special, stats

from accounting.errors import ConfigurationError, require_number
from attacks.estimators.types import EpsilonBound

THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98)
SIDES = ("in", "both")
LEVELS = 16         # integer weight levels: the tail is exact on this lattice
SLACK = 1e-9        # added to every computed tail probability: covers the FFT convolution's rounding
EPSILON_MAX = 64.0  # beyond it q rounds to 1 in floating point: every tail is 1
TOLERANCE = 1e-7    # bisection width in epsilon

ASSUMPTIONS = ("Canaries included independently with probability 1/2 in one run; scores and weights depend only on "
               "the output; the weighted count of right guesses is tested against its worst case under (eps, "
               "delta)-DP (independent Bernoulli(e^eps / (1 + e^eps)) guesses, plus m delta / (1 + e^eps)), exactly "
               "and in finite samples; Bonferroni over the weight rules.")


def check_signals(scores, included) -> tuple[np.ndarray, np.ndarray]:
    """Scores and inclusion flags as arrays of one entry per canary (ConfigurationError otherwise)."""
    scores = np.asarray(scores, dtype=float).ravel()
    included = np.asarray(included).ravel()
    if scores.size == 0:
        raise ConfigurationError("scores", "no canaries: give one score per canary")
    if included.size != scores.size:
        raise ConfigurationError("included", f"needs one inclusion flag per canary score: {included.size} flags "
                                 f"for {scores.size} scores")
    if not np.all(np.isin(included, (0, 1))):
        raise ConfigurationError("included", "inclusion flags must be 0/1 or booleans")
    if not np.all(np.isfinite(scores)):
        raise ConfigurationError("scores", "every canary score must be a finite number")
    return scores, included.astype(bool)


def weight_rules(scores, thresholds=THRESHOLDS, sides=SIDES) -> list[tuple[str, float, np.ndarray, np.ndarray]]:
    """``(side, threshold quantile, guesses "in", integer weights 0..LEVELS)`` of each rule, from the scores alone
    (their ranks; module docstring)."""
    scores = np.asarray(scores, dtype=float)
    u = (stats.rankdata(scores) - 0.5) / scores.size
    rules = []
    for side in sides:
        for u0 in thresholds:
            excess = np.maximum(u - u0, 0.0) if side == "in" else np.maximum(np.abs(2 * u - 1) - (2 * u0 - 1), 0.0)
            top = float(excess.max(initial=0.0))
            weights = np.rint(excess / top * LEVELS).astype(int) if top > 0 else np.zeros(scores.size, dtype=int)
            rules.append((side, float(u0), u > 0.5, weights))
    return rules


def rule_summary(weights: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, int]:
    """What a rule's test needs: the number of canaries at each weight level, and the weight of the right guesses."""
    return np.bincount(weights, minlength=LEVELS + 1), int(weights[correct].sum())


def weighted_tail(counts, value: int, q: float) -> float:
    """P[sum_k k B_k >= value], B_k ~ Binomial(counts[k], q) independent (level 0 ignored), plus ``SLACK``."""
    if value <= 0:
        return 1.0
    pmf = np.ones(1)
    for k in np.flatnonzero(np.asarray(counts)[1:]) + 1:
        n = int(counts[k])
        lattice = np.zeros(k * n + 1)
        lattice[::k] = stats.binom.pmf(np.arange(n + 1), n, q)
        pmf = signal.fftconvolve(pmf, lattice)
    return float(min(1.0, np.clip(pmf[int(value):], 0.0, None).sum() + SLACK))


def delta_term(canaries: int, delta: float, epsilon: float) -> float:
    """m delta / (1 + e^eps): what approximate DP adds to the p-value."""
    return canaries * delta * float(special.expit(-epsilon))


def weighted_p_value(epsilon: float, delta: float, summaries, canaries: int) -> float:
    """Valid p-value of "(epsilon, delta)-DP towards each canary" from the rules' ``rule_summary``s."""
    q = float(special.expit(epsilon))
    tail = min(weighted_tail(counts, value, q) for counts, value in summaries)
    return min(1.0, len(summaries) * tail + delta_term(canaries, delta, epsilon))


def _rule_epsilon(counts, value: int, level: float, start: float) -> float:
    """The largest eps >= ``start`` (to ``TOLERANCE``) whose tail is at most ``level``; ``start`` when none is."""
    def excess(eps):
        return weighted_tail(counts, value, float(special.expit(eps))) - level

    if value <= 0 or excess(start) > 0:
        return start
    low, high = start, start + 1.0
    while high < EPSILON_MAX and excess(high) <= 0:
        low, high = high, min(2.0 * high, EPSILON_MAX)
    if excess(high) <= 0:
        return high
    root = optimize.brentq(excess, low, high, xtol=TOLERANCE / 4)  # then kept only where it passes
    for candidate in (root, root - TOLERANCE):
        if low <= candidate and excess(candidate) <= 0:
            return candidate
    while high - low > TOLERANCE:  # invariant: low passes, high does not
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) <= 0 else (low, middle)
    return low


def start_epsilon(canaries: int, delta: float, alpha: float) -> float:
    """0, or where m delta / 2 > alpha / 2: the eps at which the delta term m delta / (1 + e^eps) is alpha / 2; the
    epsilons below it are tested by its test (module docstring). Depends on m, delta and alpha only."""
    share = alpha / (2.0 * canaries * delta) if delta > 0 else 1.0  # the delta term at eps, over m delta: expit(-eps)
    return 0.0 if share >= 0.5 else float(np.log(1.0 / share - 1.0))


def largest_rejected(summaries, canaries: int, delta: float, alpha: float) -> tuple[float, int | None]:
    """``(eps, rule)``: every eps' <= eps rejected at ``alpha`` (module docstring); the rule that reached it."""
    eps, best = start_epsilon(canaries, delta, alpha), None
    if eps > 0:  # the epsilons below ``start`` are rejected exactly when its own test rejects
        level = (alpha - delta_term(canaries, delta, eps)) / len(summaries)
        q = float(special.expit(eps))
        room = [weighted_tail(counts, value, q) for counts, value in summaries]
        if min(room) > level:
            return 0.0, None
        best = int(np.argmin(room))
    for _ in range(50):
        level = (alpha - delta_term(canaries, delta, eps)) / len(summaries)
        if level <= 0:
            break
        reached, which = eps, best
        q = float(special.expit(eps))
        room = [weighted_tail(counts, value, q) for counts, value in summaries]
        for i in np.argsort(room, kind="stable"):  # the rule with the most room first: the others rarely pass it
            if room[i] > level:
                break
            found = _rule_epsilon(*summaries[i], level, reached)
            if found > reached:
                reached, which = found, int(i)
        if reached - eps <= TOLERANCE:
            break
        eps, best = reached, which
    return eps, best


def one_run_weighted_ceiling(canaries: int, delta: float, confidence: float = 0.95) -> float:
    """The most ``one_run_weighted_from_scores`` can certify with ``canaries`` canaries of distinct scores: every
    guess right (tail q^r, r the most canaries a rule weighs), Bonferroni over the rules."""
    m = int(require_number("canaries", canaries, low=1, integer=True))
    rules = weight_rules(np.arange(m))
    weighed = max(int((weights > 0).sum()) for *_, weights in rules)
    alpha = 1.0 - confidence
    start = eps = start_epsilon(m, delta, alpha)
    if weighed == 0:
        return 0.0
    for _ in range(50):
        room = (alpha - delta_term(m, delta, eps)) / len(rules) - SLACK  # q^r + SLACK <= level
        if room <= 0:
            break
        reached = min(float(special.logit(room ** (1.0 / weighed))), EPSILON_MAX) if room < 1 else EPSILON_MAX
        if eps == start and reached < start:  # not even the first test rejects
            return 0.0
        if reached - eps <= TOLERANCE:
            return max(eps, reached)
        eps = reached
    return eps


def one_run_weighted_from_scores(scores, included, delta: float, confidence: float = 0.95,
                                 claim: float | None = None) -> EpsilonBound:
    """Rigorous one-run lower bound on epsilon at ``delta`` from per-canary scores and inclusion coins (module
    docstring); ``claim``: also the p-value of "(claim, delta)-DP" (details ``claim_p_value``, for the one-run
    decision)."""
    scores, included = check_signals(scores, included)
    require_number("delta", delta, low=0.0, high=1.0, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    rules = weight_rules(scores)
    summaries = [rule_summary(weights, guesses == included) for _, _, guesses, weights in rules]
    m = scores.size
    eps, best = largest_rejected(summaries, m, float(delta), 1.0 - confidence)
    best = 0 if best is None else best
    side, threshold, guesses, weights = rules[best]
    correct = (weights > 0) & (guesses == included)
    details = {"canaries": m, "guesses": int((weights > 0).sum()), "correct": int(correct.sum()),
               "weighted_correct": summaries[best][1], "weight_total": int(weights.sum()),
               "threshold_quantile": threshold, "in_only": int(side == "in"), "levels": LEVELS,
               "corrected_for": len(rules)}
    if claim is not None:
        claim = require_number("claim", claim, low=0.0)
        # the claim's test is the bound's own test of it (below ``start_epsilon``: the test of ``start_epsilon``)
        tested = max(claim, start_epsilon(m, float(delta), 1.0 - confidence))
        details.update(claim_epsilon=claim, claim_p_value=weighted_p_value(tested, float(delta), summaries, m))
    return EpsilonBound(method="one-run-weighted", epsilon=eps, delta=float(delta), confidence=float(confidence),
                        rigorous=True, assumptions=ASSUMPTIONS, details=details)


__all__ = ["LEVELS", "SIDES", "THRESHOLDS", "check_signals", "largest_rejected", "one_run_weighted_ceiling",
           "one_run_weighted_from_scores", "rule_summary", "start_epsilon", "weight_rules", "weighted_p_value",
           "weighted_tail"]
