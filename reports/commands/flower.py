"""``dpaudit flower``: audit the Flower example app (configuration check, a run on Flower's simulation
engine with every release recorded, transcript check). Needs the ``flower`` extra."""

from __future__ import annotations

import json

from accounting.errors import ConfigurationError
from reports.exit_codes import ExitCode


def add_parser(sub) -> None:
    p = sub.add_parser("flower", help="audit the Flower example app (needs pip install -e '.[flower]')")
    p.add_argument("--nodes", type=int, default=40, help="connected Flower nodes N (default 40)")
    p.add_argument("--sampled", type=int, default=8, help="clients sampled per round m (default 8)")
    p.add_argument("--rounds", type=int, default=5, help="server rounds (default 5)")
    p.add_argument("--noise-multiplier", type=float, default=1.0, help="z of the DP wrapper (default 1)")
    p.add_argument("--clip", type=float, default=1.0, help="clipping norm C (default 1)")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--claim", default="",
                   help="comma-separated claims to check: no-amplification (Flower's accountant), poisson, "
                   "z-unchanged (default: none; every row is shown)")
    p.add_argument("--claimed-epsilon", type=float, default=None, help="the epsilon the user states, if any")
    p.add_argument("--bug", default="none", help="planted bug: none, noise-cut, skip-round, unequal-weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--canaries", type=int, default=0,
                   help="k canary directions, each inserted as a client with probability 1/2 (one-run audit)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the canary lower bounds")
    p.add_argument("--out", default=None, help="write the full audit (with the transcript) as JSON here")
    p.set_defaults(func=run)


def summary_lines(audit: dict) -> list[str]:
    lines = [f"Flower audit: verdict {audit['verdict']}"]
    for name, row in audit["rows"].items():
        lines.append(f"  epsilon {row['epsilon']:9.4g}  [{row['accountant']}]  {name}: {row['describes']}")
    for kind in ("configuration_findings", "transcript_findings"):
        for f in audit[kind]:
            lines.append(f"  {f['severity'].upper():8s} {f['code']}: {f['message']}")
    canaries = audit.get("canaries")
    if canaries:
        g = canaries["gaussian_estimate"]
        lines.append(f"  canaries: {sum(canaries['included'])} of {len(canaries['included'])} inserted, d = "
                     f"{canaries['dim']}; Gaussian estimate epsilon {g['epsilon']:.3g} (mu {g['mu']:.3g})")
        for b in canaries["bounds"]:
            lines.append(f"  canary lower bound [{b['method']}]: epsilon >= {b['epsilon']:.3g} "
                         f"(confidence {b['confidence']}, {'rigorous' if b['rigorous'] else 'model-based'})")
    if not audit["transcript_findings"]:
        lines.append("  transcript check: every release matches the accountant's assumptions")
    seconds = audit["seconds"]
    lines.append(f"  time: accounting {seconds['accounting']:.1f} s, Flower run {seconds['flower_run']:.1f} s")
    return lines


def canary_bounds(canaries: dict, delta: float, confidence: float) -> list[dict]:
    """Steinke et al.'s and the Gaussian f-DP one-run lower bounds from the canaries' cosines (each the
    best of several guess counts, Bonferroni-corrected over them; ``attacks.estimators``)."""
    from attacks.estimators import estimate_one_run

    bounds = estimate_one_run(canaries["scores"], canaries["included"], delta, confidence)
    return [{"method": b.method, "epsilon": b.epsilon, "confidence": b.confidence, "rigorous": b.rigorous}
            for b in bounds]


def run(args) -> int:
    from accounting.errors import require_number
    from dpfed.flower.config import CLAIMS
    from dpfed.flower.example_app import AppSettings

    settings = AppSettings(nodes=args.nodes, sampled=args.sampled, rounds=args.rounds,
                           noise_multiplier=args.noise_multiplier, clip=args.clip, seed=args.seed, bug=args.bug,
                           canaries=args.canaries)
    require_number("confidence", args.confidence, low=0, high=1, low_open=True, high_open=True)
    require_number("delta", args.delta, low=0, high=1, low_open=True, high_open=True)
    if args.claimed_epsilon is not None:
        require_number("claimed-epsilon", args.claimed_epsilon, low=0, low_open=True)
    claims = tuple(c.strip() for c in args.claim.split(",") if c.strip())
    unknown = [c for c in claims if c not in CLAIMS]
    if unknown:
        raise ConfigurationError("claim", f"unknown claim {unknown[0]!r}; choose from {', '.join(CLAIMS)}")
    try:
        import flwr  # noqa: F401
    except ModuleNotFoundError as exc:
        message = "flwr is not installed; pip install -c constraints.txt -e '.[flower]'"
        raise ConfigurationError("flower", message) from exc
    from dpfed.flower.audit import audit_example

    audit = audit_example(settings, args.delta, claims, args.claimed_epsilon)
    if audit["canaries"]:
        audit["canaries"]["bounds"] = canary_bounds(audit["canaries"], args.delta, args.confidence)
    print("\n".join(summary_lines(audit)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(audit, handle, indent=1)
    return int(ExitCode.VIOLATION if audit["verdict"] == "VIOLATION" else ExitCode.PASS)
