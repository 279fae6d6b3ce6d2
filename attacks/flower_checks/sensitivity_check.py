"""Check that what a Flower DP wrapper noises has the sensitivity its noise is calibrated for, from the replays of
its inner strategy (``dpfed.flower.sensitivity``: one measurement per round).

The noise N(0, (z C / m)^2) is calibrated for a mean of the m clipped updates: under replace-one (what Flower's
fixed-size sampler is accounted under) one client moves it by at most 2 C / m; with its update taken out of the
fixed-m sum (add/remove, Flower's accountant and the Poisson claim), by C / m. Each round's largest replayed change
is compared with these (m: the round's replies, a smaller sample than the wrapper is told being the sample-size
check's finding; with unequal weights C / m is C times the largest weight, that being the unequal-weights check's
finding), allowing for float32 rounding (``slack``):

- ``sensitivity-above-accounted`` (critical): a replaced reply moved the output further than 2 C / m. The round is
  then a Gaussian mechanism of multiplier z / ratio; the epsilon the run spends at those multipliers is accounted
  as the run is (``Assumptions.rounds_epsilon``). The measured change is a lower bound on the sensitivity (a
  witness), so the epsilon it implies is a lower bound on what the same accounting gives with the true one.
- ``sensitivity-above-add-remove`` (medium): within 2 C / m, but a client's update taken out moved it further than
  C / m (a claim made under add/remove does not hold; the replace-one accounting does).
- ``sensitivity-untested`` (medium): rounds where no replay could be made (the strategy could not be copied, or
  its replay did not give its own output): the premise was not tested there.
- ``sensitivity-measured`` (info): every replayed change within the bounds.

Deterministic given the replies: false-alarm probability 0.
"""

from __future__ import annotations

import math

from accounting.errors import ConfigurationError
from attacks.flower_checks.findings import FlowerFinding

RELATIVE = 1e-6


def _ratio(m: dict, kind: str, bound: float) -> float:
    """The change ``kind`` over ``bound``, float32 rounding taken off it."""
    return max(0.0, float(m[kind]) - float(m.get("slack", 0.0))) / bound


def carried_squares(measurements: dict) -> dict:
    """``{origin round: sum of squared changes}`` that a round's worst neighbour made, through the strategy's state,
    in the rounds after it (each less its round's float32 slack)."""
    out: dict = {}
    for m in measurements.values():
        for entry in m.get("carried", []) if m.get("tested") else []:
            change = max(0.0, float(entry["change"]) - float(m.get("slack", 0.0)))
            out[int(entry["origin"])] = out.get(int(entry["origin"]), 0.0) + change ** 2
    return out


def round_ratios(m: dict, carried: float = 0.0) -> dict:
    """A round's measurement against the mean's bounds (``unit``: C / m, or C w with a larger largest weight w, which
    is the ``unequal-weights`` finding's): ``replace`` over 2 C / m (with ``carried``, the squared
    changes its worst neighbour made in later rounds, added: the releases are independent Gaussians of the same
    std), ``round`` the same within its own round, ``zero`` over C / m; ``in_c_over_m`` and ``carried_in_c_over_m``
    in C / m."""
    unit = float(m["clip"]) * max(1.0 / int(m["replies"]), float(m.get("max_weight") or 0.0))
    own = max(0.0, float(m["replace"]) - float(m.get("slack", 0.0)))
    total = math.sqrt(own ** 2 + carried)
    return {"replace": total / (2 * unit), "round": own / (2 * unit), "zero": _ratio(m, "zero", unit),
            "in_c_over_m": total / unit, "carried_in_c_over_m": math.sqrt(carried) / unit,
            "removed_in_c_over_m": float(m["removed"]) / unit, "unit": unit}


def implied_epsilon(a, ratios: dict) -> float | None:
    """Epsilon of the run with each round at multiplier z_u / max(1, ratio) (combined with an adaptive run's count
    noise), accounted as the run is; None where our accountant cannot answer."""
    multipliers = [a.combined_z(a.update_z / max(1.0, r)) for r in ratios.values()]
    multipliers += [a.noise_multiplier] * max(0, a.releases - len(multipliers))
    try:
        return a.rounds_epsilon(multipliers)
    except ConfigurationError:
        return None


def summary(measurements: dict) -> dict:
    """What the replays showed, for the report: the inner strategy, rounds measured and not, the largest ratios."""
    tested = {r: m for r, m in measurements.items() if m.get("tested")}
    names = sorted({m["strategy"] for m in measurements.values()})
    out = {"strategy": ", ".join(names), "rounds": len(measurements), "measured": len(tested),
           "untested": {int(r): m["reason"] for r, m in measurements.items() if not m.get("tested")}}
    if tested:
        carried = carried_squares(measurements)
        ratios = {r: round_ratios(m, carried.get(int(r), 0.0)) for r, m in tested.items()}
        out.update(replace_ratio=max(v["replace"] for v in ratios.values()),
                   zero_ratio=max(v["zero"] for v in ratios.values()),
                   in_c_over_m=max(v["in_c_over_m"] for v in ratios.values()),
                   neighbours=sum(int(m["neighbours"]) for m in tested.values()))
    return out


def carried_words(ratio: dict) -> str:
    if ratio["carried_in_c_over_m"] <= 0:
        return ""
    return (f"; {ratio['round'] * 2:.4g} C/m in its own round and {ratio['carried_in_c_over_m']:.4g} C/m carried "
            "by the strategy's state into the later releases")


