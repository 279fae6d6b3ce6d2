"""The sensitivity of what a Flower DP wrapper noises, measured by replaying its inner strategy round by round.

Flower's central-DP wrappers clip the replies (or have the clients clip them), call the inner strategy's
aggregation and add N(0, (z C / m)^2) to its output: the noise is calibrated for a mean of m clipped updates, which
one client moves by at most C / m when its update leaves the fixed-m sum and by 2 C / m when it is replaced. An
inner strategy that is not that mean (a server optimizer, a median, a user's subclass) may move further.

``RoundReplay`` is made just before the wrapper calls the inner aggregation: it deep-copies the inner strategy in
the state it has then (``copy.deepcopy``) and keeps the output the real call returns. After the call it replays a
fresh copy's aggregation on the round's replies as the inner strategy received them (clipped by the wrapper, or by
the clients), first unchanged (the replay must give the real output, to float32 rounding, else nothing is
measured), then with one client's reply changed (``neighbours``):

- ``zero``: its update taken out of the fixed-m mean (its reply is the round's model), against C / m;
- ``replace``: its reply replaced by another within the clip, against 2 C / m (``REPLACEMENTS``);
- ``removed``: its reply left out (m - 1 replies); information only, as a mean over the replies that came then
  moves by (u_i - mean of the rest) / m.

The largest change found is a lower bound on the inner strategy's sensitivity at the round (a neighbour not tried
may move it further); one above the accounted bound is a witness against it. The state the round's worst neighbour
leaves in the strategy (``Chain``: FedAvgM's momentum, FedOpt's moments, a model the strategy steps from) is carried
into the following rounds and their outputs replayed with it (``carried``). A round's replays stay within
``REPLAY_BUDGET`` (``replay_plan``). Python's and NumPy's global generators are restored after the replays, so the run
draws the same noise and sample as without them.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import pickle
import random

import numpy as np

FLOAT32_UNIT = 2.0 ** -23
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


def flower_base(strategy) -> str:
    """The Flower strategy class ``strategy`` is or subclasses (its own class name when it is Flower's)."""
    for cls in type(strategy).__mro__:
        if cls.__module__.startswith("flwr."):
            return cls.__name__
    return type(strategy).__name__


def strategy_name(strategy) -> str:
    """``FedAdam``, or ``MyAdam (a FedAdam)`` for a user's subclass."""
    own, base = type(strategy).__name__, flower_base(strategy)
    return own if own == base else f"{own} (a {base})"


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


@contextlib.contextmanager
def _quiet_and_same_draws():
    """Flower's log at ERROR (each replayed aggregation logs) and the global generators restored afterwards."""
    logger = logging.getLogger("flwr")
    level, py_state, np_state = logger.level, random.getstate(), np.random.get_state()
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
        random.setstate(py_state)
        np.random.set_state(np_state)


def slack(*norms: float) -> float:
    """Float32 rounding a replayed change may carry: the replies and outputs are float32 models, rounded by at
    most 2^-24 of their norms each; 64 such roundings allowed for."""
    return 64 * FLOAT32_UNIT * float(sum(norms))


class RoundReplay:
    """One round's replay of ``inner`` (the DP wrapper's inner strategy), made before the wrapper calls
    ``inner.<method>(server_round, replies, ...)``: ``with replay.watching(): wrapper.aggregate...`` keeps a copy of
    the replies as the inner strategy receives them (``copy_replies``; a strategy may consume them, Flower's
    FedMedian does) and its real output; then ``measure(...)``. ``runner(replies)`` is the API's adapter
    (``message_runner``, ``legacy_runner``): ``run(snapshot, changes)``, a fresh copy's aggregation of fresh copies
    of the replies with ``changes`` ({index: update, or None to leave the reply out}), as a flat float64 output."""

    def __init__(self, inner, method: str, copy_replies):
        self.inner, self.method, self.name = inner, method, strategy_name(inner)
        self.copy_replies = copy_replies
        self.real, self.received, self.reason, self.chains = [], None, None, []
        try:
            self.snapshot = copy.deepcopy(inner)
        except Exception as exc:  # noqa: BLE001 - any failure to copy means: no replay
            self.snapshot = None
            self.reason = f"the inner strategy could not be copied ({type(exc).__name__}: {str(exc)[:120]})"

    @contextlib.contextmanager
    def watching(self):
        """While the wrapper runs the round: the replies the inner strategy receives and its output are kept."""
        if self.snapshot is None:
            yield
            return
        own = vars(self.inner).get(self.method) if hasattr(self.inner, "__dict__") else None
        original = getattr(self.inner, self.method)

        def kept(server_round, replies, *args, **kwargs):
            replies = list(replies)
            try:
                self.received = self.copy_replies(replies)
            except Exception as exc:  # noqa: BLE001 - replies that cannot be copied: no replay
                self.reason = f"the replies could not be copied ({type(exc).__name__})"
            out = original(server_round, replies, *args, **kwargs)
            self.real.append(out)
            return out

        try:
            setattr(self.inner, self.method, kept)
        except Exception as exc:  # noqa: BLE001 - a strategy that refuses attributes: no check of the replay
            self.reason = f"the inner strategy's {self.method} could not be watched ({type(exc).__name__})"
            yield
            return
        try:
            yield
        finally:
            if own is not None:
                setattr(self.inner, self.method, own)
            else:
                delattr(self.inner, self.method)

    def measure(self, runner, real_output, current: np.ndarray, clip: float, server_round: int = 0,
                chains: list | None = None) -> dict:
        """The round's measurement (``untested`` with the reason where no replay could be made). ``runner``:
        ``message_runner`` or ``legacy_runner`` with the server round, the round's model and the flattener bound.
        ``chains``: the state that earlier rounds' worst neighbours left in the strategy (``Chain``), replayed on this
        round's replies (``carried``: how far each moves this round's output) and continued in ``self.chains``."""
        base = {"strategy": self.name, "flower_strategy": flower_base(self.inner), "clip": float(clip),
                "replies": len(self.received or [])}
        if self.reason is None and len(self.real) != 1:
            self.reason = "the wrapper did not call the inner strategy's aggregation once"
        if self.reason is not None:
            return {**base, "tested": False, "reason": self.reason}
        if real_output is None or not self.received:
            return {**base, "tested": False, "reason": "the inner strategy released nothing this round"}
        with _quiet_and_same_draws():
            try:
                run, updates, ids = runner(self.received, self.copy_replies)
                return {**base, **self._measured(run, real_output, updates, current, clip, ids, server_round,
                                                 chains or [])}
            except Exception as exc:  # noqa: BLE001 - the replay failed: say so, never a verdict
                return {**base, "tested": False,
                        "reason": f"the replay failed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"}

    def _measured(self, run, real_output, updates, current, clip, ids, server_round, chains) -> dict:
        baseline, after = run(self.snapshot, {}, keep=True)
        if baseline is None or baseline.shape != real_output.shape:
            return {"tested": False, "reason": "the replay on the recorded replies released nothing comparable"}
        tolerance = slack(float(np.linalg.norm(current)), float(np.linalg.norm(real_output)), clip)
        off = float(np.linalg.norm(baseline - real_output))
        if not off <= tolerance:
            return {"tested": False, "reason": f"the replay on the recorded replies did not give the round's own "
                                               f"output (off by {off:.3g}): the strategy depends on more than its "
                                               "copy and the replies"}
        norms = np.linalg.norm(updates, axis=1)
        clients, probed = replay_plan(*updates.shape)
        order = np.argsort(-norms, kind="stable")[:clients]
        worst = {"replace": (0.0, None, None), "zero": (0.0, None, None), "removed": (0.0, None, None)}
        tried, worst_changes = 0, [None]

        def note(kinds, changes, index, what):
            nonlocal tried
            out = run(self.snapshot, changes)
            tried += 1
            if out is None or out.shape != baseline.shape or not np.all(np.isfinite(out)):
                return
            change = float(np.linalg.norm(out - baseline))
            for kind in kinds:
                if change > worst[kind][0]:
                    worst[kind] = (change, int(ids[index]), what)
                    worst_changes[0] = changes if kind == "replace" else worst_changes[0]

        for position, index in enumerate(order):
            index = int(index)
            note(("zero", "replace"), {index: np.zeros_like(updates[index])}, index, "a zero update")
            if len(updates) > 1:
                note(("removed",), {index: None}, index, "its reply left out")
            found = searched(run, self.snapshot, baseline, updates, index, clip) if position < probed else []
            tried += PROBE_LEVELS * 2 if position < probed else 0
            for what, replacement in neighbours(updates, index, clip) + found:
                note(("replace",), {index: replacement}, index, what)
        carried = self._carried(run, baseline, after, chains)
        if worst_changes[0] is not None:
            _, left = run(self.snapshot, worst_changes[0], keep=True)
            self.chains.append(Chain(server_round, *state_difference(left, after)).alive())
        self.chains = [c for c in self.chains if c is not None][-MAX_CHAINS:]
        return {"tested": True, "neighbours": tried, "clients_changed": len(order), "clients_searched": probed,
                "slack": tolerance,
                "carried": carried,
                **{kind: value for kind, (value, _, _) in worst.items()},
                **{f"{kind}_client": client for kind, (_, client, _) in worst.items()},
                **{f"{kind}_neighbour": what for kind, (_, _, what) in worst.items()}}


    def _carried(self, run, baseline, after, chains) -> list:
        """This round's output replayed with each chain's state in place of the round's own (where the round's
        ``configure`` did not set it afresh): ``[{"origin": round, "change": norm}]``; the chains continued."""
        carried = []
        for chain in chains:
            state = chain.applied(self.snapshot)
            if state is None:
                continue
            out, left = run(state, {}, keep=True)
            if out is None or out.shape != baseline.shape or not np.all(np.isfinite(out)):
                continue
            carried.append({"origin": chain.origin, "change": float(np.linalg.norm(out - baseline))})
            self.chains.append(Chain(chain.origin, *state_difference(left, after)).alive())
        return carried


MAX_CHAINS = 16  # rounds whose worst neighbour's state is carried forward at once (the latest)


def _pickled(value) -> bytes | None:
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
        mine, own = _pickled(value), _pickled(theirs.get(key))
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
        keys = [k for k in self.values if _pickled(current.get(k)) == self.reference[k]]
        if not keys:
            return None
        state = copy.deepcopy(snapshot)
        for key in keys:
            setattr(state, key, copy.deepcopy(self.values[key]))
        return state


def unflatten(flat: np.ndarray, like: list) -> list:
    """``flat`` cut into arrays of the shapes and dtypes of ``like``."""
    out, start = [], 0
    for array in like:
        array = np.asarray(array)
        out.append(flat[start:start + array.size].reshape(array.shape).astype(array.dtype))
        start += array.size
    return out


def copy_messages(replies: list) -> list:
    """Copies of reply Messages whose contents can be changed or consumed without touching the originals."""
    out = []
    for reply in replies:
        changed = copy.copy(reply)
        changed.content = copy.deepcopy(reply.content)
        out.append(changed)
    return out


def copy_results(results: list) -> list:
    """Copies of legacy (proxy, FitRes) results (the proxies shared)."""
    return [(proxy, copy.deepcopy(res)) for proxy, res in results]


def _batch(items: list, kept: list, changes: dict, fresh, untouched) -> list:
    """The replies of one replay: fresh copies of all (a strategy that may change them), or of the changed ones only."""
    if not untouched:
        return fresh([items[k] for k in kept])
    return [fresh([items[k]])[0] if k in changes else items[k] for k in kept]


def _untouched(items: list, kept: list, changes: dict, batch: list, content) -> bool:
    """Whether the aggregation left every unchanged reply of ``batch`` as it was (compared pickled)."""
    for position, k in enumerate(kept):
        if k not in changes:
            mine, theirs = _pickled(content(batch[position])), _pickled(content(items[k]))
            if mine is None or mine != theirs:
                return False
    return True


def message_runner(server_round: int, current: np.ndarray, flat):
    """The adapter of a Message-API inner strategy: its replies (one ArrayRecord each) -> (run, updates, node ids)."""
    from flwr.app import Array, ArrayRecord

    def bind(replies, fresh):
        if any(len(r.content.array_records) != 1 for r in replies):
            raise ValueError("a reply carries more than one ArrayRecord")
        updates = np.stack([flat(next(iter(r.content.array_records.values())).to_numpy_ndarrays()) - current
                            for r in replies])

        untouched = [None]  # whether the strategy leaves the replies it aggregates as they were (then not copied)

        def run(snapshot, changes, keep=False):
            kept = [k for k in range(len(replies)) if changes.get(k, 0) is not None]
            batch = _batch(replies, kept, changes, fresh, untouched[0])
            for position, k in enumerate(kept):
                if k in changes:
                    [(key, record)] = list(batch[position].content.array_records.items())
                    arrays = unflatten(current + changes[k], record.to_numpy_ndarrays())
                    batch[position].content[key] = ArrayRecord(
                        {name: Array(np.asarray(a)) for name, a in zip(record.keys(), arrays, strict=True)})
            strategy = copy.deepcopy(snapshot)
            arrays, _ = strategy.aggregate_train(server_round, batch)
            if untouched[0] is None:
                untouched[0] = _untouched(replies, kept, changes, batch, lambda reply: reply.content)
            out = None if arrays is None else flat(arrays.to_numpy_ndarrays())
            return (out, strategy) if keep else out

        return run, updates, [int(r.metadata.src_node_id) for r in replies]

    return bind


def legacy_runner(server_round: int, current: np.ndarray, flat, node):
    """The adapter of a legacy inner strategy: its (proxy, FitRes) results -> (run, updates, node ids)."""
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

    def bind(results, fresh):
        updates = np.stack([flat(parameters_to_ndarrays(res.parameters)) - current for _, res in results])

        untouched = [None]  # whether the strategy leaves the results it aggregates as they were (then not copied)

        def run(snapshot, changes, keep=False):
            kept = [k for k in range(len(results)) if changes.get(k, 0) is not None]
            batch = _batch(results, kept, changes, fresh, untouched[0])
            for position, k in enumerate(kept):
                if k in changes:
                    res = batch[position][1]
                    res.parameters = ndarrays_to_parameters(unflatten(current + changes[k],
                                                                      parameters_to_ndarrays(res.parameters)))
            strategy = copy.deepcopy(snapshot)
            parameters, _ = strategy.aggregate_fit(server_round, batch, [])
            if untouched[0] is None:
                untouched[0] = _untouched(results, kept, changes, batch, lambda result: result[1])
            out = None if parameters is None else flat(parameters_to_ndarrays(parameters))
            return (out, strategy) if keep else out

        return run, updates, [node(proxy) for proxy, _ in results]

    return bind
