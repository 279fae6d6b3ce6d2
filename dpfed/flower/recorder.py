"""A Flower strategy wrapper that records every training round's DP release into a ``Transcript``.

``recording_strategy(strategy, transcript)`` wraps any Message-API strategy (typically one of Flower's
DP wrappers around FedAvg) without changing what it does. Per round it records (``records.add_release``):
the sampled node ids and the number of connected nodes (from ``configure_train``), the replying nodes and
their aggregation weights (the reply's ``weighted_by_key`` metric, normalised), the wrapper's clipping
norm, and the noise actually added: the wrapped strategy's output minus the noiseless aggregate, which
the recorder recomputes from the replies (each update clipped to C in L2 over all arrays, as Flower's
``compute_clip_model_update`` does, then averaged with the weights; with a client-side wrapper the replies
arrive clipped and are averaged as they are, so an unclipped reply shows as its norm, not as noise). It also
records (``records.OPTIONAL_KEYS``) where the clipping happens, each reply's update norm as it arrived, the
clip the noise was scaled with (an adaptive wrapper updates its clip before it adds the noise) and the
released tensors' names and sizes. The clip of a round is the one sent to the clients in ``configure_train``
(client-side wrappers) or the wrapper's at the start of ``aggregate_train`` (server-side). Beside the
transcript it keeps each round's model delta and the node ids' ``partition-id`` metrics. flwr is imported on
first use.
"""

from __future__ import annotations

import numpy as np

from dpfed.flower.read import wrapper_kind, wrapper_of
from dpfed.flower.records import add_release
from dpfed.flower.replay_runners import copy_messages, message_runner
from dpfed.flower.sensitivity import RoundReplay
from dpfed.transcript import Transcript


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def weighted_by_key(strategy) -> str:
    """The metric key the (wrapped) strategy weights replies by (Flower's default "num-examples")."""
    while strategy is not None:
        if hasattr(strategy, "weighted_by_key"):
            return strategy.weighted_by_key
        strategy = getattr(strategy, "strategy", None)
    return "num-examples"


FLOAT32_UNIT = 2.0 ** -23  # a float32 sum rounds each coordinate by at most half of this, relatively
CLIP_KEY = "clipping_norm"  # flwr's KEY_CLIPPING_NORM: the clip a client-side wrapper sends its clients


def reply_update(reply, current: np.ndarray) -> np.ndarray:
    """The reply's model minus ``current`` (flat, float64), as it arrived."""
    record = next(iter(reply.content.array_records.values()))
    return _flat(record.to_numpy_ndarrays()) - current


def clip_to(update: np.ndarray, clip: float) -> np.ndarray:
    norm = float(np.linalg.norm(update))
    return update * min(1.0, clip / norm) if norm > 0 else update


def clipped_update(reply, current: np.ndarray, clip: float) -> np.ndarray:
    """The reply's model minus ``current``, scaled down to L2 norm ``clip``."""
    return clip_to(reply_update(reply, current), clip)


def norm_slack(update: np.ndarray, current: np.ndarray, clip: float) -> float:
    """How far above ``clip`` a correctly clipped update's measured norm may lie: the client adds its clipped
    update to the float32 model, which rounds each coordinate by at most 2^-24 of its size (so the norm moves
    by at most 2^-24 of the reply's norm, taken here with a factor 2), plus 1e-5 C for the clipping's own
    float32 scaling."""
    return FLOAT32_UNIT * float(np.linalg.norm(current + update)) + 1e-5 * clip


def sent_clip(messages) -> float | None:
    """The clip a client-side wrapper put into the round's training config (None when there is none)."""
    for message in messages:
        for config in message.content.config_records.values():
            if CLIP_KEY in config:
                return float(config[CLIP_KEY])
    return None


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


