"""Running a probe: batches through an executor, scores through the estimators, a verdict on a claim.

``run_attack(probe, trials, seed, ...)`` is the plain Python API behind ``dpaudit attack``; the audit
and the reports use its ``AttackResult``.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.executors import get_executor, plan_batches, root_seed, stream
from attacks.executors.checkpoint import Checkpoint
from attacks.probes import Probe, check_trials, get_probe

EXIT_CODES = {"PASS": 0, "VIOLATION": 1, "INCONCLUSIVE": 3}


def summarise(scores: np.ndarray) -> dict:
    """Count, mean, standard deviation and quantiles of one world's scores (sorted ascending)."""
    q = scores[np.round(np.array([0.0, 0.01, 0.5, 0.99, 1.0]) * (scores.size - 1)).astype(int)]
    return {"count": int(scores.size), "mean": float(scores.mean()), "std": float(scores.std()),
            "min": float(q[0]), "q01": float(q[1]), "median": float(q[2]), "q99": float(q[3]),
            "max": float(q[4])}


@dataclass
class AttackResult:
    """Everything one attack produced. ``scores_out`` (world 0) and ``scores_in`` (world 1), sorted
    ascending, are kept in memory but left out of ``to_dict`` unless asked for."""

    probe: dict
    trials: int
    training_trials: int
    seed: int
    executor: str
    workers: int
    delta: float
    confidence: float
    claim_epsilon: float | None
    claim_delta: float | None
    claim_source: str
    true_epsilon: float | None
    bounds: list
    roc: dict
    verdict: object | None
    elapsed_seconds: float
    batches_total: int
    batches_resumed: int
    scores_out: np.ndarray = field(repr=False)
    scores_in: np.ndarray = field(repr=False)

    @property
    def status(self) -> str | None:
        return None if self.verdict is None else self.verdict.status

    @property
    def exit_code(self) -> int:
        """0 PASS (or no claim to judge), 1 VIOLATION, 3 INCONCLUSIVE."""
        return 0 if self.verdict is None else EXIT_CODES[self.verdict.status]

    def best_rigorous(self) -> float:
        return max((b.epsilon for b in self.bounds if b.rigorous), default=0.0)

    def to_dict(self, include_scores: bool = False) -> dict:
        out = {
            "probe": self.probe, "trials_per_world": self.trials, "training_trials_per_world":
            self.training_trials, "seed": str(self.seed), "executor": self.executor, "workers": self.workers,
            "delta": self.delta, "confidence": self.confidence,
            "claim": None if self.claim_epsilon is None else {
                "epsilon": self.claim_epsilon, "delta": self.claim_delta, "source": self.claim_source},
            "true_epsilon": self.true_epsilon,
            "scores": {"without_canary": summarise(self.scores_out),
                       "with_canary": summarise(self.scores_in)},
            "bounds": [b.to_dict() for b in self.bounds],
            "roc": self.roc,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "elapsed_seconds": self.elapsed_seconds,
            "batches": {"total": self.batches_total, "resumed_from_checkpoint": self.batches_resumed},
        }
        if include_scores:
            out["scores"]["without_canary"]["values"] = self.scores_out.tolist()
            out["scores"]["with_canary"]["values"] = self.scores_in.tolist()
        return out


