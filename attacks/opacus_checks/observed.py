"""Checks of a user's DP-SGD training from what ran (``attacks.opacus_checks.train_run``), not from what was told.

Each finding is critical where what ran can raise epsilon above the claim (``claim``: the user's, wherever it is
written; else the last epsilon the training asked its engine for):

- ``no-private-step``: no private optimizer step ran (nothing to account);
- ``claim-below-steps``: the claim is below the epsilon of the private steps that ran (each a Poisson subsampled
  Gaussian at the noise multiplier and rate opacus's accountant hook read at that step, add/remove, composed by our
  ``pld`` accountant; opacus's RDP beside it), by more than ``TOLERANCE`` (medium within it);
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
- ``noise-below-accounted``: the noise the optimizer added (noisy minus clipped gradient sum) below ``z C`` by a
  lower-tail chi-square test at ``alpha`` (Bonferroni over the noise levels seen);
- ``user-level-epsilon`` (claim unit ``user``): the records per user (named by ``user_key``, else identical
  records taken as one person's) give a group of k records each in a Poisson batch independently: a mixture of
  Gaussians with shifts jC, j ~ Binomial(k, q) (dp-accounting's mixture PLD); critical when the claim is below it;
- ``canary-bound-above-claim``: gradient canaries through the training's own optimizer (``canary_result``) give
  rigorous one-run bounds (counted guesses, Steinke et al.; weighted guesses from the continuous scores) whose
  combined test rejects the claim.

The training's own figure is the last epsilon it asked for after its last private step, at the delta it asked for
(then every epsilon below is at that delta); with none, and no claim given, no claim is tested.
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


def training_rows(record: dict, delta: float) -> dict:
    """What ran: steps, noise multipliers, rates, clips, the composed epsilons, the accountant's count, reported."""
    steps = record["steps"]
    composed = eps.steps_epsilon(steps, delta)
    counted = sum(int(n) for entry in record["accountants"].values() for _, _, n in entry["history"])
    reported = final_report(record)
    return {"steps": composed["steps"], "epsilon": composed["pld"], "opacus_rdp": composed["opacus_rdp"],
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
                                 f"ran, {rows['epsilon']:.4g} (pld; opacus's RDP {rows['opacus_rdp']:.4g})",
                                 {"claimed_epsilon": claim, "steps_epsilon": rows["epsilon"], "steps": rows["steps"]}))
    if rows["counted_steps"] < rows["steps"]:
        covered = claim is not None and claim >= rows["epsilon"]
        out.append(OpacusFinding("accountant-missed-steps", "medium" if covered else "critical",
                                 f"{rows['steps']} private steps ran but the engine's accountant counts "
                                 f"{rows['counted_steps']} (an engine made afresh, or its history cut): its epsilon "
                                 f"({rows['reported_epsilon']}) ignores the rest; all steps: {rows['epsilon']:.4g}",
                                 {"steps": rows["steps"], "counted_steps": rows["counted_steps"]}))
    return out


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
        return {"rows": {}, "claim": claimed_epsilon, "findings": [OpacusFinding(
            "no-private-step", "critical", f"{training.spec} ran {len(record['engines_made'])} make_private call(s) "
            "but no private optimizer step: nothing it trained is private", {})] + _outside_findings(record)}
    reported = final_report(record)
    if claimed_epsilon is None and reported is not None:
        delta = reported["delta"]  # the training's own figure holds at its own delta
    rows = training_rows(record, delta)
    rows["delta"] = delta
    rows["noise_power"] = noise_power(record, alpha)
    claim = claimed_epsilon if claimed_epsilon is not None else rows["reported_epsilon"]
    source = "the claimed epsilon" if claimed_epsilon is not None else "the epsilon the training reported"
    findings = (_steps_findings(rows, claim, source) + _outside_findings(record)
                + _poisson_findings(rows, claim, delta) + noise_findings(record, alpha))
    if unit == "user":
        findings += user_findings(training, rows, claim, delta, user_key)
    canaries = canary_check(training, claim, delta, confidence)
    findings += canary_findings(canaries, claim)
    return {"rows": rows, "claim": claim, "findings": findings, "canaries": canaries}


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
