"""Generate ``data/opacus_rdp_reference.json``: opacus's RDP epsilon on a fine order grid for random
Poisson-subsampled Gaussian configurations (the reference of ``test_rdp_order.py``).

opacus's fractional-order series takes seconds per configuration on a fine grid, too slow for the
test suite, so its answers are stored; the test re-checks a few of them live against opacus.

    python tests/accounting/make_rdp_reference.py   # about 10 minutes on 2 cores
"""

from __future__ import annotations

import json
import pathlib
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SEED = 20261122
COUNT = 220
OPACUS_DEFAULT_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
FINE_ORDERS = np.unique(np.concatenate([OPACUS_DEFAULT_ORDERS, np.geomspace(1.01, 1024.0, 400)]))
PATH = pathlib.Path(__file__).with_name("data") / "opacus_rdp_reference.json"


def configurations(count: int = COUNT, seed: int = SEED) -> list[dict]:
    """q log-uniform in [1e-4, 1], z uniform in [0.4, 5], T log-uniform in [1, 1e5], delta
    log-uniform in [1e-9, 1e-3]."""
    rng = np.random.default_rng(seed)
    return [
        {
            "q": float(10 ** rng.uniform(-4, 0)),
            "z": float(rng.uniform(0.4, 5.0)),
            "steps": int(round(10 ** rng.uniform(0, 5))),
            "delta": float(10 ** rng.uniform(-9, -3)),
        }
        for _ in range(count)
    ]


def opacus_epsilon(config: dict, orders=FINE_ORDERS) -> tuple[float, float]:
    """opacus's RDP epsilon (its own conversion) and best order over ``orders``."""
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    warnings.filterwarnings("ignore")
    rdp = compute_rdp(q=config["q"], noise_multiplier=config["z"], steps=config["steps"], orders=orders)
    eps, order = get_privacy_spent(orders=orders, rdp=rdp, delta=config["delta"])
    return float(eps), float(order)


def _row(config: dict) -> dict:
    eps, order = opacus_epsilon(config)
    return {**config, "opacus_epsilon": eps, "opacus_order": order}


def main() -> None:
    import opacus

    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(_row, configurations()))
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(
        json.dumps(
            {
                "opacus": opacus.__version__,
                "seed": SEED,
                "orders": "opacus default orders + geomspace(1.01, 1024, 400)",
                "configurations": rows,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
