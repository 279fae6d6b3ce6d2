"""The canary host: the strategy the audit runs around a Message-API app's recorded strategy.

``CanaryHost`` (named after the project's strategy in Flower's log: "Starting MyDP (dpaudit canary host) strategy")
is the strategy the audit runs with canaries: outermost around the recorder and the project's strategy, it puts
each round's clip in the training requests (for the canary mod, ``dpfed.flower.canary_mod``), completes the
canaries' replies to the keys and the weight of the round's real replies (the mean of their weights: equal when
theirs are equal), notes which node is which canary, and drops canary replies to evaluation requests.
"""

from __future__ import annotations

from dpfed.flower.canary_keys import CLIP_KEY, MARKER
from dpfed.flower.read import wrapper_of
from dpfed.flower.recorder import audit_named, weighted_by_key


def _completed_metrics(real, key: str) -> tuple[str, dict, frozenset, str]:
    """(record name, metrics, the real replies' metric keys, array record name) a canary reply takes from the
    round's real replies: each metric of theirs averaged (``_mean``), the weight ``key`` their mean weight
    (theirs exactly when all are equal)."""
    import numpy as np

    template = real[0].content
    name, reference = next(iter(template.metric_records.items()))
    first_records = [next(iter(r.content.metric_records.values())) for r in real]
    completed = {k: _mean([record[k] for record in first_records]) for k in reference}
    weights = [float(record[key]) for record in first_records]
    completed[key] = float(np.mean(weights)) if len(set(weights)) > 1 else weights[0]
    return name, completed, frozenset(reference), next(iter(template.array_records))


def _complete_canary_reply(reply, name: str, completed: dict, keys, array_name) -> None:
    """A canary's reply made like the real ones: its metrics (the marker dropped; only ``keys``, all when None)
    over ``completed`` as the one metric record ``name``, its array record renamed ``array_name`` (if given)."""
    from flwr.app import MetricRecord

    metrics = dict(next(iter(reply.content.metric_records.values())))
    metrics.pop(MARKER)
    own = {**completed, **{k: v for k, v in metrics.items() if keys is None or k in keys}}
    for old in list(reply.content.metric_records):
        del reply.content[old]
    reply.content[name] = MetricRecord(own)
    if array_name is None:
        return
    for old, record in list(reply.content.array_records.items()):
        if old != array_name:
            del reply.content[old]
            reply.content[array_name] = record


def canary_host(inner):
    """``inner`` (the recorder around the project's strategy) inside a ``CanaryHost``."""
    from flwr.serverapp.strategy import Strategy

    class CanaryHost(Strategy):
        def __init__(self):
            super().__init__()
            self.strategy = inner
            self.canary_nodes = {}  # node id -> canary index

        def configure_train(self, server_round, arrays, config, grid):
            from flwr.app import ConfigRecord

            clip = float(wrapper_of(self.strategy).clipping_norm)
            messages = list(self.strategy.configure_train(server_round, arrays, config, grid))
            for message in messages:
                for name, record in list(message.content.config_records.items()):
                    message.content[name] = ConfigRecord({**record, CLIP_KEY: clip})
            return messages

        def _split(self, replies):
            real, canaries = [], []
            for reply in replies:
                metrics = reply.content.metric_records if reply.has_content() else {}
                index = next((r[MARKER] for r in metrics.values() if MARKER in r), None)
                if index is None:
                    real.append(reply)
                else:
                    self.canary_nodes[int(reply.metadata.src_node_id)] = int(index)
                    canaries.append(reply)
            return real, canaries

        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            real, canaries = self._split(replies)
            real = [r for r in real if r.has_content()]
            key = weighted_by_key(self.strategy)
            if real:
                name, completed, keys, array_name = _completed_metrics(real, key)
            else:  # a round of canaries only: nothing to complete their replies from; each weighs 1
                name, completed, keys, array_name = "metrics", {key: 1}, None, None
            for reply in canaries:
                _complete_canary_reply(reply, name, completed, keys, array_name)
            return self.strategy.aggregate_train(server_round, replies)

        def configure_evaluate(self, server_round, arrays, config, grid):
            return self.strategy.configure_evaluate(server_round, arrays, config, grid)

        def aggregate_evaluate(self, server_round, replies):
            return self.strategy.aggregate_evaluate(server_round, self._split(list(replies))[0])

        def summary(self):
            self.strategy.summary()

    audit_named(CanaryHost, getattr(inner, "strategy", inner), "dpaudit canary host")
    return CanaryHost()


def _mean(values):
    """The mean of one metric over the real replies, of the type Flower aggregates (lists element-wise)."""
    import numpy as np

    if isinstance(values[0], list):
        return [float(v) for v in np.mean(np.asarray(values, dtype=float), axis=0)]
    if isinstance(values[0], bool):
        return values[0]
    mean = float(np.mean(values))
    return int(round(mean)) if isinstance(values[0], int) and mean == round(mean) else mean
