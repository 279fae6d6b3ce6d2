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
  ``dpfed.dpsgd.clip_check``) above the clip the noise is scaled to;
- ``noise-below-accounted``: the noise the optimizer added (noisy minus clipped gradient sum) below ``z C`` by a
  lower-tail chi-square test at ``alpha`` (Bonferroni over the noise levels seen);
- ``user-level-epsilon`` (claim unit ``user``): the records per user (named by ``user_key``, else identical
  records taken as one person's) give a group of k records each in a Poisson batch independently: a mixture of
  Gaussians with shifts jC, j ~ Binomial(k, q) (dp-accounting's mixture PLD); critical when the claim is below it;
- ``canary-bound-above-claim``: gradient canaries through the training's own optimizer (``canary_result``) give
  rigorous one-run bounds (counted guesses, Steinke et al.; weighted guesses from the continuous scores) whose
  combined test rejects the claim.

The claim tested is the user's, wherever they made it (``claim_of``), in this order: the one given (the
configuration, ``--claim-epsilon``); the training's own figure, the last epsilon it asked for after its last private
step, at the delta it asked for (then every epsilon below is at that delta); the ``target_epsilon`` it gave
``make_private_with_epsilon`` (at its ``target_delta``; ``make_private_with_epsilon-target`` says how many epochs it
asked for against those that ran). With none of them, no claim is tested.
"""

from __future__ import annotations

import math
from collections import Counter

from scipy import stats

from accounting.errors import ConfigurationError
from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.findings import OpacusFinding
from attacks.opacus_checks.records import find_duplicates

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


PREMISES = {  # a DP-SGD claim holds only if each holds of what ran
    "updates": "every update computed from private records went through the private optimizer",
    "clipping": "each record's gradient adds at most the clip C to each noised sum",
    "multiplicity": "each record enters each noised sum at most once",
    "accounting": "the accountant was told the steps, rates and noise that ran",
    "claim": "the claim compared is the user's",
}


def premises(record: dict, rows: dict, claim_source: str) -> list[dict]:
    """Each premise of the claim (``PREMISES``) with whether this run observed it and how (``observed`` False: the
    premise is assumed, and no accountant's bound proves the claim)."""
    noise = bool(measured_noise(record["noise"]))
    counted = rows["counted_steps"] >= rows["steps"]
    clipping = record.get("clipping") or {}
    checked = sum(int(clipping.get(k, 0)) for k in ("verified", "unverified", "exceeded"))
    return [
        _updates_premise(record),
        {"premise": "clipping", "observed": checked > 0 and clipping.get("verified") == checked,
         "how": f"the clipped sum against the per-sample gradients clipped to C at {clipping.get('verified', 0)} of "
                f"{checked} noised sums" + ("" if not clipping.get("unverified") else
                                            " (the rest keep no per-sample gradients, as ghost clipping, or span "
                                            "skipped steps)")},
        _multiplicity_premise(record),
        {"premise": "accounting", "observed": noise and counted,
         "how": "each private step's noise multiplier and rate read as opacus's accountant reads them, the steps "
                f"counted against its history ({rows['counted_steps']} of {rows['steps']}), and the noise added "
                + ("measured at every step" if noise else "not measured (no coordinate noised)")},
        {"premise": "claim", "observed": not claim_source.startswith("no claim"), "how": claim_source},
    ]


def _updates_premise(record: dict) -> dict:
    """Observed where the record says which data each plain (non-private) step read (``plain_steps``), each
    established."""
    plain = record.get("plain_steps")
    if plain is None:
        return {"premise": "updates", "observed": False,
                "how": "every optimizer step's parameters are observed, but not the data a plain step's loss read"}
    unknown = [g for g in plain if g.get("data") == "not established"]
    return {"premise": "updates", "observed": not unknown,
            "how": f"the data of {sum(int(g.get('steps', 0)) for g in plain)} plain optimizer steps followed"
                   + (f"; not established for {len(unknown)} group(s) of them" if unknown else "")}


def _multiplicity_premise(record: dict) -> dict:
    """Observed where the record counts each step's backward passes (``accumulated``) and the Poisson batches drawn
    (``batches_drawn``), and no step summed more passes than batches were drawn."""
    steps = record["steps"]
    drawn = record.get("batches_drawn")
    if not steps or any("accumulated" not in s for s in steps) or drawn is None:
        return {"premise": "multiplicity", "observed": False,
                "how": "the backward passes summed into each step and the batches drawn are not both counted"}
    passes = sum(int(s["count"]) * int(s["accumulated"]) for s in steps)
    return {"premise": "multiplicity", "observed": passes <= drawn,
            "how": f"{passes} backward passes summed by the private steps, {drawn} Poisson batches drawn"}


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


def unobserved(checked: dict) -> list[str]:
    """The premises ``check_training`` did not observe, in words (why: each premise's ``how``)."""
    return [PREMISES[p["premise"]] for p in checked.get("premises", ()) if not p["observed"]]


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


def measured_noise(entries) -> list[dict]:
    """The noise measurements that can be tested (``dpfed.dpsgd.observe`` noise entries with coordinates and a
    positive accounted std)."""
    return [n for n in entries if n["count"] > 0 and n["expected_std"] > 0]


def noise_test(noise: dict) -> tuple[float, float]:
    """``(p, ratio)``: the lower-tail chi-square p-value of one measurement (sum of squares / (z C)^2 ~ chi2(count)
    when the noise is as accounted) and the measured std over the accounted."""
    p_value = float(stats.chi2.cdf(noise["sum_squares"] / noise["expected_std"] ** 2, df=noise["count"]))
    return p_value, math.sqrt(noise["sum_squares"] / noise["count"]) / noise["expected_std"]


def noise_power(record: dict, alpha: float = 1e-3, probability: float = 0.9) -> dict | None:
    """What the noise test can refute: with the coordinates measured at the weakest noise level, the largest ratio
    r of the accounted std such that noise r z C is refuted with ``probability`` (closed form: the statistic is
    r^2 chi2(n), refuted below chi2(n)'s ``alpha / tests`` quantile)."""
    tests = measured_noise(record["noise"])
    if not tests:
        return None
    n = min(t["count"] for t in tests)
    threshold = stats.chi2.ppf(alpha / len(tests), df=n)
    return {"coordinates": n, "refuted_ratio": math.sqrt(threshold / stats.chi2.ppf(probability, df=n)),
            "probability": probability, "false_alarm": alpha}


def noise_findings(record: dict, alpha: float) -> list:
    tests = measured_noise(record["noise"])
    out = []
    for noise in tests:
        p_value, ratio = noise_test(noise)
        if p_value < alpha / len(tests):
            out.append(OpacusFinding("noise-below-accounted", "critical",
                                     f"the private optimizer added noise of std {ratio:.3f} x z C (p = {p_value:.2g} "
                                     f"over {noise['count']} coordinates): the effective noise multiplier is "
                                     f"{ratio:.3f} of the one accounted", {"ratio": ratio, "p_value": p_value,
                                                                          "false_alarm": alpha}))
    return out


def user_ids(dataset, user_key: str):
    """Each record's user: ``user_key`` a field of dict records, an index of tuple records, or ``file.py:function``
    called with the dataset."""
    if ".py:" in str(user_key):
        from attacks.opacus_checks.load import load_function

        try:
            ids = list(load_function(user_key, default="user_ids", role=None)(dataset))
        except ConfigurationError as exc:
            raise ConfigurationError("user_key", str(exc).split(": ", 1)[-1]) from None
    else:
        key = int(user_key) if str(user_key).isdigit() else user_key
        try:
            ids = [dataset[i][key] for i in range(len(dataset))]
        except (KeyError, IndexError, TypeError) as exc:
            raise ConfigurationError("user_key", f"records have no field {user_key!r} ({type(exc).__name__})") from None
    if len(ids) != len(dataset):
        raise ConfigurationError("user_key", f"{len(ids)} user ids for {len(dataset)} records")
    return [i.item() if hasattr(i, "item") else i for i in ids]


def user_findings(training, rows: dict, claim: float | None, delta: float, user_key: str | None) -> list:
    datasets = training.datasets
    if not datasets or not rows["sample_rates"]:
        return []
    if user_key is not None:
        group, how = max(Counter(user_ids(datasets[0], user_key)).values()), f"records per user ({user_key})"
    else:
        duplicates = find_duplicates(datasets[0])
        group, how = duplicates.max_copies, f"identical records taken as one user's ({duplicates.note})"
    if group <= 1:
        return [OpacusFinding("user-level", "info", f"one record per user ({how}): the record-level epsilon holds "
                              "per user", {"max_records": group})]
    user_epsilon, analysis = eps.group_poisson_epsilon(group, max(rows["sample_rates"]), min(rows["noise_multipliers"]),
                                                       rows["steps"], delta)
    severity = "critical" if claim is not None and claim < user_epsilon else "info"
    return [OpacusFinding("user-level-epsilon", severity,
                          f"a user holds up to {group} records ({how}): the user-level epsilon is {user_epsilon:.4g} "
                          f"({analysis}) against the record-level {rows['epsilon']:.4g}",
                          {"max_records": group, "user_epsilon": user_epsilon, "record_epsilon": rows["epsilon"]})]


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


def canary_check(training, claim: float | None, delta: float, confidence: float = 0.95) -> dict | None:
    """The one-run result of the canaries that joined the training (``dpfed.dpsgd.loop_canaries``); None when no
    canary ran."""
    canaries = training.canaries
    if canaries is None or not canaries.steps:
        return None
    return canary_result(canaries.scores, canaries.included, canaries.steps, claim, delta, confidence,
                         "all iterates (white box), one run, through the user's optimizer")


def canary_result(scores, included, steps: int, claim: float | None, delta: float, confidence: float,
                  threat_model: str) -> dict:
    """Gradient canaries' one-run bounds (``CANARY_ONE_RUN_METHODS``: Steinke et al.'s counted guesses and the
    weighted guesses of the continuous scores, rigorous; the Gaussian f-DP refinement and the Gaussian view of the
    scores, model-based) and the decision on ``claim``: VIOLATION when the rigorous ones' combined test rejects it
    (no claim: none)."""
    import numpy as np

    from attacks.estimators import CANARY_ONE_RUN_METHODS, estimate_one_run
    from attacks.estimators.one_run import one_run_ceiling
    from attacks.probes.one_run import bound_dict, one_run_decision

    included = np.asarray(included, dtype=bool)
    bounds = [bound_dict(b, threat_model) for b in estimate_one_run(scores, included, delta, confidence,
                                                                    methods=CANARY_ONE_RUN_METHODS, claim=claim)]
    if claim is None:
        status, p_value, ceiling = "NO CLAIM", None, one_run_ceiling(len(included), delta, confidence)
    else:
        status, p_value, ceiling = one_run_decision(bounds, len(included), claim, delta, confidence)
    return {"bounds": bounds, "status": status, "p_value": p_value, "ceiling": ceiling, "canaries": len(included),
            "steps": int(steps), "included": int(included.sum()), "confidence": confidence}


def canary_findings(result: dict | None, claim: float | None) -> list:
    if result is None:
        return []
    rigorous = max((b["epsilon"] for b in result["bounds"] if b.get("rigorous", True)), default=0.0)

    def listed(rigorous_ones: bool) -> str:
        return ", ".join(f"{b['method']} {b['epsilon']:.3g}" for b in result["bounds"]
                         if b.get("rigorous", True) == rigorous_ones)

    words = (f"{result['canaries']} gradient canaries through the training's own optimizer ({result['included']} in, "
             f"{result['steps']} steps): rigorous lower bounds on epsilon {listed(True)} (each at "
             f"{result['confidence']:g}; the claim tested over them together; ceiling {result['ceiling']:.3g}); "
             f"model-based, no verdict: {listed(False)}")
    each = {b["method"]: b["epsilon"] for b in result["bounds"]}
    if result["status"] == "VIOLATION":
        return [OpacusFinding("canary-bound-above-claim", "critical", f"{words}; the rigorous ones reject the claim "
                              f"{claim:.4g} (p = {result['p_value']:.2g})",
                              {"lower_bound": rigorous, "p_value": result["p_value"], "bounds": each})]
    return [OpacusFinding("canary-bound", "info", f"{words}; {result['status']} against the claim",
                          {"lower_bound": rigorous, "ceiling": result["ceiling"], "bounds": each})]
