"""Checks of a user's DP-SGD training from what ran (``attacks.opacus_checks.train_run``), not from what was told.

Each finding is critical where what ran can raise epsilon above the claim (``claim``: the user's, wherever it is
written; else the last epsilon the training asked its engine for):

- ``no-private-step``: no private optimizer step ran (nothing to account);
- ``claim-below-steps``: the claim is below the epsilon of the private steps that ran (each a Poisson subsampled
  Gaussian at the noise multiplier and rate opacus's accountant hook read at that step, add/remove, composed by our
  ``pld`` accountant; opacus's RDP beside it), by more than ``TOLERANCE`` (medium within it);
- ``accumulated-batches``: a step summed k > 1 Poisson batches (``allow_grad_accumulation``, backward passes at the
  same parameters): a record in j ~ Binomial(k, q) of them adds its gradient j times, a mixture of Gaussians with
  shifts jC (dp-accounting's mixture PLD, composed over the steps), while opacus accounts one Poisson draw at rate
  kq; critical when the claim is below the mixture's epsilon by more than ``TOLERANCE``, medium when only the
  framework's figure is (it is named understated), else info;
- ``passes-above-batches``: more backward passes were summed into the private steps than opacus's Poisson samplers
  drew batches (two losses backward'd one after the other on one batch, a batch kept and used again, or passes on
  other data): a record may add its gradient more than once per batch, which nothing here accounts exactly; medium,
  the steps' epsilon not established, with the bounds that hold (every pass within its step's own batches; any);
- ``accountant-missed-steps``: the engine's accountant counts fewer steps than ran (a fresh engine per epoch or
  round, a restored history cut short): critical when the claim is below the composed epsilon, else medium;
- ``parameter-outside-private-optimizer``: a parameter updated by an optimizer step outside the private mechanism
  (a head trained outside ``make_private``, a second optimizer, or a step before ``make_private``, by any optimizer)
  whose gradient was computed from the private records (``dpfed.dpsgd.provenance``): trained with no clipping and
  no noise, its epsilon is unbounded; such a step on other data (generated data, a public data set, a private
  model's outputs on them) is ``post-processing`` (info), one whose data was not established is
  ``plain-step-data-not-observed`` (medium);
- ``not-poisson``: ``make_private(poisson_sampling=False)``: the Poisson analysis does not hold; the valid bound is
  one Gaussian of sensitivity 2C per epoch (replace-one); critical when the claim is below it;
- ``clip-exceeded``: a record's share of a noised sum (solved from the clipped sum and the per-sample gradients,
  ``dpfed.dpsgd.clip_check``) above the clip the noise is scaled to.

The noise test (``observed_noise``: ``noise-below-accounted``), the user-level epsilon (``observed_users``:
``user-level-epsilon``) and the canaries' one-run bounds (``observed_canaries``: ``canary-bound-above-claim``) live
beside this module; ``check_training`` adds their findings and the claim's premises (``premises``).

The claim tested is the user's, wherever they made it (``claim_of``), in this order: the one given (the
configuration, ``--claim-epsilon``); the training's own figure, the last epsilon it asked for after its last private
step, at the delta it asked for (then every epsilon below is at that delta); the ``target_epsilon`` it gave
``make_private_with_epsilon`` (at its ``target_delta``; ``make_private_with_epsilon-target`` says how many epochs it
asked for against those that ran). With none of them, no claim is tested.
"""

from __future__ import annotations

import math

from accounting.errors import ConfigurationError
from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.findings import OpacusFinding
from attacks.opacus_checks.observed_canaries import canary_check, canary_findings
from attacks.opacus_checks.observed_noise import noise_findings, noise_power
from attacks.opacus_checks.observed_users import user_findings
from attacks.opacus_checks.premises import premises

TOLERANCE = 0.01
UNITS = ("record", "user")


def claim_severity(claim: float, epsilon: float) -> str | None:
    """Critical when ``claim`` is below the composed ``epsilon`` by more than ``TOLERANCE``, medium within it."""
    if claim * (1 + TOLERANCE) < epsilon:
        return "critical"
    return "medium" if claim < epsilon else None


def final_report(record: dict) -> dict | None:
    """The last epsilon the training asked for after its last private step (None if it asked for none then: an
    epsilon asked for mid-training is not the training's figure)."""
    total = sum(int(s["count"]) for s in record["steps"])
    final = [e for e in record["epsilons"] if e.get("after_steps", total) >= total]
    return final[-1] if final else None


