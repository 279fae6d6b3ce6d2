"""Running a probe: batches through an executor, scores through the estimators, a verdict on a claim.

``run_attack(probe, trials, seed, options)`` is the plain Python API behind ``dpaudit attack``; the
audit and the reports use its ``AttackResult``. ``AttackOptions`` holds everything else (executor,
checkpoint, levels, claim, estimators, reduction, backend); keyword arguments override its fields.
The reduction (every score sorted, or counts over pilot-fixed thresholds) is chosen by
``attacks.run_plan``; both give valid bounds and the same seed gives the same result on every executor.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.batches import attack_manifest, collect_counts, collect_scores
from attacks.estimators import check_methods
from attacks.executors import root_seed, stream
from attacks.executors.checkpoint import Checkpoint
from attacks.probes import Probe, check_trials, get_probe
from attacks.run_plan import plan_run

EXIT_CODES = {"PASS": 0, "VIOLATION": 1, "INCONCLUSIVE": 3}  # as the audit: PASS 0, VIOLATION 1, INCONCLUSIVE 3
__all__ = ["AttackOptions", "AttackResult", "collect_counts", "collect_scores", "run_attack"]


@dataclass(frozen=True)
class AttackOptions:
    """How to run an attack. ``delta`` defaults to the claim's delta, else the probe's; without an
    explicit ``claim_epsilon`` the claim is the tight epsilon of the probe's described mechanism."""

    executor: object = "inprocess"
    workers: int = 2
    scheduler: str | None = None
    checkpoint_dir: object = None
    fresh: bool = False
    delta: float | None = None
    confidence: float = 0.95
    claim_epsilon: float | None = None
    claim_delta: float | None = None
    methods: tuple | list | None = None
    progress: bool = False
    batch_size: int | None = None
    reduction: str = "auto"
    backend: str = "numpy"
    device: str = "cpu"
    log: object = None  # callable(str) for plan and repair messages (None: silent)


def summarise(scores: np.ndarray) -> dict:
    """Count, mean, standard deviation and quantiles of one world's scores (sorted ascending)."""
    q = scores[np.round(np.array([0.0, 0.01, 0.5, 0.99, 1.0]) * (scores.size - 1)).astype(int)]
    return {
        "count": int(scores.size),
        "mean": float(scores.mean()),
        "std": float(scores.std()),
        "min": float(q[0]),
        "q01": float(q[1]),
        "median": float(q[2]),
        "q99": float(q[3]),
        "max": float(q[4]),
    }


@dataclass
class AttackResult:
    """Everything one attack produced. With the sorted reduction ``scores_out`` (world 0) and
    ``scores_in`` (world 1), sorted ascending, are kept in memory (left out of ``to_dict`` unless
    asked for); with counts they are None and ``counts`` holds the grid and both worlds' counts."""

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
    scores_out: np.ndarray | None = field(repr=False, default=None)
    scores_in: np.ndarray | None = field(repr=False, default=None)
    reduction: str = "sorted"
    pilot_trials: int = 0
    batches_recomputed: list = field(default_factory=list)
    counts: dict | None = field(repr=False, default=None)
    backend: str = "numpy"

    @property
    def status(self) -> str | None:
        return None if self.verdict is None else self.verdict.status

    @property
    def exit_code(self) -> int:
        """0 PASS (or no claim to judge), 1 VIOLATION, 3 INCONCLUSIVE."""
        return 0 if self.verdict is None else EXIT_CODES[self.verdict.status]

    def best_rigorous(self) -> float:
        return max((b.epsilon for b in self.bounds if b.rigorous), default=0.0)

    def score_summaries(self) -> dict:
        if self.counts is not None:
            from attacks.estimators.counts import summarise_counts

            grid = self.counts["grid"]
            return {
                "without_canary": summarise_counts(grid, self.counts["out"]),
                "with_canary": summarise_counts(grid, self.counts["in"]),
            }
        return {"without_canary": summarise(self.scores_out), "with_canary": summarise(self.scores_in)}

    def to_dict(self, include_scores: bool = False) -> dict:
        from attacks.files import json_safe

        out = {
            "probe": self.probe,
            "trials_per_world": self.trials,
            "training_trials_per_world": self.training_trials,
            "pilot_trials_per_world": self.pilot_trials,
            "reduction": self.reduction,
            "backend": self.backend,
            "seed": str(self.seed),
            "executor": self.executor,
            "workers": self.workers,
            "delta": self.delta,
            "confidence": self.confidence,
            "claim": None
            if self.claim_epsilon is None
            else {"epsilon": self.claim_epsilon, "delta": self.claim_delta, "source": self.claim_source},
            "true_epsilon": self.true_epsilon,
            "scores": self.score_summaries(),
            "bounds": [b.to_dict() for b in self.bounds],
            "roc": self.roc,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "elapsed_seconds": self.elapsed_seconds,
            "batches": {
                "total": self.batches_total,
                "resumed_from_checkpoint": self.batches_resumed,
                "recomputed_after_damage": list(self.batches_recomputed),
            },
        }
        if include_scores and self.scores_out is not None:
            out["scores"]["without_canary"]["values"] = self.scores_out.tolist()
            out["scores"]["with_canary"]["values"] = self.scores_in.tolist()
        return json_safe(out)


