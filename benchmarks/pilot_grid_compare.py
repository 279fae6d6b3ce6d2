"""The pilot's grid from NumPy scores (the host path) and from the same scores as PyTorch tensors (the
device path: sorted and searched by torch where the tensors live), side by side in one process.

Scores are the Gaussian probe's at its defaults (epsilon 2, delta 1e-5), ``--scores`` per world (3.2e7:
the pilot of 1e10 trials per world); the grid is for a budget of ``--budget`` trials per world. The two
paths alternate ``--repeats`` times, with the two sorts alone; prints each wall and CPU (process) time,
the ratios (torch / numpy) and whether the grids are identical. On a CUDA machine ``--device cuda``
times the device path there (with a synchronisation before the clock stops); the NumPy side then
includes the copy of the scores to the host, as ``run_task``'s ``to_numpy`` does on the host path.

Run: python benchmarks/pilot_grid_compare.py [--scores 3.2e7] [--repeats 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


PATHS = ("numpy", "torch", "numpy sort", "torch sort")


def compare(scores: int, budget: int, repeats: int, device: str = "cpu") -> dict:
    """Wall and CPU seconds of each path, ``repeats`` times alternating, and whether the grids agree."""
    import numpy as np
    import torch

    from attacks.backend import to_numpy
    from attacks.estimators.grid import pilot_grid
    from attacks.probes import get_probe

    rng = np.random.default_rng(2026)
    pilot = [torch.from_numpy(get_probe("gaussian").scores(w, scores, rng)).to(device) for w in (0, 1)]

    def synchronise():
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()

    def torch_path():
        grid = pilot_grid(pilot[0], pilot[1], budget, budget, 1e-5, 0.95)
        synchronise()
        return grid

    def torch_sort():
        out = [torch.sort(p).values for p in pilot]
        synchronise()
        return out

    paths = {
        "numpy": lambda: pilot_grid(to_numpy(pilot[0]), to_numpy(pilot[1]), budget, budget, 1e-5, 0.95),
        "torch": torch_path,
        "numpy sort": lambda: [np.sort(to_numpy(p)) for p in pilot],
        "torch sort": torch_sort,
    }
    wall: dict[str, list[float]] = {name: [] for name in PATHS}
    cpu: dict[str, list[float]] = {name: [] for name in PATHS}
    grids = {}
    for _ in range(repeats):
        for name in PATHS:
            synchronise()
            started, cpu_started = time.perf_counter(), time.process_time()
            result = paths[name]()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
            if name in ("numpy", "torch"):
                grids[name] = result
            del result
    same = all(
        np.array_equal(getattr(grids["numpy"], field), getattr(grids["torch"], field))
        for field in ("edges", "test_edges", "test_directions")
    )
    best_wall = {name: min(v) for name, v in wall.items()}
    best_cpu = {name: min(v) for name, v in cpu.items()}
    return {
        "scores_per_world": scores,
        "budget": budget,
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "ratio_torch_over_numpy_wall": best_wall["torch"] / best_wall["numpy"],
        "ratio_torch_over_numpy_cpu": best_cpu["torch"] / best_cpu["numpy"],
        "grids_identical": bool(same),
        "edges": int(grids["numpy"].edges.size),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", type=float, default=3.2e7, help="pilot scores per world")
    parser.add_argument("--budget", type=float, default=1e10, help="test trials per world")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="torch device of the device path")
    args = parser.parse_args(argv)
    if args.scores < 1 or args.budget < 1 or args.repeats < 1:
        print("pilot_grid_compare: --scores, --budget and --repeats must be at least 1", file=sys.stderr)
        return 2
    import numpy as np
    import torch

    print(
        f"{args.scores:.3g} scores per world, budget {args.budget:.3g}, torch {torch.__version__} on "
        f"{args.device} ({torch.get_num_threads()} threads), numpy {np.__version__}"
    )
    out = compare(int(args.scores), int(args.budget), args.repeats, args.device)
    for name in PATHS:
        label = f"{name} alone (both worlds)" if "sort" in name else f"pilot_grid {name}"
        wall, cpu = out["wall_seconds"][name], out["cpu_seconds"][name]
        print(
            f"{label}: wall " + ", ".join(f"{s:.3f}" for s in wall) + f" s (best {min(wall):.3f} s); "
            "cpu " + ", ".join(f"{s:.3f}" for s in cpu) + f" s (best {min(cpu):.3f} s)"
        )
    best = {name: min(out["cpu_seconds"][name]) for name in PATHS}
    print(
        f"ratio torch / numpy, best wall {out['ratio_torch_over_numpy_wall']:.2f}, best cpu "
        f"{out['ratio_torch_over_numpy_cpu']:.2f}; grids identical: {out['grids_identical']} ({out['edges']} edges)"
    )
    print(
        f"besides the sorts (best cpu less best sort cpu): numpy {best['numpy'] - best['numpy sort']:.3f} s, "
        f"torch {best['torch'] - best['torch sort']:.3f} s"
    )
    return 0 if out["grids_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
