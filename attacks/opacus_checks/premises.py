"""The premises of a DP-SGD claim (``PREMISES``) and whether an observed training (``attacks.opacus_checks.train_run``)
showed each of them: a claim holds only if every premise holds of what ran. A premise the run did not observe is
assumed, so no accountant's bound proves the claim (``unobserved`` says which, in words; ``check_training`` lists each
with how it was observed).
"""

from __future__ import annotations

from attacks.opacus_checks.observed_noise import measured_noise

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


def unobserved(checked: dict) -> list[str]:
    """The premises ``check_training`` did not observe, in words (why: each premise's ``how``)."""
    return [PREMISES[p["premise"]] for p in checked.get("premises", ()) if not p["observed"]]
