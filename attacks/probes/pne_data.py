"""The data the DP-Fed-PNE replay observer holds about its runs (``attacks.probes.pne_replay``).

Per run: the partition seed, the objective and observation streams (the first three children of the
run's seed sequence, as ``dpfed.pne.seeding`` documents; never the privacy one), the clients' local
objectives drawn from the objective stream, and the raw rewards drawn from the observation stream.
``runs_data`` builds them for many runs at once: the local objectives as one ``LocalObjectivesBatch``
and, where asked, one phase's rewards of every run in one draw, taken "ahead" of that run's replay.
Every number is the one the per-run environment makes (same streams, same draws in the same order).
"""

from __future__ import annotations

import numpy as np


def data_streams(entropy: int):
    """The run's (partition seed, objective stream, observation stream)."""
    return data_streams_batch([entropy])[0]


def data_streams_batch(entropies) -> list:
    """``[data_streams(e) for e in entropies]``, the seed sequences' children derived together."""
    from dpfed.pne.spawn import as_uint64, child_words, generator

    states = as_uint64(child_words(entropies, 4, 8))  # the fourth child (privacy) is never built
    return [(int(s[0, 0] >> np.uint64(1)), generator(s[1]), generator(s[2])) for s in states]


class RunData:
    """One run's data: ``partition_seed``, row ``row`` of the local objectives ``local``, the observation
    stream, and a phase's rewards drawn ahead (``ahead``: (keys, pulls, rewards) or None)."""

    def __init__(self, partition_seed: int, local, row: int, observation):
        self.partition_seed, self.local, self.row, self.observation = partition_seed, local, row, observation
        self.ahead = None

    def rewards(self, nodes, pulls: int, noise) -> np.ndarray:
        """The raw rewards (clients, nodes, pulls) of the run's next uploaded phase: local values at the
        centres plus the next observation noise draw (the one drawn ahead if it was this phase's)."""
        if self.ahead is not None:
            keys, ahead_pulls, raw = self.ahead
            self.ahead = None
            if (keys, ahead_pulls) != (nodes.keys(), pulls):
                raise ValueError("the rewards drawn ahead were for another phase")
            return raw
        values = self.local.values([self.row], nodes.centre[None])[0]
        return values[..., None] + noise.sample(self.observation, (values.shape[0], len(nodes), pulls))


def runs_data(streams, objective, clients: int, heterogeneity, kind, ahead=None, noise=None) -> list[RunData]:
    """``RunData`` of runs from their ``data_streams``; ``ahead`` = (indices, nodes per run, pulls): draw
    that phase's rewards for those runs now (the phase must be each run's next uploaded one)."""
    from dpfed.pne.local_batch import LocalObjectivesBatch
    from dpfed.trials import TrialStreams

    local = LocalObjectivesBatch(objective, clients, heterogeneity, kind, [s[1] for s in streams])
    data = [RunData(s[0], local, row, s[2]) for row, s in enumerate(streams)]
    if ahead is not None and len(ahead[0]):
        rows, nodes, pulls = ahead
        values = local.values(rows, np.stack([n.centre for n in nodes]))  # (G, M, L)
        observation = TrialStreams([data[k].observation for k in rows])
        raw = values[..., None] + noise.sample(observation, values.shape + (pulls,))
        for k, run_nodes, run_raw in zip(rows, nodes, raw, strict=True):
            data[k].ahead = (run_nodes.keys(), pulls, run_raw)
    return data
