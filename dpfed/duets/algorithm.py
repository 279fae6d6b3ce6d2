"""One run of DUETS (seed 001, notes A.3-A.4) or DP-DUETS (ours, notes A.9), vectorised across agents.

Epoch j: every agent draws T_j points uniformly in the active set X_j with its own coin (a per-agent
random stream the server also holds), queries them, and - if the epoch ends before the horizon - the
protocol communicates (round j of the transcript):

1. server -> *: ``inducing_set`` S_j (|S_j| points of R^d). The server regenerates every agent's points
   from the coins, computes the exact posterior variance (eq. 4) over X_j, and keeps each point of the
   union D_j with probability p_j = min(1, p0 sigma_{j,max}^2) (server stream). Duplicate candidates
   are kept once (the candidate set is a discretisation; a continuous domain has no duplicates).
2. agent n -> server: ``statistic`` v_j^(n) = Z_n^T Y_n (|S_j| reals; DP: rewards clipped first).
3. server -> *: ``v_bar`` = (lam I + Z^T Z)^{-1} sum_n v_j^(n) with Z over the union D_j (the seed's
   Alg. 2 line 10 writes D_j^(n): a typo), or the DP release in its place, and ``sigma_max``.
4. everyone eliminates (eq. 9, the same deterministic rule everywhere, so it is computed once).

Repaired seed typos (A.6 item 4): agents sample X_j (not X_{j-1}); the stop rule is t >= T. The rule
``elimination = "code"`` is the public code's UCB >= max LCB; ``"off"`` never eliminates (pure uniform
exploration: an audit configuration under which the trajectory does not depend on the released noise).
Randomness: the seed spawns independent streams for the coins (one per agent), the observation noise
(one per agent), the server's Bernoulli draws and the DP noise, so audits can replay everything but the
noise (``mechanism_rng``).

Batched releases (``mechanism_trials = K``, for audits): one run whose every DP release is drawn K times
independently, through the same code (``release_sum`` on the statistics with a leading trial axis); the
transcript's ``v_bar`` payloads then have shape (K, r). Everything else is shared, so this is K runs of
the algorithm exactly when the trajectory does not depend on the noise: the elimination masks of the K
trials must agree (always so with ``elimination = "off"``), else ``ConfigurationError``.
"""

from __future__ import annotations

import functools

import numpy as np

from accounting.errors import ConfigurationError, require_number
from dpfed.duets.config import DuetsConfig
from dpfed.duets.objectives import DuetsObjective, make_objective
from dpfed.duets.private import epoch_mechanism, noise_widening, release_sum, released_noise_std
from dpfed.duets.results import DuetsRun, EpochLog, RewardOverride
from dpfed.duets.schedule import (
    completed_epochs,
    delta_prime,
    epoch_lengths,
    p0_value,
    theory_beta,
)
from dpfed.duets.surrogate import NystromFeatures, SparseModel, exact_posterior_variance
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name


@functools.lru_cache(maxsize=8)
def cached_objective(name: str, candidates: int, seed: int, dim: int, lengthscale) -> DuetsObjective:
    """The objective of a configuration (built once per process: candidates and kernel are public)."""
    return make_objective(name, candidates, seed, dim, lengthscale)


def objective_of(config: DuetsConfig) -> DuetsObjective:
    return cached_objective(config.objective, config.candidates, config.objective_seed, config.dim, config.lengthscale)


def constants(config: DuetsConfig) -> dict:
    """delta', p0 and beta of a configuration (the seed's forms as configured)."""
    dp = delta_prime(config.delta, config.num_agents, config.horizon, config.candidates, config.delta_prime_form)
    p0 = p0_value(config.p0, config.delta, config.num_agents, config.horizon, dp)
    noise_proxy = config.noise_std if config.noise_proxy is None else config.noise_proxy
    beta = (
        theory_beta(config.rkhs_bound, noise_proxy, config.lam, dp) if config.beta == "theory" else float(config.beta)
    )
    return {
        "delta_prime": dp,
        "p0": p0,
        "beta": beta,
        "completed_epochs": completed_epochs(config.horizon, config.first_epoch),
    }


