"""What each system releases, over a range of configurations: the evidence for a surviving mutant's reason.

``release_outputs(system, tree, work)`` runs the system's release code in ``tree`` (the original or a
mutated copy) on fixed seeds over ``CONFIGURATIONS[system]`` and returns, per configuration, the released
values and the privacy description, or the error it raised. Algorithms run through ``dpaudit run``
(in one process per tree, ``--save-transcript``: every message of run 0; the argument strings are decoded at
run time, as argv's are, so a string compared with ``is`` against a literal behaves as it would for a value
read from a file); the shared mechanism module
runs ``MECHANISM_SCRIPT`` (Gaussian, Laplace and subsampled-Gaussian releases, plain, weighted and scaled).
Clip bounds and sensitivities 0.5, 2 and 3.7 (DP-FKM's B also 1.5; never only 1), several noise multipliers
and sampling rates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PYTHON = sys.executable
#: the transcript messages that carry privatised values, per algorithm system
RELEASED = {"fkm": {"loss"}, "fedzero": {"scalar"}, "duets": {"v_bar"}, "pne": {"local_means"}, "fts": {"broadcast"}}
_FKM = ["dp-fkm", "--horizon", "30", "--exploration", "0.25", "--step", "0.001", "--accountants", "rdp"]
_FEDZERO = ["dp-fedzero", "--rounds", "4", "--accountants", "rdp"]
_DUETS = ["dp-duets", "--horizon", "300", "--accountants", "rdp"]
_PNE = ["dp-fed-pne", "--horizon", "300", "--clients", "3", "--accountants", "rdp"]
CONFIGURATIONS = {
    "fkm": [
        _FKM + ["--radius", r, *privacy]
        for r in ("0.5", "1.5", "2", "3.7")
        for privacy in (["--epsilon", "0.5"], ["--epsilon", "2"], ["--noise-multiplier", "3"],
                        ["--unit", "dataset", "--records", "20", "--rate", "0.3", "--noise-multiplier", "0.8"])
    ],
    "fedzero": [  # every option string given (a default would be a literal, the same object as the code's)
        _FEDZERO + ["--clip", c, "--noise-multiplier", z, *unit]
        for c, z in (("0.5", "0.7"), ("2", "2"), ("3.7", "1"))
        for unit in (["--unit", "worker", "--noise", "scalar"], ["--unit", "worker", "--noise", "vector"],
                     ["--unit", "record", "--noise", "scalar", "--records", "20", "--rate", "0.3"],
                     ["--unit", "worker", "--noise", "scalar", "--rate", "0.5"])
    ],
    "duets": [
        _DUETS + ["--reward-clip", c, "--noise-multiplier", z, *unit]
        for c, z in (("0.5", "0.7"), ("2", "2"), ("3.7", "1"))
        for unit in (["--unit", "agent", "--agent-clip", "public"], ["--unit", "agent", "--agent-clip", "sqrt"],
                     ["--unit", "reward", "--agent-clip", "public"],
                     ["--unit", "agent", "--agent-clip", "public", "--rate", "0.5"])
    ],
    "pne": [
        _PNE + ["--epsilon", e, "--calibration", c] for e in ("0.5", "2", "8") for c in ("classic", "analytic")
    ],
    "fts": [  # TOML files written by _fts_config: (rate, noise multiplier, clip, agents, subregions)
        (q, z, c, n, p)
        for q, z, c in (("0.1", "0.5", "0.5"), ("0.35", "3.0", "2.0"), ("1.0", "1.0", "3.7"))
        for n, p in (("3", "1"), ("29", "4"))
    ],
}
SEEDS = ("5",)

MECHANISM_SCRIPT = r'''
import json, sys
import numpy as np
from accounting.mechanisms import Gaussian, Laplace, SubsampledGaussian

def run(f):
    try:
        value = f()
        return np.asarray(value, dtype=float).tolist() if not isinstance(value, tuple) else [
            np.asarray(v, dtype=float).tolist() for v in value]
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}"

out = {}
points = np.linspace(-4.0, 4.0, 9)
for s in (0.5, 2.0, 3.7):
    for z in (0.5, 1.0, 3.0):
        for seed in (5, 11):
            g, l = Gaussian(z, s), Laplace(z, s)
            out[f"gaussian s={s} z={z} seed={seed}"] = [run(lambda: g.release(points, seed)),
                                                         run(lambda: g.noise_scale)]
            out[f"laplace s={s} z={z} seed={seed}"] = [run(lambda: l.release(points, seed)), run(lambda: l.noise_scale)]
            for n in (3, 6):
                x = np.random.default_rng(seed + n).normal(0.0, 2.0 * s, size=(4, n, 2))
                w1 = np.random.default_rng(seed).random(n)
                wk = np.random.default_rng(seed + 1).random((3, n))
                mechanisms = [SubsampledGaussian(q, z, s) for q in (0.1, 0.35, 1.0)]
                mechanisms.append(SubsampledGaussian(0.5, z, s, "fixed-size", population=n))
                for m in mechanisms:
                    key = f"subsampled {m.sampling.value} q={m.rate} z={z} clip={s} n={n} seed={seed}"
                    out[key + " plain"] = run(lambda: m.release(x, seed, return_mask=True))
                    out[key + " weights (n,)"] = run(lambda: m.release(x, seed, weights=w1))
                    out[key + " weights (k,n), scale 1/q"] = run(
                        lambda: m.release(x, seed, weights=wk, scale=1.0 / m.rate, return_mask=True))
                    out[key + " stds"] = [run(lambda: m.noise_std), run(lambda: m.block_noise_std(wk)),
                                          run(lambda: m.block_noise_std(w1))]
json.dump(out, sys.stdout)
'''


def _fts_config(work: Path, q, z, c, n, p) -> Path:
    path = work / f"fts_q{q}_z{z}_c{c}_n{n}_p{p}.toml"
    path.write_text(
        'algorithm = "dp-fts-de"\nobjective = "synthetic"\ndim = 1\n'
        f"num_agents = {n}\nrounds = 4\ninit_points = 3\nnum_features = 20\nsubregions = {p}\n"
        f"rate = {q}\nnoise_multiplier = {z}\nclip = {c}\n"
    )
    return path


def _env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}


CLI_SCRIPT = r'''
import contextlib, io, json, sys, tempfile
from pathlib import Path
from reports.cli import main
out = {}
for key, args in json.load(sys.stdin):  # argument strings decoded at run time, as argv's are
    with tempfile.TemporaryDirectory() as folder:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main(["run", *args, "--runs", "2", "--out", folder, "--save-transcript", "--no-progress"])
            except BaseException as exc:
                code = f"{type(exc).__name__}: {exc}"
        if code != 0:
            out[key] = {"error": f"exit {code}: {(err.getvalue().strip().splitlines() or [''])[-1][:200]}"}
            continue
        (result,) = Path(folder).glob("*.json")
        data = json.loads(result.read_text())
        privacy = data.get("privacy", {"releases": data.get("releases"), "accounting": data.get("accounting")})
        out[key] = {"transcript": data["transcript"]["messages"], "privacy": privacy}
json.dump(out, sys.stdout)
'''


def run_script(script: str, tree: Path, stdin: str | None = None, timeout: float = 600) -> dict:
    """Run ``script`` (``python -c``) in ``tree`` with that tree's packages first on the path and parse the JSON it
    prints; ``{"script": {"error": ...}}`` (stderr's last line) when it fails."""
    done = subprocess.run([PYTHON, "-c", script], cwd=tree, env=_env(tree), input=stdin, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        return {"script": {"error": (done.stderr.strip().splitlines() or [""])[-1][:200]}}
    return json.loads(done.stdout)


def paired(original: dict, mutant: dict) -> list[tuple[dict, dict]] | None:
    """(original's, mutant's) output of every configuration where neither errs, or None when a script failed or a
    configuration's error differs (the mutant breaks where the original does not, or the reverse)."""
    if "script" in original or "script" in mutant:
        return None
    pairs = []
    for key, before in original.items():
        after = mutant.get(key, {"error": "missing"})
        if "error" in before or "error" in after:
            if after != before:
                return None
            continue
        pairs.append((before, after))
    return pairs


def release_outputs(system: str, tree: Path, work: Path) -> dict:
    """{configuration: output} for ``system`` run from ``tree`` (see the module docstring)."""
    work.mkdir(parents=True, exist_ok=True)
    if system == "mechanism":
        return run_script(MECHANISM_SCRIPT, tree)
    runs = []  # every configuration in one process (``dpaudit run`` in-process: no start-up per run)
    for configuration in CONFIGURATIONS[system]:
        args = ["dp-fts-de", "--config", str(_fts_config(work, *configuration))] if system == "fts" else configuration
        runs += [(" ".join(args[1:]) + f" --seed {seed}", [*args, "--seed", seed]) for seed in SEEDS]
    return run_script(CLI_SCRIPT, tree, json.dumps(runs), timeout=3600)


def compare(system: str, original: dict, mutant: dict) -> dict:
    """Where a mutant's outputs differ from the original's: configurations whose released values differ
    (bit for bit), whose privacy description differs, whose run breaks only in the mutant, and whose other
    messages only differ."""
    released, described, broken, other = [], [], [], []
    names = RELEASED.get(system)
    for key, before in original.items():
        after = mutant.get(key, {"error": "missing"})
        if after == before:
            continue
        if names is None:  # the mechanism script: values, or "error: ..." strings
            fails = isinstance(after, str) and not isinstance(before, str)
            (broken if fails else released).append(key)
            continue
        if "error" in after or "error" in before:
            (broken if "error" in after and "error" not in before else released).append(key)
            continue
        if after["privacy"] != before["privacy"]:
            described.append(key)
        pick = [m["payload"] for m in before["transcript"] if m["name"] in names]  # the released values
        if pick != [m["payload"] for m in after["transcript"] if m["name"] in names]:
            released.append(key)
        elif after["transcript"] != before["transcript"]:
            other.append(key)
    return {"configurations": len(original), "released_differs": released, "description_differs": described,
            "breaks": broken, "other_messages_differ": other}
