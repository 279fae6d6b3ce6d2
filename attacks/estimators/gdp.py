"""The GDP route (Nasr et al. 2023): a model-based epsilon from a fitted Gaussian trade-off curve.

If the mechanism is mu-GDP then every test satisfies mu >= Phi^-1(1 - FPR) - Phi^-1(FNR); with
Clopper-Pearson upper bounds on both error rates (Bonferroni over all candidate thresholds, both
directions) the largest such value is a valid lower bound on mu, clamped at 0 (a negative value is no
evidence). It becomes an epsilon at ``delta`` through the tight Gaussian profile. The step from mu to
epsilon is only valid if the mechanism's trade-off curve is Gaussian-shaped (true for compositions of
Gaussian mechanisms observed white-box), so the bound is labelled model-based (``rigorous=False``).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from accounting.errors import require_number
from accounting.exact import gaussian_epsilon
from attacks.estimators.binomial import check_audit_inputs, cp_lower, cp_upper
from attacks.estimators.thresholds import as_sorted, order_statistic_tests
from attacks.estimators.types import EpsilonBound

DEFAULT_CANDIDATES = 32


def gdp_lower_bound(scores_out, scores_in, delta: float, confidence: float = 0.95,
                    candidates: int = DEFAULT_CANDIDATES) -> EpsilonBound:
    """Model-based epsilon lower bound at ``delta`` from the largest certified GDP parameter mu."""
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, delta, confidence)
    candidates = int(require_number("candidates", candidates, low=1, integer=True))
    tests = order_statistic_tests(as_sorted(out_scores), as_sorted(in_scores), candidates)
    m = len(tests)
    alpha = (1.0 - confidence) / m / 2  # per rate per test
    lower = cp_lower(tests.lower_counts, tests.lower_totals, alpha)   # TPR or TNR
    upper = cp_upper(tests.upper_counts, tests.upper_totals, alpha)   # FPR or FNR
    with np.errstate(divide="ignore", invalid="ignore"):
        mus = special.ndtri(lower) - special.ndtri(upper)
    mus = np.where(np.isfinite(mus) & (mus > 0), mus, 0.0)
    i = int(np.argmax(mus))
    mu = float(mus[i])
    eps = gaussian_epsilon(mu, delta) if mu > 0 else 0.0
    return EpsilonBound(
        method="gdp", epsilon=eps, delta=float(delta), confidence=float(confidence), rigorous=False,
        assumptions="Model-based: assumes the mechanism's trade-off curve is Gaussian (mu-GDP); mu is "
                    "bounded with Clopper-Pearson, Bonferroni over order-statistic thresholds.",
        details={"mu_lower_bound": mu, "direction": str(tests.direction[i]),
                 "threshold": float(tests.threshold[i]), "lower_rate_bound": float(lower[i]),
                 "upper_rate_bound": float(upper[i]), "thresholds_tried": int(m)},
    )
