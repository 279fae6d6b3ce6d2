"""A Flower strategy wrapper that records every training round's DP release into a ``Transcript``.

``recording_strategy(strategy, transcript)`` wraps any Message-API strategy (typically one of Flower's
DP wrappers around FedAvg) without changing what it does. Per round it records (``records.add_release``):
the sampled node ids and the number of connected nodes (from ``configure_train``), the replying nodes and
their aggregation weights (the reply's ``weighted_by_key`` metric, normalised), the wrapper's clipping
norm, and the noise actually added: the wrapped strategy's output minus the noiseless aggregate, which
the recorder recomputes from the replies (each update clipped to C in L2 over all arrays, as Flower's
``compute_clip_model_update`` does, then averaged with the weights). Beside the transcript it keeps each
round's model delta and the node ids' ``partition-id`` metrics. flwr is imported on first use.
"""

from __future__ import annotations

import numpy as np

from dpfed.flower.read import wrapper_of
from dpfed.flower.records import add_release
from dpfed.transcript import Transcript


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def _weighted_by_key(strategy) -> str:
    while strategy is not None:
        if hasattr(strategy, "weighted_by_key"):
            return strategy.weighted_by_key
        strategy = getattr(strategy, "strategy", None)
    return "num-examples"


def clipped_update(reply, current: np.ndarray, clip: float) -> np.ndarray:
    """The reply's model minus ``current``, scaled down to L2 norm ``clip``."""
    record = next(iter(reply.content.array_records.values()))
    update = _flat(record.to_numpy_ndarrays()) - current
    norm = float(np.linalg.norm(update))
    return update * min(1.0, clip / norm) if norm > 0 else update


def reply_weight(reply, key: str) -> float:
    metrics = next(iter(reply.content.metric_records.values()))
    return float(metrics[key])


def reply_partitions(replies) -> dict[int, int]:
    """``{node id: partition}`` for the replies whose metrics carry a ``partition-id`` (the example app's
    clients do, so that the auditor can tell which canaries took part in a round)."""
    out = {}
    for reply in replies:
        metrics = next(iter(reply.content.metric_records.values()))
        if "partition-id" in metrics:
            out[int(reply.metadata.src_node_id)] = int(metrics["partition-id"])
    return out


def recording_strategy(strategy, transcript: Transcript | None = None):
    """``strategy`` wrapped in a recorder (a ``flwr.serverapp.strategy.Strategy``); ``.transcript`` holds
    the records."""
    from flwr.serverapp.strategy import Strategy

    class RecordingStrategy(Strategy):
        """Records sampled ids, replies, weights, clip and added noise (and each round's model delta, for
        the canaries' all-iterates scores); delegates everything."""

        def __init__(self, inner, transcript):
            super().__init__()
            self.strategy, self.transcript = inner, transcript if transcript is not None else Transcript()
            self._current, self._sampled, self._population = None, {}, {}
            self.round_deltas = {}  # round -> released model minus the round's starting model (flat)
            self.partitions = {}  # node id -> the "partition-id" metric its replies carry, where they carry one

        def configure_train(self, server_round, arrays, config, grid):
            self._current = _flat(arrays.to_numpy_ndarrays())
            messages = list(self.strategy.configure_train(server_round, arrays, config, grid))
            self._sampled[server_round] = [m.metadata.dst_node_id for m in messages]
            self._population[server_round] = len(list(grid.get_node_ids()))
            return messages

        def aggregate_train(self, server_round, replies):
            replies = [r for r in replies if r.has_content()]
            clip = float(wrapper_of(self.strategy).clipping_norm)
            weights = np.array([reply_weight(r, _weighted_by_key(self.strategy)) for r in replies])
            weights = weights / weights.sum() if weights.size else weights
            updates = [clipped_update(r, self._current, clip) for r in replies]
            ids = [r.metadata.src_node_id for r in replies]
            self.partitions.update(reply_partitions(replies))
            arrays, metrics = self.strategy.aggregate_train(server_round, replies)
            if arrays is not None:
                self.round_deltas[server_round] = _flat(arrays.to_numpy_ndarrays()) - self._current
            if arrays is not None and updates:
                noiseless = self._current + np.einsum("i,id->d", weights, np.stack(updates))
                noise = _flat(arrays.to_numpy_ndarrays()) - noiseless
                add_release(self.transcript, server_round, self._sampled.get(server_round, []),
                            self._population.get(server_round, 0), ids, weights, clip, noise)
            return arrays, metrics

        def configure_evaluate(self, server_round, arrays, config, grid):
            return self.strategy.configure_evaluate(server_round, arrays, config, grid)

        def aggregate_evaluate(self, server_round, replies):
            return self.strategy.aggregate_evaluate(server_round, replies)

        def summary(self):
            self.strategy.summary()

    return RecordingStrategy(strategy, transcript)
