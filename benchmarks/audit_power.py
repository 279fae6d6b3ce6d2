"""The stated power of every bundled audit (``configs/audit_*.toml``) and of the default audit, before
anything runs: for each probe, the noise fraction its budget refutes with probability 0.9 against the
target's claim and the trials per world that refute half the noise (``attacks.power``), at the audit's
per-probe confidence. Run: ``python benchmarks/audit_power.py [config ...]`` (prints a Markdown table)."""

from __future__ import annotations

import os
import sys

# benchmarks/attacks.py and benchmarks/accounting.py would shadow the packages when this folder leads sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import glob  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from attacks.power import probe_power  # noqa: E402
from reports.audit import AuditOptions  # noqa: E402
from reports.audit.config import load_config  # noqa: E402
from reports.audit.runner import plan_target  # noqa: E402


def rows(path: str | None):
    config = load_config(path)
    options = AuditOptions(seed=config["seed"], confidence=config["confidence"], progress=False, estimate=False)
    for index, spec in enumerate(config["targets"]):
        planned = plan_target(spec, index, options)
        confidence = 1.0 - (1.0 - config["confidence"]) / planned.confidence_per_probe_divisor
        claim = spec.claim
        for p in planned.probes:
            if p.probe is None:
                continue
            power = probe_power(p.probe, p.trials, claim.epsilon, claim.delta, confidence)
            yield spec.name, p.spec.name, p.trials, claim.epsilon, power


def main(paths):
    paths = paths or sorted(glob.glob("configs/audit_*.toml")) + [None]
    print("| audit | target | probe | trials | claim | refuted noise fraction (p = 0.9) | trials for f = 0.5 | method |")  # noqa: E501
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        started = time.process_time()
        for target, probe, trials, claim, power in rows(path):
            if power is None:
                cells = ["no Gaussian reduction", "-", "-"]
            else:
                half = "none up to 1e10" if power.half_noise_trials is None else f"{power.half_noise_trials:.3g}"
                cells = [f"{power.refuted_fraction:.2f}", half, power.method]
            print(f"| {path or 'default'} | {target} | {probe} | {trials:.3g} | {claim:g} | " + " | ".join(cells) + " |")  # noqa: E501
        print(f"<!-- {path or 'default'}: {time.process_time() - started:.1f} s CPU -->", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
