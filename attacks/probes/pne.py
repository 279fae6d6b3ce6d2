"""DP-Fed-PNE probes (``seed_fedpne.md`` 3.4): one client's canary reward, 0 in world 0 and 1 in world 1
(or an out-of-range value to test the clipping), in a node that client pulls ``pulls`` times; the
honest-but-curious server sees that client's uploaded local mean of the node.

``PneRewardProbe`` (mechanism level) privatises the node's rewards with the algorithm's own
``RewardPrivatizer`` (clip to [0, 1], then ``accounting.Gaussian.release``) vectorised over trials and
averages them as the client does; the other ``pulls - 1`` rewards are known to the adversary. The mean
is the Neyman-Pearson score. ``PneEndToEndProbe`` runs the whole DP-Fed-PNE algorithm with the canary
forced through its ``RewardOverride`` hook and reads the upload from the transcript; its default
``replay`` score replays the run along the observed trajectory (``attacks.probes.pne_replay``, whose
docstring states the threat model) and applies the exact Gaussian likelihood ratio of the canary's
release, plus a signed jump when a decision follows one world's un-noised data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.exact import gaussian_epsilon
from attacks.probes.base import Probe, check_world

SCORES = ("replay", "upload", "node-difference")
REPLAY_THREAT_MODEL = (
    "server view with replay: the adversary sees every schedule broadcast and every client's uploads, "
    "knows (or chose) every other reward and the data seeds (partition, local objectives, observation "
    "noise), but not the privacy noise of any reward; unit: one reward of one client (event level)"
)


def _mechanism(epsilon, delta, calibration):
    from dpfed.pne.private import dp_mechanism

    return dp_mechanism(epsilon, delta, calibration)


@dataclass
class PneRewardProbe(Probe):
    """Canary reward in a node pulled ``pulls`` times by one client; server view of its local mean."""

    epsilon: float = 1.0
    delta: float = 1e-5
    calibration: str = "classic"
    pulls: int = 1
    canary_value: float = 1.0
    other_reward: float = 0.5

    name = "pne-reward"
    threat_model = "server view"
    description = (
        "DP-Fed-PNE: one client's reward is 0 (world 0) or the canary value (world 1) in a node "
        "it pulls `pulls` times; the server sees the client's noisy local mean"
    )
    batch_size = 1_000_000

    def __post_init__(self):
        self.pulls = int(require_number("pulls", self.pulls, low=1, integer=True))
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        require_number("canary_value", self.canary_value)
        self._mechanism = _mechanism(self.epsilon, self.delta, self.calibration)
        self.default_delta = self.delta
        self.batch_size = max(1, 1_000_000 // self.pulls)

    def mechanism(self):
        return self._mechanism

    def true_epsilon(self, delta: float) -> float:
        """Tight epsilon of the upload: mean of ``pulls`` noisy rewards, shift (clipped canary)/pulls."""
        shift = min(max(self.canary_value, 0.0), 1.0)
        if shift == 0.0:
            return 0.0
        mu = shift / (self._mechanism.noise_std / np.sqrt(self.pulls)) / self.pulls
        return gaussian_epsilon(mu, delta)

    def scores(self, world, trials, rng):
        from dpfed.pne.private import RewardPrivatizer

        rewards = np.full((int(trials), self.pulls), float(self.other_reward))
        rewards[:, 0] = self.canary_value if check_world(world) else 0.0
        return RewardPrivatizer(self._mechanism)(rewards, rng).mean(axis=1)


@dataclass
class PneEndToEndProbe(Probe):
    """The real DP-Fed-PNE run with the canary reward forced in (client ``client``, pull 0 of a node of
    the first phase whose nodes are pulled once per client, found by a dry run; with ``final_upload``
    that phase may be the one cut by the horizon). The node is the phase's first, except for the
    ``replay`` score when that phase is the first and completes: then it is the node whose un-noised
    elimination the canary changes most often (``pne_replay.decisive_node``; an adversary may place
    its canary anywhere, and the first phase is the same in every run).

    Scores: ``replay`` (default), the observer's replay (``attacks.probes.pne_replay``): the exact
    log-likelihood ratio of N(shift, count sigma^2) against N(0, count sigma^2) at the canary's
    residual (its client's upload minus its other, known, clipped rewards; shift = the clipped
    canary), plus +-``DEVIATION_SCORE`` when the schedule after the canary's phase is not the one the
    uploads imply but the one the un-noised means of world 1 (or 0) imply; ``upload``, that client's
    uploaded mean of the canary node (0.5, uninformative, if the node was never uploaded);
    ``node-difference``, that upload minus the same client's upload of the next node of the phase
    (noise that a correct client draws independently per reward does not cancel; noise shared across
    nodes does). ``planted_bug`` runs a deliberate privatisation bug (``dpfed.pne.private.PLANTED_BUGS``);
    the claim stays the correct mechanism's epsilon."""

    epsilon: float = 1.0
    delta: float = 1e-5
    calibration: str = "classic"
    objective: str = "garland"
    clients: int = 10
    horizon: int = 200
    c: float = 0.1
    client: int = 0
    canary_value: float = 1.0
    final_upload: bool = False
    score: str = "replay"
    planted_bug: str = "none"

    name = "pne-end-to-end"
    threat_model = "server view"
    description = (
        "DP-Fed-PNE end to end: the real algorithm with one forced canary reward; the server "
        "view is the canary client's uploaded local mean of the canary node (default score: replay of the "
        "run along the observed trajectory)"
    )
    batch_size = 20_000

    def __post_init__(self):
        if self.score not in SCORES:
            raise ConfigurationError("score", f"choose one of {', '.join(SCORES)}, got {self.score!r}")
        self.threat_model = REPLAY_THREAT_MODEL if self.score == "replay" else "server view"
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        self.client = int(require_number("client", self.client, low=0, high=self.clients - 1, integer=True))
        self._mechanism = _mechanism(self.epsilon, self.delta, self.calibration)
        self.default_delta = self.delta
        run = self._run(0, np.random.default_rng(0), override=False)
        phase = next((p for p in run.phases if p.pulls == 1 and (p.completed or self.final_upload)), None)
        if phase is None:
            raise ConfigurationError(
                "c", "no phase pulls its nodes once per client with these settings; lower c or raise clients"
            )
        if self.score == "node-difference" and len(phase.nodes) < 2:
            raise ConfigurationError("score", "node-difference needs a phase with two nodes")
        self._phase = phase.phase
        self._node = tuple(phase.nodes[0])
        self._other = tuple(phase.nodes[1]) if len(phase.nodes) > 1 else None
        self._observer = self._make_observer()
        if self.score == "replay" and self._phase == 1 and phase.completed:
            from attacks.probes.pne_replay import decisive_node

            self._node = decisive_node(self._observer)
            self._observer = dataclasses.replace(self._observer, node=self._node)

    def _make_observer(self):
        from attacks.probes.pne_replay import PneObserver, PneRules
        from dpfed.pne.engine import FedPNEOptions
        from dpfed.pne.objectives import get_objective

        defaults = FedPNEOptions()  # the environment the probe's runs use (the algorithm's defaults)
        return PneObserver(
            get_objective(self.objective),
            PneRules(self.horizon, self.clients, c=self.c),
            defaults.heterogeneity,
            defaults.heterogeneity_kind,
            defaults.noise,
            self.client,
            self._phase,
            self._node,
            float(self.canary_value),
        )

    def mechanism(self):
        return self._mechanism

    def true_epsilon(self, delta: float) -> float:
        shift = min(max(self.canary_value, 0.0), 1.0)
        return gaussian_epsilon(shift / self._mechanism.noise_std, delta) if shift else 0.0

    def _run(self, world, rng, override=True):
        return self._runs(world, [rng], override)[0]

    def _runs(self, world, seeds, override=True):
        """Runs of ``world``, one per seed, vectorised together (``run_dp_fed_pne_batch``)."""
        from dpfed.pne.algorithm import RewardOverride
        from dpfed.pne.private import run_dp_fed_pne_batch

        forced = None
        if override:
            value = self.canary_value if world else 0.0
            forced = RewardOverride(self.client, self._node[0], self._node[1], value, pull=0)
        return run_dp_fed_pne_batch(
            self.objective,
            self.clients,
            self.horizon,
            seeds,
            epsilon=self.epsilon,
            dp_delta=self.delta,
            calibration=self.calibration,
            c=self.c,
            scale_c_for_noise=False,
            reward_override=forced,
            final_upload=self.final_upload,
            planted_bug=self.planted_bug,
            record_transcript=False,
        )

    def _upload(self, run, node) -> float:
        """The canary client's upload of ``node`` in the canary phase (0.5 if it was not uploaded)."""
        for phase, keys, means in run.uploads:
            nodes = [tuple(n) for n in keys]
            if phase == self._phase and node in nodes:
                return float(means[self.client, nodes.index(node)])
        return 0.5

    def _upload_score(self, run) -> float:
        upload = self._upload(run, self._node)
        return upload - self._upload(run, self._other) if self.score == "node-difference" else upload

    def _replay_score(self, replayed) -> float:
        """Exact Gaussian log-likelihood ratio at the residual, plus the signed decision jump."""
        from attacks.probes.pne_replay import DEVIATION_SCORE

        shift = min(max(float(self.canary_value), 0.0), 1.0)
        llr = 0.0
        if replayed.residual is not None:
            variance = replayed.count * self._mechanism.noise_std**2
            llr = (shift * replayed.residual - shift**2 / 2.0) / variance
        return llr + replayed.direction * DEVIATION_SCORE

    def scores(self, world, trials, rng):
        """Scores of ``trials`` runs drawn one after another from ``rng`` (as one-at-a-time runs would:
        run k is seeded with the k-th ``rng.integers(2**63)``, which the observer also uses for the
        data streams, never for the privacy stream)."""
        entropies = [int(rng.integers(2**63)) for _ in range(int(trials))]
        runs = self._runs(check_world(world), entropies)  # an int seeds a run as SeedSequence(int) would
        if self.score != "replay":
            return np.array([self._upload_score(run) for run in runs])
        from attacks.probes.pne_data import data_streams_batch

        replayed = self._observer.replay_all(runs, data_streams_batch(entropies))
        return np.array([self._replay_score(r) for r in replayed])
