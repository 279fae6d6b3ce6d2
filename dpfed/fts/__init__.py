"""Federated Thompson sampling with random Fourier features: TS, FTS, FTS-DE, DP-FTS, DP-FTS-DE.

Python API::

    from dpfed.fts import FTSConfig, run_fts_de
    config = FTSConfig.from_preset("svm-breast-cancer", rounds=20)
    result = run_fts_de(config, rng=0)
    result.utility, result.transcript, result.composition()
"""

from dpfed.fts.algorithm import run_fts, run_fts_batch, run_fts_de
from dpfed.fts.config import ALGORITHMS, PRESETS, FTSConfig
from dpfed.fts.results import FTSBatchResult, FTSResult

__all__ = [
    "ALGORITHMS",
    "PRESETS",
    "FTSBatchResult",
    "FTSConfig",
    "FTSResult",
    "run_fts",
    "run_fts_batch",
    "run_fts_de",
]