def requested_target(record: dict) -> dict | None:
    """The last ``make_private_with_epsilon`` call's request (``target_epsilon``, ``target_delta``, ``epochs``,
    and that engine's ``sample_rate``), or None when no engine was made by it."""
    made = [e for e in record["engines_made"] if e.get("target_epsilon") is not None]
    return made[-1] if made else None


def claim_of(record: dict, claimed_epsilon: float | None, delta: float) -> tuple[float | None, float, str]:
    """``(claim, delta, where it came from)``: the claim given; else the epsilon the training reported (at its delta);
    else ``make_private_with_epsilon``'s target (at its target delta); else none (at ``delta``)."""
    if claimed_epsilon is not None:
        return claimed_epsilon, delta, "the claimed epsilon"
    reported = final_report(record)
    if reported is not None:
        return reported["epsilon"], reported["delta"], "the epsilon the training reported"
    target = requested_target(record)
    if target is not None:
        return (target["target_epsilon"], target["target_delta"] or delta,
                "the target_epsilon given to make_private_with_epsilon")
    return None, delta, "no claim (none given, none reported, no target_epsilon)"


def _target_findings(record: dict, rows: dict) -> list:
    """What ``make_private_with_epsilon`` was asked for against what ran (info: the claim findings judge it)."""
    target = requested_target(record)
    if target is None or not target.get("epochs") or not target.get("sample_rate"):
        return []
    asked = int(round(target["epochs"] / target["sample_rate"]))
    return [OpacusFinding("make_private_with_epsilon-target", "info",
                          f"make_private_with_epsilon was asked for epsilon {target['target_epsilon']:.4g} at delta "
                          f"{target['target_delta']:g} over {target['epochs']} epochs ({asked} steps at rate "
                          f"{target['sample_rate']:.4g}); {rows['steps']} private steps ran",
                          {"target_epsilon": target["target_epsilon"], "target_delta": target["target_delta"],
                           "epochs": target["epochs"], "asked_steps": asked, "steps": rows["steps"]})]


def clipping_findings(record: dict) -> list:
    """``clip-exceeded`` (critical): a record's share of a noised sum above the clip the noise is scaled to."""
    clipping = record.get("clipping") or {}
    if not clipping.get("exceeded"):
        return []
    ratio = clipping["worst_ratio"]
    return [OpacusFinding("clip-exceeded", "critical",
                          f"at {clipping['exceeded']} noised sums a record's clipped gradient was up to {ratio:.3f} x "
                          f"the clip C the noise is scaled to: the sensitivity is {ratio:.3f} C, so the effective "
                          f"noise multiplier is at most 1/{ratio:.3f} of the one accounted",
                          {"exceeded": clipping["exceeded"], "worst_ratio": ratio})]


def training_rows(record: dict, delta: float) -> dict:
    """What ran: steps, noise multipliers, rates, clips, the composed epsilons, the accountant's count, reported."""
    steps = record["steps"]
    composed = eps.steps_epsilon(steps, delta)
    counted = sum(int(n) for entry in record["accountants"].values() for _, _, n in entry["history"])
    reported = final_report(record)
    return {"steps": composed["steps"], "epsilon": composed["pld"], "opacus_rdp": composed["opacus_rdp"],
            "accumulated": composed["accumulated"], "accounted_epsilon": composed.get("accounted_pld"),
            "any_record_epsilon": composed.get("any_record_pld"),
            "moved_between_passes": any(s.get("moved") for s in steps),
            "passes": sum(max(1, int(s.get("accumulated", 1) or 1)) * int(s["count"]) for s in steps),
            "batches_drawn": record.get("batches_drawn"),
            "noise_multipliers": sorted({s["noise_multiplier"] for s in steps}),
            "sample_rates": sorted({s["sample_rate"] for s in steps if s["sample_rate"] is not None}),
            "clips": sorted({s["clip"] for s in steps if s["clip"] is not None}), "counted_steps": counted,
            "reported_epsilon": None if reported is None else reported["epsilon"],
            "reported_delta": None if reported is None else reported["delta"],
            "engines": len(record["engines_made"]),
            "poisson": all(e["poisson"] for e in record["engines_made"])}


def _steps_findings(rows: dict, claim: float | None, source: str) -> list:
    out = []
    if claim is not None and (severity := claim_severity(claim, rows["epsilon"])):
        out.append(OpacusFinding("claim-below-steps", severity,
                                 f"{source} {claim:.4g} is below the epsilon of the {rows['steps']} private steps that "
                                 f"ran, {rows['epsilon']:.4g} ({steps_analysis(rows)}; opacus's RDP "
                                 f"{rows['opacus_rdp']:.4g})",
                                 {"claimed_epsilon": claim, "steps_epsilon": rows["epsilon"], "steps": rows["steps"]}))
    if rows["counted_steps"] < rows["steps"]:
        covered = claim is not None and claim >= rows["epsilon"]
        out.append(OpacusFinding("accountant-missed-steps", "medium" if covered else "critical",
                                 f"{rows['steps']} private steps ran but the engine's accountant counts "
                                 f"{rows['counted_steps']} (an engine made afresh, or its history cut): its epsilon "
                                 f"({_reported(rows)}) ignores the rest; all steps: {rows['epsilon']:.4g}",
                                 {"steps": rows["steps"], "counted_steps": rows["counted_steps"]}))
    return out