def collect_scores(probe: Probe, trials: int, seed, executor="inprocess", workers: int = 2,
                   scheduler: str | None = None, checkpoint_dir=None, progress: bool = False,
                   batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Scores of ``trials`` runs of each world (world 0, world 1), batch by batch, resuming from and
    writing to ``checkpoint_dir`` if given. ``executor`` is a name or an executor object."""
    trials = check_trials(trials)
    batch_size = int(require_number("batch_size", batch_size or probe.batch_size, low=1, integer=True))
    root = root_seed(seed)
    tasks = plan_batches(trials, batch_size, root)
    worlds = [np.empty(trials), np.empty(trials)]  # filled in place as batches finish

    def store(task, scores):
        start = task.index * batch_size
        worlds[task.world][start:start + task.size] = scores

    checkpoint = None
    todo = tasks
    if checkpoint_dir is not None:
        checkpoint = Checkpoint(checkpoint_dir, {
            "version": 1, "probe": getattr(probe, "registry_name", probe.name), "class": type(probe).__name__,
            "params": probe.params(), "seed": str(root.entropy), "spawn_key": list(root.spawn_key),
            "batch_size": batch_size})
        todo = []
        for task in tasks:
            stored = checkpoint.load(task)
            if stored is None:
                todo.append(task)
            else:
                store(task, stored)
    resumed = len(tasks) - len(todo)
    own = isinstance(executor, str)
    runner = get_executor(executor, workers, scheduler) if own else executor
    try:
        from tqdm import tqdm

        with tqdm(total=len(tasks), initial=resumed, unit="batch", desc=probe.name, file=sys.stderr,
                  disable=not progress, leave=False) as bar:
            for task, scores in runner.run(probe, todo):
                if checkpoint is not None:
                    checkpoint.save(task, scores)
                store(task, scores)
                bar.update(1)
    finally:
        if own:
            runner.close()
    info = {"executor": getattr(runner, "name", type(runner).__name__),
            "workers": getattr(runner, "workers", 1), "batches_total": len(tasks), "batches_resumed": resumed}
    return worlds[0], worlds[1], info


def run_attack(probe: Probe | str, trials: int, seed: int | None = None, executor="inprocess",
               workers: int = 2, scheduler: str | None = None, checkpoint_dir=None,
               delta: float | None = None, confidence: float = 0.95, claim_epsilon: float | None = None,
               claim_delta: float | None = None, methods=None, progress: bool = False,
               batch_size: int | None = None) -> AttackResult:
    """Run ``probe`` for ``trials`` trials per world and turn the scores into bounds and a verdict.

    ``delta`` is the delta of the bounds (default: the claim's delta, else the probe's). Without an
    explicit ``claim_epsilon`` the claim is the tight epsilon of the probe's described mechanism
    (when an accountant knows it); with neither there is no verdict. Probes that learn their score
    train on ``trials // 2`` trials per world (training stream of the seed) and are judged on the rest.
    """
    started = time.perf_counter()
    if isinstance(probe, str):
        probe = get_probe(probe)
    trials = check_trials(trials)
    confidence = require_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    if claim_delta is not None:
        claim_delta = require_number("claim_delta", claim_delta, low=0, high=1, low_open=True, high_open=True)
    if delta is None:
        delta = claim_delta if claim_delta is not None else probe.default_delta
    delta = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    if claim_delta is None:
        claim_delta = delta
    if claim_epsilon is not None:
        claim_epsilon = require_number("claim_epsilon", claim_epsilon, low=0)
    if seed is None and checkpoint_dir is not None:
        seed = Checkpoint.stored_seed(checkpoint_dir)
    root = root_seed(seed)

    training = 0
    if probe.needs_training:
        if trials < 2:
            raise ConfigurationError("trials", "a learned score needs at least 2 trials per world "
                                               "(half train, half test)")
        training = trials // 2
        probe = probe.fit(training, np.random.default_rng(stream(root, 2)))
        trials -= training

    scores_out, scores_in, info = collect_scores(probe, trials, root, executor, workers, scheduler,
                                                 checkpoint_dir, progress, batch_size)
    from attacks.estimators import estimate_all
    from attacks.roc import empirical_roc

    # Sorting once serves every estimator and the ROC (all work on sorted scores; the trial order carries
    # no information because the trials are i.i.d.).
    scores_out.sort()
    scores_in.sort()

    bounds = estimate_all(scores_out, scores_in, delta, confidence, methods=methods,
                          rng=np.random.default_rng(stream(root, 3)))
    fpr, tpr, auc = empirical_roc(scores_out, scores_in)
    metadata = probe.metadata(delta)
    true_eps = metadata.get("true_epsilon")
    source = "given"
    if claim_epsilon is None and true_eps is not None:
        claim_epsilon = float(true_eps) if claim_delta == delta else probe.true_epsilon(claim_delta)
        source = "tight epsilon of the described mechanism"
    verdict = None
    if claim_epsilon is not None and math.isfinite(claim_epsilon):
        from attacks.verdict import decide

        verdict = decide(claim_epsilon, claim_delta, bounds, trials, confidence)
    return AttackResult(
        probe=metadata, trials=trials, training_trials=training, seed=int(root.entropy),
        executor=info["executor"], workers=info["workers"], delta=delta, confidence=confidence,
        claim_epsilon=claim_epsilon, claim_delta=claim_delta if claim_epsilon is not None else None,
        claim_source=source if claim_epsilon is not None else "none", true_epsilon=true_eps, bounds=bounds,
        roc={"fpr": fpr.tolist(), "tpr": tpr.tolist(), "auc": auc}, verdict=verdict,
        elapsed_seconds=time.perf_counter() - started, batches_total=info["batches_total"],
        batches_resumed=info["batches_resumed"], scores_out=scores_out, scores_in=scores_in)
