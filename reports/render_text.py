"""The words of a report: every sentence the Markdown and HTML renderings show, written here from the
numbers and ids of the report JSON (the audit writes no prose). Plain text; each renderer escapes it."""

from __future__ import annotations

from reports.model import as_number, claim_in_words, findings_tally, is_available, verdict_headline
from reports.model import fmt_number as f

CEILING_WORDS = "a perfect attack could certify at most epsilon = {ceiling} with these trials"


def _ceiling(value) -> str:
    return CEILING_WORDS.format(ceiling=f(value))


def audit_confidence(verdict: dict) -> float:
    """The audit's confidence from the per-probe confidence and the number of probes it was split over."""
    empirical = verdict["empirical"]
    split = max(1, empirical["probes_run"] + len(empirical["failed"]))
    return 1.0 - (1.0 - float(empirical["confidence"])) * split


def _lower(empirical: dict) -> str:
    lower = empirical.get("lower_bound")
    if not lower:
        return "no rigorous lower bound"
    return f"best rigorous lower bound {f(lower['epsilon'])} ({lower['source']})"


def _empirical_clause(claim: dict, verdict: dict) -> str:
    e = verdict["empirical"]
    if e["status"] == "VIOLATION":
        return f"a probe violates it ({_lower(e)})"
    if e["status"] == "PASS":
        return f"the probes found no evidence against it ({_lower(e)}; {_ceiling(e['ceiling'])})"
    if e["probes_run"] == 0:
        return "no probe ran"
    return f"the probes cannot test it at this budget ({_ceiling(e['ceiling'])} < {f(claim['epsilon'])})"


def verdict_reason(target: dict) -> str:
    """Why the target got its verdict, from the rule of the verdict table that decided."""
    claim, v = target["claim"], target["verdict"]
    a = v["analytic"]
    eps = f(claim["epsilon"])
    proved = f"the {a.get('accountant')} accountant proves the claim (epsilon = {f(a.get('epsilon'))} <= {eps})"
    missing = (target.get("parameters") or {}).get("premises_not_observed") or ()
    if missing:  # the bound holds of the mechanism described; the claim needs premises nobody observed
        proved = (f"the {a.get('accountant')} accountant bounds the mechanism as accounted (epsilon = "
                  f"{f(a.get('epsilon'))} <= {eps}), but the claim is not proved: not observed: {'; '.join(missing)}")
    refuted = (
        f"the tight {a.get('accountant')} accountant refutes the claim (epsilon = {f(a.get('epsilon'))} > "
        f"{eps} at delta = {f(claim['delta'])})"
    )
    reasons = {
        "implementation-bug": f"IMPLEMENTATION BUG: {proved}, yet {_empirical_clause(claim, v)}: the code does "
        "not do what its description says",
        "proved": f"{proved}; {_empirical_clause(claim, v)}",
        "refuted": f"{refuted}; {_empirical_clause(claim, v)}",
        "refuted-and-violated": f"{refuted}, and {_empirical_clause(claim, v)}",
        "violated": f"no accountant proves the claim, and {_empirical_clause(claim, v)}",
        "consistent": f"no accountant proves or refutes the claim; {_empirical_clause(claim, v)}",
        "untestable": f"no accountant proves or refutes the claim, and {_empirical_clause(claim, v)}",
        "probe-failed": f"probe {', '.join(v['empirical']['failed'])} failed, so the target cannot pass on it",
        "critical-finding": f"a critical finding of the target's own checks: {_critical_codes(target)} (see the "
        "findings)",
        "untested-implementation": f"{proved}, but the configuration lists no probe (probes = []) and nothing "
        "measured the run: the implementation was not tested",
    }
    reason = reasons.get(v["rule"], v["rule"])
    if v["empirical"]["probes_run"] == 0 and _measured_noise(target):
        reason = reason.replace("no probe ran", "no probe ran; the target's own checks measured the noise of the run "
                                "at every step and found none below what is accounted")
    return reason


def _critical_codes(target: dict) -> str:
    codes = [(f.get("values") or {}).get("code") or f.get("id", "") for f in target.get("findings", ())
             if f.get("severity") == "critical"]
    return ", ".join(dict.fromkeys(codes)) or "none listed"


