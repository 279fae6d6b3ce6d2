"""``dpaudit attack`` on a one-run probe (``attacks.probes.one_run``, e.g. ``dpsgd-one-run``): the system runs once,
in this process, with ``--trials`` canaries, each included by an independent fair coin; the one-run estimators
bound epsilon and the rigorous one tests the claim (as the audit runs such a probe,
``reports.audit.probes.run_one_run_probe``). The options that say how two worlds of trials are batched and where
they run do not apply and are refused, so that none is silently ignored. Exit codes as for the other probes.
"""

from __future__ import annotations

import math
import sys
import time

from accounting.errors import ConfigurationError
from accounting.vocabulary import bound_kind

# memory of one run, by probe: (fixed bytes, bytes per canary squared). dpsgd-one-run's canaries join the training as
# examples and as coordinates, so its per-example gradients grow with their square; measured on the default set-up:
# 0.7 GB at 5,000 canaries, 2.9 GB at 20,000, 10 GB at 40,000 (killed for memory at 100,000 on 23 GB)
ONE_RUN_MEMORY = {"dpsgd-one-run": (0.5e9, 8.0)}

# attack's settings about batching two worlds of trials: a one-run probe has none of them
TWO_WORLD_SETTINGS = ("executor", "workers", "scheduler", "checkpoint", "batch_size", "reduction", "backend",
                      "device", "methods")


def check_one_run_settings(probe, settings: dict) -> None:
    """Refuse (one line, before any run) a setting that only a two-world probe uses."""
    for key in TWO_WORLD_SETTINGS:
        if key in settings.get("given", ()):
            raise ConfigurationError(key, f"{probe.name} is a one-run probe: it runs once in this process with "
                                     f"--trials canaries, so --{key.replace('_', '-')} (batches of two worlds) "
                                     "does not apply")


def canaries_of(probe, settings: dict) -> int:
    """``--trials`` as the canaries of the one run (default: the probe's ``canaries_per_run``), checked."""
    from attacks.run_plan import check_trial_count

    if "trials" in settings.get("given", ()):
        canaries = check_trial_count(settings["trials"])
    elif getattr(probe, "canaries_per_run", None):
        canaries = int(probe.canaries_per_run)
    else:
        raise ConfigurationError("trials", f"{probe.name} is a one-run probe: give --trials K, its canaries")
    canaries = int(probe.check_canaries(canaries)) if hasattr(probe, "check_canaries") else canaries
    check_one_run_memory(probe, canaries)
    return canaries


def check_one_run_memory(probe, canaries: int) -> None:
    """Refuse (one line, before the run) a canary count whose run would not fit in the memory available now."""
    from reports.commands.common import available_memory

    if probe.name not in ONE_RUN_MEMORY:
        return
    fixed, per_square = ONE_RUN_MEMORY[probe.name]
    need, available = fixed + per_square * float(canaries) ** 2, available_memory()
    if need > available:
        largest = int(math.sqrt(max(0.0, available - fixed) / per_square))
        raise ConfigurationError("trials", f"{canaries} canaries in one {probe.name} run need about "
                                 f"{need / 2**30:.3g} GiB of memory (it grows with their square), more than the "
                                 f"{available / 2**30:.3g} GiB available; at most about {largest} fit")


