"""A recorder for Flower's legacy strategies (``flwr.server.strategy``), as ``Server.fit`` and the workflows run them.

``legacy_recording_strategy(strategy, transcript, secure)`` wraps a legacy strategy (typically one of Flower's
legacy DP wrappers around FedAvg) without changing what it does, and writes the same release records as the
Message-API recorder (``dpfed.flower.recorder``): per round the sampled node ids and the number of available
nodes (``configure_fit``), the replying nodes and their weights (``num_examples``, normalised: legacy FedAvg
weights by them), the clip, and the noise actually added (the strategy's output minus the noiseless aggregate,
recomputed from the results before the wrapper clips them in place).

Under secure aggregation (``secure=True``: ``SecAggPlusWorkflow`` or ``SecAggWorkflow``) the server never sees a
client's update: the workflow hands the strategy every result with the same parameters, the unmasked weighted
mean. The noise is still measured (output minus that mean), but the replies' norms are not recorded: the per-client
checks that need them (each reply within the clip) cannot be made, and the record says ``clipping = "client"``.
"""

from __future__ import annotations

import numpy as np

from dpfed.flower.canary_keys import CLIP_KEY as CANARY_CLIP_KEY
from dpfed.flower.canary_keys import MARKER
from dpfed.flower.read import wrapper_kind, wrapper_of
from dpfed.flower.recorder import CLIP_KEY, _flat, clip_to, norm_slack
from dpfed.flower.records import add_release
from dpfed.flower.replay_runners import copy_results, legacy_runner
from dpfed.flower.sensitivity import RoundReplay
from dpfed.transcript import Transcript


def _arrays(parameters) -> list:
    from flwr.common import parameters_to_ndarrays

    return parameters_to_ndarrays(parameters)


def _node(proxy) -> int:
    node = getattr(proxy, "node_id", None)
    return int(node if node is not None else proxy.cid)


class _LegacyRecorder:
    """The legacy recorder's methods, mixed into a ``flwr.server.strategy.Strategy`` subclass by
    ``legacy_recording_strategy`` (where flwr is imported, on first use)."""

    def __init__(self, strategy, transcript, secure, canaries):
        super().__init__()
        self.strategy = strategy
        self.transcript = transcript if transcript is not None else Transcript()
        self.secure = secure
        self._current, self._sampled, self._population, self._sent_clip = None, {}, {}, {}
        self.round_deltas, self.partitions, self.initial = {}, {}, None
        self.canaries, self.canary_nodes = canaries, {}
        self.sensitivity = {}  # round -> the inner strategy's replayed sensitivity (dpfed.flower.sensitivity)
        self._chains = []  # earlier rounds' neighbours' state, carried forward (dpfed.flower.state_chain.Chain)

    def __repr__(self):
        return repr(self.strategy)

    def initialize_parameters(self, client_manager):
        return self.strategy.initialize_parameters(client_manager)

    def configure_fit(self, server_round, parameters, client_manager):
        self._current = _flat(_arrays(parameters))
        self.initial = self._current if self.initial is None else self.initial
        instructions = list(self.strategy.configure_fit(server_round, parameters, client_manager))
        self._sampled[server_round] = [_node(proxy) for proxy, _ in instructions]
        self._population[server_round] = int(client_manager.num_available())
        clips = [float(ins.config[CLIP_KEY]) for _, ins in instructions if CLIP_KEY in ins.config]
        self._sent_clip[server_round] = clips[0] if clips else None
        if self.canaries:
            clip = float(wrapper_of(self.strategy).clipping_norm)
            for _, ins in instructions:
                ins.config = {**ins.config, CANARY_CLIP_KEY: clip}
        return instructions

    def _note_canaries(self, results) -> None:
        for proxy, res in results:
            if MARKER in (res.metrics or {}):
                self.canary_nodes[_node(proxy)] = int(res.metrics[MARKER])

    def aggregate_fit(self, server_round, results, failures):
        if self.canaries:
            self._note_canaries(results)
        wrapper = wrapper_of(self.strategy)
        side = "client" if self.secure or wrapper_kind(wrapper).startswith("client") else "server"
        clip = float(self._sent_clip.get(server_round) or wrapper.clipping_norm)
        weights = np.array([float(res.num_examples) for _, res in results])
        weights = weights / weights.sum() if weights.size and weights.sum() > 0 else weights
        raw = [_flat(_arrays(res.parameters)) - self._current for _, res in results]  # before in-place clipping
        updates = [clip_to(u, clip) for u in raw] if side == "server" else raw
        ids = [_node(proxy) for proxy, _ in results]
        replay = RoundReplay(wrapper.strategy, "aggregate_fit", copy_results)
        with replay.watching():
            aggregated, metrics = self.strategy.aggregate_fit(server_round, results, failures)
        if aggregated is None or not updates:
            return aggregated, metrics
        self._measure_sensitivity(replay, server_round, clip, weights)
        ndarrays = _arrays(aggregated)
        released = _flat(ndarrays)
        self.round_deltas[server_round] = released - self._current
        noiseless = self._current + np.einsum("i,id->d", weights, np.stack(updates))
        optional = {"clipping": side, "noise_clip": float(wrapper.clipping_norm),
                    "tensors": [(f"array-{k}", int(np.asarray(a).size)) for k, a in enumerate(ndarrays)]}
        if not self.secure:
            optional.update(norms=[float(np.linalg.norm(u)) for u in raw],
                            norm_slack=[norm_slack(u, self._current, clip) for u in raw])
        add_release(self.transcript, server_round, self._sampled.get(server_round, []),
                    self._population.get(server_round, 0), ids, weights, clip, released - noiseless, **optional)
        return aggregated, metrics

    def _measure_sensitivity(self, replay, server_round, clip, weights) -> None:
        """The round's replay measured (``RoundReplay.measure``) into ``self.sensitivity``, with the largest weight;
        the state chains continued."""
        real = _flat(_arrays(replay.real[0][0])) if len(replay.real) == 1 and replay.real[0][0] is not None \
            else None
        self.sensitivity[server_round] = replay.measure(legacy_runner(server_round, self._current, _flat, _node),
                                                        real, self._current, clip, server_round, self._chains)
        self._chains = replay.chains
        self.sensitivity[server_round]["max_weight"] = float(weights.max()) if weights.size else None

    def configure_evaluate(self, server_round, parameters, client_manager):
        return self.strategy.configure_evaluate(server_round, parameters, client_manager)

    def aggregate_evaluate(self, server_round, results, failures):
        results = [(proxy, res) for proxy, res in results if MARKER not in (res.metrics or {})]
        return self.strategy.aggregate_evaluate(server_round, results, failures)

    def evaluate(self, server_round, parameters):
        return self.strategy.evaluate(server_round, parameters)


def legacy_recording_strategy(strategy, transcript: Transcript | None = None, secure: bool = False,
                              canaries: bool = False):
    """``strategy`` (a ``flwr.server.strategy.Strategy``) wrapped in a recorder; ``.transcript`` holds the records.
    ``canaries``: canary nodes take part (``dpfed.flower.legacy_canary``): every fit config carries the round's clip,
    canary replies (``MARKER`` in their metrics) are noted in ``canary_nodes`` and left out
    of evaluation."""
    from flwr.server.strategy import Strategy

    class LegacyRecordingStrategy(_LegacyRecorder, Strategy):
        """The recorder (``_LegacyRecorder``) as a legacy strategy."""

    return LegacyRecordingStrategy(strategy, transcript, secure, canaries)
