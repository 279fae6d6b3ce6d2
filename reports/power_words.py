"""The audit's power in words, for a target of a report (``attacks.power`` figures in its probe sections)."""

from __future__ import annotations


def measured_noise_power_text(findings) -> str | None:
    """The power of a target's own noise measurement (a finding's ``noise_power``: the DP-SGD train form), or None."""
    for finding in findings or ():
        power = (finding.get("values") or {}).get("noise_power")
        if power:
            ratio = power["refuted_ratio"]
            verdict = "detects" if ratio >= 0.5 else "does not detect"
            return (f"Power: the noise measured in the run ({power['coordinates']} coordinates at the weakest level or "
                    f"round) would refute noise below {ratio:.3f} of the accounted with probability "
                    f"{power['probability']:g} (false alarm {power['false_alarm']:g}); it {verdict} half the noise.")
    return None


def audit_power_text(probes: list[dict], rule: str | None = None, findings=None) -> str:
    """One sentence: the most powerful probe's refuted noise fraction (probability 0.9) and what half the
    noise needs, or the target's own noise measurement's (``findings``), or why no power is stated (``rule``: the
    verdict's rule)."""
    if rule == "untested-implementation":
        return ("Power: none: the configuration lists no probe (probes = []), so the implementation was not tested; "
                "without that line the target runs its default probes with planned power.")
    stated = [p for p in probes if p.get("outcome") == "ran" and p.get("power")]
    measured = measured_noise_power_text(findings)
    if not stated and measured:
        return measured
    if not stated:
        from reports.render_text import is_one_run

        if any(p.get("outcome") == "ran" and is_one_run(p) for p in probes):
            return ("Power: not stated (one-run probes state none; no other probe that ran reduces to a Gaussian "
                    "mechanism).")
        return ("Power: not stated (no probe that ran reduces to a Gaussian mechanism: non-private targets, "
                "Laplace mechanisms).")
    best = max(stated, key=lambda p: p["power"]["refuted_fraction"])
    power = best["power"]
    fraction = power["refuted_fraction"]
    half = power["half_noise_trials"]
    need = "" if half is None else f"; half the noise needs {half:.3g} trials per world"
    if fraction <= 0:
        return (f"Power: at these budgets no probe refutes even an implementation adding 0.01 of the configured "
                f"noise with probability {power['probability']:g}{need} (probe {best['name']}).")
    verdict = "detects" if fraction >= 0.5 else "does not detect"
    return (f"Power: this audit would refute an implementation adding {fraction:.2f} of the configured noise or "
            f"less, with probability {power['probability']:g} (probe {best['name']}, {best['trials']:.3g} trials "
            f"per world{need}); it {verdict} half the noise.")
