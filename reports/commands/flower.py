"""``dpaudit flower APP_DIR``: audit a Flower app project as ``flwr run APP_DIR`` runs it in simulation.

The project's ``pyproject.toml`` is read as flwr 1.42 reads it; ``--run-config`` overrides its run config with
flwr's syntax; ``--num-supernodes`` sets the simulation's size. Naming the directory is the opt-in to running its
code. The audit is the ``flower-app`` one-run probe (``attacks.probes.flower``): one real run of the app with
``--canaries`` canary SuperNodes, every strategy observed where it starts and every release recorded, every client's
private training observed; then the configuration check of each DP strategy as built and of every round's sample,
the transcript check, the clients' epsilons composed over their rounds, and the canaries' bounds. Needs the
``flower`` extra.
"""

from __future__ import annotations

from accounting.errors import ConfigurationError
from accounting.vocabulary import bound_kind
from reports.exit_codes import ExitCode


def add_parser(sub) -> None:
    from reports.commands.common import add_old_spelling
    from reports.commands.run_progress import add_progress_argument

    p = sub.add_parser("flower", help="audit a Flower app project as flwr run runs it (needs pip install -e "
                                      "'.[flower]')")
    p.add_argument("app", metavar="APP_DIR", help="the Flower app project (a directory with its pyproject.toml); its "
                   "code is run")
    p.add_argument("--run-config", default="", help="overrides of [tool.flwr.app.config], as flwr run takes them: "
                   "'key=value ...' with TOML values, strings quoted (e.g. 'num-server-rounds=3 mode=\"fast\"')")
    p.add_argument("--num-supernodes", type=int, default=2,
                   help="SuperNodes of the simulation (flwr run ... --federation-config 'num-supernodes=N'; default 2, "
                   "as flwr run's local simulation); the canaries come on top")
    p.add_argument("--canaries", type=int, default=0,
                   help="k canary SuperNodes added by the audit, each answering current + s C u with a secret random "
                   "sign s (one-run audit, replace-one); 0 or at least 4 (default 0)")
    p.add_argument("--client-canaries", type=int, default=0,
                   help="gradient canaries through each client's own private optimizer (opacus in the ClientApp), the "
                   "same in each of its rounds: a one-run lower bound per client; 0 or enough for the one-run "
                   "estimators (default 0)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of every epsilon (default 1e-5)")
    p.add_argument("--assumptions", default="",
                   help="comma-separated accounting assumptions to check: no-amplification (Flower's accountant), "
                   "poisson, z-unchanged (default: none; every row is shown)")
    add_old_spelling(p, "--claim", "--assumptions", "assumptions")  # not the claimed epsilon: --claim-epsilon
    p.add_argument("--claim-epsilon", type=float, default=None,
                   help="the epsilon the user states (replace-one for central DP), if any; the canaries and each "
                   "client's "
                   "composed epsilon test it (default: what Flower runs, our upper bound; clients training with "
                   "opacus: the epsilon each reports)")
    add_old_spelling(p, "--claimed-epsilon", "--claim-epsilon", "claim_epsilon", type=float)
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the canaries' directions and signs (--canaries, --client-canaries; default 0)")
    p.add_argument("--confidence", type=float, default=None,
                   help="confidence of the canary lower bounds (default 0.95; needs --canaries)")
    p.add_argument("--false-alarm", type=float, default=1e-3,
                   help="probability that each transcript test flags a correct run (default 1e-3)")
    add_old_spelling(p, "--transcript-alpha", "--false-alarm", "false_alarm", type=float)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory: DIR/report.json, the full audit (findings, bounds, canary scores) as JSON "
                   "(made if missing)")
    add_progress_argument(p, help="no progress on stderr: Flower's own INFO log (each round, its sampling, its "
                          "mods' notes) is left out; warnings and errors are still shown")
    p.set_defaults(func=run)