def streams(seed, agents: int) -> dict:
    """Independent generators: per-agent coins and observation noise, server, DP mechanism."""
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    coins, observations, server, mechanism = root.spawn(4)
    return {
        "coins": [np.random.default_rng(s) for s in coins.spawn(agents)],
        "observations": [np.random.default_rng(s) for s in observations.spawn(agents)],
        "server": np.random.default_rng(server),
        "mechanism": np.random.default_rng(mechanism),
    }


def draw_points(coins, active: np.ndarray, steps: int) -> np.ndarray:
    """(N, steps) candidate indices, each agent uniform on the active set with its own coin."""
    return np.stack([active[coin.integers(0, active.size, size=steps)] for coin in coins])


def observe(objective, points, noise_std, observation_streams) -> np.ndarray:
    noise = np.stack([rng.standard_normal(points.shape[1]) for rng in observation_streams])
    return objective.values[points] + noise_std * noise


def select_inducing(objective, config, points, active, p0, rng):
    """sigma_{j,max} over X_j given D_j (eq. 4), p_j and the Bernoulli inducing set S_j (unique)."""
    data = points.reshape(-1)
    variance = exact_posterior_variance(objective.kernel, data, active, config.lam)
    sigma_max = float(np.sqrt(variance.max()))
    p = min(1.0, p0 * sigma_max**2)
    keep = rng.random(data.size) < p
    return sigma_max, p, np.unique(data[keep])


def eliminate(config, model, mean, scaled_variance, beta, sigma_max, widening) -> tuple[np.ndarray, float]:
    """Boolean keep-mask over the active set and the margin used (eq. 9, the code's rule, or off).
    ``mean`` (..., M): a leading trial axis gives one mask per trial."""
    if config.elimination == "off":
        return np.ones(mean.shape, dtype=bool), float("inf")
    if config.elimination == "paper":
        margin = 2.0 * beta * sigma_max + widening
        return mean >= mean.max(axis=-1, keepdims=True) - margin, margin
    sd = np.sqrt(scaled_variance)
    margin = widening
    return mean + beta * sd >= np.max(mean - beta * sd, axis=-1, keepdims=True) - margin, margin


def common_mask(keep: np.ndarray) -> np.ndarray:
    """The keep-mask shared by every trial of a batched release (ConfigurationError if they differ)."""
    if keep.ndim == 1:
        return keep
    if not np.all(keep == keep[:1]):
        raise ConfigurationError(
            "mechanism_trials", "the trials' eliminations differ: the trajectory depends on the noise"
        )
    return keep[0]


def clip_rewards(config, rewards: np.ndarray) -> np.ndarray:
    """What the agents use of their rewards: clipped to [-c_y, c_y] for DP-DUETS, as observed otherwise."""
    return np.clip(rewards, -config.reward_clip, config.reward_clip) if config.private else rewards


def server_release(config, mechanism, statistics: np.ndarray, rng, trials: int | None) -> np.ndarray:
    """The server's DP release of an epoch's statistics (N, r): one noisy sum (r,), or (trials, r)."""
    batch = statistics if trials is None else np.broadcast_to(statistics, (int(trials),) + statistics.shape)
    return release_sum(config, mechanism, batch, rng)


