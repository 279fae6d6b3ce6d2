"""The sensitivity of what Flower's DP wrapper noises, for each strategy it can wrap, in both APIs.

Runs ``dpaudit flower`` on the outside apps ``tests/flower_apps/inner_strategy`` (Message API) and
``inner_strategy_legacy`` (legacy ``server_fn``): linear regression in NumPy on 6 SuperNodes, all 6 trained each
round, Flower's ``DifferentialPrivacyServerSideFixedClipping`` (z 1, C 0.1, num_sampled_clients 6) around the
strategy the run config names, with Flower's defaults. Prints one row per API, strategy and number of rounds: the
verdict, the largest replayed change of the inner strategy's output when one reply is replaced within the clip, in
units of C/m and over the 2C/m the noise is calibrated for (replace-one), the epsilon the run spends at the measured
sensitivity (accounted as the run is) beside the accounted one, the critical findings, and the strategy's defaults
(read from its signature). ``--runtime inprocess`` (default) drives the apps through the in-process grid of
``tests/flower/inprocess_grid.py`` (seconds a run); ``simulation`` runs Flower's simulation engine (Ray; about a
minute a run on 2 loaded cores).

    PYTHONPATH=$PWD python benchmarks/flower_sensitivity.py [--rounds 1 3] [--runtime inprocess] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import os
import sys
import tempfile
import time

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
sys.path.insert(0, os.getcwd())

APPS = {"message": "tests/flower_apps/inner_strategy", "legacy": "tests/flower_apps/inner_strategy_legacy"}
STRATEGIES = ("FedAvg", "FedProx", "FedAdam", "FedYogi", "FedAdagrad", "FedAvgM", "FedMedian", "FedTrimmedAvg",
              "MyAdam")
DEFAULT_KEYS = ("eta", "eta_l", "beta_1", "beta_2", "tau", "server_learning_rate", "server_momentum", "beta",
                "proximal_mu")


def flower_defaults(api: str, name: str) -> str:
    """The optimiser defaults of Flower's ``name`` in ``api`` (its constructor's signature)."""
    import flwr.server.strategy as legacy
    import flwr.serverapp.strategy as message

    cls = getattr(message if api == "message" else legacy, "FedAdam" if name == "MyAdam" else name)
    params = inspect.signature(cls.__init__).parameters
    shown = [f"{k} {params[k].default:g}" if isinstance(params[k].default, (int, float)) else f"{k} required"
             for k in DEFAULT_KEYS if k in params and k != "eta_l"]
    return ", ".join(shown) or "none"


def audit(api: str, strategy: str, rounds: int, extra: str = "") -> dict:
    from reports.cli import main

    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "audit", "report.json")  # --out DIR writes DIR/report.json
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["flower", APPS[api], "--num-supernodes", "6", "--no-progress", "--run-config",
                         f'strategy="{strategy}" num-server-rounds={rounds} {extra}'.strip(), "--out",
                         os.path.dirname(out)])
        seconds = time.perf_counter() - started
        with open(out) as handle:
            result = json.load(handle)
    seen = result["details"].get("sensitivity") or {}
    [above] = [f["values"] for f in result["findings"] if f["code"] == "sensitivity-above-accounted"] or [None]
    return {"api": api, "strategy": strategy, "rounds": rounds, "extra": extra, "exit": code,
            "verdict": result["verdict"], "inner": seen.get("strategy"), "in_c_over_m": seen.get("in_c_over_m"),
            "ratio": seen.get("replace_ratio"), "zero_ratio": seen.get("zero_ratio"),
            "untested": seen.get("untested"), "implied_epsilon": None if above is None else above["implied_epsilon"],
            "accounted_epsilon": result["details"]["accounted_epsilon"],
            "critical": sorted({f["code"] for f in result["findings"] if f["severity"] == "critical"}),
            "defaults": flower_defaults(api, strategy), "seconds": seconds}


def row(r: dict) -> str:
    implied = "-" if r["implied_epsilon"] is None else f"{r['implied_epsilon']:.4g}"
    name = r["strategy"] + (f" ({r['extra']})" if r["extra"] else "")
    return (f"| {r['api']} | {name} | {r['rounds']} | {r['verdict']} | {r['in_c_over_m']:.3g} | {r['ratio']:.3g} | "
            f"{implied} | {r['accounted_epsilon']:.4g} | {', '.join(r['critical']) or '-'} | {r['defaults']} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--runtime", choices=("inprocess", "simulation"), default="inprocess")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.runtime == "inprocess":
        import importlib

        from tests.flower.inprocess_grid import in_process_simulation

        importlib.import_module("flwr.simulation.run_simulation")._run_simulation = in_process_simulation
    cases = [(api, name, rounds, "") for api in APIS_ORDER for name in STRATEGIES for rounds in args.rounds]
    cases += [(api, name, rounds, extra) for api in APIS_ORDER for rounds in args.rounds
              for name, extra in (("FedAvgM", "server-learning-rate=2.0"), ("FedAvgM", "server-momentum=0.9"),
                                  ("FedYogi", "eta=0.1"))]
    print("| API | inner strategy | rounds | verdict | sensitivity / (C/m) | / (2C/m) | implied epsilon | accounted "
          "epsilon | critical findings | Flower's defaults |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for case in cases:
        results.append(audit(*case))
        print(row(results[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    return 0


APIS_ORDER = ("message", "legacy")

if __name__ == "__main__":
    raise SystemExit(main())