class _MessageRecorder:
    """The Message-API recorder's methods, mixed into a ``flwr.serverapp.strategy.Strategy`` subclass by
    ``recording_strategy`` (where flwr is imported, on first use): records sampled ids, replies, weights, clip and
    added noise (and each round's model delta, for the canaries' all-iterates scores); delegates everything."""

    def __init__(self, inner, transcript):
        super().__init__()
        self.strategy, self.transcript = inner, transcript if transcript is not None else Transcript()
        self._current, self._sampled, self._population, self._sent_clip = None, {}, {}, {}
        self.round_deltas = {}  # round -> released model minus the round's starting model (flat)
        self.initial = None  # the model of the first round recorded (flat)
        self.partitions = {}  # node id -> the "partition-id" metric its replies carry, where they carry one
        self.sensitivity = {}  # round -> the inner strategy's replayed sensitivity (dpfed.flower.sensitivity)
        self._chains = []  # earlier rounds' neighbours' state, carried forward (dpfed.flower.state_chain.Chain)

    def configure_train(self, server_round, arrays, config, grid):
        self._current = _flat(arrays.to_numpy_ndarrays())
        self.initial = self._current if self.initial is None else self.initial
        messages = list(self.strategy.configure_train(server_round, arrays, config, grid))
        self._sampled[server_round] = [m.metadata.dst_node_id for m in messages]
        self._population[server_round] = len(list(grid.get_node_ids()))
        self._sent_clip[server_round] = sent_clip(messages)
        return messages

    def aggregate_train(self, server_round, replies):
        replies = [r for r in replies if r.has_content()]
        wrapper = wrapper_of(self.strategy)
        side = "client" if wrapper_kind(wrapper).startswith("client") else "server"
        clip = float(wrapper.clipping_norm)
        if side == "client" and self._sent_clip.get(server_round) is not None:
            clip = self._sent_clip[server_round]
        weights = np.array([reply_weight(r, weighted_by_key(self.strategy)) for r in replies])
        weights = weights / weights.sum() if weights.size else weights
        raw = [reply_update(r, self._current) for r in replies]  # before the wrapper clips them in place
        updates = [clip_to(u, clip) for u in raw] if side == "server" else raw
        ids = [r.metadata.src_node_id for r in replies]
        self.partitions.update(reply_partitions(replies))
        replay = RoundReplay(wrapper.strategy, "aggregate_train", copy_messages)
        with replay.watching():
            arrays, metrics = self.strategy.aggregate_train(server_round, replies)
        if arrays is not None and replies:
            self._measure_sensitivity(replay, server_round, clip, weights)
        if arrays is not None:
            ndarrays = arrays.to_numpy_ndarrays()  # once: a copy of the whole model
            released = _flat(ndarrays)
            self.round_deltas[server_round] = released - self._current
        if arrays is not None and updates:
            noiseless = self._current + np.einsum("i,id->d", weights, np.stack(updates))
            noise = released - noiseless
            tensors = [(k, int(np.asarray(a).size)) for k, a in zip(arrays.keys(), ndarrays, strict=True)]
            add_release(self.transcript, server_round, self._sampled.get(server_round, []),
                        self._population.get(server_round, 0), ids, weights, clip, noise, clipping=side,
                        norms=[float(np.linalg.norm(u)) for u in raw],
                        norm_slack=[norm_slack(u, self._current, clip) for u in raw],
                        noise_clip=float(wrapper.clipping_norm), tensors=tensors)
        return arrays, metrics

    def _measure_sensitivity(self, replay, server_round, clip, weights) -> None:
        """The round's replay measured (``RoundReplay.measure``) into ``self.sensitivity``, with the largest weight;
        the state chains continued."""
        real = _flat(replay.real[0][0].to_numpy_ndarrays()) if len(replay.real) == 1 and replay.real[0][0] \
            is not None else None
        self.sensitivity[server_round] = replay.measure(message_runner(server_round, self._current, _flat),
                                                        real, self._current, clip, server_round, self._chains)
        self._chains = replay.chains
        self.sensitivity[server_round]["max_weight"] = float(weights.max()) if weights.size else None

    def configure_evaluate(self, server_round, arrays, config, grid):
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        return self.strategy.aggregate_evaluate(server_round, replies)

    def summary(self):
        self.strategy.summary()


def recording_strategy(strategy, transcript: Transcript | None = None):
    """``strategy`` wrapped in a recorder (a ``flwr.serverapp.strategy.Strategy``); ``.transcript`` holds
    the records."""
    from flwr.serverapp.strategy import Strategy

    class RecordingStrategy(_MessageRecorder, Strategy):
        """The recorder (``_MessageRecorder``) as a Message-API strategy."""

    audit_named(RecordingStrategy, strategy, "dpaudit recorder")
    return RecordingStrategy(strategy, transcript)


def audit_named(cls, strategy, role: str) -> None:
    """Name ``cls`` (a wrapper the audit runs around ``strategy``) after it, for Flower's "Starting ... strategy"
    log: e.g. ``MyDP (dpaudit recorder)``; never a DP wrapper's own name (``wrapper_kind`` reads class names)."""
    cls.__name__ = cls.__qualname__ = f"{type(strategy).__name__} ({role})"