def communicate(config, objective, consts, log, points, rewards, active, rng, transcript, trials=None):
    """Steps 1-4 of the module docstring for one completed epoch; returns the new active set."""
    j, d = log.epoch, objective.dim
    sigma_max, p, inducing = select_inducing(objective, config, points, active, consts["p0"], rng["server"])
    features = NystromFeatures.build(objective.kernel, inducing, config.jitter)
    transcript.add(j, SERVER, BROADCAST, "inducing_set", objective.candidates[inducing])
    z = features(objective.kernel, points)  # (N, T_j, r)
    statistics = np.einsum("ntr,nt->nr", z, clip_rewards(config, rewards))
    for n in range(statistics.shape[0]):
        transcript.add(j, agent_name(n), SERVER, "statistic", statistics[n])
    model = SparseModel.build(z.reshape(points.size, features.rank), config.lam)
    widening, total = 0.0, statistics.sum(axis=0)
    z_active = features(objective.kernel, active)
    if config.private:
        log.mechanism = epoch_mechanism(config, log.length)
        total = server_release(config, log.mechanism, statistics, rng["mechanism"], trials)
        gain = float(model.noise_gain(z_active).max()) if features.rank else 0.0
        widening = noise_widening(config, released_noise_std(config, log.mechanism), gain, consts["completed_epochs"])
    v_bar = model.solve(total)
    transcript.add(j, SERVER, BROADCAST, "v_bar", v_bar)
    transcript.add(j, SERVER, BROADCAST, "sigma_max", sigma_max)
    # elimination "off" reads no mean (for a batched release it would be a (trials, |X_j|) array)
    mean = np.zeros(active.size) if config.elimination == "off" else model.mean(z_active, v_bar)
    keep, margin = eliminate(config, model, mean, model.scaled_variance(z_active), consts["beta"], sigma_max, widening)
    keep = common_mask(keep)
    log.sigma_max, log.inclusion_probability, log.inducing = sigma_max, p, inducing
    log.threshold, log.widening, log.model, log.active_after = margin, widening, model, int(keep.sum())
    log.active_set = active[keep]
    return log.active_set, (d + 1) * inducing.size + 1, inducing.size


def run_duets(
    config: DuetsConfig | None = None,
    seed=None,
    *,
    mechanism_rng=None,
    reward_override: RewardOverride | None = None,
    mechanism_trials: int | None = None,
    stop_after: int | None = None,
) -> DuetsRun:
    """Run DUETS or DP-DUETS (``config.algorithm``). ``mechanism_rng`` replaces the DP noise stream
    (audits replay everything else); ``reward_override`` forces canary rewards (any object with its
    ``apply(epoch, rewards)``); ``mechanism_trials`` batches the releases (module docstring);
    ``stop_after`` ends the run after that many communication rounds (an audit reading the first ones)."""
    config = config or DuetsConfig()
    if mechanism_trials is not None:
        mechanism_trials = int(require_number("mechanism_trials", mechanism_trials, low=1, integer=True))
    objective, consts = objective_of(config), constants(config)
    n, horizon = config.num_agents, config.horizon
    rng = streams(seed, n)
    if mechanism_rng is not None:
        rng["mechanism"] = np.random.default_rng(mechanism_rng)
    points = np.zeros((n, horizon), dtype=int)
    uplink, downlink = np.zeros(horizon), np.zeros(horizon)
    transcript, logs, active, t = Transcript(), [], np.arange(objective.size), 0
    for j, length in enumerate(epoch_lengths(horizon, config.first_epoch), start=1):
        steps = min(length, horizon - t)
        epoch_points = draw_points(rng["coins"], active, steps)
        rewards = observe(objective, epoch_points, config.noise_std, rng["observations"])
        if reward_override is not None:
            reward_override.apply(j, rewards)
        points[:, t : t + steps] = epoch_points
        t += steps
        log = EpochLog(j, length, t - steps, completed=t < horizon, active_before=int(active.size))
        logs.append(log)
        if not log.completed:
            break
        active, down, up = communicate(
            config, objective, consts, log, epoch_points, rewards, active, rng, transcript, mechanism_trials
        )
        uplink[t - 1], downlink[t - 1] = up, down
        if stop_after is not None and j >= stop_after:
            break
    return DuetsRun(
        config.algorithm,
        config.objective,
        objective.optimum - objective.values[points],
        points,
        uplink,
        downlink,
        logs,
        transcript,
        parameters=consts,
        config=config,
    )