def steps_analysis(rows: dict) -> str:
    """How the steps' epsilon was composed: ``pld``, or the mixture over the batches accumulated per step."""
    if rows.get("accumulated", 1) > 1:
        return f"mixture PLD over up to {rows['accumulated']} Poisson batches summed per step"
    return "pld"


def multiplicity_findings(rows: dict, claim: float | None, source: str) -> list:
    """``accumulated-batches`` where a step summed more than one Poisson batch (see the module's docstring)."""
    k = rows.get("accumulated", 1)
    if k <= 1:
        return []
    exact, accounted = rows["epsilon"], rows["accounted_epsilon"]
    reported = rows["reported_epsilon"]
    words = (f"{k} Poisson batches summed per optimizer step (allow_grad_accumulation): a record in j of them adds "
             f"its clipped gradient j times to the noised sum, so each step is a mixture of Gaussians with shifts "
             f"0..{k}C (j ~ Binomial({k}, q)); the {rows['steps']} steps that ran spend epsilon {exact:.4g} "
             f"(dp-accounting mixture PLD), not the {accounted:.4g} of one Poisson draw at rate "
             f"{k}q that opacus accounts (its RDP {rows['opacus_rdp']:.4g})")
    understated = reported is not None and claim_severity(reported, exact) == "critical"
    if rows.get("batches_drawn") is not None and rows.get("passes", 0) > rows["batches_drawn"]:
        words += " (counting each backward pass as a fresh batch: see passes-above-batches)"
    if understated:
        words += f"; the epsilon the training reported, {reported:.4g}, is understated"
    if rows.get("moved_between_passes"):
        words += (f"; parameters changed between the summed passes, so a record's gradients may differ between its "
                  f"batches: the mixture takes them aligned, and {rows['any_record_epsilon']:.4g} holds whatever "
                  f"their directions ({k}C whenever the record is in a batch)")
    else:
        words += "; the parameters did not change between the summed passes"
    if claim is not None and claim_severity(claim, exact) == "critical":
        severity = "critical"
        words += "" if claim == reported else f"; {source} {claim:.4g} is below it"
    else:
        severity = "medium" if understated else "info"
    return [OpacusFinding("accumulated-batches", severity, words,
                          {"batches": k, "exact_epsilon": exact,
                           "accounted_epsilon": accounted, "reported_epsilon": reported, "claimed_epsilon": claim,
                           "moved_between_passes": rows.get("moved_between_passes", False)})]


def reuse_findings(record: dict, rows: dict, delta: float) -> list:
    """``passes-above-batches`` where the steps summed more backward passes than opacus's samplers drew batches."""
    drawn, passes = rows.get("batches_drawn"), rows.get("passes", 0)
    if drawn is None or passes <= drawn:
        return []
    parts = eps.accumulated_parts(record["steps"])
    anywhere = eps.unsampled_epsilon(parts, delta)
    if drawn == rows["steps"]:  # one batch drawn per step: its passes on that batch (or on other data)
        within, how = eps.one_batch_epsilon(parts, delta), "if each step's passes used only the one batch drawn for it"
    else:
        within, how = eps.any_record_epsilon(parts, delta), "if each step's passes used only batches drawn for it"
    return [OpacusFinding("passes-above-batches", "medium",
                          f"{passes} backward passes were summed into the {rows['steps']} private steps, but opacus's "
                          f"Poisson samplers drew {drawn} batches: a batch entered more than one pass (two losses "
                          "backward'd one after the other on one batch, a batch kept and used again) or passes ran on "
                          "other data, so a record may add its clipped gradient more than once per batch. No accountant"
                          f" here models that exactly: the epsilon of the steps ({rows['epsilon']:.4g} counts each pass"
                          f" as a batch of its own) is not established; at most {within:.4g} {how}, at most "
                          f"{anywhere:.4g} whatever they used (no amplification by sampling)",
                          {"passes": passes, "batches_drawn": drawn, "within_step_bound": within,
                           "unsampled_bound": anywhere})]


