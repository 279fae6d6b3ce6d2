"""Influence a neighbour carries into later rounds through the inner strategy's state (``dpfed.flower.sensitivity``).

After a round's replays, the state the round's worst neighbour leaves in a copy of the strategy (FedAvgM's momentum,
FedOpt's moments, a model the strategy steps from) is kept as a ``Chain``: the instance attributes where it differs
from the state the round's own aggregation left. The following rounds' replays put it in place of the run's own, where
the round did not set those attributes afresh, and measure how far it moves their outputs. States are compared
pickled (protocol 4): an attribute that cannot be pickled is taken as unchanged, so its influence is not followed. At
most ``MAX_CHAINS`` chains (the latest rounds') are carried at once.
"""

from __future__ import annotations

import copy
import pickle

MAX_CHAINS = 16  # rounds whose worst neighbour's state is carried forward at once (the latest)


def pickled(value) -> bytes | None:
    """``value`` pickled (protocol 4), to compare states by; None where it cannot be pickled."""
    try:
        return pickle.dumps(value, protocol=4)
    except Exception:  # noqa: BLE001 - what cannot be pickled is compared as unchanged
        return None


def state_difference(left, after) -> tuple[dict, dict]:
    """The attributes of strategy copy ``left`` (after a neighbour's aggregation) that differ from ``after`` (after
    the round's own): ``(their values in left, after's values pickled)``."""
    values, reference = {}, {}
    theirs = vars(after)
    for key, value in vars(left).items():
        mine, own = pickled(value), pickled(theirs.get(key))
        if mine is not None and own is not None and mine != own:
            values[key], reference[key] = value, own
    return values, reference


class Chain:
    """A neighbour's influence carried by the strategy's state: the round it was made in (``origin``), the
    attributes where its state differs from the run's (``values``) and the run's own at that point
    (``reference``, pickled)."""

    def __init__(self, origin: int, values: dict, reference: dict):
        self.origin, self.values, self.reference = origin, values, reference

    def alive(self):
        return self if self.values else None

    def applied(self, snapshot):
        """A copy of ``snapshot`` (the next round's state) with this chain's attributes, where the round did not set
        them afresh (its own still equal the run's after the previous aggregation); None when none is left."""
        current = vars(snapshot)
        keys = [k for k in self.values if pickled(current.get(k)) == self.reference[k]]
        if not keys:
            return None
        state = copy.deepcopy(snapshot)
        for key in keys:
            setattr(state, key, copy.deepcopy(self.values[key]))
        return state
