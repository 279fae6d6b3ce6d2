"""The guesses of a one-run audit: "in" for the highest scores, "out" for the lowest, abstain on the rest.

Guesses depend on the score VALUES only, never on the order of rows: a guess rule with ``r`` guesses
puts its "in" threshold and its "out" threshold at unique score values, and a group of tied scores that
would straddle a cut is abstained on as a whole. So a rule makes at most ``r`` guesses (fewer where
ties straddle a cut), and tied canaries always get the same guess.

The p-value of both one-run estimators is kept at the nominal ``r``. That is valid: an auditor that
abstains on some of its ``r`` guesses has no more correct guesses than one that guesses those canaries
arbitrarily, and the bounds of Steinke et al. (2023) and Mahloujifar et al. (2025) hold for any
guesser of ``r`` guesses that depends on the output alone; their tests reject on "at least v correct".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number

TIE_RULE = ("thresholds at unique score values: tied scores always get the same guess, and a tie group "
            "straddling a cut is abstained on (the p-value keeps the nominal number of guesses)")


@dataclass(frozen=True)
class GuessOutcome:
    """One guess rule's result: ``guesses`` nominal, ``made`` actually made (ties abstained), ``correct``."""

    guesses: int
    made: int
    correct: int


def guess_rule_counts(m: int, guess_counts=None) -> list[int]:
    """The numbers of guesses to try (default: about 12 even counts, geometrically spaced from 2 to m, none above
    m: rounding 2 (m / 2) to an even count gave m + 1 for m = 3 mod 4, refused below)."""
    if guess_counts is None:
        even = np.maximum(np.round(np.geomspace(2, m, 12) / 2).astype(int) * 2, 2)
        guess_counts = np.unique(np.minimum(even, m))
    return [int(require_number("guess_counts", g, low=1, high=m, integer=True)) for g in guess_counts]


def _checked(scores, included) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=float).ravel()
    included = np.asarray(included, dtype=bool).ravel()
    if scores.size != included.size or scores.size == 0:
        raise ConfigurationError("included", "needs one inclusion flag per canary score")
    if not np.all(np.isfinite(scores)):
        raise ConfigurationError("scores", "every canary score must be a finite number")
    return scores, included


def _top_without_split(values: np.ndarray, k: np.ndarray) -> np.ndarray:
    """How many of the k largest of sorted ``values`` can be taken without splitting a tie group."""
    m = values.size
    k = np.clip(k, 0, m)
    cut = m - k                                                    # first index of the top k
    first = np.searchsorted(values, values[np.minimum(cut, m - 1)], side="left")
    whole = (k == 0) | (cut == 0) | (first >= cut)                 # no tie group across the cut
    beyond = m - np.searchsorted(values, values[np.minimum(cut, m - 1)], side="right")
    return np.where(whole, k, beyond)


def _bottom_without_split(values: np.ndarray, k: np.ndarray) -> np.ndarray:
    """How many of the k smallest of sorted ``values`` can be taken without splitting a tie group."""
    m = values.size
    k = np.clip(k, 0, m)
    last = np.maximum(k - 1, 0)                                    # last index of the bottom k
    end = np.searchsorted(values, values[last], side="right")
    whole = (k == 0) | (k == m) | (end <= k)
    below = np.searchsorted(values, values[last], side="left")
    return np.where(whole, k, below)


def guess_outcomes(scores, included, guess_counts=None) -> tuple[int, list[GuessOutcome]]:
    """(m, outcomes): for each rule of r guesses, "in" for up to r - r//2 highest scores and "out" for up
    to r//2 lowest, cut only between distinct values (module docstring); the correct guesses counted."""
    scores, included = _checked(scores, included)
    m = scores.size
    counts = np.asarray(guess_rule_counts(m, guess_counts), dtype=np.int64)
    order = np.argsort(scores, kind="stable")
    values = scores[order]
    hits = np.concatenate([[0], np.cumsum(included[order])])        # included among the lowest j
    n_in = _top_without_split(values, counts - counts // 2)
    n_out = _bottom_without_split(values, counts // 2)
    # Taking the top n_in (bottom n_out) of the sorted order takes whole tie groups only, so these sums
    # do not depend on how the sort ordered tied rows.
    correct_in = hits[m] - hits[m - n_in]
    correct_out = n_out - hits[n_out]
    return m, [GuessOutcome(int(r), int(a + b), int(c + d))
               for r, a, b, c, d in zip(counts, n_in, n_out, correct_in, correct_out, strict=True)]


__all__ = ["TIE_RULE", "GuessOutcome", "guess_outcomes", "guess_rule_counts"]
