"""One run of TS / FTS / FTS-DE / DP-FTS / DP-FTS-DE, vectorised across agents.

Round j = 1..T (after ``init_points`` initial queries per agent):
1. every agent uploads a posterior sample ``omega_n`` of its shared-RFF weights (history so far);
2. the server releases P broadcast blocks (``Server.aggregate``; private variants: one
   ``SubsampledGaussian.release`` per round);
3. each agent plays local TS with probability p_j (own RFF model), else maximises the piecewise
   broadcast function ``phi(x)^T omega^{i(x)}``; it queries the point and records the value.
The transcript holds every upload (agent -> server, name ``upload``) and broadcast (server -> ``*``,
name ``broadcast``, payload (P, M)), by round. Randomness: the seed is split into independent streams
(objective, features, agents, server, observations), so a seed reproduces a run bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, SubsampledGaussian, as_generator
from dpfed.fts.acquisition import LinearFunctions, PiecewiseFunction, maximise
from dpfed.fts.agents import FeaturePosteriors
from dpfed.fts.config import FTSConfig
from dpfed.fts.features import RandomFourierFeatures
from dpfed.fts.partition import assignment, box_partition
from dpfed.fts.schedules import mixing_probability
from dpfed.fts.server import Server
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name


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


def _initial_points(config, rng):
    """Initial design: uniform on [0, 1]^d, or in sub-region ``n mod subregions`` for agent n (DE)."""
    n, k, d = config.num_agents, config.init_points, config.dim
    u = rng.random((n, k, d))
    if config.initial_design == "subregion" and config.subregions > 1:
        b = box_partition(d, config.subregions)[assignment(n, config.subregions)]  # (N, 2, d)
        return b[:, None, 0] + u * (b[:, None, 1] - b[:, None, 0])
    return u


def run_fts(
    config: FTSConfig,
    rng,
    *,
    mechanism: SubsampledGaussian | None = None,
    objective=None,
    canary_vector=None,
    canary_subregion: int | None = None,
    upload_hook=None,
) -> FTSResult:
    """Run the algorithm ``config.algorithm`` once (BLAS limited to one thread: the matrices are small
    and multi-threaded BLAS only adds contention on them).

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
    with _single_threaded_blas():
        return _run(config, rng, mechanism, objective, canary_vector, canary_subregion, upload_hook)


def _single_threaded_blas():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _run(config, rng, mechanism, objective, canary_vector, canary_subregion, upload_hook) -> FTSResult:
    root = as_generator(rng)
    r_obj, r_feat, r_agent, r_server, r_obs, r_init = root.spawn(6)
    c = config
    if objective is None:
        from dpfed.objectives import make_objective

        objective = make_objective(c, r_obj)
    n, d, p = c.num_agents, c.dim, c.effective_subregions
    boxes = box_partition(d, p)
    slots = c.declared_population
    slot_regions = assignment(slots, p)
    if canary_vector is not None:
        canary_vector = np.asarray(canary_vector, dtype=float)
        if slots < n + 1:
            raise ConfigurationError(
                "population", "a canary needs a declared slot: use config.with_canary_slot()"
            )
        if canary_vector.shape != (c.num_features,):
            raise ConfigurationError(
                "canary_vector", f"expected shape ({c.num_features},), got {canary_vector.shape}"
            )
        if canary_subregion is not None:
            if not 0 <= int(canary_subregion) < p:
                raise ConfigurationError("canary_subregion", f"must be in 0..{p - 1}")
            slot_regions[n] = int(canary_subregion)
    shared = RandomFourierFeatures.draw(d, c.num_features, c.lengthscale, r_feat, c.kernel_variance)
    local = RandomFourierFeatures.draw(d, c.local_num_features, c.local_lengthscale, r_feat)
    shared_post = FeaturePosteriors(n, shared, c.obs_noise_var)
    local_post = FeaturePosteriors(n, local, c.local_noise_var, centre=True)

    x0 = _initial_points(c, r_init)
    y0, t0 = objective.evaluate(x0, r_obs)
    shared_post.add(x0, y0)
    local_post.add(x0, y0)
    queries, observed, true = [x0], [y0], [t0]
    best = t0.max(axis=1)
    utility = [objective.utility(best)]

    federated = c.algorithm != "ts"
    mech = (mechanism or c.mechanism()) if c.private else None
    server = (
        Server(slot_regions, p, mech, c.weight_gap, c.weight_hold, c.weight_decay, c.empty_sample_fallback)
        if federated
        else None
    )
    transcript = Transcript()
    sampled, used, noise_std = [], [], []
    present = np.arange(slots) < n
    if canary_vector is not None:
        present[n] = True
    acq = dict(candidates=c.candidates, refine_steps=c.refine_steps, refine_samples=c.refine_samples)
    for j in range(1, c.rounds + 1):
        blocks = None
        if federated:
            omega = shared_post.sample(r_agent)
            uploads = np.zeros((slots, c.num_features))
            uploads[:n] = omega
            if canary_vector is not None:
                uploads[n] = canary_vector
            if upload_hook is not None:
                uploads = np.asarray(upload_hook(j, uploads.copy(), present.copy()), dtype=float)
            for s in np.flatnonzero(present):
                transcript.add(j, agent_name(s), SERVER, "upload", uploads[s].copy())
            blocks, mask = server.aggregate(uploads, present, j - 1, r_server)
            transcript.add(j, SERVER, BROADCAST, "broadcast", blocks.copy())
            sampled.append(mask)
            noise_std.append(server.block_noise_std(j - 1))
        explore = federated or c.explore_uniform
        go_local = r_agent.random(n) < mixing_probability(j, c.mixing if explore else "local")
        theta = local_post.sample(r_agent)
        x, _ = maximise(LinearFunctions(local, theta, local_post.offsets), d, r_agent, **acq)
        if blocks is not None and not go_local.all():
            xg, _ = maximise(PiecewiseFunction(shared, blocks, boxes), d, r_agent, **acq)
            x = np.where(go_local[:, None], x, xg)
        elif not federated and c.explore_uniform:  # ablation: random query instead of the broadcast
            x = np.where(go_local[:, None], x, r_agent.random((n, d)))
        history = np.concatenate(queries, axis=1)
        repeat = np.min(np.abs(history - x[:, None, :]).max(axis=2), axis=1) < 1e-12
        x = np.where(repeat[:, None], r_agent.random((n, d)), x)
        y, t = objective.evaluate(x[:, None, :], r_obs)
        shared_post.add(x, y[:, 0])
        local_post.add(x, y[:, 0])
        queries.append(x[:, None, :])
        observed.append(y)
        true.append(t)
        best = np.maximum(best, t[:, 0])
        utility.append(objective.utility(best))
        used.append(~go_local if blocks is not None else np.zeros(n, bool))
    return FTSResult(
        config=c,
        queries=np.concatenate(queries, axis=1),
        observed=np.concatenate(observed, axis=1),
        true_values=np.concatenate(true, axis=1),
        utility_per_agent=np.stack(utility, axis=1),
        transcript=transcript,
        sampled=np.array(sampled) if mech is not None else None,
        used_broadcast=np.array(used),
        releases=server.releases if server else 0,
        mechanism=mech,
        block_noise_std=np.array(noise_std) if mech is not None else None,
        utility_name=getattr(objective, "utility_name", "utility"),
    )


run_fts_de = run_fts
