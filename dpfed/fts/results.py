"""Results of FTS-family runs: one run (``FTSResult``, with its transcript) and a batch of independent
runs (``FTSBatchResult``, arrays with a leading trial axis; ``trial(k)`` gives run k as an ``FTSResult``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.mechanisms import Composition, SubsampledGaussian
from dpfed.fts.config import FTSConfig
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name

FINAL_AGGREGATE = "final-aggregate"


@dataclass
class FTSResult:
    """Everything a run produced. ``utility`` is the agents' mean utility after init (index 0) and after
    each of the T iterations (lower is better: simple regret or 1 - AUC)."""

    config: FTSConfig
    queries: np.ndarray  # (N, init + T, d)
    observed: np.ndarray  # (N, init + T) noisy values
    true_values: np.ndarray  # (N, init + T)
    utility_per_agent: np.ndarray  # (N, T + 1)
    transcript: Transcript
    sampled: np.ndarray | None  # (T, slots) bool: who the mechanism sampled (present agents only)
    used_broadcast: np.ndarray  # (T, N) bool: agent followed the broadcast in that iteration
    releases: int
    mechanism: SubsampledGaussian | None
    block_noise_std: np.ndarray | None  # (T, P) configured noise std of each broadcast block
    utility_name: str = "utility"
    extra: dict = field(default_factory=dict)

    @property
    def utility(self) -> np.ndarray:
        return self.utility_per_agent.mean(axis=0)

    def composition(self) -> Composition | None:
        """What was released: the subsampled Gaussian, once per broadcast actually released (None if none)."""
        if self.mechanism is None or self.releases == 0:
            return None
        return Composition.of(self.mechanism, self.releases)

    def to_dict(self) -> dict:
        return {
            "config": self.config.to_dict(),
            "utility_name": self.utility_name,
            "utility": self.utility.tolist(),
            "releases": self.releases,
            "queries": self.queries.tolist(),
            "observed": self.observed.tolist(),
            "transcript": self.transcript.to_dict(),
        }


@dataclass
class FTSBatchResult:
    """K independent runs of one configuration; every array has the trial axis first.

    ``broadcasts`` (K, T, P, M) is what every agent saw (None for ``ts``); ``uploads`` (K, T, slots, M)
    only when recorded; ``final_release`` (K, P, M) only under the planted bug that publishes one.
    """

    config: FTSConfig
    queries: np.ndarray  # (K, N, init + T, d)
    observed: np.ndarray  # (K, N, init + T)
    true_values: np.ndarray  # (K, N, init + T)
    utility_per_agent: np.ndarray  # (K, N, T + 1)
    present: np.ndarray  # (slots,) bool: slots that uploaded
    uploads: np.ndarray | None
    broadcasts: np.ndarray | None
    sampled: np.ndarray | None  # (K, T, slots)
    used_broadcast: np.ndarray  # (K, T, N)
    releases: int
    mechanism: SubsampledGaussian | None
    block_noise_std: np.ndarray | None  # (T, P)
    final_release: np.ndarray | None = None
    utility_name: str = "utility"

    @property
    def trials(self) -> int:
        return int(self.queries.shape[0])

    def trial(self, k: int) -> FTSResult:
        """Run ``k`` as a one-run result, with its transcript (needs recorded uploads if federated)."""
        return FTSResult(
            config=self.config,
            queries=self.queries[k],
            observed=self.observed[k],
            true_values=self.true_values[k],
            utility_per_agent=self.utility_per_agent[k],
            transcript=self.transcript(k),
            sampled=None if self.sampled is None else self.sampled[k],
            used_broadcast=self.used_broadcast[k],
            releases=self.releases,
            mechanism=self.mechanism,
            block_noise_std=self.block_noise_std,
            utility_name=self.utility_name,
        )

    def transcript(self, k: int) -> Transcript:
        """Every message of run ``k``: uploads (agent -> server) and broadcasts (server -> ``*``) by round."""
        transcript = Transcript()
        if self.broadcasts is None:
            return transcript
        if self.uploads is None:
            raise ValueError("this batch did not record the uploads (record_uploads=False)")
        senders = np.flatnonzero(self.present)
        for j in range(self.broadcasts.shape[1]):
            for s in senders:
                transcript.add(j + 1, agent_name(s), SERVER, "upload", self.uploads[k, j, s])
            transcript.add(j + 1, SERVER, BROADCAST, "broadcast", self.broadcasts[k, j])
        if self.final_release is not None:
            last = self.broadcasts.shape[1]
            transcript.add(last, SERVER, BROADCAST, FINAL_AGGREGATE, self.final_release[k])
        return transcript
