"""``dpaudit flower``: audit the Flower example app (configuration check, a run on Flower's simulation
engine with every release recorded, transcript check). Needs the ``flower`` extra."""

from __future__ import annotations

from accounting.errors import ConfigurationError
from reports.exit_codes import ExitCode


def add_parser(sub) -> None:
    p = sub.add_parser("flower", help="audit the Flower example app (needs pip install -e '.[flower]')")
    p.add_argument("--nodes", type=int, default=40, help="real clients (Flower nodes besides the canaries; default 40)")
    p.add_argument("--sampled", default="8",
                   help="clients sampled per round m, of the real clients and canaries together, or 'all' "
                   "(default 8)")
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
                   help="k canary clients, each answering current + s C u with a secret random sign s (one-run "
                   "audit, replace-one)")
    p.add_argument("--hidden", type=int, default=0,
                   help="hidden units of the example model (default 0: logistic regression, 650 parameters)")
    p.add_argument("--confidence", type=float, default=None,
                   help="confidence of the canary lower bounds (default 0.95; needs --canaries)")
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
        lines.extend(canary_lines(canaries, audit["accounted_epsilon"], audit["realised_epsilon"]))
    if not audit["transcript_findings"]:
        lines.append("  transcript check: every release matches the accountant's assumptions")
    seconds = audit["seconds"]
    lines.append(f"  time: accounting {seconds['accounting']:.1f} s, Flower run {seconds['flower_run']:.1f} s")
    return lines


def canary_lines(canaries: dict, accounted: float, realised: float) -> list[str]:
    plus = sum(1 for s in canaries["signs"] if s > 0)
    lines = [f"  canaries: {len(canaries['signs'])} ({plus} with sign +1), d = {canaries['dim']}, "
             f"{canaries['rounds']} rounds; what Flower runs spends epsilon >= {realised:.4g} (the pair its sampler "
             f"realises) and <= {accounted:.4g} (RDP)"]

    def share(epsilon: float) -> str:
        return f"{epsilon / realised:.0%} of the realised pair" if realised > 0 else "no realised pair"

    for model in ("final_model", "all_iterates"):
        e = canaries[model]["estimate"]
        stderr = f" +- {e['mu_stderr']:.2g}" if e["mu_stderr"] is not None else ""
        lines.append(f"  [{model}] mean-shift GDP estimate: epsilon {e['epsilon']:.4g} (mu {e['mu']:.3g}{stderr}; "
                     f"{share(e['epsilon'])}); an estimate, not a bound")
    measured = canaries.get("measured_shift")
    if measured and measured["participations"]:
        e = measured["estimate"]
        stderr = f" +- {e['stderr']:.2g}" if e["stderr"] is not None else ""
        at_least = ">= " if e.get("at_least") else ""
        lines.append(f"  [took part] measured-shift estimate: epsilon {at_least}{e['epsilon']:.4g} "
                     f"({share(e['epsilon'])}; "
                     f"shift a {e['shift']:.3g}{stderr} noise stds a round, 1/z {measured['configured_shift']:.3g}; "
                     f"{measured['canaries']} canaries in {measured['participations']} canary-rounds, rate "
                     f"{measured['rate']:.3g}); an estimate, not a bound")
    for b in canaries["bounds"]:
        lines.append(f"  [{b['threat_model']}] lower bound {b['method']}: epsilon >= {b['epsilon']:.3g} "
                     f"(confidence {b['confidence']:.4g}, {'rigorous' if b['rigorous'] else 'model-based'})")
    return lines


def parse_sampled(text: str, nodes: int, canaries: int) -> int:
    if str(text).strip().lower() == "all":
        return nodes + canaries
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError("sampled", f"expected a whole number or 'all', got {text!r}") from None


def parse_claim_list(text: str) -> tuple[str, ...]:
    """``--claim a,b``: each claim once; an empty item (``--claim ,``) is refused, not skipped."""
    from dpfed.flower.config import parse_claims

    if not text.strip():
        return ()
    items = [c.strip() for c in text.split(",")]
    if not all(items):
        raise ConfigurationError("claim", f"empty item in {text!r}; name claims separated by commas")
    return parse_claims(items)


def check_run_memory(settings) -> None:
    """Refuse a model or a run too large for memory before Flower starts. Per parameter, about: the transcript's
    noise of every round as Python floats (32 bytes) and the recorder's round deltas (8), its float64 updates of
    the sampled clients and working copies (8 bytes each); the model is checked at one round, then the rounds."""
    from dpfed.flower.example_app import CLASSES, PARAMETERS_PER_HIDDEN, parameter_count
    from reports.commands.common import check_memory

    per_round, fixed = 40, 8 * (settings.sampled + 8)
    if settings.hidden:
        check_memory("hidden", settings.hidden, PARAMETERS_PER_HIDDEN * (per_round + fixed),
                     CLASSES * (per_round + fixed), " hidden units")
    d = parameter_count(settings)
    check_memory("rounds", settings.rounds, per_round * d, fixed * d, " rounds")


def run(args) -> int:
    from accounting.errors import require_number
    from dpfed.flower.example_app import AppSettings
    from reports.commands.common import check_output_file

    settings = AppSettings(nodes=args.nodes, sampled=parse_sampled(args.sampled, args.nodes, args.canaries),
                           rounds=args.rounds, noise_multiplier=args.noise_multiplier, clip=args.clip,
                           seed=args.seed, bug=args.bug, canaries=args.canaries, hidden=args.hidden)
    confidence = 0.95 if args.confidence is None else args.confidence
    require_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    if args.confidence is not None and not settings.canaries:
        raise ConfigurationError("confidence", "applies to the canary bounds only; add --canaries K")
    require_number("delta", args.delta, low=0, high=1, low_open=True, high_open=True)
    if args.claimed_epsilon is not None:
        require_number("claimed-epsilon", args.claimed_epsilon, low=0, low_open=True)
    claims = parse_claim_list(args.claim)
    if args.out is not None:  # "" too: refused, not ignored
        check_output_file("out", args.out)  # before the run, not after it
    from reports.audit.flower_canaries import check_canary_count

    check_canary_count(settings.canaries, args.delta, confidence)  # before the run: too few can show nothing
    check_run_memory(settings)
    try:
        import flwr  # noqa: F401
    except ModuleNotFoundError as exc:
        message = "flwr is not installed; pip install -c constraints.txt -e '.[flower]'"
        raise ConfigurationError("flower", message) from exc
    from dpfed.flower.audit import audit_example
    from reports.audit.flower_canaries import canary_bounds

    audit = audit_example(settings, args.delta, claims, args.claimed_epsilon)
    if audit["canaries"]:
        audit["canaries"]["bounds"] = canary_bounds(audit["canaries"], args.delta, confidence)
    print("\n".join(summary_lines(audit)))
    if args.out is not None:
        from attacks.files import atomic_write_text, dumps_json

        atomic_write_text(args.out, dumps_json(audit, indent=1))  # "inf", never Infinity; no half-written file
    return int(ExitCode.VIOLATION if audit["verdict"] == "VIOLATION" else ExitCode.PASS)
