"""CPU-seconds and wall time of the documented commands in their full form (as README.md and docs/ write them).

The test suite runs every documented command, but a command too slow for it runs there as a smaller variant
(``VARIANTS`` in ``tests/test_readme_commands.py``); its full form is measured here, and the times the pages
quote come from here. Each command runs as written, in its own process, in a scratch directory prepared as the
suite prepares it (``configs/``, the example apps, a small ``LandmineData.mat``, ``my_audit.toml``,
``scores.npy``), so a command reading what an earlier one wrote must be selected after it.

Two CPU figures per command: ``cpu_reaped`` (``getrusage(RUSAGE_CHILDREN)``: the command's process and every
descendant it waited for) and ``cpu_tree`` (the largest CPU time ever seen of each process of its tree, polled
every 0.2 s with psutil: counts descendants that are never reaped, such as Ray's workers, but misses processes
shorter than a poll). CPU-seconds are what to compare across machines; wall time depends on the load.

Run: python -P benchmarks/docs_commands.py --match 'audit --out audit-report' [--match ...] [--json FILE]
     python -P benchmarks/docs_commands.py --list        # every documented command and its suite variant
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_readme_commands import VARIANTS, documented_commands, prepare_workdir  # noqa: E402

CHILD = "import sys; from reports.cli import main; sys.exit(main(sys.argv[1:]))"


def machine() -> str:
    """The machine in words: cores usable, CPU model, load average when the measurement started."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{len(os.sched_getaffinity(0))} usable cores ({model}); load average at start {load}"


def _reaped_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: str, line: str, work: Path, timeout: float) -> dict:
    """Run one documented command (``line`` as the page writes it, quotes kept) in ``work``; its exit code,
    CPU-seconds and wall time."""
    import psutil

    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    before, start = _reaped_cpu(), time.perf_counter()
    arguments = shlex.split(line.lstrip("$ "), comments=True)[1:]
    child = subprocess.Popen([sys.executable, "-c", CHILD, *arguments], cwd=work, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    seen: dict[int, float] = {}
    root = psutil.Process(child.pid)
    while child.poll() is None and time.perf_counter() - start < timeout:
        try:
            for process in [root, *root.children(recursive=True)]:
                with_children = process.cpu_times()
                seen[process.pid] = max(seen.get(process.pid, 0.0), with_children.user + with_children.system)
        except psutil.Error:
            pass
        time.sleep(0.2)
    if child.poll() is None:
        child.kill()
    output = child.communicate()[0]
    return {"command": command, "code": child.returncode, "wall_s": round(time.perf_counter() - start, 1),
            "cpu_reaped_s": round(_reaped_cpu() - before, 1), "cpu_tree_s": round(sum(seen.values()), 1),
            "tail": output[-400:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--match", action="append", default=[],
                        help="run the documented command written exactly so, else every one containing this text "
                             "(repeatable; in page order)")
    parser.add_argument("--list", action="store_true", help="list every documented command and its suite variant")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a command is stopped")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args(argv)
    documented = documented_commands()
    commands = [command for command, _ in documented]
    if args.list:
        for command in commands:
            variant = VARIANTS.get(command, (None,))[0]
            print(command + (f"\n    suite runs: {variant}" if variant else ""))
        return 0
    chosen = [(c, line) for c, line in documented if any(m == c or (m in c and m not in commands) for m in args.match)]
    if not chosen:
        parser.error("no documented command matches --match (see --list)")
    where = machine()
    print(f"machine: {where}")
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        prepare_workdir(work)
        for command, line in chosen:
            result = measure(command, line, work, args.timeout)
            results.append(result)
            print(f"{result['cpu_reaped_s']:8.1f} CPU s reaped {result['cpu_tree_s']:8.1f} CPU s tree "
                  f"{result['wall_s']:8.1f} s wall  exit {result['code']}  {command}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": where, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