def _measured_noise(target: dict) -> bool:
    return any((f.get("values") or {}).get("noise_power") for f in target.get("findings", ()))


def report_tally(report: dict) -> dict:
    """The report's findings tally (computed from its targets for a 2.0 report, which has none)."""
    return report.get("findings") or findings_tally(report["targets"])


def overall_headline(report: dict) -> str:
    """The overall verdict with the count and worst severity of the findings: "PASS, with 2 findings
    (worst: high)"."""
    return verdict_headline(report["status"], report_tally(report))


def target_headline(target: dict) -> str:
    return verdict_headline(target["verdict"]["status"], findings_tally([target]))


def summary_lines(report: dict) -> list[str]:
    """One line per target: its verdict with its findings, then why."""
    return [f"{t['name']}: {target_headline(t)} - {verdict_reason(t)}" for t in report["targets"]]


def _large_delta(v: dict, claim: dict) -> str:
    unit = v["unit_name"].rstrip("s")
    return (
        f"delta = {f(v['delta'])} is large for {v['units']} {v['unit_name']}: delta = "
        f"{v['delta_times_units']:.2g}/N. A mechanism that publishes each {unit}'s data with probability delta "
        f"is (0, delta)-DP, yet exposes at least one of them with probability 1 - (1 - delta)^N = "
        f"{v['leak_probability']:.0%}. The usual requirement is delta << 1/N = {f(1 / v['units'])}."
    )


def _reference_delta(v: dict, claim: dict) -> str:
    listing = ", ".join(f"{f(e)} ({name})" for name, e in v["epsilons"].items())
    more = as_number(v["tightest"]) > claim["epsilon"]
    return f"At delta = {f(v['reference_delta'])} the same configuration spends epsilon = {listing}" + (
        f": more than the claimed {f(claim['epsilon'])} even by the tightest accountant." if more else "."
    )


def _classic(v: dict, claim: dict) -> str:
    where = (
        f"from epsilon = {f(v['failure_threshold'])}"
        if v["failure_threshold"] is not None
        else "nowhere below epsilon = 100"
    )
    text = (
        f"The classic Gaussian calibration sigma = sqrt(2 ln(1.25/delta))/epsilon stops giving "
        f"(epsilon, delta)-DP at delta = {f(v['delta'])} {where} (exact Gaussian profile); at epsilon = "
        f"{f(v['epsilon'])} its true delta is {f(v['true_delta_at_claim'])}."
    )
    if v["method"] == "classic":
        return text + (
            " This target uses it, so its claim is broken."
            if v["violated_at_claim"]
            else " This target uses it; at its claim it still holds."
        )
    return text + f" This target uses the {v['method']} calibration, which meets its claim."


def _privacy_remark(v: dict, claim: dict) -> str:
    reached = (
        f"reaches the estimator's ceiling ({f(v['ceiling'])} at {v['trials']} trials per world): the empirical "
        "epsilon is limited only by the number of trials"
        if v["reaches_ceiling"]
        else f"stays below the estimator's ceiling of {f(v['ceiling'])} at {v['trials']} trials per world"
    )
    return (
        "FedZero's closing remark that sending only function values under a shared seed 'may offer "
        "privacy-preserving benefits' is not a differential-privacy guarantee: the membership probe "
        f"{v['probe']} ({v['threat_model']}) certifies epsilon >= {f(v['lower_bound'])} on non-private FedZero, "
        f"which {reached}. Privacy needs noise, as in DP-FedZero (ours)."
    )


