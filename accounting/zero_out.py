"""What an add/remove claim of this project means: the zero-out relation, and why the accountants'
add/remove figures hold for it.

Our algorithms protect a unit (a record, an agent, a worker) whose slot stays in a declared population
of fixed size m and contributes zero when the unit is absent; every normaliser uses the declared m
(DP-FTS-DE's weights, DUETS's and FedZero's ``1/(q m)``), never the realised participants. Two inputs
are neighbours if they differ in one slot's contents being present or zeroed: the zero-out relation.

Why the add/remove figures hold: with a fixed normaliser, zeroing one slot changes a Poisson-subsampled
clipped sum only when that slot is sampled, and then by at most one clipped record. That is the same
pair of output distributions (the mixture ``(1 - q) N(s, s^2) + q N(s + x, s^2)`` against ``N(s, s^2)``)
that an add/remove accountant analyses, so its epsilon applies as it stands. Replace-one figures hold
too: zeroing a record is replacing it by the zero record.
"""

from __future__ import annotations

ZERO_OUT_NOTE = (
    "add-remove here is the zero-out relation: a unit's slot stays in the declared population and "
    "contributes zero when absent, and every normaliser uses the declared size (e.g. 1/(q m)); zeroing one "
    "slot changes a Poisson-subsampled clipped sum by at most one clipped record, the same pair of output "
    "distributions as adding or removing it, so the add/remove figures hold for it (under fixed-size "
    "sampling use replace-one figures: zeroing a record is replacing it by the zero record)"
)


def relation_note(neighbouring) -> str | None:
    """The zero-out reading of an add/remove relation (an enum or its string), else None."""
    value = getattr(neighbouring, "value", neighbouring)
    return ZERO_OUT_NOTE if str(value).lower().replace("_", "-") == "add-remove" else None