def parse_claim_list(text: str) -> tuple[str, ...]:
    """``--assumptions a,b``: each once; an empty item (``--assumptions ,``) is refused, not skipped."""
    from dpfed.flower.config import parse_claims

    if not text.strip():
        return ()
    items = [c.strip() for c in text.split(",")]
    if not all(items):
        raise ConfigurationError("assumptions", f"empty item in {text!r}; name assumptions separated by commas")
    return parse_claims(items, field="assumptions")


def verdict_line(audit: dict) -> str:
    """The verdict, saying so where no claim was tested (the checks then test the run against its own configuration:
    a PASS says the run does what is accounted, not that any epsilon someone states holds)."""
    line = f"Flower app audit of {audit['app']}: verdict {audit['verdict']}"
    if audit["claim_tested"]:
        return line
    accounted = audit["details"].get("accounted_epsilon")
    several = sum(1 for start in audit["starts"] if start["dp_wrapper"] is not None) > 1
    which = ", its first DP strategy's rounds" if several else ""
    spent = "" if accounted is None else (f" (epsilon {accounted:.4g} at delta {audit['delta']:g}, what Flower runs"
                                          f"{which})")
    return (f"{line}, no claim tested: the run was checked against what its configuration accounts{spent}; "
            "--claim-epsilon E tests your figure")


def start_line(start: dict) -> str:
    """One strategy the app started, its DP wrapper named once (the app's own subclass beside Flower's class)."""
    wrapper, flower, strategy = start["dp_wrapper"], start.get("flower_wrapper"), start["strategy"]
    subclass = "" if wrapper == flower else f" (a {flower})"
    name, tail = strategy + (subclass if wrapper == strategy else ""), ""
    if wrapper is None:
        tail = ", no central-DP wrapper"
    elif wrapper != strategy:
        tail = f", in {wrapper}{subclass}"
    secure = f", {start['workflow']} (secure aggregation)" if start["secure_aggregation"] else ""
    inner = f", around {start['inner_strategy']} (what is noised is its aggregate)" if start.get("inner_strategy") \
        else ""
    return f"  ran {name} via {start['entry']}: {rounds_words(start)}{tail}{inner}{secure}"


def rounds_words(start: dict) -> str:
    """The rounds a strategy ran (its releases recorded), beside the configured number where they differ; without a
    recorder (no DP wrapper) the configured number, said so."""
    ran, configured = start.get("rounds_run"), start["rounds"]
    if ran is None:
        return f"{_rounds(configured)} configured"
    return _rounds(ran) if ran == configured else f"{_rounds(ran)} run (of {configured} configured)"


def _rounds(count: int) -> str:
    return f"{count} round{'' if count == 1 else 's'}"


def sensitivity_line(details: dict) -> list[str]:
    """What the replays of the inner strategy showed (``attacks.flower_checks.sensitivity_check.summary``)."""
    seen = details.get("sensitivity")
    if not seen:
        return []
    if not seen["measured"]:
        return [f"  sensitivity of {seen['strategy']}'s aggregation: not tested in any of its {seen['rounds']} rounds "
                f"({next(iter(seen['untested'].values()))})"]
    untested = f"; not tested in {len(seen['untested'])} rounds" if seen["untested"] else ""
    return [f"  sensitivity of {seen['strategy']}'s aggregation, replayed in {seen['measured']} of {seen['rounds']} "
            f"rounds over {seen['neighbours']} neighbouring reply sets: up to {seen['in_c_over_m']:.4g} C/m when one "
            f"reply is replaced within the clip ({seen['replace_ratio']:.4g} of the 2C/m the noise is calibrated "
            f"for), {seen['zero_ratio']:.4g} C/m with one update taken out{untested}"]


