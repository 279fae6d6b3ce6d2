"""The test a mutant of a private variant's release code must fail: that system's bundled audit.

``python benchmarks/mutation_audit.py SYSTEM`` runs the private targets of SYSTEM's bundled audit
(``configs/audit_*.toml``) exactly as ``dpaudit audit --config ...`` plans them (same seed, same target
index, so the same probe seeds, budgets and per-probe confidence), with the exact accountant only and one
utility run (utility is not judged; the exact accountant proves each claim used here). Exit 0: every
target PASS (the mutant survives); 1: a VIOLATION (the audit kills it); 3: another verdict or an error
(the mutant breaks the run; counted apart from the VIOLATIONs by ``mutation_score.py``).

Targets per system (``TARGETS``): ``mechanism`` (the shared ``accounting.mechanisms`` release path) is
audited by ``configs/audit_mechanism.toml`` (Gaussian, Laplace, subsampled Gaussian with a canary beyond
the clip, and the weighted release of the DP-FTS-DE server; sensitivities and clips 2.5; its own accountants,
since the exact one does not cover them); the others by the bundled targets that run the mutated code in
every trial, with stated power (``attacks.power``) where the claim allows it: DP-Fed-PNE's planted-bug matrix
target (its epsilon = 10 targets repeat the same release at less power) and the correct twin of
``audit_algorithm_bugs.toml``'s shared-noise target (its node-difference score); DP-FTS-DE's correct twin
at z = 3 of ``audit_algorithm_bugs.toml`` (the mechanism-level ``fts-server`` probe never runs
``dpfed.fts.server.Server``, and the end-to-end probe of ``audit_dpftsde.toml`` has no power at its claim).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

# benchmarks/attacks.py and benchmarks/accounting.py would shadow the packages when this folder leads sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
ROOT = os.path.dirname(_HERE)

#: system -> [(configuration, names (or name fragments) of its targets that the mutant must fail)]
TARGETS = {
    "mechanism": [
        (
            "configs/audit_mechanism.toml",
            (
                "Gaussian mechanism, analytic calibration, epsilon = 2, sensitivity 2.5",
                "Laplace mechanism, epsilon = 2, sensitivity 2.5",
                "Subsampled Gaussian, Poisson q = 0.35",
                "DP-FTS-DE server release, z = 3",
            ),
        )
    ],
    # the mechanism module's second stage, run by mutation_score.py on the mutants that pass "mechanism": the
    # settings where a changed formula shows (noise z * s at z = s = 10, fixed-size sampling, a clip of 0.5, the
    # weighted server release with concentrated weights); every claim holds under the exact accountant alone
    "mechanism-stress": [
        (
            "configs/audit_mechanism_stress.toml",
            (
                "Gaussian mechanism, noise multiplier 10, sensitivity 10",
                "Subsampled Gaussian, fixed size 1 of 3",
                "Gaussian sum, clip 0.5, canary of norm 2",
                "8 agents, P = 8, z = 2, S = 20",
                "2 agents, P = 2, z = 1, S = 2 (reference weights)",
                "2 agents, P = 2, z = 1, S = 2, canary agent 0",
                "2 agents, P = 2, z = 0.5, S = 1",
            ),
        )
    ],
    # the third stage (on the mutants that pass the first two): a canary spread over four coordinates released with
    # one batch axis, fixed-size sampling in one round, and the few-participant weighted sum with unequal weights,
    # the canary first and second (axes and products that the first two files' probes cannot tell apart)
    "mechanism-axes": [
        (
            "configs/audit_mechanism_axes.toml",
            (
                "canary spread over 4 coordinates, one batch axis",
                "fixed size 1 of 3, z = 1, clip 2.5, one release",
                "canary weight 1/4 of the other's, canary first",
                "canary weight 1/4 of the other's, canary second",
                "negative canary weight (-1/4 of the other's), canary first",
                "negative canary weight (-1/4 of the other's), canary second",
            ),
        )
    ],
    "fedzero": [("configs/audit_fedzero.toml", ("DP-FedZero (ours), worker level, scalar noise",))],
    "fkm": [
        (
            "configs/audit_fkm.toml",
            ("DP-FKM (ours), event level, epsilon = 2", "DP-FKM (ours), event level, noise multiplier 2"),
        ),
        # B = 2.5: a sensitivity written 2 / B or 2 ** B equals 2 B at B = 1 (every target above)
        # B = 10: a sensitivity written 2 + B is 0.6 of 2 B; epsilon 0.5: a calibration to 1.0 adds half the noise
        ("configs/audit_fkm_bound.toml", ("B = 2.5, epsilon = 2", "B = 2.5, noise multiplier 2", "B = 10, epsilon = 2",
                                          "B = 10, noise multiplier 2", "B = 1, epsilon = 0.5")),
    ],
    # DP-FTS-DE's second stage (mutation_score.py runs it on the mutants that pass "fts"): the sampled-weight view,
    # which sees a server that rescales by the sampled weight (T = 10, z = 8, 600 trials; the planted bug's VIOLATION
    # 0.705 against the claim 0.09, the twin's bound 0)
    "fts-sampled-weight": [
        ("configs/audit_dpftsde_sampling.toml", ("correct server (twin of the renormalise-sampled target)",))
    ],
    # reward level too (its epoch mechanism and exact-sum release are code the agent-level target never runs), and a
    # clip that binds on the canary (clip scale 0.25): a release that skips the clip shows
    "duets": [("configs/audit_duets.toml", ("DP-DUETS (ours), agent level, sigma = 2",
                                            "DP-DUETS (ours), agent level, sigma = 2, clip scale 0.25",
                                            "DP-DUETS (ours), reward level, sigma = 2"))],
    # DP-DUETS's second stage (on the mutants that pass "duets"): reward level with the canary's reward 4 c_y, beyond
    # the reward clip, where a release that skips clip_rewards shows (the first stage's canary reward is exactly c_y)
    "duets-canary": [("configs/audit_duets_canary.toml", ("reward level, sigma = 2, canary reward 4 c_y",))],
    "pne": [
        ("configs/audit_dpfedpne.toml", ("(planted-bug matrix)",)),
        # the correct twin whose node-difference score sees noise shared across a client's nodes
        ("configs/audit_algorithm_bugs.toml", ("correct clients (twin of the noise-shared-across-nodes target)",)),
    ],
    "fts": [
        # The planted-bug matrix target (T = 10, 29 agents, claim 0.93 = the tight PLD epsilon of the reference
        # schedule; the replay probe refutes half the server's noise): 8.4 s per audit where the z = 3 twin of
        # audit_algorithm_bugs.toml that the docstring names took 111 s with a rigorous bound of 0 (2026-11-27).
        ("configs/audit_dpftsde.toml", ("(planted-bug matrix)",)),
    ],
}


def accountants(system: str, spec) -> tuple:
    """The exact accountant (it proves every claim of the algorithms' targets), the target's own for the
    bare mechanisms (a composed subsampled Gaussian or a Laplace needs the PLD or RDP)."""
    return tuple(spec.accountants) if system == "mechanism" else ("exact",)


def audit_system(system: str, log=print) -> int:
    """Run SYSTEM's targets; the exit code described in the module docstring."""
    from reports.audit import AuditOptions
    from reports.audit.config import load_config
    from reports.audit.runner import plan_target, run_audit

    code = 0
    for path, names in TARGETS[system]:
        config = load_config(os.path.join(ROOT, path))
        options = AuditOptions(
            seed=config["seed"], confidence=config["confidence"], executor="inprocess", progress=False, estimate=False
        )
        planned = [
            plan_target(dataclasses.replace(spec, utility_runs=1, accountants=accountants(system, spec)), i, options)
            for i, spec in enumerate(config["targets"])
            if any(name in spec.name for name in names)
        ]
        if len(planned) != len(names):
            raise SystemExit(f"{path}: expected {len(names)} targets matching {names}, found {len(planned)}")
        for result in run_audit(planned, options, log=lambda _: None):
            best = {p.name: (p.best_rigorous() or {}).get("epsilon", float("nan")) for p in result.probes}
            bounds = ", ".join(f"{name} {epsilon:.3f}" for name, epsilon in best.items())
            status = result.verdict.status.value
            log(f"{status}: {result.name} (claim {result.claim.epsilon:g}; rigorous bounds: {bounds})")
            code = max(code, {"PASS": 0, "VIOLATION": 1}.get(status, 3))
    return code


def _list_reads(path: str) -> None:
    """Write the repository's Python files this process imported to ``path``, one per line (what the run read of
    the code: ``mutation_score.py`` fingerprints results with them)."""
    names = set()
    for module in list(sys.modules.values()):
        name = os.path.abspath(getattr(module, "__file__", None) or "")
        if name.startswith(ROOT + os.sep) and name.endswith(".py"):
            relative = os.path.relpath(name, ROOT)
            if not relative.startswith((".venv", "..")):
                names.add(relative.replace(os.sep, "/"))
    with open(path, "w") as out:
        out.write("".join(f"{name}\n" for name in sorted(names)))


def main(argv=None) -> int:
    if os.environ.get("MUTATION_READS"):
        import atexit

        atexit.register(_list_reads, os.environ["MUTATION_READS"])
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in TARGETS:
        print(f"usage: mutation_audit.py {{{','.join(TARGETS)}}}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        code = audit_system(argv[0])
    except Exception as exc:  # a mutant that breaks the run: killed, but not by a verdict
        print(f"ERROR: {type(exc).__name__}: {exc}")
        code = 3
    print(f"{time.perf_counter() - start:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
