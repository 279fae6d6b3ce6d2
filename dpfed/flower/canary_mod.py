"""Canary clients as extra SuperNodes, answered by a client mod so that the project's ClientApp never sees them.

The audit runs ``real + k`` SuperNodes. Flower numbers them ``partition-id`` 0 .. real + k - 1; the canary mod,
outermost around the project's ClientApp (``with_canaries``), answers every message to a node of partition
``real + j`` itself (canary j) and hands every other message to the ClientApp with ``num-partitions`` set back
to ``real``: each real client keeps its ``partition-id`` and ``num-partitions``.

Canary j answers a training request with ``current + s_j C u_j`` (``dpfed.flower.canaries``: a fixed random unit
direction and a secret random sign; with ``insert=False``, a null run, an independent direction of the same
norm), where C is the clip of the round, which the audit's server-side wrapper (``dpfed.flower.host``) puts in
the request under ``CLIP_KEY`` and the mod removes before a real client sees it. Its metrics hold ``MARKER``
(its index) and, for the client-side adaptive wrapper, the norm bit (its norm is the clip: not clipped); the
host completes them to the real replies' keys and weight and drops canary replies to evaluation requests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpfed.flower.canary_keys import CLIP_KEY, MARKER


@dataclass(frozen=True)
class CanaryMod:
    """A Flower mod (``mod(msg, context, call_next)``) for ``canaries`` canary nodes after ``real`` real ones."""

    real: int
    canaries: int
    seed: int
    insert: bool = True
    legacy: bool = False  # a legacy client_fn app: canaries run its ClientApp (``dpfed.flower.legacy_canary``)

    def __call__(self, msg, context, call_next):
        partition = int(context.node_config["partition-id"])
        if partition >= self.real and not self.legacy:
            return self.answer(msg, partition - self.real)
        context.node_config["num-partitions"] = self.real
        config = {}
        for record in msg.content.config_records.values():
            config.update(record)
            if CLIP_KEY in record:
                del record[CLIP_KEY]
        if partition < self.real:
            return call_next(msg, context)
        from dpfed.flower.legacy_canary import canary_reply

        index = partition - self.real
        context.node_config["partition-id"] = index % self.real  # a real partition's data and example count
        context.node_config[MARKER] = index  # the client observer leaves canaries out
        try:
            with canary_reply(self.direction, index, config):
                return call_next(msg, context)
        finally:  # the node stays a canary for its next message
            context.node_config["partition-id"] = partition
            del context.node_config[MARKER]

    def direction(self, index: int, dim: int) -> np.ndarray:
        from dpfed.flower.canaries import canary_direction, canary_signs, decoy_direction

        if not self.insert:
            return decoy_direction(index, dim, self.seed)
        return canary_signs(self.canaries, self.seed)[index] * canary_direction(index, dim, self.seed)

    def answer(self, msg, index: int):
        from flwr.app import Message, MetricRecord, RecordDict
        from flwr.supercore.differential_privacy import KEY_NORM_BIT

        metrics = {MARKER: index}
        if not msg.metadata.message_type.startswith("train"):
            return Message(content=RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)
        config = {k: v for record in msg.content.config_records.values() for k, v in record.items()}
        if CLIP_KEY not in config:
            raise RuntimeError(f"canary {index}: the training request carries no {CLIP_KEY} (no audit host?)")
        if "clipping_norm" in config:  # a client-side wrapper: the adaptive one reads a norm bit
            metrics[KEY_NORM_BIT] = 0  # as Flower's adaptiveclipping_mod: an int (MetricRecord takes no bool)
        name, arrays = next(iter(msg.content.array_records.items()))
        dim = sum(a.size for a in arrays.to_numpy_ndarrays())
        reply = shifted(arrays, self.direction(index, dim), float(config[CLIP_KEY]))
        return Message(content=RecordDict({name: reply, "metrics": MetricRecord(metrics)}), reply_to=msg)


def shifted(arrays, direction: np.ndarray, norm: float):
    """``arrays`` plus ``norm * direction`` (flat, in the arrays' order), each array keeping its dtype."""
    from flwr.app import Array, ArrayRecord

    current = arrays.to_numpy_ndarrays()
    parts = np.split(norm * direction, np.cumsum([a.size for a in current])[:-1])
    return ArrayRecord({k: Array((a + p.reshape(a.shape)).astype(a.dtype))
                        for k, a, p in zip(arrays.keys(), current, parts, strict=True)})


def with_canaries(client_app, mod: CanaryMod, *inner_mods):
    """A ClientApp that runs ``mod`` around ``inner_mods`` (e.g. the client observer) around ``client_app`` (which
    is not changed); a canary node never reaches ``inner_mods``."""
    from flwr.clientapp import ClientApp
    from flwr.clientapp.client_app import make_ffn

    class CanaryClientApp(ClientApp):
        def __init__(self):
            super().__init__()
            self.inner = client_app
            self._call = make_ffn(lambda message, context: self.inner(message, context), [mod, *inner_mods])

    return CanaryClientApp()
