"""The canary figures of BENCHMARKS.md's Flower section: the documented ``dpaudit flower`` commands on the
example app (20 clients + 200 canary SuperNodes, d = 4810), each at its seed, summarised into
``benchmarks/flower_figures_output.json``.

``--runtime inprocess`` (default) runs each command with ``tests/flower/inprocess_grid.py``'s
``in_process_simulation`` standing in for Flower's ``_run_simulation`` (the project's ServerApp, strategy and
ClientApps, the canary mod and recorder, without Ray): deterministic at a seed, 5-20 s a run.
``--runtime simulation`` runs them on Flower's simulation engine (Ray; 1-3 min a run), which draws new node ids
every run: where clients are sampled the sampled sets, and so the figures, change from run to run; where every
node is sampled every round they agree with the in-process run to float32 rounding (about 1e-7).
``--check`` reruns the in-process runs named (default: all) and compares them with the stored record (relative
1e-6); ``tests/flower/test_documented_figures.py`` compares the documented tables with the record and reruns
``all-sampled`` seed 0.

    PYTHONPATH=$PWD python benchmarks/flower_figures.py [--runtime inprocess] [--only NAME ...] [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import sys
import tempfile
import time

OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flower_figures_output.json")
BASE = ["flower", "dpfed/flower/example_app", "--num-supernodes", "20", "--canaries", "200"]
CLAIMS = ["--assumptions", "no-amplification,z-unchanged"]


def _command(sampled: int, rounds: int, z: float, seed: int, bug: str = "none", claims: bool = True) -> list[str]:
    config = f"clients-per-round={sampled} num-server-rounds={rounds} noise-multiplier={z} hidden=64"
    if bug != "none":
        config += f' bug="{bug}"'
    return [*BASE, "--run-config", config, *(CLAIMS if claims else []), "--seed", str(seed)]


# name -> the dpaudit flower arguments (after ``dpaudit``)
RUNS = {
    **{f"all-sampled seed {s}": _command(220, 3, 2.5, s) for s in (0, 1)},
    "sampled-16 seed 0": _command(16, 3, 2.5, 0),
    **{f"sampled-44 seed {s}": _command(44, 20, 1.0, s) for s in (0, 1, 2)},
    **{f"sampled-44 {bug} seed 0": _command(44, 20, 1.0, 0, bug, claims=False)
       for bug in ("noise-cut", "skip-round", "unequal-weights")},
}


def use_in_process_runtime() -> None:
    import importlib

    from tests.flower.inprocess_grid import in_process_simulation

    importlib.import_module("flwr.simulation.run_simulation")._run_simulation = in_process_simulation


def summary(code: int, audit: dict, seconds: float) -> dict:
    """The figures the tables print, from the audit ``dpaudit flower --out`` wrote."""
    canaries = audit["details"]["canaries"]
    shift = canaries["measured_shift"]
    by_code: dict = {}
    for f in audit["findings"]:
        if f["severity"] in ("critical", "high", "medium") and f["code"] != "weighted-by-examples":
            entry = by_code.setdefault(f["code"], {"severity": f["severity"], "count": 0, "values": []})
            entry["count"] += 1
            entry["values"].append({k: v for k, v in f["values"].items() if isinstance(v, (int, float, str))})
    return {
        "exit": code, "verdict": audit["verdict"], "seconds": round(seconds, 1),
        "rows": {name: row["epsilon"] for name, row in audit["details"]["rows"].items()},
        "estimates": {m: {k: canaries[m]["estimate"][k] for k in ("epsilon", "mu", "mu_stderr")}
                      for m in ("final_model", "all_iterates")},
        "measured_shift": {"shift": shift["shift"], "stderr": shift["stderr"],
                           "participations": shift["participations"], "estimate": shift["estimate"]["epsilon"]},
        "bounds": {f"{b['threat_model']}/{b['method']}": b["epsilon"] for b in audit["bounds"]},
        "findings": by_code,
    }


def run(argv: list[str]) -> dict:
    import logging

    from reports.cli import main

    logging.getLogger("flwr").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "audit", "report.json")  # --out DIR writes DIR/report.json
        started = time.perf_counter()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = main([*argv, "--out", os.path.dirname(out)])
        seconds = time.perf_counter() - started
        if not os.path.exists(out):
            raise RuntimeError(f"dpaudit {' '.join(argv)} exited {code}: {printed.getvalue()[-2000:]}")
        with open(out, encoding="utf-8") as handle:
            return summary(code, json.load(handle), seconds)


def differences(stored, fresh, path: str = "", rel: float = 1e-6) -> list[str]:
    """Where ``fresh`` differs from ``stored`` (numbers beyond ``rel``; timings ignored)."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        out = [f"{path}: keys {sorted(set(stored) ^ set(fresh))}"] if set(stored) != set(fresh) else []
        return out + [d for k in stored if k in fresh and k != "seconds"
                      for d in differences(stored[k], fresh[k], f"{path}/{k}", rel)]
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            return [f"{path}: {len(stored)} items, now {len(fresh)}"]
        return [d for i, (a, b) in enumerate(zip(stored, fresh, strict=True))
                for d in differences(a, b, f"{path}[{i}]", rel)]
    if isinstance(stored, float) or isinstance(fresh, float):
        return [] if math.isclose(stored, fresh, rel_tol=rel, abs_tol=1e-12) else [f"{path}: {stored} -> {fresh}"]
    return [] if stored == fresh else [f"{path}: {stored!r} -> {fresh!r}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", choices=("inprocess", "simulation"), default="inprocess")
    parser.add_argument("--only", nargs="*", default=None, help="names of RUNS (default: all)")
    parser.add_argument("--check", action="store_true", help="compare with the stored record instead of writing it")
    parser.add_argument("--output", default=OUTPUT)
    args = parser.parse_args(argv)
    if args.runtime == "inprocess":
        use_in_process_runtime()
    names = args.only or list(RUNS)
    record = json.load(open(args.output, encoding="utf-8")) if os.path.exists(args.output) else {}
    failed = []
    for name in names:
        fresh = run(RUNS[name])
        command = "dpaudit " + " ".join(a if re.fullmatch(r"[\w.,/-]+", a) else f"'{a}'" for a in RUNS[name])
        print(f"{name} ({args.runtime}, {fresh['seconds']} s): {command}\n  {json.dumps(fresh)[:400]}", flush=True)
        if args.check:
            found = differences(record[args.runtime][name]["figures"], fresh)
            failed += [f"{name}{d}" for d in found]
            print("  " + ("; ".join(found) if found else "as recorded"), flush=True)
        else:
            record.setdefault(args.runtime, {})[name] = {"command": command, "figures": fresh}
            with open(args.output, "w", encoding="utf-8") as handle:
                json.dump(record, handle, indent=1, sort_keys=True)
                handle.write("\n")
    if failed:
        print("differs from the record:\n" + "\n".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":  # as a script: the repository (the working directory) first, not this folder
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
    sys.path.insert(0, os.getcwd())
    sys.exit(main())
