"""How much memory a batched DP-FTS-DE run holds on its array backend, per run of the batch.

An estimate in float64 words of the arrays alive at once in ``run_fts_batch``, per run: the posterior
state of both models (weight space: the N square roots, M x M, plus the two temporaries of a rank-one
update; Matheron: the bordered factor, capacity x (capacity + M)), one scoring pass of the acquisition
maximiser (candidate features in float64 angles and float32 cosines, per agent scores, refinement
proposals), the histories of queries and values (on the device with torch) and what the run keeps
(broadcasts, sample masks, uploads if recorded). It is doubled to cover the allocator's slack and
short-lived copies, so it errs on the safe side; batch sizes divide free memory by it (``runs_within``).
For the ``fts-end-to-end`` probe's configuration (N 29, M 20, T 60) it gives 1.43 MB per run; measured
peak growth of a 1000-run batch on a cpu (before the histories moved to the device): 0.61 MB per run
(torch), 0.48 MB (NumPy).
"""

from __future__ import annotations

from dpfed.fts.config import FTSConfig

WORD = 8  # bytes of a float64
SLACK = 2.0  # allocator caching, short-lived temporaries


def bytes_per_run(config: FTSConfig, record_uploads: bool = False) -> int:
    """Estimated peak bytes one run adds to a batch of ``run_fts_batch`` (see module docstring)."""
    c = config
    n, capacity = c.num_agents, c.init_points + c.rounds
    words = sum(_posterior_words(n, m, capacity) for m in (c.num_features, c.local_num_features))
    points = c.candidates + n * (c.refine_samples if c.refine_steps else 0)  # scored at once
    words += 2 * points * max(c.num_features, c.local_num_features) + n * c.candidates
    words += n * capacity * (2 * c.dim + 2)  # histories (queries, observed, true) and the repeat check's
    slots, blocks = c.declared_population, c.effective_subregions
    words += c.rounds * (blocks * c.num_features + slots) + 4 * slots * c.num_features
    if record_uploads:
        words += c.rounds * slots * c.num_features
    return int(SLACK * WORD * words)


def _posterior_words(agents: int, features: int, capacity: int) -> int:
    if features <= capacity:  # weight space: root and two M x M temporaries per agent
        return 3 * agents * features * features
    return agents * (capacity * features + capacity * capacity + 2 * capacity)


def runs_within(free_bytes: int, config: FTSConfig, share: float = 0.5, record_uploads: bool = False) -> int:
    """How many runs one call of ``run_fts_batch`` may batch to use at most ``share`` of ``free_bytes``."""
    return max(1, int(share * free_bytes // bytes_per_run(config, record_uploads)))