def transcript_lines(details: dict) -> list[str]:
    """What the transcript check looked at, the canary run beside the deployment, and the noise test's power."""
    lines, summary, canary_run = [], details.get("transcript_check"), details.get("canary_run")
    if canary_run:
        config = details["config"]
        lines.append(f"  canary run: {canary_run['canaries']} canary SuperNodes beside the {config['nodes']} real "
                     f"ones, {'/'.join(map(str, canary_run['sampled']))} of {canary_run['supernodes']} sampled a "
                     "round; "
                     f"accounted as the deployment: {config['sampled']} of {config['nodes']} a round (the same rate)")
    if summary:
        which = " (first DP strategy)" if sum(1 for s in details.get("starts", []) if s["dp_wrapper"]) > 1 else ""
        lines.append(f"  transcript check{which}: {_rounds(summary['rounds'])}, {len(summary['checks'])} kinds of "
                     "check "
                     f"({', '.join(summary['checks'])}), each at false alarm {summary['alpha']:g}: "
                     f"{summary['findings'] or 'no'} finding{'' if summary['findings'] == 1 else 's'}")
    power = (summary or {}).get("power")
    if power:
        lines.append(f"  power: each round's noise ({power['coordinates']} coordinates) would be refuted below "
                     f"{power['refuted_ratio']:.3f} of the accounted with probability {power['probability']:g}; less "
                     "noise than that may pass unseen")
    return lines


def client_lines(audit: dict) -> list[str]:
    lines = []
    for node, row in audit["clients"].items():
        reported = "none" if row["reported_epsilon"] is None else f"{row['reported_epsilon']:.4g}"
        lines.append(f"  client {node} (partition {row['partition']}): {row['steps']} opacus steps over "
                     f"{len(row['rounds'])} round(s), z {row['noise_multipliers']}: epsilon "
                     f"{row['composed_epsilon']:.4g} composed [pld], reported {reported}"
                     + (f", canary bound {row['canary_bound']:.3g}" if "canary_bound" in row else ""))
    for node, row in audit["local_dp"].items():
        lines.append(f"  client {node}: {row['rounds']} LocalDpMod release(s) of epsilon "
                     f"{row['per_release_epsilon']:.4g} each: epsilon {row['composed_epsilon']:.4g} composed [exact] "
                     f"at delta {row['delta']:g}")
    return lines


SHOWN_INFO = ("canary-estimate", "canaries-untestable", "adaptive-count-noise")


def summary_lines(audit: dict) -> list[str]:
    lines = [verdict_line(audit), *(start_line(start) for start in audit["starts"])]
    for name, row in audit["rows"].items():
        lines.append(f"  epsilon {row['epsilon']:9.4g}  [{row['accountant']}]  {name}: {row['describes']}")
    lines += client_lines(audit) + transcript_lines(audit["details"]) + sensitivity_line(audit["details"])
    for f in audit["findings"]:
        if f["severity"] != "info" or f["code"] in SHOWN_INFO:
            lines.append(f"  {f['severity'].upper():8s} {f['code']}: {f['message']}")
    for b in audit["bounds"]:
        lines.append(f"  [{b['threat_model']}] lower bound {b['method']}: epsilon >= {b['epsilon']:.3g} "
                     f"(confidence {b['confidence']:.4g}, {bound_kind(b['rigorous'])})")
    if audit["canary_status"] is not None:
        status, ceiling = audit["canary_status"], f"ceiling {audit['ceiling']:.3g}"
        ceiling = f"the claim is above their {ceiling}" if status == "INCONCLUSIVE" else ceiling
        lines.append(f"  canaries against epsilon {audit['tested_epsilon']:.4g}: {status} ({ceiling}; p = "
                     f"{audit['p_value']:.3g})")
    lines.append(f"  time: {audit['seconds']:.1f} s")
    return lines


