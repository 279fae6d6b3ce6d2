"""TS / FTS / FTS-DE / DP-FTS / DP-FTS-DE, vectorised across agents and across independent runs.

Round j = 1..T (after ``init_points`` initial queries per agent):
1. every agent uploads a posterior sample ``omega_n`` of its shared-RFF weights (history so far);
2. the server releases P broadcast blocks (``Server.aggregate``; private variants: one
   ``SubsampledGaussian.release`` per round);
   (every agent draws its upload and its local sample at the end of the previous round);
3. each agent plays local TS with probability p_j (own RFF model), else maximises the piecewise
   broadcast function ``phi(x)^T omega^{i(x)}``; it queries the point and records the value.
The transcript holds every upload (agent -> server, name ``upload``) and broadcast (server -> ``*``,
name ``broadcast``, payload (P, M)), by round.

Randomness: each run's seed is split into independent streams (objective, features, agents, server,
observations, initial design). On NumPy a seed reproduces a run bit for bit: ``run_fts_batch`` runs K
seeds at once along a leading trial axis (``dpfed.trials.TrialStreams``) and run k of a batch is the run
``run_fts`` makes with seed k (``run_fts`` is a batch of one).

Backends (``dpfed.arrays``): ``backend="torch"`` runs everything per round on PyTorch tensors of
``device`` (posterior updates and draws, the synthetic objective, feature evaluation and scoring of
candidates, histories, the server's release), written once against the array namespace, and draws the
random numbers on the device too: one generator per stream for the whole call
(``dpfed.device_random.BatchStreams``), so a round makes no host draw, no host-device copy and no
synchronisation. The same seeds in one call give the same runs within the torch backend; run k is then
not ``run_fts(seed_k)`` and not the NumPy backend's run k (other generators): same seed, same scores
holds within one backend, not across backends. Posteriors, uploads and releases stay in float64 (the
uploads are what a replaying observer reconstructs; the release noise's law is what the accountants
analyse); candidates are scored in ``SCORING_DTYPE``. Results come back as NumPy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import SubsampledGaussian
from dpfed.arrays import ArrayBackend, single_threaded
from dpfed.fts.acquisition import LinearFunctions, PiecewiseFunction, maximise
from dpfed.fts.agents import feature_posteriors
from dpfed.fts.config import FTSConfig
from dpfed.fts.features import RandomFourierFeatures
from dpfed.fts.objectives import TrialObjectives
from dpfed.fts.partition import assignment, box_partition
from dpfed.fts.results import FTSBatchResult, FTSResult
from dpfed.fts.schedules import mixing_probability
from dpfed.fts.server import Server
from dpfed.trials import split_streams

# Candidate points of the (heuristic) acquisition maximiser are scored in single precision, about ten
# times cheaper than double-precision cosines; posteriors, uploads and releases stay in double.
SCORING_DTYPE = np.float32
STREAMS = ("objective", "features", "agents", "server", "observations", "initial design")


def run_fts(config: FTSConfig, rng, **options) -> FTSResult:
    """Run the algorithm ``config.algorithm`` once; ``options`` as for ``run_fts_batch``.

    Parameters
    ----------
    mechanism : the server's subsampled Gaussian (default ``config.mechanism()``); it does all sampling,
        clipping, weighting and noising. Ignored for non-private algorithms.
    objective : a pre-built objective (reuse it across runs to keep the SVM-fit cache warm).
    canary_vector : (M,) fixed upload of one extra malicious agent occupying the last declared slot
        (slot ``num_agents``), every round; needs ``config.with_canary_slot()`` (population N + 1), which
        must also be used for the canary-free world so both worlds share weights and 1/q.
        The canary never queries the objective; its uploads appear in the transcript as ``agent<N>``.
    canary_subregion : sub-region assigned to the canary slot (default ``num_agents mod P``).
    upload_hook : optional ``f(round, uploads (slots, M), present (slots,)) -> uploads`` applied before
        the server sees the uploads (for custom malicious agents).
    """
    return run_fts_batch(config, [rng], **options).trial(0)


def run_fts_batch(
    config: FTSConfig,
    rngs: Sequence,
    *,
    mechanism: SubsampledGaussian | None = None,
    objective=None,
    canary_vector=None,
    canary_subregion: int | None = None,
    upload_hook=None,
    record_uploads: bool = True,
    backend: str = "numpy",
    device: str = "cpu",
    release_on_device: bool = False,
    on_round=None,
) -> FTSBatchResult:
    """K = ``len(rngs)`` independent runs in one vectorised computation (BLAS limited to one thread).

    On numpy run k is identical to ``run_fts(config, rngs[k], ...)`` (same seed, same options); on torch
    the call's runs draw together on the device (module docstring: same seeds, same call, same runs). A shared
    ``objective`` is used by every run (else each run draws its own from its seed); ``upload_hook`` is
    called per run. ``record_uploads=False`` keeps only the broadcasts (memory: K T slots M floats).
    ``backend``/``device``: where the arithmetic runs (module docstring); ConfigurationError if it cannot.
    ``release_on_device``: ``uploads``, ``broadcasts``, ``sampled`` and ``final_release`` stay arrays of the
    backend (torch tensors on ``device``) instead of NumPy, for scores computed where the runs ran.
    ``on_round()``, if given, is called after each round (for a progress display).
    """
    arrays = ArrayBackend(backend, device)
    with single_threaded(arrays):
        state = _BatchedRun(
            config, rngs, mechanism, objective, canary_vector, canary_subregion, upload_hook, record_uploads, arrays
        )
        for j in range(1, config.rounds + 1):
            state.round(j)
            if on_round is not None:
                on_round()
        return state.result(keep_on_device=release_on_device)


def _slot_regions(config: FTSConfig, canary_vector, canary_subregion) -> np.ndarray:
    """Public sub-region of every declared slot, after checking the canary options."""
    n, p, slots = config.num_agents, config.effective_subregions, config.declared_population
    regions = assignment(slots, p)
    if canary_vector is None:
        return regions
    if slots < n + 1:
        raise ConfigurationError("population", "a canary needs a declared slot: use config.with_canary_slot()")
    if np.shape(canary_vector) != (config.num_features,):
        raise ConfigurationError(
            "canary_vector", f"expected shape ({config.num_features},), got {np.shape(canary_vector)}"
        )
    if canary_subregion is not None:
        if not 0 <= int(canary_subregion) < p:
            raise ConfigurationError("canary_subregion", f"must be in 0..{p - 1}")
        regions[n] = int(canary_subregion)
    return regions


def _initial_points(config, rng, trials: int, arrays=None):
    """Initial design: uniform on [0, 1]^d, or in sub-region ``n mod subregions`` for agent n (DE)."""
    n, k, d = config.num_agents, config.init_points, config.dim
    u = rng.random((trials, n, k, d))
    if config.initial_design == "subregion" and config.subregions > 1:
        b = box_partition(d, config.subregions)[assignment(n, config.subregions)]  # (N, 2, d)
        if arrays is not None and not arrays.is_numpy:
            b = arrays.asarray(b)
        return b[:, None, 0] + u * (b[:, None, 1] - b[:, None, 0])
    return u


class _BatchedRun:
    """State of K runs between rounds: posteriors, histories, the server and what was released.

    Everything lives on ``arrays`` (``self.xp``): on torch the histories, the draws and (for a shared
    synthetic objective) the evaluations too, so a round makes no host-device copy and no
    synchronisation (only an ``upload_hook`` or a host objective brings values back to the host).
    """

    def __init__(self, config, rngs, mechanism, objective, canary_vector, canary_subregion, hook, record, arrays):
        c = self.config = config
        self.arrays, self.xp = arrays, arrays.xp
        self.trials = len(rngs)
        streams = arrays.run_streams(rngs, STREAMS)
        self.agents, self.server_rng, self.obs = streams["agents"], streams["server"], streams["observations"]
        host = streams
        if not arrays.is_numpy and not _shared_synthetic(objective):  # a host objective: per-run streams
            host = dict(zip(STREAMS, split_streams(rngs, len(STREAMS)), strict=True))
            self.obs = host["observations"]
        self.objective = TrialObjectives(c, objective, host["objective"], arrays)
        self.regions = _slot_regions(c, canary_vector, canary_subregion)
        self.canary = None if canary_vector is None else arrays.asarray(np.asarray(canary_vector, dtype=float))
        self.hook, self.record = hook, bool(record)
        self.boxes = arrays.asarray(box_partition(c.dim, c.effective_subregions))
        self._draw_features(streams["features"])
        self._build_server(mechanism)
        x0 = _initial_points(c, streams["initial design"], self.trials, arrays)
        self.queries = self._zeros(tuple(x0.shape[:2]) + (c.init_points + c.rounds, c.dim))
        self.observed = self._zeros(tuple(self.queries.shape[:-1]))
        self.true = self._zeros(tuple(self.queries.shape[:-1]))
        self.count = 0
        self.utility = [self._observe(x0)]
        self.released, self.sampled, self.used, self.uploads = [], [], [], []

    def _zeros(self, shape):
        if self.arrays.is_numpy:
            return np.zeros(shape)
        return self.xp.zeros(shape, dtype=self.xp.float64, device=self.arrays.device)

    def _draw_features(self, feature_streams) -> None:
        c, d = self.config, self.config.dim
        if self.arrays.is_numpy:
            pairs = [
                (
                    RandomFourierFeatures.draw(d, c.num_features, c.lengthscale, g, c.kernel_variance),
                    RandomFourierFeatures.draw(d, c.local_num_features, c.local_lengthscale, g),
                )
                for g in feature_streams.generators
            ]
            self.shared = RandomFourierFeatures.stack(p[0] for p in pairs)
            self.local = RandomFourierFeatures.stack(p[1] for p in pairs)
        else:  # the same laws, drawn for all runs at once on the device
            self.shared = _device_features(feature_streams, d, c.num_features, c.lengthscale, c.kernel_variance)
            self.local = _device_features(feature_streams, d, c.local_num_features, c.local_lengthscale, 1.0)
        self.shared, self.local = self.shared.on(self.arrays), self.local.on(self.arrays)
        batch, capacity = (self.trials, c.num_agents), c.init_points + c.rounds
        self.shared_post = feature_posteriors(batch, self.shared, c.obs_noise_var, capacity=capacity)
        self.local_post = feature_posteriors(batch, self.local, c.local_noise_var, centre=True, capacity=capacity)

    def _build_server(self, mechanism) -> None:
        c = self.config
        self.federated = c.algorithm != "ts"
        self.mechanism = (mechanism or c.mechanism()) if c.private else None
        self.server = None
        if self.federated:
            self.server = Server(
                self.regions,
                c.effective_subregions,
                self.mechanism,
                c.weight_gap,
                c.weight_hold,
                c.weight_decay,
                c.empty_sample_fallback,
                c.planted_bug,
            )
        self.present = np.arange(c.declared_population) < c.num_agents
        if self.canary is not None:
            self.present[c.num_agents] = True
        self.present_on_backend = self.arrays.asarray(self.present)
        if self.server is not None:
            self.server.preload_weights(self.present_on_backend, c.rounds)

    def _observe(self, x, draw_next: bool = True):
        """Query ``x`` (K, N, k, d) for every agent and add it to the histories; with ``draw_next``, also
        draw every agent's posterior samples for the next round (uploaded omega, local theta).
        Returns the utility (K, N)."""
        y, t = self.objective.evaluate(x, self.obs)
        upload_rng = self.agents if draw_next and self.federated else None
        self.omega = self.shared_post.add(x, y, upload_rng)
        self.theta = self.local_post.add(x, y, self.agents if draw_next else None)
        k = x.shape[2]
        self.queries[:, :, self.count : self.count + k] = x
        self.observed[:, :, self.count : self.count + k] = y
        self.true[:, :, self.count : self.count + k] = t
        self.count += k
        return self.objective.utility(self.xp.max(self.true[:, :, : self.count], axis=2))

    def round(self, j: int) -> None:
        """One BO iteration of every run: uploads and broadcast, then every agent's query."""
        blocks = self._broadcast(j) if self.federated else None
        x, go_local = self._choose(j, blocks)
        self.utility.append(self._observe(x[:, :, None, :], draw_next=j < self.config.rounds))
        self.used.append(~go_local if blocks is not None else self.xp.zeros_like(go_local))

    def _broadcast(self, j: int):
        c, n, xp = self.config, self.config.num_agents, self.xp
        shape = (self.trials, c.declared_population, c.num_features)
        uploads = xp.zeros(shape, dtype=xp.float64, device=self.arrays.device)
        uploads[:, :n] = self.omega
        if self.canary is not None:
            uploads[:, n] = self.canary
        if self.hook is not None:
            hooked = [self.hook(j, u.copy(), self.present.copy()) for u in self.arrays.to_numpy(uploads)]
            uploads = self.arrays.asarray(np.stack([np.asarray(u, dtype=float) for u in hooked]))
        blocks, mask = self.server.aggregate(uploads, self.present_on_backend, j - 1, self.server_rng)
        self.released.append(blocks)
        self.sampled.append(mask)
        self._last_uploads = uploads
        if self.record:
            self.uploads.append(uploads)
        return blocks

    def _choose(self, j: int, blocks):
        """Each agent's query (K, N, d): local TS w.p. p_j, else the broadcast's maximiser; no repeats."""
        c, d, xp = self.config, self.config.dim, self.xp
        acq = dict(candidates=c.candidates, refine_steps=c.refine_steps, refine_samples=c.refine_samples)
        explore = self.federated or c.explore_uniform
        go_local = self.agents.random((self.trials, c.num_agents)) < mixing_probability(
            j, c.mixing if explore else "local"
        )
        x, _ = maximise(
            LinearFunctions(self.local, self.theta, self.local_post.offsets, SCORING_DTYPE), d, self.agents, **acq
        )
        local = go_local[..., None]
        if blocks is not None:
            xg, _ = maximise(PiecewiseFunction(self.shared, blocks, self.boxes, SCORING_DTYPE), d, self.agents, **acq)
            x = xp.where(local, x, xg)
        elif c.explore_uniform:  # ablation: a random query instead of the broadcast
            x = xp.where(local, x, self.agents.random((self.trials, c.num_agents, d)))
        history = self.queries[:, :, : self.count]
        repeat = xp.min(xp.max(xp.abs(history - x[:, :, None, :]), axis=3), axis=2) < 1e-12
        x = xp.where(repeat[..., None], self.agents.random((self.trials, c.num_agents, c.dim)), x)
        return x, go_local

    def result(self, keep_on_device: bool = False) -> FTSBatchResult:
        """The batch's result; ``keep_on_device`` leaves the released arrays on the backend's device."""
        final = None
        if self.server is not None:
            final = self.server.final_release(self._last_uploads, self.present_on_backend, self.config.rounds - 1)
        private, host, xp = self.mechanism is not None, self.arrays.to_numpy, self.xp
        kept = (lambda value: value) if keep_on_device else host
        return FTSBatchResult(
            config=self.config,
            queries=host(self.queries),
            observed=host(self.observed),
            true_values=host(self.true),
            utility_per_agent=host(xp.stack(self.utility, axis=2)),
            present=self.present,
            uploads=kept(xp.stack(self.uploads, axis=1)) if self.record and self.uploads else None,
            broadcasts=kept(xp.stack(self.released, axis=1)) if self.released else None,
            sampled=kept(xp.stack(self.sampled, axis=1)) if private else None,
            used_broadcast=host(xp.stack(self.used, axis=1)),
            releases=self.server.releases if self.server else 0,
            mechanism=self.mechanism,
            block_noise_std=np.stack([self.server.block_noise_std(t) for t in range(self.config.rounds)])
            if private
            else None,
            final_release=kept(final),
            utility_name=self.objective.utility_name,
        )


def _shared_synthetic(objective) -> bool:
    from dpfed.objectives.synthetic import SyntheticGP

    return isinstance(objective, SyntheticGP)


def _device_features(streams, dim: int, num_features: int, lengthscale: float, variance: float):
    """One ``RandomFourierFeatures`` draw per run (stacked), drawn on the device streams' device."""
    runs = len(streams)
    frequencies = streams.standard_normal((runs, num_features, dim)) / lengthscale
    phases = streams.uniform(0.0, 2.0 * np.pi, size=(runs, num_features))
    return RandomFourierFeatures(frequencies, phases, float(variance), True)


run_fts_de = run_fts
