"""An algorithm-level planted bug, declared on the target, is what the audit's end-to-end probe runs: the
accountants (which read the described mechanism) prove the claim, the probe refutes it, and the verdict
is a VIOLATION by the ``implementation-bug`` rule; the correct twin passes.

DP-Fed-PNE, a client that uploads its un-noised mean in its final (horizon-cut) phase, 1500 trials per
world, fixed seed. False-failure probability: the twin's rigorous bound exceeds the claim with
probability at most 5% (the Clopper-Pearson level) for a random seed; the seed is fixed, so the test is
deterministic."""

from reports.audit import AuditOptions
from reports.audit.model import Claim, ProbeSpec, TargetSpec
from reports.audit.runner import run_audit


def _target(bug: str) -> TargetSpec:
    return TargetSpec(
        f"DP-Fed-PNE, planted_bug={bug}",
        "dp-fed-pne",
        Claim(1.0, 1e-5, "replace-one", "one reward"),
        parameters={"horizon": 5, "calibration": "classic", "planted_bug": bug},
        probes=(ProbeSpec("pne-end-to-end", "end-to-end", 1500, {"final_upload": True}),),
        accountants=("exact",),
        utility_runs=1,
    )


def test_the_end_to_end_probe_catches_the_target_s_planted_bug_and_passes_its_twin():
    options = AuditOptions(seed=7, executor="inprocess", progress=False, estimate=False)
    buggy, correct = run_audit([_target("unnoised-final-upload"), _target("none")], options, log=lambda _: None)
    assert buggy.verdict.status.value == "VIOLATION" and buggy.verdict.rule == "implementation-bug"
    assert buggy.verdict.analytic.status.value == "PROVED"
    assert buggy.verdict.empirical.lower_bound.epsilon > 1.0
    assert correct.verdict.status.value == "PASS"
    assert buggy.parameters["planted_bug"] == "unnoised-final-upload" and "planted_bug" not in correct.parameters
