"""The dp-flower target's canary section and verdict rules on synthetic canary scores (no flwr needed).

Strong signal: 400 canaries whose +-1 signs shift the cosine by 6 null standard deviations each way: the
rigorous one-run bound certifies above a claim of 0.5 (with a 12-standard-deviation gap nearly every guess is
right, so the p-value, 1.7e-3 at this seed, sits near the floor set by the bound's 2 m delta term). Null scores
give a VIOLATION with probability at most 5% by the bound's validity; the seed is fixed."""

import numpy as np

from reports.audit.model import (
    Analytic,
    AnalyticResult,
    Bound,
    Claim,
    Empirical,
    EmpiricalResult,
    Finding,
    Status,
    TargetVerdict,
)
from reports.audit.target_flower import canary_section
from reports.audit.verdicts import CRITICAL_FINDING_RULE, with_critical_findings

DIM = 650


def _audit(shift: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    signs = np.where(rng.random(400) < 0.5, 1, -1)
    a = (DIM - 1) / 2
    scores = {m: (2 * rng.beta(a, a, 400) - 1 + signs * shift / np.sqrt(DIM)).tolist()
              for m in ("final_model", "all_iterates")}
    canaries = {"signs": signs.tolist(), **{m: {"scores": s} for m, s in scores.items()}}
    settings = {"seed": seed, "rounds": 2, "nodes": 10, "canaries": 400, "sampled": 410, "noise_multiplier": 1.0,
                "clip": 1.0}
    return {"settings": settings, "canaries": canaries}


CLAIM = Claim(0.5, 1e-5, "replace-one", "one client")


def test_strong_canaries_violate_a_small_claim_and_null_ones_do_not():
    strong = canary_section(_audit(6.0, 1), CLAIM, 0.95)
    assert strong.outcome == "ran" and strong.status == "VIOLATION" and strong.p_value < 0.01
    assert strong.best_rigorous()["epsilon"] > 0.5
    null = canary_section(_audit(0.0, 2), CLAIM, 0.95)
    assert null.status in ("CONSISTENT", "UNTESTABLE") and null.p_value > 0.05
    assert {(b["threat_model"], b["method"]) for b in null.bounds} == {
        (m, e) for m in ("final_model", "all_iterates") for e in ("one-run", "fdp-one-run")}


def test_a_critical_finding_makes_a_passing_target_a_violation():
    empirical = EmpiricalResult(Empirical.CONSISTENT, None, 2.0, 1, (), (), 0.95, 0.5)
    passing = TargetVerdict(Status.PASS, "proved", AnalyticResult(Analytic.PROVED, 1.0, "pld"), empirical,
                            Bound(1.0, "pld"), None)
    medium = Finding("flower-check", "medium", {"code": "weighted-by-examples"})
    critical = Finding("flower-check", "critical", {"code": "noise-below-accounted"})
    assert with_critical_findings(passing, [medium]) is passing
    changed = with_critical_findings(passing, [medium, critical])
    assert (changed.status, changed.rule) == (Status.VIOLATION, CRITICAL_FINDING_RULE)


def test_a_replace_one_claim_reaches_the_configuration_check(monkeypatch):
    """The target hands a replace-one claim to the configuration check (which refutes one below the pair
    Flower's sampler realises, tests/flower/test_config_check.py) and no add/remove one (another unit).
    Needs flwr importable (the target checks for it before running); the Flower run itself is replaced."""
    import pytest

    pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")
    import dpfed.flower.audit
    from reports.audit.model import TargetSpec
    from reports.audit.target_flower import FlowerTarget

    seen = []

    def fake_audit(settings, delta, claims, claimed_epsilon, alpha):
        seen.append(claimed_epsilon)
        return {"settings": settings.__dict__, "canaries": None}

    monkeypatch.setattr(dpfed.flower.audit, "audit_example", fake_audit)
    for relation, expected in (("replace-one", 2.5), ("add-remove", None)):
        spec = TargetSpec(name="t", algorithm="dp-flower", parameters={"nodes": 10, "sampled": 4, "rounds": 2},
                          claim=Claim(2.5, 1e-5, relation, "one client"))
        FlowerTarget(spec).own_probe_sections(0, 0.95, lambda message: None)
        assert seen[-1] == expected
