"""Cost of running user mechanisms in a worker process (attacks/probes/user_worker.py).

Side by side in one process: the same outputs computed by calling the function here (what the user
probe did before) and through the worker (what it does now). Prints seconds and the ratio.
Run: python benchmarks/user_worker.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

# benchmarks/attacks.py would shadow the ``attacks`` package when this directory leads sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

from attacks.probes import examples  # noqa: E402
from attacks.probes.user_child import call_mechanism  # noqa: E402
from attacks.probes.user_worker import UserCodeWorker  # noqa: E402

DATASETS = (np.array([0.2, 0.9, 0.4]), np.array([0.2, 0.9, 0.4, 1.0]))


def direct(function, trials: int, rng) -> np.ndarray:
    """The in-process path, with the same output checks the worker applies."""
    return call_mechanism("benchmark", function, DATASETS[1], trials, rng)


def best_of(run, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    started = time.perf_counter()
    worker = UserCodeWorker("attacks.probes.examples:laplace_count", DATASETS)
    print(f"worker start (spawn + imports): {time.perf_counter() - started:.2f} s")
    batched = UserCodeWorker("attacks.probes.examples:gaussian_sum", DATASETS)
    for name, function, handle, trials in [
        ("laplace_count (one call per trial)", examples.laplace_count, worker, 10_000),
        ("gaussian_sum (batched)", examples.gaussian_sum, batched, 1_000_000),
    ]:
        here = best_of(lambda f=function, n=trials: direct(f, n, np.random.default_rng(0)))
        there = best_of(lambda h=handle, n=trials: h.outputs(1, n, np.random.default_rng(0)))
        same = np.array_equal(
            direct(function, trials, np.random.default_rng(0)), handle.outputs(1, trials, np.random.default_rng(0))
        )
        print(
            f"{name:<38} {trials:>9} trials  in-process {here:.3f} s  worker {there:.3f} s  "
            f"ratio {there / here:.2f}  identical {same}"
        )
    worker.close()
    batched.close()


if __name__ == "__main__":
    main()