def _reported(rows: dict) -> str:
    """The epsilon the training reported, as printed (4 significant digits), or that it asked for none."""
    value = rows.get("reported_epsilon")
    return "never asked for" if value is None else f"{value:.4g}"


def _when(group: dict) -> str:
    if not group["before_make_private"]:
        return "after make_private"
    return "before make_private" + (" (the optimizer then made private)" if group["private_later"] else "")


def _outside_findings(record: dict) -> list:
    """Each plain (non-private) optimizer step by its data: private records (critical, per parameter), other data
    (post-processing, info), or data not established (medium: the premise is not observed)."""
    out = []
    for group in record.get("plain_steps", []):
        steps = f"{group['steps']} step{'s' if group['steps'] > 1 else ''} of a plain {group['optimizer']} " \
                f"{_when(group)}"
        sources = "; ".join(group["sources"])
        values = {"optimizer": group["optimizer"], "steps": group["steps"], "sources": group["sources"],
                  "before_make_private": group["before_make_private"]}
        if group["data"] == "private":
            out += [OpacusFinding("parameter-outside-private-optimizer", "critical",
                                  f"{name} was updated by {steps}, computed from the private records ({sources}): "
                                  "trained with no clipping and no noise, so no finite epsilon holds for the model "
                                  "(train it only through make_private's optimizer, or freeze it)",
                                  {"parameter": name, **values})
                    for name in group["parameters"]]
        elif group["data"] == "other":
            out.append(OpacusFinding("post-processing", "info",
                                     f"{steps} updated {len(group['parameters'])} parameter(s) "
                                     f"({', '.join(group['parameters'])}) from data other than the private records "
                                     f"({sources}): post-processing, which leaves the epsilon unchanged",
                                     {"parameters": group["parameters"], **values}))
        else:
            out.append(OpacusFinding("plain-step-data-not-observed", "medium",
                                     f"{steps} updated {len(group['parameters'])} parameter(s) "
                                     f"({', '.join(group['parameters'])}) from data whose origin was not established "
                                     f"({sources}): whether they are private records was not observed, so the claim "
                                     "rests on them not being", {"parameters": group["parameters"], **values}))
    return out


def _poisson_findings(rows: dict, claim: float | None, delta: float) -> list:
    if rows["poisson"] or not rows["sample_rates"]:
        return []
    epochs = max(1, math.ceil(rows["steps"] * max(rows["sample_rates"])))
    bound, how = eps.once_per_epoch_epsilon(min(rows["noise_multipliers"]), epochs, delta)
    severity = "critical" if claim is not None and claim < bound else "medium"
    return [OpacusFinding("not-poisson", severity,
                          f"make_private(poisson_sampling=False): shuffled batches, so the accountant's Poisson "
                          f"analysis ({rows['epsilon']:.4g}) does not hold; the valid bound is {bound:.4g} ({how})",
                          {"bound": bound, "epochs": epochs})]


def check_training(training, delta: float, claimed_epsilon: float | None = None, unit: str = "record",
                   user_key: str | None = None, alpha: float = 1e-3, confidence: float = 0.95) -> dict:
    """``{"rows", "findings", "claim"}`` of an observed training (``train_run.ObservedTraining``); ``alpha``: the
    false-alarm probability of the noise test; ``confidence``: that of the canaries' one-run bounds."""
    if unit not in UNITS:
        raise ConfigurationError("unit", f"unknown unit {unit!r}; choose record or user")
    record = training.record
    if not record["steps"]:
        claim, _, source = claim_of(record, claimed_epsilon, delta)
        return {"rows": {}, "claim": claim, "claim_source": source, "findings": [OpacusFinding(
            "no-private-step", "critical", f"{training.spec} ran {len(record['engines_made'])} make_private call(s) "
            "but no private optimizer step: nothing it trained is private", {})] + _outside_findings(record)}
    claim, delta, source = claim_of(record, claimed_epsilon, delta)  # a figure holds at its own delta
    rows = training_rows(record, delta)
    rows["delta"] = delta
    rows["noise_power"] = noise_power(record, alpha)
    findings = (_steps_findings(rows, claim, source) + multiplicity_findings(rows, claim, source)
                + reuse_findings(record, rows, delta) + _target_findings(record, rows) + _outside_findings(record)
                + _poisson_findings(rows, claim, delta) + noise_findings(record, alpha) + clipping_findings(record))
    if unit == "user":
        findings += user_findings(training, rows, claim, delta, user_key)
    canaries = canary_check(training, claim, delta, confidence)
    findings += canary_findings(canaries, claim)
    return {"rows": rows, "claim": claim, "claim_source": source, "findings": findings, "canaries": canaries,
            "premises": premises(record, rows, source)}