def _levels(probe: Probe, options: AttackOptions) -> tuple[float, float, float | None, float | None]:
    """(delta, confidence, claim_epsilon, claim_delta), validated, with the documented defaults."""
    confidence = require_number("confidence", options.confidence, low=0, high=1, low_open=True, high_open=True)
    claim_delta = options.claim_delta
    if claim_delta is not None:
        claim_delta = require_number("claim_delta", claim_delta, low=0, high=1, low_open=True, high_open=True)
    delta = options.delta
    if delta is None:
        delta = claim_delta if claim_delta is not None else probe.default_delta
    delta = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    claim_epsilon = options.claim_epsilon
    if claim_epsilon is not None:
        claim_epsilon = require_number("claim_epsilon", claim_epsilon, low=0)
    return delta, confidence, claim_epsilon, delta if claim_delta is None else claim_delta


def _checkpoint(probe, root, plan, options, delta: float, confidence: float) -> Checkpoint | None:
    if options.checkpoint_dir is None:
        return None
    grid = {"trials": plan.trials, "pilot_trials": plan.pilot_trials, "delta": delta, "confidence": confidence}
    manifest = attack_manifest(probe, root, plan.batch_size, plan.reduction, options.backend, options.device, grid)
    return Checkpoint(options.checkpoint_dir, manifest, fresh=options.fresh)


def _fit(probe: Probe, trials: int, root) -> tuple[Probe, int, int]:
    """Train a learned score on half of the trials (training stream); returns (probe, training, test)."""
    if not probe.needs_training:
        return probe, 0, trials
    if trials < 2:
        raise ConfigurationError("trials", "a learned score needs at least 2 trials per world (half train, half test)")
    training = trials // 2
    return probe.fit(training, np.random.default_rng(stream(root, 2))), training, trials - training


def _with_backend(probe: Probe, options: AttackOptions) -> Probe:
    if options.backend == "numpy" and options.device == "cpu":
        return probe
    from attacks.backend import on_backend

    return on_backend(probe, options.backend, options.device)


