"""The DP-FedZero planted-bug matrix row (``tests/attacks/test_matrix_fedzero.py``) with its numbers: each
cell's verdict, every probe's best rigorous bound and the CPU and wall time of the bundled audit of the
DP-FedZero target (``configs/audit_fedzero.toml``, its seed). Run from the repository root:
``python benchmarks/fedzero_matrix.py``."""

from __future__ import annotations

import os
import sys

# benchmarks/attacks.py and benchmarks/accounting.py would shadow the packages when this folder leads sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

from dpfed.fedzero.private import WorkerScalarUplink  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("matrix", ROOT / "tests/attacks/test_matrix_fedzero.py")
matrix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(matrix)

CELLS = {"correct": None, "half noise": matrix._half_noise, "clip skipped": matrix._no_clip,
         "un-noised broadcast": matrix._unnoised_broadcast}

correct = WorkerScalarUplink.aggregate
print("| cell | verdict | fedzero-end-to-end bound | fedzero-broadcast bound | ceiling | CPU s | wall s |")
print("|---|---|---|---|---|---|---|")
for cell, bug in CELLS.items():
    WorkerScalarUplink.aggregate = bug or correct
    wall, cpu = time.perf_counter(), time.process_time()
    result = matrix._private(matrix._audit())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    bounds = {p.name: p.best_rigorous()["epsilon"] for p in result.probes if p.outcome == "ran"}
    ceiling = max(p.ceiling for p in result.probes if p.outcome == "ran")
    print(f"| {cell} | {result.verdict.status.value} | {bounds['fedzero-end-to-end']:.3f} | "
          f"{bounds['fedzero-broadcast']:.3f} | {ceiling:.3f} | {cpu:.1f} | {wall:.1f} |")
WorkerScalarUplink.aggregate = correct
