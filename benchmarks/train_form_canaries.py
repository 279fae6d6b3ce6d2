"""One-run gradient canaries through the user's own optimizer (``opacus-check --train --canaries``) on opacus's MNIST
example as written (``tests/dpsgd_examples/mnist.py``, 1 epoch, 8 steps): per seed, the one-run lower bounds at 95%
on a correct run, on a null run (the coins drawn, no canary inserted: each bound must be 0 but for its 5%) and with
half the noise (``planted.py:half_noise``): Steinke et al.'s counted guesses (``one-run``, rigorous), the weighted
guesses of the continuous scores (``one-run-weighted``, rigorous) and the Gaussian view of the scores
(``one-run-gauss``, model-based: no verdict), beside the one-run status against the claim, the noise test's verdict
and the wall time of each training. Prints one row per (seed, run). The seed fixes the canaries' coins, coordinates
and sampling; the example seeds nothing, so its noise (and each row) differs from one invocation to the next.

    .venv/bin/python benchmarks/train_form_canaries.py [--seeds 5] [--canaries 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(spec: str, canaries: int, seed: int, insert: bool) -> dict:
    from attacks.opacus_checks.observed import check_training
    from attacks.opacus_checks.train_run import run_user_training
    from dpfed.dpsgd.loop_canaries import LoopCanaries

    plan = LoopCanaries(canaries, seed, insert=insert)
    with contextlib.redirect_stdout(io.StringIO()):  # the example's own progress lines
        training = run_user_training(str(ROOT / "tests" / "dpsgd_examples" / spec),
                                     ("--device", "cpu", "--epochs", "1"), canaries=plan)
    checked = check_training(training, 1e-5)
    bounds = {b["method"]: b["epsilon"] for b in checked["canaries"]["bounds"]}
    noise = "refuted" if any(f.code == "noise-below-accounted" for f in checked["findings"]) else "ok"
    return {"bounds": bounds, "ceiling": checked["canaries"]["ceiling"], "claim": checked["claim"], "noise": noise,
            "status": checked["canaries"]["status"], "seconds": training.seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--canaries", type=int, default=1000)
    args = parser.parse_args()
    runs = [("correct", "mnist.py:main", True), ("null", "mnist.py:main", False),
            ("half noise", "planted.py:half_noise", True)]
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)  # the example writes its result files here
        print(f"{args.canaries} canaries, MNIST example, 1 epoch; one-run bounds at 95% (claim: the epsilon the run "
              "reported; status: the rigorous bounds' combined test of it, ceiling at its Bonferroni share)")
        print("| seed | run | one-run (Steinke) | one-run-weighted | one-run-gauss (model-based) | ceiling | claim | "
              "status | noise test | training s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for seed in range(args.seeds):
            for name, spec, insert in runs:
                r = one(spec, args.canaries, seed, insert)
                b = r["bounds"]
                print(f"| {seed} | {name} | {b['one-run']:.3f} | {b['one-run-weighted']:.3f} | "
                      f"{b['one-run-gauss']:.3f} | {r['ceiling']:.2f} | {r['claim']:.3f} | {r['status']} | "
                      f"{r['noise']} | {r['seconds']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
