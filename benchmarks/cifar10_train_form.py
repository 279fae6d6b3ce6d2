"""opacus's CIFAR-10 example (``tests/dpsgd_examples/cifar10.py``, data replaced) audited in the ``train`` form at the
real data set's size: ``SYNTHETIC_TRAIN_SIZE`` set to CIFAR-10's 50,000 training images (10,000 test), the example's
own main() run as written for one epoch at its default batch size 2,000 (``--device cpu -j 0``), observed; prints
the check's lines and the wall time. One training is the whole audit (the noise measured at every step, its power
stated), so the time is the example's own epoch plus the observation.

    .venv/bin/python benchmarks/cifar10_train_form.py [--train-size 50000] [--epochs 1] [--half-noise]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "dpsgd_examples"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-size", type=int, default=50_000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--half-noise", action="store_true", help="plant half the noise behind opacus's accountant")
    args = parser.parse_args()
    from attacks.opacus_checks.observed import check_training
    from attacks.opacus_checks.train_run import run_user_training
    from reports.commands.opacus_check import train_lines

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)  # the example writes its checkpoints here
        sized = Path(work) / "cifar10_sized.py"  # the example's own main(), its synthetic data at the given size
        plant = ("    from opacus.optimizers import optimizer as o\n    g = o._generate_noise\n"
                 "    o._generate_noise = lambda *a, **k: g(*a, **{**k, 'std': k['std'] / 2})\n"
                 if args.half_noise else "")
        sized.write_text(f"import cifar10\n\n\ndef main():\n{plant}"
                         f"    cifar10.SYNTHETIC_TRAIN_SIZE = {args.train_size}\n"
                         f"    cifar10.SYNTHETIC_TEST_SIZE = {args.train_size // 5}\n    cifar10.main()\n")
        training = run_user_training(f"{sized}:main", ("--device", "cpu", "--epochs", str(args.epochs), "-j", "0"))
        checked = check_training(training, 1e-5)
    findings = [{"code": f.code, "severity": f.severity, "message": f.message} for f in checked["findings"]]
    verdict = "VIOLATION" if any(f["severity"] == "critical" for f in findings) else "PASS"
    print("\n".join(train_lines({"train": "cifar10.py:main", "seconds": training.seconds, "rows": checked["rows"],
                                 "claim": checked["claim"], "delta": checked["rows"].get("delta", 1e-5),
                                 "verdict": verdict, "findings": findings})))
    print(f"train size {args.train_size}, {args.epochs} epoch(s): {time.perf_counter() - started:.1f} s wall in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
