"""Flag accountant results that disagree beyond what theory allows.

Theory: moments >= rdp (same RDP, looser orders and conversion); rdp >= pld and rdp >= prv (RDP
conversions are upper bounds on the tight profile); pld and prv estimate the same tight value (prv
within its ``eps_error``, pld within its discretisation); exact is the tight value itself.

dp-accounting's PLD rounds every release's losses up to its grid, so its epsilon exceeds the tight one by
at most releases composed x grid interval (``accounting.pld``); where that is wide (large noise, many
releases: per-release losses far below the 1e-4 grid) a PLD above RDP is that rounding, not a
contradiction, and the tolerance says so.
"""

from __future__ import annotations

import math

from accounting.base import AccountingResult

PLD_TOLERANCE = 0.02  # absolute epsilon slack for dp-accounting's pessimistic discretisation
PRV_TOLERANCE = 0.02  # opacus eps_error 0.01 plus slack


def disagreements(results: list[AccountingResult]) -> list[str]:
    """One sentence per pair of accountants whose epsilons contradict the expected ordering."""
    eps = {r.name: r.epsilon for r in results if r.ok}
    slack = {r.name: (r.details or {}) for r in results if r.ok}
    prv_tol = max(PRV_TOLERANCE, 2 * slack.get("prv", {}).get("eps_error", 0.0))
    pld = slack.get("pld", {})
    pld_rounding = pld.get("value_discretization_interval", 0.0) * pld.get("releases_composed", 100)
    pld_tol = max(PLD_TOLERANCE, pld_rounding)
    notes = []

    def at_least(upper: str, lower: str, slack: float):
        # an infinite upper bound (pld/prv at extreme deltas) contradicts nothing
        if upper in eps and lower in eps and math.isfinite(eps[lower]) and eps[upper] < eps[lower] - slack:
            notes.append(f"{upper} ({eps[upper]:.4f}) is below {lower} ({eps[lower]:.4f}), which theory forbids")

    at_least("moments", "rdp", 1e-6)
    at_least("rdp", "pld", pld_tol)
    at_least("rdp", "prv", prv_tol)
    eps = {name: value for name, value in eps.items() if math.isfinite(value) or name == "exact"}
    if "pld" in eps and "prv" in eps and abs(eps["pld"] - eps["prv"]) > pld_tol + prv_tol:
        notes.append(f"pld ({eps['pld']:.4f}) and prv ({eps['prv']:.4f}) differ by more than their stated errors")
    if "exact" in eps and "pld" in eps and abs(eps["exact"] - eps["pld"]) > pld_tol:
        notes.append(f"pld ({eps['pld']:.4f}) differs from the closed form ({eps['exact']:.4f})")
    return notes