FINDINGS = {
    "implementation-bug": lambda v, c: (
        f"The accountants prove the claim ({v['accountant']}: epsilon = {f(v['upper_bound'])}), yet a rigorous "
        f"lower bound of {f(v['lower_bound'])} ({v['lower_source']}) exceeds it: the implementation does not do "
        "what its description says. This is the most important finding an audit can make."
    ),
    "claim-refuted": lambda v, c: (
        f"The claim is false for this mechanism: the tight {v['accountant']} accountant gives epsilon = "
        f"{f(v['epsilon'])} > {f(c['epsilon'])} at delta = {f(c['delta'])}."
    ),
    "probe-failed": lambda v, c: f"Probe {v['probe']} failed ({v['reason']}); the target cannot pass on it.",
    "probe-declined": lambda v, c: f"Probe {v['probe']} declined this target: {v['reason']}.",
    "implementation-untested": lambda v, c: (
        f"The {v['algorithm']} target runs your implementation, but the configuration lists no probe (probes = []): "
        "its code was not tested, only its description accounted. Remove `probes = []` to run the default probes."
    ),
    "claim-holds": lambda v, c: (
        f"The claim holds for its stated delta = {f(c['delta'])}: the {v['accountant']} accountant gives "
        f"epsilon = {f(v['upper_bound'])} <= {f(c['epsilon'])} under {c['neighbouring']} neighbours."
    ),
    "claim-not-confirmed": lambda v, c: (
        f"No accountant confirms the claim: the tightest upper bound is epsilon = {f(v['upper_bound'])} "
        f"({v['accountant']}) > claimed {f(c['epsilon'])} at delta = {f(c['delta'])}; none is tight enough to "
        "refute it."
    ),
    "large-delta": _large_delta,
    "reference-delta": _reference_delta,
    "other-relation": lambda v, c: (
        f"Under {v['neighbouring']} neighbours the same mechanism spends at least epsilon = {f(v['epsilon'])} "
        f"({v['accountant']}) at delta = {f(v['delta'])}; the claim is stated for {v['claimed_neighbouring']}."
    ),
    "accountants-disagree": lambda v, c: v["note"],
    "classic-calibration": _classic,
    "privacy-remark": _privacy_remark,
    "flower-check": lambda v, c: f"Flower ({v['code']}): {v['message']}",
    "dpsgd-check": lambda v, c: f"DP-SGD ({v['code']}): {v['message']}",
}


def finding_text(finding: dict, claim: dict) -> str:
    return FINDINGS[finding["id"]](finding["values"], claim) if finding["id"] in FINDINGS else finding["id"]


def calibration_text(cal: dict) -> str:
    check = cal["claim_check"]
    ratio = float(check["true_delta"]) / cal["delta"]
    fails = (
        f"it stops meeting its delta from epsilon = {f(cal['failure_threshold'])}"
        if cal["failure_threshold"] is not None
        else "it meets its delta for every epsilon up to 100"
    )
    at_claim = (
        f"{f(ratio)} times the claimed {f(cal['delta'])}: the classic calibration does NOT give the claim"
        if check["violated"]
        else f"within the claimed {f(cal['delta'])}"
    )
    return (
        f"The classic calibration sigma = sqrt(2 ln(1.25/delta))/epsilon is proven only for epsilon < 1; "
        f"checked against the exact Gaussian privacy profile at delta = {f(cal['delta'])}, {fails}. At "
        f"epsilon = {f(cal['epsilon'])} the classic sigma = {f(check['noise_multiplier'])} really gives delta "
        f"= {f(check['true_delta'])}, {at_claim}. The analytic calibration needs sigma = "
        f"{f(check['analytic_noise_multiplier'])}. This target uses the {cal['method']} calibration."
    )


def utility_note(u: dict) -> str:
    if u["system"] == "dp-fed-pne":
        c = u.get("context", {})
        return (
            f"Average per-client cumulative regret of DP-Fed-PNE on {c.get('objective')} with "
            f"{c.get('clients')} clients, mean over {u['runs']} runs. Event-level privacy: each reward enters "
            f"one noisy release, so the epsilon spent per reward ({f(u['epsilon_spent'][-1])} at delta = "
            f"{f(u['delta'])}, {u['epsilon_accountant']} accountant) does not grow with rounds."
        )
    if u["system"] in BANDIT_SYSTEMS:
        return _bandit_utility_note(u)
    released = ", ".join(u.get("released", [])) or "n/a"
    return (
        f"Mean over {u['runs']} runs of the agents' mean {u['metric']} (lower is better) after initialisation "
        f"(round 0) and each broadcast; epsilon spent after each round from the {u['epsilon_accountant']} "
        f"accountant at delta = {f(u['delta'])}. The runs released {released}."
    )


