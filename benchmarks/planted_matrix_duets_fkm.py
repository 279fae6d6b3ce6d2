"""The DP-DUETS / DP-FKM planted-bug matrix of issue 21 with its figures: for each system the bundled
audit's private target (``configs/audit_duets.toml`` / ``audit_fkm.toml``, exact accountant, one utility
run) on the correct code and on each bug planted by ``tests/attacks/test_matrix_*.py``; prints the verdict,
the best rigorous bound, the per-probe bounds and the CPU / wall time. Also the null-world counts of
``tests/attacks/test_null_worlds_duets_fkm.py``.
Usage: ``PYTHONPATH=. python -P benchmarks/planted_matrix_duets_fkm.py``.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.attacks import test_matrix_duets, test_matrix_fkm
from tests.attacks import test_null_worlds_duets_fkm as null


def _row(system: str, bug: str, module) -> None:
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    with pytest.MonkeyPatch.context() as patch:
        if bug != "none":
            module.BUGS[bug](patch)
        result = module._audit_private_target()
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
    probes = ", ".join(f"{p.name} {p.best_rigorous()['epsilon']:.3f}" for p in result.probes if p.bounds)
    bound = result.verdict.empirical.lower_bound
    print(
        f"| {system} | {bug} | {result.verdict.status.value} | {bound.epsilon:.3f} ({bound.source}) "
        f"| {probes} | {cpu:.1f} / {wall:.1f} |"
    )


def _null_counts() -> None:
    for name, params in sorted(null.PROBES.items()):
        rng = np.random.default_rng(2026)
        out = null._scores(null.get_probe(name, **params), 1, null.AUDITS * null.TRIALS, rng)
        inn = null._scores(null.get_probe(name, **params, canary_scale=10.0), 1, null.AUDITS * null.TRIALS, rng)
        print(f"null world {name}: {null._positive_rate(out, inn)}/{null.AUDITS} positive rigorous bounds")


if __name__ == "__main__":
    print("| system | planted bug | verdict | best rigorous bound | per probe | CPU / wall s |")
    for system, module in (("DP-DUETS", test_matrix_duets), ("DP-FKM", test_matrix_fkm)):
        for bug in ["none", *sorted(module.BUGS)]:
            _row(system, bug, module)
    _null_counts()
