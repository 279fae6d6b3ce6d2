"""The dp-sgd target's ``train`` form: the user's own training function run as written, once, and observed.

``train = "file.py:function"`` (``argv``: its command line, for an argparse ``main``) is run when the target is
built (``attacks.opacus_checks.train_run``); its mechanism is what ran: the private steps' Poisson subsampled
Gaussian (when steps differ in noise multiplier or rate, the weakest of them over all steps: an upper bound; where
steps summed several Poisson batches, none: the accounting section is then unavailable and names the finding that
accounts it), and
the checks of ``attacks.opacus_checks.observed`` become ``dpsgd-check`` findings, with the claim as written in the
configuration (epsilon, delta, unit: a unit naming a user reads ``user_key``).
"""

from __future__ import annotations

from accounting.errors import ConfigurationError
from accounting.mechanisms import SubsampledGaussian
from reports.audit.model import Finding


def claim_unit(unit: str) -> str:
    """``user`` when the claim's unit names a user or person, else ``record``."""
    words = str(unit).lower()
    return "user" if any(w in words for w in ("user", "person", "people", "individual")) else "record"


def observe_training(spec, claim, argv, user_key, canaries: int = 0, seed: int = 0) -> dict:
    """Run and check the user's training (with ``canaries`` gradient canaries through its own optimizer, seeded
    ``seed``): ``{"training", "checked", "mechanism", "releases"}``."""
    from attacks.opacus_checks.observed import check_training
    from attacks.opacus_checks.train_run import run_user_training
    from attacks.probes.one_run import check_canary_count
    from dpfed.dpsgd.loop_canaries import LoopCanaries

    try:
        check_canary_count(canaries, claim.delta, 0.95)
        if not 0 <= seed < 2**32:
            raise ConfigurationError("canary_seed", f"must lie in [0, 2^32), got {seed}")
        plan = LoopCanaries(canaries, seed) if canaries else None
        training = run_user_training(spec, argv, field="parameters.train", canaries=plan)
        checked = check_training(training, claim.delta, claim.epsilon, claim_unit(claim.unit), user_key)
    except ConfigurationError as exc:
        field = exc.field if exc.field.startswith("parameters.") else f"parameters.{exc.field}"
        raise ConfigurationError(field, str(exc).split(": ", 1)[-1]) from None
    rows = checked["rows"]
    if not rows:
        return {"training": training, "checked": checked, "mechanism": None, "releases": 0}
    rate = max(rows["sample_rates"]) if rows["sample_rates"] else 1.0
    clip = max(rows["clips"]) if rows["clips"] else 1.0
    mechanism = SubsampledGaussian(min(rate, 1.0), min(rows["noise_multipliers"]), clip)
    unaccountable = None
    if rows.get("accumulated", 1) > 1:  # the subsampled Gaussian at rate kq is what opacus accounts, not what ran
        unaccountable = (f"the steps sum up to {rows['accumulated']} Poisson batches each (allow_grad_accumulation): a "
                         "mixture of Gaussians no accountant of this section models; its epsilon, "
                         f"{rows['epsilon']:.4g}, is in the dpsgd-check findings (accumulated-batches)")
    return {"training": training, "checked": checked, "mechanism": mechanism, "releases": int(rows["steps"]),
            "unaccountable": unaccountable}


def train_findings(observed: dict) -> list:
    """The checks' findings and a row of what ran, as ``dpsgd-check`` findings."""
    from attacks.opacus_checks.observed import steps_analysis

    checked = observed["checked"]
    out = [Finding("dpsgd-check", f.severity, {"code": f.code, "message": f.message, **dict(f.values)})
           for f in checked["findings"]]
    for premise in checked.get("premises", ()):
        if not premise["observed"]:
            from attacks.opacus_checks.premises import PREMISES

            out.append(Finding("dpsgd-check", "info", {
                "code": "premise-not-observed", "premise": premise["premise"],
                "message": f"not observed: {PREMISES[premise['premise']]} ({premise['how']}); no accountant's bound "
                           "proves the claim without it"}))
    rows = checked["rows"]
    if rows:
        out.append(Finding("dpsgd-check", "info", {
            "code": "observed-training", "steps": rows["steps"], "steps_epsilon": rows["epsilon"],
            "opacus_rdp_epsilon": rows["opacus_rdp"], "reported_epsilon": rows["reported_epsilon"],
            "noise_power": rows.get("noise_power"),
            "message": f"the training ran {rows['steps']} private steps (noise multipliers "
                       f"{rows['noise_multipliers']}, clips {rows['clips']}): epsilon {rows['epsilon']:.4g} "
                       f"({steps_analysis(rows)}; opacus's RDP "
                       f"{rows['opacus_rdp']:.4g}); {_reported_words(rows['reported_epsilon'])}"}))
    return out


def _reported_words(value) -> str:
    """What the training's engine reported: its epsilon, or that the training never asked for one."""
    return "the training never asked its engine for its epsilon" if value is None else \
        f"its engine reported {value:.4g}"


CANARY_PROBE = "dpsgd-train-canaries"  # the train form's gradient canaries, as a probe section of the report


def canary_section(observed: dict, claim, confidence: float):
    """The gradient canaries that joined the user's training as a probe that ran (``ProbeSection``): their one-run
    bounds (rigorous and model-based) at the audit's ``confidence`` for the claim, so the verdict and the report's
    summary count them as a test; None when no canary ran."""
    from attacks.opacus_checks.observed_canaries import canary_result
    from reports.audit.model import ProbeSection

    training = observed["training"]
    canaries = training.canaries
    if canaries is None or not canaries.steps:
        return None
    threat = "all iterates (white box), one run, through the user's optimizer"
    result = canary_result(canaries.scores, canaries.included, canaries.steps, claim.epsilon, claim.delta,
                           confidence, threat)
    return ProbeSection(
        name=CANARY_PROBE, kind="end-to-end", outcome="ran", threat_model=threat,
        description=f"{result['canaries']} gradient canaries inserted through the training's own private optimizer "
                    f"over its {result['steps']} steps, each in by a fair coin (one run; Steinke et al.)",
        trials=int(result["canaries"]), seed=int(getattr(canaries, "seed", 0) or 0),
        params={"canaries": int(result["canaries"]), "steps": int(result["steps"])},
        bounds=tuple({**b, "delta": claim.delta} for b in result["bounds"]), status=result["status"],
        p_value=result["p_value"], ceiling=result["ceiling"], confidence=confidence)