def _seed_and_plan(probe: Probe, trials: int, seed: int | None, options: AttackOptions):
    """The root seed (a resumed checkpoint's own when none is given) and the run plan of the test trials
    (a learned score trains on half of them first)."""
    if seed is None and options.checkpoint_dir is not None:
        seed = Checkpoint.stored_seed(options.checkpoint_dir)
    workers = 1 if options.executor == "inprocess" else options.workers
    tested = trials - (trials // 2 if probe.needs_training else 0)
    device_batch = None
    if options.backend == "torch" and options.batch_size is None:  # a CUDA device: batches fill its memory
        from attacks.backend import device_batch_size

        device_batch = device_batch_size(probe, options.device)
    plan = plan_run(probe, tested, options.batch_size, options.reduction, workers, device_batch=device_batch)
    return root_seed(seed), plan


def _log_recomputed(log, recomputed: list) -> None:
    if recomputed:
        shown = ", ".join(recomputed[:3]) + (", ..." if len(recomputed) > 3 else "")
        log(f"checkpoint: {len(recomputed)} damaged batch file(s) recomputed ({shown})")


def _claim_fields(claim_epsilon, claim_delta, source: str) -> dict:
    """The claim of a result (no delta and source "none" without a claimed epsilon)."""
    claimed = claim_epsilon is not None
    return {
        "claim_epsilon": claim_epsilon,
        "claim_delta": claim_delta if claimed else None,
        "claim_source": source if claimed else "none",
    }


def _run_fields(info: dict) -> dict:
    """Where and how the batches ran, from ``_collect_and_estimate``'s bookkeeping."""
    return {
        "executor": info["executor"],
        "workers": info["workers"],
        "batches_total": info["batches_total"],
        "batches_resumed": info["batches_resumed"],
        "pilot_trials": info.get("pilot_trials", 0),
        "batches_recomputed": info["recomputed"],
    }


def run_attack(
    probe: Probe | str, trials: int, seed: int | None = None, options: AttackOptions | None = None, **overrides
) -> AttackResult:
    """Run ``probe`` for ``trials`` trials per world and turn the scores into bounds and a verdict.

    Probes that learn their score train on ``trials // 2`` trials per world (training stream of the
    seed) and are judged on the rest. Keyword arguments override fields of ``options``.
    """
    started = time.perf_counter()
    try:
        options = dataclasses.replace(options or AttackOptions(), **overrides)
    except TypeError as exc:
        raise ConfigurationError("options", str(exc)) from None
    probe = _with_backend(get_probe(probe) if isinstance(probe, str) else probe, options)
    trials = check_trials(trials)
    delta, confidence, claim_epsilon, claim_delta = _levels(probe, options)
    check_methods(options.methods)  # before any trial is drawn or a checkpoint created
    root, plan = _seed_and_plan(probe, trials, seed, options)
    checkpoint = _checkpoint(probe, root, plan, options, delta, confidence)
    probe, training, trials = _fit(probe, trials, root)
    log = options.log or (lambda message: None)
    if plan.trials >= 10**7:
        log(plan.describe())
    bounds, roc, extra, info = _collect_and_estimate(probe, trials, root, plan, delta, confidence, options, checkpoint)
    _log_recomputed(log, info["recomputed"])
    metadata = probe.metadata(delta)
    true_eps = metadata.get("true_epsilon")
    claim_epsilon, source, verdict = _claim_and_verdict(
        probe, true_eps, claim_epsilon, claim_delta, delta, bounds, trials, confidence
    )
    return AttackResult(
        probe=metadata,
        trials=trials,
        training_trials=training,
        seed=int(root.entropy),
        delta=delta,
        confidence=confidence,
        **_claim_fields(claim_epsilon, claim_delta, source),
        true_epsilon=true_eps,
        bounds=bounds,
        roc=roc,
        verdict=verdict,
        elapsed_seconds=time.perf_counter() - started,
        reduction=plan.reduction,
        backend=options.backend,
        **_run_fields(info),
        **extra,
    )


def _collect_and_estimate(probe, trials, root, plan, delta, confidence, options, checkpoint):
    """Draw the trials as ``plan`` says (counts over a fixed grid, or every score) and estimate bounds and
    the ROC: ``(bounds, roc, extra result fields, collection info)``."""
    log = options.log or (lambda message: None)
    if plan.reduction == "counts":
        grid, counts_out, counts_in, info = collect_counts(
            probe, trials, root, plan, delta, confidence, options, checkpoint
        )
        bounds, roc = _counts_estimates(grid, counts_out, counts_in, delta, confidence, options, root)
        return bounds, roc, {"counts": {"grid": grid, "out": counts_out, "in": counts_in}}, info
    scores_out, scores_in, info = collect_scores(
        probe,
        trials,
        root,
        options.executor,
        options.workers,
        options.scheduler,
        checkpoint,
        options.progress,
        plan.batch_size,
        log=log,
    )
    bounds, roc = _sorted_estimates(scores_out, scores_in, delta, confidence, options, root)
    return bounds, roc, {"scores_out": scores_out, "scores_in": scores_in}, info


def _claim_and_verdict(probe, true_eps, claim_epsilon, claim_delta, delta, bounds, trials, confidence):
    """The claim judged (the given one, else the described mechanism's tight epsilon when finite: a
    non-private probe's infinite epsilon is no claim), where it came from, and the verdict (None without a
    finite claim)."""
    source = "given"
    if claim_epsilon is None and true_eps is not None and math.isfinite(true_eps):
        claim_epsilon = float(true_eps) if claim_delta == delta else probe.true_epsilon(claim_delta)
        source = "tight epsilon of the described mechanism"
    verdict = None
    if claim_epsilon is not None and math.isfinite(claim_epsilon):
        from attacks.verdict import INCONCLUSIVE, Verdict, decide

        if not any(b.rigorous for b in bounds):  # e.g. --methods gdp: nothing here could refute the claim
            names = ", ".join(b.method for b in bounds)
            return claim_epsilon, source, Verdict(
                INCONCLUSIVE, None, None, 0.0,
                f"no rigorous estimator ran ({names}): a model-based or Bayesian bound never refutes a claim, "
                "so these trials cannot test it; add clopper-pearson to --methods.",
            )
        verdict = decide(claim_epsilon, claim_delta, bounds, trials, confidence)
    return claim_epsilon, source, verdict


def _sorted_estimates(scores_out, scores_in, delta, confidence, options, root):
    from attacks.estimators import estimate_all
    from attacks.roc import empirical_roc

    # Sorting once serves every estimator and the ROC (the trial order carries no information: i.i.d.).
    scores_out.sort()
    scores_in.sort()
    bounds = estimate_all(
        scores_out, scores_in, delta, confidence, methods=options.methods, rng=np.random.default_rng(stream(root, 3))
    )
    fpr, tpr, auc = empirical_roc(scores_out, scores_in)
    return bounds, {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "auc": auc}


def _counts_estimates(grid, counts_out, counts_in, delta, confidence, options, root):
    from attacks.estimators.counts import estimate_all_counts, roc_from_counts

    bounds = estimate_all_counts(
        grid,
        counts_out,
        counts_in,
        delta,
        confidence,
        methods=options.methods,
        rng=np.random.default_rng(stream(root, 3)),
    )
    fpr, tpr, auc = roc_from_counts(grid, counts_out, counts_in)
    return bounds, {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "auc": auc, "resolution": "threshold grid"}
