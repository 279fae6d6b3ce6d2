"""DP-Fed-PNE end-to-end probe: this checkout against a baseline, side by side (a script, not a test).

Each repeat runs the baseline and this checkout in fresh interpreters, one after the other (the order
alternating), at the bundled planted-bug matrix target's probe (``configs/audit_dpfedpne.toml``: Garland,
10 clients, T = 20, analytic calibration, epsilon = 3, delta = 1e-5, canary 10, replay score), both
worlds at ``--trials`` each; it prints the CPU seconds of the ``scores`` calls of each, their ratio,
and whether the scores are identical (np.array_equal and equal bytes). ``--check`` first compares the
scores of both worlds for every score kind at several settings (the matrix probe, the default probe,
others) and seeds, and the runs of ``run_dp_fed_pne_batch`` / ``run_fed_pne`` on three objectives.
Exit status 1 if anything differs.
Usage: python benchmarks/pne_probe_speed.py [--baseline PATH | --commit e8975e4] [--trials 3000]
       [--repeats 3] [--check]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "e8975e4"  # main before this speed-up
MATRIX = dict(epsilon=3.0, delta=1e-5, calibration="analytic", objective="garland", clients=10, horizon=20)

TIMED = """
import json, sys, time, numpy as np
from attacks.probes.pne import PneEndToEndProbe
probe = PneEndToEndProbe(canary_value=10.0, **MATRIX)
cpu, scores = 0.0, []
for world in (0, 1):
    start = time.process_time()
    scores.append(probe.scores(world, TRIALS, np.random.default_rng(2026 + world)))
    cpu += time.process_time() - start
np.save(OUT, np.stack(scores))
print(json.dumps({"cpu": cpu}))
"""

CHECK = """
import json, numpy as np
from attacks.probes.pne import PneEndToEndProbe
from dpfed.pne import run_fed_pne
from dpfed.pne.algorithm import RewardOverride
from dpfed.pne.private import run_dp_fed_pne_batch
settings = [dict(canary_value=10.0, **MATRIX), {}, dict(horizon=50, clients=5),
            dict(epsilon=3.0, calibration="analytic", horizon=20, final_upload=True), dict(horizon=2000)]
out = {}
for i, setting in enumerate(settings):
    for score in ("replay", "upload", "node-difference"):
        probe = PneEndToEndProbe(score=score, **setting)
        for world in (0, 1):
            for seed in (1, 7):
                trials = 60 if setting.get("horizon") == 2000 else 300
                out[f"probe {i} {score} world {world} seed {seed}"] = probe.scores(
                    world, trials, np.random.default_rng(seed)).tolist()
def flat(run):
    uploads = [(phase, [list(map(int, key)) for key in keys], means.tolist()) for phase, keys, means in run.uploads]
    return [run.instant_regret.tolist(), run.points.tolist(), np.asarray(run.recommendation).tolist(),
            run.communication_rounds, run.uplink_floats, run.downlink_values, [repr(p) for p in run.phases],
            uploads, repr(run.parameters)]
for objective, horizon, clients in (("garland", 200, 10), ("himmelblau", 300, 5), ("doublesine", 100, 8)):
    seeds = [np.random.SeedSequence(e) for e in range(20)] + [3, np.random.default_rng(4)]
    runs = run_dp_fed_pne_batch(objective, clients, horizon, seeds, epsilon=2.0, dp_delta=1e-5,
                                calibration="analytic", reward_override=RewardOverride(0, 3, 1, 1.0))
    out[f"runs {objective}"] = [flat(run) for run in runs]
    out[f"fed-pne {objective}"] = flat(run_fed_pne(objective, clients, horizon, seed=11))
with open(OUT, "w") as f:
    json.dump(out, f)
print(json.dumps({"keys": len(out)}))
"""


def _run(code: str, root: Path, **values) -> dict:
    header = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    out = subprocess.run(
        [sys.executable, "-c", header + code],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _baseline(args, folder: str) -> Path:
    if args.baseline:
        path = Path(args.baseline).resolve()
        if not (path / "attacks" / "probes" / "pne.py").is_file():
            sys.exit(f"pne_probe_speed: {path} is not a checkout of this project (no attacks/probes/pne.py)")
        return path
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", args.commit, "accounting", "dpfed", "attacks"],
        capture_output=True,
    )
    if archive.returncode:
        sys.exit(f"pne_probe_speed: git archive {args.commit} failed: {archive.stderr.decode().strip()}")
    tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(folder, filter="data")
    return Path(folder)


def _check(base: Path, folder: str) -> bool:
    files = {}
    for label, root in (("baseline", base), ("this checkout", ROOT)):
        files[label] = f"{folder}/check-{label.replace(' ', '-')}.json"
        _run(CHECK, root, MATRIX=MATRIX, OUT=files[label])
    old, new = (json.load(open(files[label])) for label in ("baseline", "this checkout"))
    # json writes every float by its repr: equal text is bit-for-bit equal numbers (-0.0 and nan included)
    differ = [key for key in old if json.dumps(old[key]) != json.dumps(new.get(key))]
    print(
        f"identical-scores check: {len(old)} score sets and run lists, "
        + ("all IDENTICAL" if not differ and old.keys() == new.keys() else f"DIFFERENT: {differ[:5]}")
    )
    return not differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a checkout of the old code (else --commit is extracted)")
    parser.add_argument("--commit", default=BASE_COMMIT)
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.trials < 1 or args.repeats < 1:
        print("pne_probe_speed: --trials and --repeats must be at least 1", file=sys.stderr)
        return 2
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        base = _baseline(args, folder + "/baseline")
        identical = _check(base, folder) if args.check else True
        cpu = {"baseline": [], "this checkout": []}
        same = True
        for repeat in range(args.repeats):
            order = [("baseline", base), ("this checkout", ROOT)]
            scores = {}
            for label, root in order if repeat % 2 == 0 else order[::-1]:
                out = f"{folder}/{label.replace(' ', '-')}-{repeat}.npy"
                cpu[label].append(_run(TIMED, root, MATRIX=MATRIX, TRIALS=args.trials, OUT=out)["cpu"])
                scores[label] = np.load(out)
            same &= np.array_equal(scores["baseline"], scores["this checkout"])
            same &= scores["baseline"].tobytes() == scores["this checkout"].tobytes()  # bit for bit
            print(
                f"repeat {repeat + 1}: baseline {cpu['baseline'][-1]:.2f} CPU s, "
                f"this checkout {cpu['this checkout'][-1]:.2f} CPU s",
                flush=True,
            )
    old, new = statistics.median(cpu["baseline"]), statistics.median(cpu["this checkout"])
    print(
        f"matrix probe, {args.trials} trials per world, both worlds: baseline {old:.2f} CPU s, this checkout "
        f"{new:.2f} CPU s (medians of {args.repeats}), ratio {old / new:.2f}x; scores identical: {same}"
    )
    return 0 if same and identical else 1


if __name__ == "__main__":
    sys.exit(main())
