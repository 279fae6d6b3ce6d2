"""DP-FTS-DE end to end: the real algorithm (``dpfed.fts.run_fts_batch``, a batch of full runs at once)
with a malicious canary agent among the real agents, broadcast view.

Both worlds declare one extra slot for the canary (same weights and 1/q); in world 1 the canary uploads
``canary_norm * (S / sqrt(P)) e_1`` every round, in world 0 its slot stays empty. The other agents'
data (the objective) are fixed: one objective drawn from ``data_seed`` is shared by every trial and
both worlds, as neighbouring datasets must be. The probe's defaults make a run cheap without touching
what is private (N, q, z, S, P, T and the weights are the preset's): 20 random features instead of
100, a 64-basis synthetic objective, 50 acquisition candidates without refinement. Scores (all valid
test statistics for any implementation; each is strongest against a different failure):

* ``replay`` (default): the replaying adversary of ``attacks.probes.fts_replay`` (whose docstring
  states the threat model: it knows every other agent's data, seeds and inclusion bits, not the
  canary's bit nor the noise). It subtracts the other agents' clipped, weighted uploads, reconstructed
  from the algorithm's description, from every broadcast and scores the residual with the exact
  log-likelihood ratio of the server-mechanism probe, summed over rounds. With ``canary_norm > 1`` the
  canary sits beyond the clip bound; the score still assumes the clipped canary (a correct server's),
  so a server that skips clipping moves the residual further than the score expects;
* ``canary``: the crafted-canary log-likelihood ratio of the server-mechanism probe computed
  from the broadcasts, treating the real agents' (clipped, unknown) contributions as part of the noise;
* ``sampled-weight``: the weight ``W`` sampled in the canary's sub-region, estimated per round from the
  canary block's norm (``W ~ q sigma sqrt(M) / |b|``), turned into a count ``c = W / w_canary`` of
  sampled members and scored by the binomial log-likelihood ratio ``log((1 - q) m / (m - c))``,
  ``m = 1 / w_canary``, summed over rounds. A correct server's broadcast scale does not depend on the
  sample (the estimate is then constant, c ~ q m); one that renormalises over the sampled agents
  (flaw F2) reveals how many were sampled, the canary among them;
* ``final-release``: the canary coordinate of anything the server publishes after the last round
  (the last broadcast when it publishes nothing more).

``planted_bug`` runs the server with one of its deliberate bugs (``dpfed.fts.server.PLANTED_BUGS``);
the claim stays the correct mechanism's epsilon, so a bug that leaks is a VIOLATION.

Backends: on ``torch`` the runs compute and draw on the probe's device (``run_fts_batch(backend=...)``),
a batch of trials in one call: the same seed and batch size give the same scores within the torch
backend (on one device type), not the NumPy backend's (another generator); the scores are computed with
NumPy from the returned broadcasts. On a CUDA device the batch size follows its free memory
(``device_bytes_per_trial``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.probes.base import Probe, check_world, log_mixture_ratio
from attacks.probes.fts import effective_noise_multiplier

SCORES = ("replay", "canary", "sampled-weight", "final-release")
REPLAY_THREAT_MODEL = (
    "broadcast view with replay: the adversary sees every broadcast, knows (or chose) every other agent's "
    "data and seeds and whether each other agent was sampled in each round, but not the canary's own "
    "sampling nor the server's noise; it recomputes the other agents' uploads and subtracts their clipped, "
    "weighted sum from each broadcast; unit: one agent (all of its uploads)"
)
RUNS_PER_CALL = 25  # runs vectorised together on a cpu (peak memory ~ 0.5 MB per run, dpfed.fts.memory)
DEVICE_MEMORY_SHARE = 0.5  # share of a GPU's free memory one call may fill (``dpfed.fts.memory``)


@dataclass
class FtsEndToEndProbe(Probe):
    """Crafted canary in full DP-FTS-DE runs; overrides are applied to the preset configuration."""

    preset: str = "synthetic"
    rounds: int = 60
    rate: float | None = None
    noise_multiplier: float | None = None
    candidates: int = 50
    refine_steps: int = 0
    num_features: int = 20
    objective_basis: int = 64
    canary_norm: float = 1.0
    score: str = "replay"
    planted_bug: str = "none"
    empty_sample_fallback: str = "noise"
    data_seed: int = 0

    name = "fts-end-to-end"
    threat_model = "broadcast view"
    description = (
        "DP-FTS-DE end to end: the real algorithm with a malicious canary agent among the real "
        "agents; score on the broadcasts"
    )
    batch_size = 100
    backends = ("numpy", "torch")

    def __post_init__(self):
        from dpfed.fts.config import FTSConfig

        if self.score not in SCORES:
            raise ConfigurationError("score", f"choose one of {', '.join(SCORES)}, got {self.score!r}")
        require_number("canary_norm", self.canary_norm, low=0)
        self.threat_model = REPLAY_THREAT_MODEL if self.score == "replay" else "broadcast view"
        changes = {
            "rounds": int(require_number("rounds", self.rounds, low=1, integer=True)),
            "candidates": self.candidates,
            "refine_steps": self.refine_steps,
            "num_features": self.num_features,
            "local_num_features": self.num_features,
            "planted_bug": self.planted_bug,
            "empty_sample_fallback": self.empty_sample_fallback,
        }
        if self.rate is not None:
            changes["rate"] = self.rate
        if self.noise_multiplier is not None:
            changes["noise_multiplier"] = self.noise_multiplier
        self._config = FTSConfig.from_preset(self.preset, **changes).with_canary_slot()
        if not self._config.private:
            raise ConfigurationError("preset", f"{self.preset!r} runs a non-private algorithm")
        self.default_delta = self._config.dp_delta
        self._weights = self._schedule()
        self._objective = None
        self._observer = self._make_observer() if self.score == "replay" else None

    def _make_observer(self):
        """The replaying adversary (``attacks.probes.fts_replay``), built from the configuration's public
        description only (weights, clip, rate, noise), never from the server's code."""
        from accounting.mechanisms import Sampling
        from attacks.probes.fts_replay import FtsObserver, described_weights

        c = self._config
        if Sampling.parse(c.sampling) is not Sampling.POISSON:
            raise ConfigurationError(
                "score", "replay needs Poisson sampling (the others' inclusion bits then say nothing of the canary's)"
            )
        weights = described_weights(
            c.rounds, c.declared_population, c.effective_subregions, c.weight_gap, c.weight_hold, c.weight_decay
        )
        return FtsObserver(c.rate, c.noise_multiplier, c.clip, weights, c.num_agents, self._canary_vector())

    def _canary_vector(self) -> np.ndarray:
        """The canary's upload: ``canary_norm`` times the per-vector clip along the first feature."""
        vector = np.zeros(self._config.num_features)
        vector[0] = self.canary_norm * self._config.per_vector_clip
        return vector

    def _schedule(self) -> np.ndarray:
        from dpfed.fts.partition import assignment
        from dpfed.fts.server import Server

        c = self._config
        p = c.effective_subregions
        server = Server(
            assignment(c.declared_population, p), p, c.mechanism(), c.weight_gap, c.weight_hold, c.weight_decay
        )
        return np.stack([server.weights(t) for t in range(c.rounds)])

    def mechanism(self):
        """Per-round subsampled Gaussians at their effective noise multipliers (as the server probe)."""
        from accounting.mechanisms import Composition, SubsampledGaussian

        c = self._config
        z = np.round([effective_noise_multiplier(c.noise_multiplier, w) for w in self._weights], 12)
        values, counts = np.unique(z, return_counts=True)
        return Composition(
            tuple((SubsampledGaussian(c.rate, float(v), 1.0), int(k)) for v, k in zip(values, counts, strict=True))
        )

    def true_epsilon(self, delta: float) -> float | None:
        from attacks.probes.fts import _pld_epsilon

        return _pld_epsilon(self.mechanism(), float(delta))

    def objective(self):
        """The fixed data of the real agents (built once per process, shared by all trials)."""
        if self._objective is None:
            c = self._config
            if c.objective != "synthetic":
                from dpfed.objectives import make_objective

                self._objective = make_objective(c, np.random.default_rng(self.data_seed))
            else:
                from dpfed.objectives.synthetic import SyntheticGP

                basis = int(require_number("objective_basis", self.objective_basis, low=1, integer=True))
                self._objective = SyntheticGP(
                    c.num_agents,
                    c.dim,
                    np.random.default_rng(self.data_seed),
                    lengthscale=c.gp_lengthscale,
                    heterogeneity=c.heterogeneity,
                    noise_var=c.objective_noise_var,
                    num_basis=basis,
                )
        return self._objective

    def __getstate__(self):  # ship the probe without its (rebuildable) objective
        state = dict(self.__dict__)
        state["_objective"] = None
        return state

    def scores(self, world, trials, rng):
        from attacks.backend import host_generator
        from dpfed.fts.algorithm import run_fts_batch

        c = self._config
        canary = self._canary_vector() if check_world(world) else None
        seeds = host_generator(rng).spawn(int(trials))
        backend, device = getattr(self, "array_backend", "numpy"), getattr(self, "device", "cpu")
        out, step = [], self.runs_per_call(len(seeds))
        for start in range(0, len(seeds), step):
            batch = run_fts_batch(
                c,
                seeds[start : start + step],
                objective=self.objective(),
                canary_vector=canary,
                record_uploads=self._records_uploads,
                backend=backend,
                device=device,
                release_on_device=self._records_uploads,  # the replay runs where the runs ran
            )
            out.append(self._score(batch))
        return np.concatenate(out)

    def runs_per_call(self, trials: int | None = None) -> int:
        """Runs vectorised in one call: ``RUNS_PER_CALL`` on numpy; on torch the whole batch of ``trials``
        (its runs draw from one device generator, ``dpfed.device_random``, so a batch's scores depend on its
        seed and size only), on a CUDA device at most what fits in ``DEVICE_MEMORY_SHARE`` of its free
        memory (``dpfed.fts.memory.bytes_per_run`` per run)."""
        from attacks.backend import free_device_memory
        from dpfed.fts.memory import runs_within

        if getattr(self, "array_backend", "numpy") != "torch":
            return RUNS_PER_CALL
        whole = RUNS_PER_CALL if trials is None else max(1, int(trials))
        free = free_device_memory(getattr(self, "device", "cpu"))
        if free is None:
            return whole
        return min(whole, runs_within(free, self._config, DEVICE_MEMORY_SHARE, record_uploads=self._records_uploads))

    @property
    def _records_uploads(self) -> bool:
        """The replay score reads the other agents' uploads (``run_fts_batch(record_uploads=True)``)."""
        return self.score == "replay"

    def device_bytes_per_trial(self) -> int:
        """A run's working memory on the device (``dpfed.fts.memory.bytes_per_run``)."""
        from dpfed.fts.memory import bytes_per_run

        return bytes_per_run(self._config, self._records_uploads)

    def _score(self, batch) -> np.ndarray:
        """Scores (K,) of a batch of runs from its broadcasts (K, T, P, M)."""
        c = self._config
        slot, clip, q = c.num_agents, c.per_vector_clip, c.rate
        if self.score == "replay":
            return self._observer.scores(batch.broadcasts, batch.uploads, batch.sampled, batch.final_release)
        sigma = batch.block_noise_std  # (T, P)
        if self.score == "sampled-weight":
            return self._sampled_weight_score(batch.broadcasts, sigma)
        if self.score == "final-release":
            final = batch.final_release if batch.final_release is not None else batch.broadcasts[:, -1]
            region = int(np.argmax(self._weights[-1, :, slot]))
            return final[:, region, 0]
        y = batch.broadcasts[..., 0] / sigma  # (K, T, P)
        mu = self._weights[:, :, slot] * clip / q / sigma
        return log_mixture_ratio((y * mu).sum(axis=2), (mu * mu).sum(axis=1), q).sum(axis=1)

    def _sampled_weight_score(self, broadcasts, sigma) -> np.ndarray:
        c = self._config
        region = int(np.argmax(self._weights[0, :, c.num_agents]))
        weight = self._weights[:, region, c.num_agents]  # (T,) the canary's weight in its block
        norms = np.linalg.norm(broadcasts[:, :, region], axis=-1)  # (K, T)
        sampled = c.rate * sigma[:, region] * np.sqrt(c.num_features) / np.maximum(norms, 1e-300)
        members = 1.0 / weight
        count = np.clip(sampled / weight, 0.0, members - 0.5)
        return np.log((1.0 - c.rate) * members / (members - count)).sum(axis=1)
