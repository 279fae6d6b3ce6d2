"""The neighbouring replies a round's replay tries (``dpfed.flower.sensitivity``): for one client's reply, the
replacements within the clip C that may move the inner strategy's output most, and how many clients a round's replays
can afford.

The updates are the round's replies as the inner strategy received them (clipped by the wrapper or by the clients),
less the round's model, as one m x d float64 array. ``neighbours`` gives fixed replacements (``REPLACEMENTS``), each
within the clip; ``searched`` finds two more coordinate by coordinate (``SEARCHED``), assuming for the search only that
each output coordinate answers its own input coordinate (a server optimizer, a coordinate-wise median). Every
replacement is replayed as it is: a neighbour not tried may move the output further, so the largest change found is a
lower bound. A round's replays stay within ``REPLAY_BUDGET`` numbers aggregated (``replay_plan``).
"""

from __future__ import annotations

import numpy as np

MAX_CLIENTS = 16  # clients whose reply is changed in a round (the largest updates first)
PROBED_CLIENTS = 4  # of those, clients whose replacement is also searched coordinate by coordinate (``searched``)
PROBE_LEVELS = 10  # probe values per sign, geometric from C/1000 to C
REPLAY_BUDGET = 4e7  # numbers aggregated per round in all replays: fewer clients changed, then no search, above it
NEIGHBOURS = 12  # replays per client changed (zero, left out, REPLACEMENTS, SEARCHED)
REPLACEMENTS = ("its own update negated, at the clip", "its own update at the clip",
                "the clip against the other replies' mean", "the clip along the other replies' mean",
                "the clip spread evenly against the signs of the other replies' sum",
                "the clip spread evenly with the signs of the other replies' sum",
                "the clip spent flipping the signs of the most coordinates of the other replies' sum",
                "the reply of the client farthest from it")
SEARCHED = ("the clip spent where a coordinate moves the output most per unit (coordinate search)",
            "the clip spent on the coordinates that move the output most (coordinate search)")


def _at_clip(vector: np.ndarray, clip: float) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    return vector * (clip / norm) if norm > 0 else None


def neighbours(updates: np.ndarray, index: int, clip: float) -> list[tuple[str, np.ndarray]]:
    """Replacements within the clip for reply ``index`` of ``updates`` (m x d, the round's updates as aggregated):
    ``REPLACEMENTS`` in order, those that exist (a zero update has no direction)."""
    own = updates[index]
    rest = np.delete(updates, index, axis=0)
    total = rest.sum(axis=0) if len(rest) else np.zeros_like(own)
    signs = np.where(total < 0, -1.0, 1.0) * (clip / np.sqrt(own.size))
    scaled, along = _at_clip(own, clip), _at_clip(total, clip)
    candidates = [None if scaled is None else -scaled, scaled, None if along is None else -along, along, -signs, signs,
                  _flipping(total, clip)]
    candidates += [rest[int(np.argmax(np.linalg.norm(rest - own, axis=1)))] if len(rest) else None]
    return [(name, v) for name, v in zip(REPLACEMENTS, candidates, strict=True) if v is not None]


def replay_plan(replies: int, size: int) -> tuple[int, int]:
    """``(clients changed, clients searched)`` in a round of ``replies`` replies of ``size`` numbers, within
    ``REPLAY_BUDGET`` (at least 2 clients changed, or all where fewer reply)."""
    per_replay = max(1, replies * size)
    clients = int(min(MAX_CLIENTS, replies, max(2, REPLAY_BUDGET // (per_replay * NEIGHBOURS))))
    left = REPLAY_BUDGET - clients * per_replay * NEIGHBOURS
    probed = int(min(PROBED_CLIENTS, clients, max(0, left // (per_replay * 2 * PROBE_LEVELS))))
    return clients, probed


def _flipping(total: np.ndarray, clip: float) -> np.ndarray | None:
    """The update within ``clip`` that flips the signs of the most coordinates of ``total`` (the smallest ones first,
    each pushed 1% past zero); None where not even one fits."""
    order = np.argsort(np.abs(total), kind="stable")
    needed = 1.01 * np.abs(total[order]) + 1e-12
    count = int(np.searchsorted(np.cumsum(needed ** 2), clip ** 2, side="right"))
    if count == 0:
        return None
    out = np.zeros_like(total)
    chosen = order[:count]
    out[chosen] = -np.where(total[chosen] < 0, -1.0, 1.0) * needed[:count]
    return out


def searched(run, snapshot, baseline: np.ndarray, updates: np.ndarray, index: int, clip: float) -> list:
    """Replacements for reply ``index`` found coordinate by coordinate (``SEARCHED``), assuming for the search only
    (every result is replayed as it is) that each output coordinate answers its own input coordinate, as a server
    optimizer's or a coordinate-wise median's does: probe replies with every coordinate set to t (outside the
    clip, never reported) give each coordinate's change at t; the clip's budget C^2 is then spent greedily on
    (coordinate, t) pairs, by change^2 per t^2 or by change^2."""
    size = updates.shape[1]
    if baseline.size != size:
        return []
    levels = clip * np.geomspace(1e-3, 1.0, PROBE_LEVELS)
    values = np.r_[-levels[::-1], levels]
    moved = np.zeros((values.size, size))
    for row, t in enumerate(values):
        out = run(snapshot, {index: np.full(size, t)})
        if out is not None and out.shape == baseline.shape and np.all(np.isfinite(out)):
            moved[row] = (out - baseline) ** 2
    out = []
    for key in (moved / (values[:, None] ** 2), moved):
        order = np.argsort(-key, axis=None, kind="stable")
        chosen, used, budget = np.zeros(size), np.zeros(size, dtype=bool), clip ** 2
        for flat_index in order:
            row, k = divmod(int(flat_index), size)
            if moved[row, k] <= 0 or used[k] or values[row] ** 2 > budget:
                continue
            chosen[k], used[k], budget = values[row], True, budget - values[row] ** 2
        if used.any():
            out.append(chosen * min(1.0, clip / float(np.linalg.norm(chosen))))
    return list(zip(SEARCHED, out, strict=False))