def check_arguments(args) -> None:
    from accounting.errors import require_number
    from attacks.probes.flower_bounds import check_canary_count
    from attacks.probes.one_run import check_canary_count as check_client_canaries
    from reports.commands.common import report_path

    require_number("num-supernodes", args.num_supernodes, low=1, integer=True)
    require_number("canaries", args.canaries, low=0, integer=True)
    require_number("client-canaries", args.client_canaries, low=0, integer=True)
    if args.seed is not None:
        require_number("seed", args.seed, low=0, high=2**32 - 1, integer=True)
        if not args.canaries and not args.client_canaries:
            raise ConfigurationError("seed", "seeds the canaries only; add --canaries K or --client-canaries K")
    require_number("delta", args.delta, low=0, high=1, low_open=True, high_open=True)
    require_number("false-alarm", args.false_alarm, low=0, high=1, low_open=True, high_open=True)
    if args.confidence is not None:
        require_number("confidence", args.confidence, low=0, high=1, low_open=True, high_open=True)
        if not args.canaries:
            raise ConfigurationError("confidence", "applies to the canary bounds only; add --canaries K")
    # too few canaries can show nothing: refused before the run
    check_canary_count(args.canaries, args.delta, 0.95 if args.confidence is None else args.confidence)
    check_client_canaries(args.client_canaries, args.delta, 0.95, field="client-canaries")  # one threat model
    if args.claim_epsilon is not None:
        require_number("claim-epsilon", args.claim_epsilon, low=0, low_open=True)
    if args.out is not None:
        args.report_target = report_path("out", args.out, "report.json")  # before the run, not after it


def run(args) -> int:
    import time

    check_arguments(args)
    claims = parse_claim_list(args.assumptions)
    try:
        import flwr  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ConfigurationError("flower", "flwr is not installed; pip install -c constraints.txt -e '.[flower]'") \
            from exc
    from attacks.probes import get_probe
    from dpfed.flower.app_project import parse_run_config
    from dpfed.flower.quiet import quiet_flower_log

    overrides = parse_run_config(args.run_config)
    probe = get_probe("flower-app", app=args.app, run_config=overrides, num_supernodes=args.num_supernodes,
                      claims=claims, claimed_epsilon=args.claim_epsilon, transcript_alpha=args.false_alarm,
                      client_canaries=args.client_canaries)
    probe.project()  # a bad project or run config: one line, before anything runs
    started = time.perf_counter()
    confidence = 0.95 if args.confidence is None else args.confidence
    seed = 0 if args.seed is None else args.seed
    with quiet_flower_log(args.no_progress):
        outcome = probe.run_once(args.canaries, seed, args.claim_epsilon, args.delta, confidence)
    critical = any(f["severity"] == "critical" for f in outcome.findings)
    verdict = "VIOLATION" if critical or outcome.status == "VIOLATION" else "PASS"
    if verdict == "PASS" and any(f["code"] == "sensitivity-untested" for f in outcome.findings):
        verdict = "INCONCLUSIVE"  # the premise that what is noised has sensitivity C/m was not tested
    audit = {"app": args.app, "run_config": overrides, "num_supernodes": args.num_supernodes,
             "canaries": args.canaries, "delta": args.delta, "claims": list(claims), "verdict": verdict,
             "starts": outcome.details["starts"], "rows": outcome.details["rows"],
             "clients": outcome.details["clients"], "local_dp": outcome.details["local"],
             "findings": outcome.findings, "bounds": outcome.bounds,
             "canary_status": outcome.status, "p_value": outcome.p_value, "ceiling": outcome.ceiling,
             "tested_epsilon": outcome.details.get("tested_epsilon"), "details": outcome.details,
             "claim_tested": bool(args.claim_epsilon is not None or claims or outcome.details["clients"]
                                  or outcome.details["local"]),
             "seconds": time.perf_counter() - started}
    print("\n".join(summary_lines(audit)))
    if args.out is not None:
        from attacks.files import dumps_json
        from reports.commands.common import write_report

        write_report(args.report_target, dumps_json(audit, indent=1))  # "inf", never Infinity; atomic
    return int({"VIOLATION": ExitCode.VIOLATION, "INCONCLUSIVE": ExitCode.INCONCLUSIVE}.get(verdict, ExitCode.PASS))
