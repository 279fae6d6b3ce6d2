"""``dpaudit flower`` on Flower's own DP examples and on our outside apps of each style, on Flower's real simulation
engine (Ray), as the README runs them: exit code, verdict, the critical findings, the clients' composed epsilons and
the wall time of each command (Ray's start and stop included). The suite runs the same apps on the in-process grid
(``tests/flower/test_observed_apps.py``); this records what the real engine gives.

    .venv/bin/python benchmarks/flower_observed_apps.py > benchmarks/flower_observed_apps_output.txt
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    "tests/flower_examples/fl_dp_sa --num-supernodes 20 --run-config 'num-sampled-clients=4'",
    "tests/flower_examples/fl_dp_sa --num-supernodes 20 --run-config 'num-sampled-clients=8'",
    "tests/flower_examples/fl_dp_sa --num-supernodes 20",  # as shipped: num-sampled-clients = 20
    "tests/flower_examples/opacus",
    "tests/flower_examples/opacus --claimed-epsilon 7",
    "tests/flower_apps/waiting_main --num-supernodes 4",
    "tests/flower_apps/waiting_main --num-supernodes 4 --run-config 'noise-scale=0.5'",
    "tests/flower_apps/legacy_server_fn --num-supernodes 6",
    "tests/flower_apps/legacy_server_fn --num-supernodes 6 --run-config 'noise-scale=0.5'",
    "tests/flower_apps/secagg_workflow --num-supernodes 6",
    "tests/flower_apps/secagg_workflow --num-supernodes 6 --run-config 'noise-scale=0.5'",
    "tests/flower_apps/opacus_kept",
    "tests/flower_apps/opacus_kept --run-config 'noise-scale=0.5'",
    "tests/flower_apps/local_dp --num-supernodes 4",
]


def run(command: str, out: Path) -> dict:
    argv = [str(ROOT / ".venv" / "bin" / "dpaudit"), "flower", *shlex.split(command), "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode == 2:
        return {"exit": 2, "seconds": seconds, "error": done.stderr.strip().splitlines()[-1]}
    audit = json.loads((out / "report.json").read_text())  # --out DIR writes DIR/report.json
    return {"exit": done.returncode, "seconds": seconds, "verdict": audit["verdict"], "audit": audit}


def summary(command: str, result: dict) -> list[str]:
    lines = [f"$ dpaudit flower {command}", f"  exit {result['exit']} in {result['seconds']:.1f} s"]
    if "error" in result:
        return lines + [f"  {result['error']}"]
    audit = result["audit"]
    lines[-1] += f": {audit['verdict']}"
    for start in audit["starts"]:
        rounds = start["recorded_rounds"] or start["rounds"]
        secure = f", {start['workflow']}" if start["secure_aggregation"] else ""
        lines.append(f"  ran {start['strategy']} via {start['entry']}, rounds {rounds}{secure}")
    for row in audit["clients"].values():
        lines.append(f"  client partition {row['partition']}: {row['steps']} opacus steps, "
                     f"z {row['noise_multipliers']}, composed epsilon {row['composed_epsilon']:.4g} "
                     f"(opacus RDP {row['composed_opacus_rdp']:.4g}), reported {row['reported_epsilon']}")
    for row in list(audit["local_dp"].values())[:1]:
        lines.append(f"  each client: {row['rounds']} LocalDpMod releases, composed epsilon "
                     f"{row['composed_epsilon']:.4g}")
    for finding in audit["findings"]:
        if finding["severity"] in ("critical", "medium"):
            lines.append(f"  {finding['severity'].upper()} {finding['code']}: {finding['message'][:220]}")
    return lines


def main() -> int:
    if shutil.which("dpaudit", path=str(ROOT / ".venv" / "bin")) is None:
        print("run from a checkout with .venv set up (the README's test command)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work:
        for index, command in enumerate(COMMANDS):
            print("\n".join(summary(command, run(command, Path(work) / str(index)))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