def sensitivity_findings(measurements: dict, a) -> list:
    """Findings of the per-round measurements ``{round: measurement}`` of one strategy against ``a``
    (``attacks.flower_checks.assumptions.Assumptions``)."""
    if not measurements:
        return []
    tested = {r: m for r, m in measurements.items() if m.get("tested")}
    name = sorted({m["strategy"] for m in measurements.values()})[0]
    findings = _untested_findings(measurements, tested, name)
    if not tested:
        return findings
    carried = carried_squares(measurements)
    ratios = {r: round_ratios(m, carried.get(int(r), 0.0)) for r, m in tested.items()}
    above = {r: v["replace"] for r, v in ratios.items() if v["replace"] > 1 + RELATIVE}
    worst_round = max(ratios, key=lambda r: ratios[r]["replace"])
    worst, ratio = tested[worst_round], ratios[worst_round]
    common = {"strategy": name, "flower_strategy": worst["flower_strategy"], "round": int(worst_round),
              "measured_sensitivity": ratio["replace"] * 2 * ratio["unit"], "accounted_sensitivity": 2 * ratio["unit"],
              "ratio": ratio["replace"], "in_c_over_m": ratio["in_c_over_m"], "client": worst["replace_client"],
              "neighbour": worst["replace_neighbour"], "zero_ratio": max(v["zero"] for v in ratios.values()),
              "removed_in_c_over_m": max(v["removed_in_c_over_m"] for v in ratios.values()),
              "neighbours": sum(int(m["neighbours"]) for m in tested.values()), "rounds_measured": len(tested),
              "round_ratio": ratio["round"], "carried_in_c_over_m": ratio["carried_in_c_over_m"],
              "lower_bound": True, "false_alarm": 0.0}
    if above:
        return findings + [_above_finding(a, name, worst, worst_round, ratio, ratios, above, common)]
    if common["zero_ratio"] > 1 + RELATIVE:
        findings.append(FlowerFinding(
            "sensitivity-above-add-remove", "medium",
            f"the inner strategy {name} moves by up to {common['zero_ratio']:.4g} C/m when one client's update is "
            f"taken out of the round's replies: within the 2C/m of replace-one (the accounting of what Flower runs), "
            "but above the C/m an add/remove claim (Flower's accountant, Poisson) assumes", common))
        return findings
    findings.append(FlowerFinding(
        "sensitivity-measured", "info",
        f"the inner strategy {name}'s aggregation moved by at most {ratio['in_c_over_m']:.4g} C/m when one client's "
        f"reply was replaced within the clip ({ratio['replace']:.4g} of the 2C/m the noise is calibrated for; at most "
        f"{common['zero_ratio']:.4g} C/m with its update taken out), over {common['neighbours']} neighbouring reply "
        f"sets in {len(tested)} rounds (a lower bound: a neighbour not tried may move it further)", common))
    return findings


def _untested_findings(measurements: dict, tested: dict, name: str) -> list:
    """``sensitivity-untested`` where some rounds could not be replayed (the premise unchecked there)."""
    untested = sorted(r for r in measurements if r not in tested)
    if not untested:
        return []
    reason = measurements[untested[0]]["reason"]
    return [FlowerFinding("sensitivity-untested", "medium",
                          f"the sensitivity of what the wrapper noises (the inner strategy {name}'s "
                          f"aggregation) was not tested in {len(untested)} of {len(measurements)} rounds "
                          f"(round {untested[0]}: {reason}): the premise that it is C/m is unchecked there",
                          {"strategy": name, "rounds": untested, "reason": reason, "false_alarm": 0.0})]


def _above_finding(a, name: str, worst: dict, worst_round, ratio: dict, ratios: dict, above: dict, common: dict):
    """``sensitivity-above-accounted``: the measured sensitivity, the multiplier and epsilon it implies."""
    implied = implied_epsilon(a, {r: v["replace"] for r, v in ratios.items()})
    accounted = a.accounted_epsilon()
    z_eff = a.update_z / ratio["replace"]
    mu = math.sqrt(sum((2.0 * max(1.0, v["replace"]) / a.update_z) ** 2 for v in ratios.values()))
    spent = "an epsilon our accountant cannot bound" if implied is None else f"epsilon {implied:.4g}"
    return FlowerFinding(
        "sensitivity-above-accounted", "critical",
        f"the wrapper noises the output of its inner strategy {name}, which one client moves by up to "
        f"{ratio['in_c_over_m']:.4g} C/m ({common['measured_sensitivity']:.4g} with C = {worst['clip']:g}, m = "
        f"{worst['replies']}; round {worst_round}, client {worst['replace_client']}'s reply replaced by "
        f"{worst['replace_neighbour']}{carried_words(ratio)}): {ratio['replace']:.4g} times the 2C/m the noise "
        f"z C/m is calibrated for (replace-one), in {len(above)} of {len(ratios)} rounds replayed. At the measured "
        f"sensitivity a round is a Gaussian mechanism of multiplier {z_eff:.4g} instead of {a.update_z:g} (mu "
        f"{mu:.4g} over the rounds without sampling), and the run spends {spent} (accounted {accounted:.4g}); "
        f"measured over {common['neighbours']} neighbouring reply sets, a lower bound on the sensitivity",
        {**common, "rounds_above": sorted(int(r) for r in above), "effective_noise_multiplier": z_eff,
         "implied_epsilon": implied, "accounted_epsilon": accounted, "mu": mu, "delta": a.delta})
