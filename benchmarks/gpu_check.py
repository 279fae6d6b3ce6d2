"""One-call GPU check of issue 16's figures: DP-FTS-DE runs/s on CUDA vs the NumPy path on all CPU cores,
fts-end-to-end at 1e5 trials per world, and the Gaussian probe at 1e10 trials per world.

Run (repository root, one call of at most ~6 minutes on an H100 with 16 CPU cores):

    python benchmarks/gpu_check.py --out gpu_check.json --workers 16

``--smoke`` runs every part with tiny sizes on the CPU (torch device cpu) to check the script itself.

Prints the device name and torch version, then

(a) full 60-round DP-FTS-DE end-to-end runs per second: ``run_fts_batch`` on the torch device (the
    probe's configuration and canary, as many runs per call as the probe puts in one call there, after a
    warm-up call), beside the NumPy path through the probe on ``--workers`` processes (the ``processes``
    executor of ``attack --executor processes --workers N``, measured first, before CUDA starts), and the
    ratio. The NumPy side includes the probe's default score (the replay); the device side is the bare
    engine (no uploads recorded, no score): part (b) gives the like-for-like figure;
(b) the seconds of ``--e2e-trials`` (1e5) trials per world of ``fts-end-to-end`` on the device (the
    probe's batches through the in-process executor, batch size from free memory as ``attack --backend
    torch --device cuda`` chooses it). If a first tenth, timed, predicts more than ``--e2e-seconds``, the
    rest is not run and the figure is an extrapolation (``"extrapolated": true``). Its runs/s beside the
    NumPy processes' is the probe-to-probe ratio (same probe, same score, both worlds);
(c) the Gaussian probe at its default configuration (``configs/attack_gaussian.toml``: epsilon 2, delta
    1e-5, seed 1) at ``--gaussian-trials`` (1e10) trials per world on the device, default batch size:
    seconds, trials per second (both worlds), the Clopper-Pearson lower bound; a tenth of the trials runs
    first (its own figure) and the full run is extrapolated, not run, if it would exceed
    ``--gaussian-seconds``. ``pilot_on_device``: whether the pilot's scores stayed on the device and
    were sorted there (``attacks.backend.pilot_device``, decided again after the run);
(d) the pilot's grid from ``--pilot-scores`` (3.2e7, the pilot at 1e10) Gaussian scores per world, host
    path (copy to the host, NumPy sort) against the device path (``torch.sort`` and searches on the
    device), twice each, and whether the two grids are identical (``benchmarks/pilot_grid_compare.py``;
    about 20 s, most of it the host path).

Results go to ``--out`` as JSON (also each part's error, if one failed: the other parts still run).

Needs: numpy, scipy, torch, array-api-compat (and this repository on the path). Not needed: dp-accounting,
opacus, flwr, scikit-learn (the probes run here do not import them). ``tqdm`` and ``threadpoolctl``
are used when present; if missing, no-op stand-ins are put on the path (progress bars; BLAS thread
limits, which tiny per-run matrices do not need). ``--site DIR`` (repeatable) puts folders of extra
packages first on the path of this process and of its workers (e.g. a copy of array_api_compat, which is
pure Python, carried with the working tree). The script prints which of the needed modules are missing
before anything runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
# benchmarks/accounting.py and attacks.py would shadow the packages while this folder leads sys.path
sys.path[:] = [_ROOT] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

STAND_INS = {
    "tqdm": (
        "class tqdm:\n"
        "    def __init__(self, *args, **kwargs): pass\n"
        "    def __enter__(self): return self\n"
        "    def __exit__(self, *exc): return False\n"
        "    def update(self, n=1): pass\n"
    ),
    "threadpoolctl": (
        "import contextlib\n@contextlib.contextmanager\ndef threadpool_limits(*args, **kwargs):\n    yield\n"
    ),
}


def install_stand_ins() -> list[str]:
    """No-op modules for missing optional packages, on this process's and spawned workers' path."""
    missing = [name for name in STAND_INS if importlib.util.find_spec(name) is None]
    if missing:
        folder = tempfile.mkdtemp(prefix="gpu_check_")
        for name in missing:
            with open(os.path.join(folder, f"{name}.py"), "w") as handle:
                handle.write(STAND_INS[name])
        sys.path.insert(0, folder)
        os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT, folder, os.environ.get("PYTHONPATH", "")])
    else:
        os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])
    return missing


DEVICE_RUNS = 8192


def fts_numpy_processes(trials: int, workers: int, seed: int) -> dict:
    """Runs/s of the fts-end-to-end probe on NumPy over ``workers`` processes (both worlds)."""
    from attacks.attack import collect_scores
    from attacks.executors import get_executor
    from attacks.probes import get_probe

    probe = get_probe("fts-end-to-end")
    with get_executor("processes", workers) as pool:
        collect_scores(probe, workers, seed + 1, executor=pool, batch_size=1)  # starts every worker
        started = time.perf_counter()
        collect_scores(probe, trials, seed, executor=pool, batch_size=25)
        seconds = time.perf_counter() - started
    return {"runs": 2 * trials, "workers": workers, "seconds": seconds, "runs_per_second": 2 * trials / seconds}


def fts_device(device: str, runs: int | None, seed: int) -> dict:
    """Runs/s of ``run_fts_batch`` on the torch device, probe configuration, one call (after a warm-up)."""
    import numpy as np
    import torch

    from attacks.backend import device_batch_size, on_backend
    from attacks.probes import get_probe
    from dpfed.fts.algorithm import run_fts_batch

    probe = on_backend(get_probe("fts-end-to-end"), "torch", device)
    if runs is None:  # what fits, at most DEVICE_RUNS (a few seconds at the target of 1000 runs/s)
        runs = probe.runs_per_call(min(DEVICE_RUNS, device_batch_size(probe, device) or DEVICE_RUNS))
    config, objective = probe._config, probe.objective()
    canary = np.zeros(config.num_features)
    canary[0] = config.per_vector_clip
    options = dict(objective=objective, canary_vector=canary, record_uploads=False, backend="torch", device=device)
    run_fts_batch(config, list(range(seed, seed + min(runs, 64))), **options)  # warm-up: kernels, allocator
    _synchronise(torch, device)
    started = time.perf_counter()
    batch = run_fts_batch(config, list(range(seed, seed + runs)), **options)
    _synchronise(torch, device)
    seconds = time.perf_counter() - started
    assert np.all(np.isfinite(batch.broadcasts))
    return {"runs": runs, "seconds": seconds, "runs_per_second": runs / seconds, "rounds": config.rounds}


def _synchronise(torch, device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def fts_end_to_end(device: str, trials: int, time_box: float, seed: int) -> dict:
    """Seconds of ``trials`` per world of fts-end-to-end on the device (or extrapolated from a tenth)."""
    from attacks.attack import collect_scores
    from attacks.backend import device_batch_size, on_backend
    from attacks.probes import get_probe

    probe = on_backend(get_probe("fts-end-to-end"), "torch", device)
    batch = min(trials, device_batch_size(probe, device) or probe.batch_size)
    tenth = max(1, trials // 10)
    started = time.perf_counter()
    collect_scores(probe, tenth, seed, batch_size=min(batch, tenth))
    first = time.perf_counter() - started
    predicted = first * trials / tenth
    out = {"trials_per_world": trials, "batch_size": batch, "tenth_seconds": first, "tenth_trials": tenth}
    if predicted > time_box:
        return {**out, "seconds": predicted, "extrapolated": True}
    started = time.perf_counter()
    low, high, _ = collect_scores(probe, trials, seed, batch_size=batch)
    seconds = time.perf_counter() - started
    return {**out, "seconds": seconds, "extrapolated": False, "runs_per_second": 2 * trials / seconds}


def gaussian(device: str, trials: int, time_box: float) -> dict:
    """The Gaussian probe at configs/attack_gaussian.toml's settings, ``trials`` per world, on the device;
    first a tenth of the trials, timed (the full run is extrapolated if it would exceed ``time_box``)."""
    tenth = _gaussian_attack(device, max(1, trials // 10))
    if tenth["seconds"] * 10 > time_box:
        return {"tenth": tenth, "trials_per_world": trials, "seconds": 10 * tenth["seconds"], "extrapolated": True}
    return {"tenth": tenth, **_gaussian_attack(device, trials), "extrapolated": False}


def _gaussian_attack(device: str, trials: int) -> dict:
    from attacks.attack import run_attack
    from attacks.backend import pilot_device
    from attacks.probes import get_probe

    probe = get_probe("gaussian", epsilon=2.0, delta=1e-5)
    result = run_attack(probe, trials, seed=1, backend="torch", device=device, claim_epsilon=2.0, delta=1e-5)
    seconds = result.elapsed_seconds
    return {
        "trials_per_world": trials,
        "seconds": seconds,
        "trials_per_second_both_worlds": 2 * trials / seconds,
        "clopper_pearson": result.best_rigorous(),
        "reduction": result.reduction,
        "batches_total": result.batches_total,
        "pilot_trials_per_world": result.pilot_trials,
        "pilot_on_device": pilot_device(probe, result.pilot_trials) is not None if result.pilot_trials else False,
    }


def pilot_grid_part(device: str, scores: int) -> dict:
    """Host path against device path of ``pilot_grid`` on the same scores (benchmarks/pilot_grid_compare.py)."""
    spec = importlib.util.spec_from_file_location("pilot_grid_compare", os.path.join(_HERE, "pilot_grid_compare.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compare(scores, 10**10, 2, device)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file for the results")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the cpu (checks the script)")
    parser.add_argument("--device", default=None, help="torch device (default cuda, cpu with --smoke)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the NumPy path")
    parser.add_argument("--numpy-trials", type=float, default=2000, help="trials per world of the NumPy path")
    parser.add_argument("--device-runs", type=int, default=None, help="runs in the timed call (default: fit)")
    parser.add_argument("--e2e-trials", type=float, default=1e5)
    parser.add_argument("--e2e-seconds", type=float, default=150.0, help="time box of part (b)")
    parser.add_argument("--gaussian-trials", type=float, default=1e10)
    parser.add_argument("--gaussian-seconds", type=float, default=90.0, help="time box of part (c)")
    parser.add_argument("--pilot-scores", type=float, default=3.2e7, help="pilot scores per world of part (d)")
    parser.add_argument("--parts", default=None, help="comma-separated subset of the parts (default: all)")
    parser.add_argument("--site", action="append", default=[], help="folder of extra packages (repeatable)")
    args = parser.parse_args(argv)
    for folder in reversed(args.site):
        folder = os.path.abspath(folder)
        sys.path.insert(0, folder)
        os.environ["PYTHONPATH"] = os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")])
    missing = [m for m in ("numpy", "scipy", "torch", "array_api_compat") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"missing modules: {', '.join(missing)} (see --site)", flush=True)
    if args.smoke:
        args.device = args.device or "cpu"
        args.workers, args.numpy_trials, args.device_runs = min(args.workers, 2), 4, args.device_runs or 8
        args.e2e_trials, args.gaussian_trials = 20, 1.1e6  # > 1e6: the counts reduction and its pilot
        args.pilot_scores = 1e5
    device = args.device or "cuda"
    results: dict = {"stand_ins": install_stand_ins(), "smoke": bool(args.smoke), "device": device}
    results["missing_modules"] = missing
    import torch

    results["torch"] = torch.__version__
    if torch.device(device).type == "cuda":
        results["device_name"] = torch.cuda.get_device_name(torch.device(device)) if torch.cuda.is_available() else None
    else:
        results["device_name"] = "cpu"
    results["cpu_cores"] = os.cpu_count()
    print(f"device {results['device_name']} ({device}), torch {results['torch']}, {results['cpu_cores']} cpu cores")
    parts = [
        ("fts_numpy_processes", lambda: fts_numpy_processes(int(args.numpy_trials), args.workers, 7)),
        ("fts_device", lambda: fts_device(device, args.device_runs, 7)),
        ("fts_end_to_end", lambda: fts_end_to_end(device, int(args.e2e_trials), args.e2e_seconds, 5)),
        ("gaussian", lambda: gaussian(device, int(args.gaussian_trials), args.gaussian_seconds)),
        ("pilot_grid", lambda: pilot_grid_part(device, int(args.pilot_scores))),
    ]
    if args.parts:
        chosen = args.parts.split(",")
        unknown = sorted(set(chosen) - {name for name, _ in parts})
        if unknown:
            parser.error(f"unknown parts: {', '.join(unknown)}")
        parts = [(name, part) for name, part in parts if name in chosen]
    for name, part in parts:
        started = time.perf_counter()
        try:
            results[name] = part()
        except Exception as exc:  # noqa: BLE001 - one failed part must not lose the others
            results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
        print(f"{name} ({time.perf_counter() - started:.1f} s): {json.dumps(results[name])[:400]}", flush=True)
        if name == "fts_device" and "runs_per_second" in results[name]:
            cpu = results.get("fts_numpy_processes", {}).get("runs_per_second")
            if cpu:
                results["fts_ratio_device_over_numpy_processes"] = results[name]["runs_per_second"] / cpu
                print(
                    f"DP-FTS-DE runs/s: {device} {results[name]['runs_per_second']:.0f}, numpy x{args.workers} "
                    f"processes {cpu:.0f}, ratio {results['fts_ratio_device_over_numpy_processes']:.2f}"
                )
        if name == "fts_end_to_end" and "runs_per_second" in results[name]:
            cpu = results.get("fts_numpy_processes", {}).get("runs_per_second")
            if cpu:
                ratio = results["fts_ratio_probe_device_over_numpy_processes"] = results[name]["runs_per_second"] / cpu
                print(f"fts-end-to-end runs/s through the probe: {device} {results[name]['runs_per_second']:.0f}, "
                      f"numpy x{args.workers} processes {cpu:.0f}, ratio {ratio:.2f}")
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=2)
    failed = [name for name, _ in parts if "error" in results[name]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