BANDIT_SYSTEMS = {
    "dp-duets": "DP-DUETS (our private variant)",
    "duets": "DUETS (non-private seed)",
    "dp-fedzero": "DP-FedZero (our private variant)",
    "fedzero": "FedZero (non-private seed)",
    "dp-fkm": "DP-FKM (our private variant)",
    "fkm": "FKM (non-private seed)",
}


def _bandit_utility_note(u: dict) -> str:
    context = ", ".join(f"{k} = {v}" for k, v in sorted(u.get("context", {}).items()))
    text = (
        f"{u['metric'].capitalize()} of {BANDIT_SYSTEMS[u['system']]} ({context}) after each round, mean over "
        f"{u['runs']} runs (lower is better); epsilon spent after each round from the {u['epsilon_accountant']} "
        f"accountant at delta = {f(u['delta'])}."
    )
    if not u["system"].startswith("dp-"):
        text += " The run adds no noise, so the epsilon spent is infinite from its first release."
    return text


def gap_text(verdict: dict) -> str:
    """The gap between the tightest upper and the best rigorous lower bound; a lower bound above the upper
    bound is a contradiction, never a gap of 0 (reports before schema 2.1 clipped it to 0)."""
    gap = verdict.get("gap")
    upper, lower = verdict.get("upper_bound"), verdict["empirical"].get("lower_bound")
    if upper and lower and as_number(lower["epsilon"]) > as_number(upper["epsilon"]):
        return (
            f"none: the lower bound {f(lower['epsilon'])} exceeds the upper bound {f(upper['epsilon'])} by "
            f"{f(as_number(lower['epsilon']) - as_number(upper['epsilon']))}; they contradict each other"
        )
    return f(gap)


def fmt_stderr(se, value) -> str:
    """A standard error to two significant digits, or 0 when it is below the value's last shown digit."""
    if se is None:
        return "n/a"
    se, value = float(se), abs(float(value)) if value is not None else 0.0
    if se <= 1e-6 * max(value, 1e-12) or se < 1e-12:
        return "0"
    return f"{se:.2g}"


def explanations(target: dict) -> list[str]:
    """What a reader would otherwise have to guess: confidence split, clips, schedules, probe presets."""
    out = []
    v = target["verdict"]
    split = v["empirical"]["probes_run"] + len(v["empirical"]["failed"])
    if split > 1:
        out.append(
            f"Each probe is judged at confidence {f(v['empirical']['confidence'])}: the audit's "
            f"{f(audit_confidence(v))} split over its {split} probes (Bonferroni), so all of them together "
            "keep the audit's confidence."
        )
    p = target["parameters"]
    if "per_vector_clip" in p:
        out.append(
            f"clip = {f(p['clip'])} is the clip S of each agent's whole upload; the mechanism clips each of "
            f"the P = {p['subregions']} sub-region vectors to S/sqrt(P) = {f(p['per_vector_clip'])}, hence the "
            "clip in the mechanism's description."
        )
    names = {pr["name"] for pr in target["probes"]}
    if names & {"fts-server", "fts-server-reference"}:
        out.append(
            "Weight schedules of the server probes: 'uniform' gives every agent weight 1/N in every round, "
            "the release the accountant charges; 'reference' is the softmax schedule the real DP-FTS-DE "
            f"runs (gap, hold, decay = {p.get('weight_schedule')}), which concentrates an agent's weight in "
            "one sub-region early on, so that release leaks less than the accountant charges."
        )
    return out + [probe_setting_note(target, pr) for pr in target["probes"] if probe_setting_note(target, pr)]


def probe_setting_note(target: dict, probe: dict) -> str:
    """Why a probe runs a different configuration than its target (an override in the configuration)."""
    preset = probe.get("params", {}).get("preset")
    own = target["parameters"].get("preset")
    if preset and own and preset != own:
        return (
            f"The end-to-end probe {probe['name']} runs a full DP-FTS-DE run per trial; the configuration "
            f"names the cheaper preset {preset!r} for it (with the target's rate, noise and rounds) instead "
            f"of the target's {own!r}, so it tests the code path, not this target's data."
        )
    return ""


