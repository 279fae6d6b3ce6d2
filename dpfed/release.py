"""The tight epsilon of what a private run releases (for audit targets and probes)."""

from __future__ import annotations

from accounting.mechanisms import Composition, Mechanism


def tight_epsilon(composition: Composition, delta: float) -> float:
    """Epsilon at ``delta``: the closed form for Gaussians without subsampling, else PLD."""
    from accounting.registry import account_all

    for result in account_all(composition, delta, names=["exact", "pld"]):
        if result.ok:
            return float(result.epsilon)
    raise ValueError(f"no tight accountant answers for {composition!r}")


def repeated_release_epsilon(mechanism: Mechanism, count: int, delta: float) -> tuple[Composition, float]:
    """What a run releases about one unit (``count`` runs of ``mechanism``) and its tight epsilon."""
    composition = Composition.of(mechanism, int(count))
    return composition, tight_epsilon(composition, delta)
