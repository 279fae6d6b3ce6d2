"""The adapters that replay an inner strategy's aggregation on a round's replies, one per Flower API, and the copies
of the replies they replay on (``dpfed.flower.sensitivity``).

``message_runner`` (Message API: reply Messages carrying one ArrayRecord each, ``aggregate_train``) and
``legacy_runner`` (legacy API: ``(proxy, FitRes)`` results, ``aggregate_fit``) bind the server round, the round's model
and the flattener; bound to the round's replies they give ``(run, updates, node ids)``. ``run(snapshot, changes)``
aggregates with a fresh deep copy of the strategy ``snapshot``, the replies with ``changes`` ({index: update, or None
to leave the reply out}, an update being relative to the round's model and cast back to each array's shape and dtype),
and returns the output flattened to float64 (``keep=True``: with the strategy copy after the aggregation). The replies
are copied afresh for each replay, as a strategy may change or consume them (Flower's FedMedian does), until the first
replay shows that it leaves them as they were (compared pickled); then only the changed ones are.
"""

from __future__ import annotations

import copy

import numpy as np

from dpfed.flower.state_chain import pickled


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
            mine, theirs = pickled(content(batch[position])), pickled(content(items[k]))
            if mine is None or mine != theirs:
                return False
    return True


def _replaying(items: list, current: np.ndarray, fresh, replace, aggregate, content):
    """``run(snapshot, changes, keep=False)``: a deep copy of the strategy ``snapshot`` aggregating ``items`` (the
    round's replies or results) with the changes applied: ``changes[k]`` None leaves item k out, an array replaces
    its update (``replace(item, new flat parameters)``); ``aggregate(strategy, batch)`` -> the output's flat
    parameters or None. The items are copied (``fresh``) unless the strategy is seen to leave them as they were
    (``content(item)``: what it could change)."""
    untouched = [None]

    def run(snapshot, changes, keep=False):
        kept = [k for k in range(len(items)) if changes.get(k, 0) is not None]
        batch = _batch(items, kept, changes, fresh, untouched[0])
        for position, k in enumerate(kept):
            if k in changes:
                replace(batch[position], current + changes[k])
        strategy = copy.deepcopy(snapshot)
        out = aggregate(strategy, batch)
        if untouched[0] is None:
            untouched[0] = _untouched(items, kept, changes, batch, content)
        return (out, strategy) if keep else out

    return run


def message_runner(server_round: int, current: np.ndarray, flat):
    """The adapter of a Message-API inner strategy: its replies (one ArrayRecord each) -> (run, updates, node ids)."""
    from flwr.app import Array, ArrayRecord

    def replace(reply, parameters):
        [(key, record)] = list(reply.content.array_records.items())
        arrays = unflatten(parameters, record.to_numpy_ndarrays())
        reply.content[key] = ArrayRecord({name: Array(np.asarray(a))
                                          for name, a in zip(record.keys(), arrays, strict=True)})

    def aggregate(strategy, batch):
        arrays, _ = strategy.aggregate_train(server_round, batch)
        return None if arrays is None else flat(arrays.to_numpy_ndarrays())

    def bind(replies, fresh):
        if any(len(r.content.array_records) != 1 for r in replies):
            raise ValueError("a reply carries more than one ArrayRecord")
        updates = np.stack([flat(next(iter(r.content.array_records.values())).to_numpy_ndarrays()) - current
                            for r in replies])
        run = _replaying(replies, current, fresh, replace, aggregate, lambda reply: reply.content)
        return run, updates, [int(r.metadata.src_node_id) for r in replies]

    return bind


def legacy_runner(server_round: int, current: np.ndarray, flat, node):
    """The adapter of a legacy inner strategy: its (proxy, FitRes) results -> (run, updates, node ids)."""
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

    def replace(result, parameters):
        res = result[1]
        res.parameters = ndarrays_to_parameters(unflatten(parameters, parameters_to_ndarrays(res.parameters)))

    def aggregate(strategy, batch):
        parameters, _ = strategy.aggregate_fit(server_round, batch, [])
        return None if parameters is None else flat(parameters_to_ndarrays(parameters))

    def bind(results, fresh):
        updates = np.stack([flat(parameters_to_ndarrays(res.parameters)) - current for _, res in results])
        run = _replaying(results, current, fresh, replace, aggregate, lambda result: result[1])
        return run, updates, [node(proxy) for proxy, _ in results]

    return bind