def one_run_result(probe, settings: dict) -> dict:
    """Run ``probe`` once as ``settings`` say; the result as a plain dict (``--format json`` prints it)."""
    from attacks.attack import AttackOptions, _levels
    from attacks.executors import root_seed

    check_one_run_settings(probe, settings)
    options = AttackOptions(delta=settings.get("delta"), confidence=settings["confidence"],
                            claim_epsilon=settings.get("claim_epsilon"), claim_delta=settings.get("claim_delta"))
    delta, confidence, claim_epsilon, claim_delta = _levels(probe, options)
    if claim_delta != delta:
        raise ConfigurationError("claim_delta", "a one-run probe tests the claim at the delta of its bounds; give "
                                 "--delta only")
    canaries = canaries_of(probe, settings)
    seed = int(root_seed(settings.get("seed")).entropy)
    metadata = probe.metadata(delta)
    true_epsilon = metadata.get("true_epsilon")
    source = "given"
    if claim_epsilon is None and true_epsilon is not None and math.isfinite(true_epsilon):
        claim_epsilon, source = float(true_epsilon), "tight epsilon of the described mechanism"
    tested = claim_epsilon is not None and math.isfinite(claim_epsilon)
    started = time.perf_counter()
    outcome = probe.run_once(canaries, seed, claim_epsilon if tested else math.inf, delta, confidence)
    verdict = None
    if tested:
        from attacks.probes.one_run import claim_p_value
        from attacks.verdict import deciding_test
        from reports.commands.common import one_run_reason

        rigorous = [b for b in outcome.bounds if b["rigorous"]]
        best = max(rigorous, key=lambda b: b["epsilon"], default=None)
        best = None if best is None else (best["method"], best["epsilon"])
        each = [claim_p_value(b, claim_epsilon, delta) for b in rigorous]
        verdict = {"status": outcome.status, "p_value": outcome.p_value, "ceiling": outcome.ceiling,
                   "reason": one_run_reason(outcome.status, best, outcome.p_value, outcome.ceiling, canaries,
                                            claim_epsilon, delta, confidence, more="more canaries (--trials)",
                                            decider=deciding_test(rigorous, each), rigorous=len(rigorous))}
    return {"probe": metadata, "one_run": True, "canaries": canaries, "seed": str(seed), "delta": delta,
            "confidence": confidence,
            "claim": {"epsilon": claim_epsilon, "delta": delta, "source": source} if claim_epsilon is not None
            else None,
            "true_epsilon": true_epsilon, "bounds": outcome.bounds, "verdict": verdict,
            "findings": outcome.findings, "details": outcome.details,
            "elapsed_seconds": time.perf_counter() - started}


def _fmt(value, digits=4) -> str:
    if value is None:
        return "-"
    return "inf" if value == math.inf else f"{value:.{digits}g}"


def print_one_run(result: dict, out=None) -> None:
    from reports.commands.common import probe_title

    out = sys.stdout if out is None else out
    p, details = result["probe"], result["details"]
    included = f"; {details['included']} in" if "included" in details else ""
    print(f"probe       {probe_title(p)}, {p['threat_model']}: {p['description']}", file=out)
    print(f"canaries    {result['canaries']} in one run (each in by a fair coin{included}), seed {result['seed']}, "
          f"{result['elapsed_seconds']:.1f} s", file=out)
    print(f"true eps    {_fmt(result['true_epsilon'])} at delta {result['delta']:.4g} (tight, described mechanism)",
          file=out)
    claim = result["claim"]
    if claim is not None:
        print(f"claim       epsilon {_fmt(claim['epsilon'])} at delta {claim['delta']:.4g} ({claim['source']})",
              file=out)
    print(f"\n{'estimator':<24}{'epsilon >=':>11}{'delta':>11}{'conf.':>7}  kind", file=out)
    for b in result["bounds"]:
        kind = bound_kind(b["rigorous"])
        print(f"{b['method']:<24}{b['epsilon']:>11.4f}{result['delta']:>11.3g}{b['confidence']:>7.4g}  {kind}",
              file=out)
    for f in result["findings"]:
        print(f"finding     {f['severity'].upper()} {f['code']}: {f['message']}", file=out)
    v = result["verdict"]
    if v is not None:
        print(f"\nverdict     {v['status']}  (p = {_fmt(v['p_value'], 3)}, ceiling {_fmt(v['ceiling'])}): "
              f"{v['reason']}", file=out)
    else:
        print("\nverdict     none (no finite claim; give --claim-epsilon)", file=out)


def run_one_run(args, settings: dict, probe) -> int:
    """``dpaudit attack`` on a one-run probe: run it, print the table (or JSON) and return the exit code."""
    from attacks.attack import EXIT_CODES
    from attacks.files import dumps_json

    result = one_run_result(probe, settings)
    if args.format == "json":
        print(dumps_json(result, indent=2))
    else:
        print_one_run(result)
    return 0 if result["verdict"] is None else EXIT_CODES[result["verdict"]["status"]]