def planted_bug_note(probe: dict) -> str:
    """ " - planted bug 'NAME'" for a probe whose parameters plant a bug (``bug`` or ``planted_bug``)."""
    params = probe.get("params") or {}
    bug = params.get("bug") or params.get("planted_bug")
    return "" if bug in (None, "none") else f" - planted bug {bug!r}"


def claim_text(claim: dict) -> str:
    return claim_in_words(claim)


def planner_text(pl: dict) -> str:
    if not is_available(pl):
        return f"Not available: {pl['reason']}"
    needed = (
        f"; certifying the claimed epsilon with that estimator needs at least {pl['trials_for_claim']} "
        "trials per world"
        if pl.get("trials_for_claim")
        else ""
    )
    return (
        f"With {pl['trials']} trials per world at delta = {f(pl['delta'])} and confidence "
        f"{f(pl['confidence'])} per probe, {_ceiling(pl['ceiling'])} with the estimator used "
        f"({pl['estimator']}); with one threshold fixed in advance {f(pl['perfect_ceiling'])}{needed}."
    )


def is_one_run(probe: dict) -> bool:
    """Whether a probe section is a one-run probe's (one run of the system with canaries, each in by a fair coin):
    its bounds are the one-run estimators' (``attacks.estimators.ONE_RUN_METHODS``)."""
    from attacks.estimators import ONE_RUN_METHODS

    return any(b.get("method") in ONE_RUN_METHODS for b in probe.get("bounds", ()))


def budget_text(probe: dict) -> str:
    """The probe's budget line: trials per world, or a one-run probe's canaries."""
    if is_one_run(probe):
        return f"Canaries in its one run: {probe['trials']}"
    return f"Trials per world: {probe['trials']}"


def power_text(probe: dict) -> str:
    """The power sentence of a probe section (``attacks.power``), or why there is none."""
    if probe.get("power"):
        return probe["power"]["sentence"]
    if is_one_run(probe):
        return "not planned (a one-run probe: no simulation of its test states what it refutes)"
    return "not computed (the probe reduces to no Gaussian mechanism: non-private, Laplace, or no claim)"


def probe_roc_text(probe: dict) -> str:
    """The probe's ROC metrics sentence (``roc_metrics_text``); a one-run probe has no two worlds of trials."""
    if not probe.get("roc_metrics") and is_one_run(probe):
        return "not computed (a one-run probe: one run, no two worlds of trials)"
    return roc_metrics_text(probe.get("roc_metrics"))


def roc_metrics_text(metrics: dict | None) -> str:
    """The probe's descriptive ROC metrics (``attacks.estimators.roc_metrics``) in one sentence."""
    if not metrics:
        return "not computed (this probe kept per-threshold counts, not the scores)"

    def value(entry):
        interval = f" [{f(entry['low'])}, {f(entry['high'])}]" if "low" in entry else ""
        return f"{f(entry['value'])}{interval}"

    def rule(threshold):
        return "no threshold" if threshold is None else f"score >= {f(threshold)}"

    parts = [f"TPR at FPR {f(e['fpr'])}: {value(e)} ({rule(e['threshold'])})" for e in metrics["tpr_at_fpr"]]
    parts.append(f"max accuracy (TPR + TNR)/2: {value(metrics['max_accuracy'])} "
                 f"({rule(metrics['max_accuracy']['threshold'])})")
    parts.append(f"AUROC of the ROC hull: {value(metrics['auroc_hull'])}")
    boot = metrics["bootstrap"]
    how = (f"{f(metrics['confidence'])} {metrics['interval_method']} bootstrap intervals, {boot['resamples']} "
           f"resamples, seed {boot['seed']}" if boot["computed"] else f"no intervals ({boot['why_not']})")
    return "; ".join(parts) + f". Descriptive, not epsilon bounds, never in the verdict; {how}."
