"""Wall time of one FedZero / FKM run (and their private variants) at T = n = 10^4, transcript included.

Target (issue 12): at most 2 s per run on 2 cores. Best of ``--repeats`` runs, wall time and the CPU time
of this process (on a machine shared with other work the CPU time is the better measure of the cost).
Usage: python benchmarks/fedzero_fkm_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# benchmarks/accounting.py would shadow the ``accounting`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from accounting.mechanisms import Gaussian  # noqa: E402
from dpfed.fedzero import FedZeroConfig, run_dp_fedzero, run_fedzero  # noqa: E402
from dpfed.fkm import FKMConfig, run_dp_fkm, run_fkm  # noqa: E402

FKM = FKMConfig(dim=5, horizon=10_000)
FEDZERO = FedZeroConfig(dim=10, workers=4, rounds=10_000)
CASES = {
    "fkm (d=5)": lambda: run_fkm(FKM, 0),
    "dp-fkm event level": lambda: run_dp_fkm(FKM, 0, mechanism=Gaussian(1.0, 2.0)),
    "dp-fkm dataset level (200 records)": lambda: run_dp_fkm(FKM, 0, unit="dataset"),
    "fedzero l2 (d=10, m=4)": lambda: run_fedzero(FEDZERO, 0),
    "fedzero l1 (d=10, m=4)": lambda: run_fedzero(FedZeroConfig(geometry="l1"), 0),
    "dp-fedzero worker, scalar noise": lambda: run_dp_fedzero(FEDZERO, 0, rate=0.5),
    "dp-fedzero worker, vector noise": lambda: run_dp_fedzero(FEDZERO, 0, noise="vector", rate=0.5),
    "dp-fedzero record level (20 records)": lambda: run_dp_fedzero(FEDZERO, 0, unit="record", rate=0.5),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; best of {args.repeats}")
    print(f"{'run at T = 10^4':40s} {'wall (s)':>9s} {'CPU (s)':>8s}   target 2 s")
    for label, case in CASES.items():
        walls, cpus = [], []
        for _ in range(args.repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            case()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        verdict = "ok" if min(cpus) <= 2 else "SLOW"
        print(f"{label:40s} {min(walls):9.2f} {min(cpus):8.2f}   {verdict}")


if __name__ == "__main__":
    main()
