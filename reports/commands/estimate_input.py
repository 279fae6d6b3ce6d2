"""Reading the scores of ``dpaudit estimate``: a CSV with a header, or a ``.npy`` array, checked strictly.

CSV: a header naming ``score`` and exactly one label column, ``world`` (multi-run audit: 0 = the
trial ran without the canary, 1 = with it) or ``included`` (one-run audit: 0/1, whether each canary
was inserted in the one run); one row per trial or canary. ``.npy``: either a structured array with
the same field names, or a plain float array of shape (n, 2) (score, label) together with ``--kind``.
Any other column, a label other than 0/1, a score that is not a finite number, or too few scores is an
error naming the file and the place.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError

LABEL_COLUMNS = {"world": "multi-run", "included": "one-run"}
KINDS = ("multi-run", "one-run")
MIN_PER_WORLD = 20   # multi-run: scores per world (the split estimators need both halves non-empty)
MIN_CANARIES = 20    # one-run: canaries in the run, with at least one included and one left out


@dataclass(frozen=True)
class Scores:
    """Validated scores: ``labels`` are the worlds (multi-run) or inclusion bits (one-run)."""

    kind: str
    scores: np.ndarray
    labels: np.ndarray  # bool
    source: str

    def worlds(self) -> tuple[np.ndarray, np.ndarray]:
        """(scores without the canary / not included, scores with it / included)."""
        return self.scores[~self.labels], self.scores[self.labels]

# How each estimator chooses its threshold (printed beside its bound and written into reports).
SELECTION = {
    "clopper-pearson": "Bonferroni over order-statistic thresholds (both directions)",
    "clopper-pearson-split": "chosen on a random half, tested on the other half",
    "bayesian-jeffreys": "chosen on a random half, tested on the other half",
    "gdp": "Bonferroni over order-statistic thresholds (both directions)",
    "one-run": "Bonferroni over the guess counts tried; cuts only between distinct scores (ties never split)",
    "fdp-one-run": "Bonferroni over the guess counts tried; cuts only between distinct scores (ties never split)",
    "one-run-weighted": "Bonferroni over the weight rules tried (score ranks; ties share their mean rank)",
    "one-run-gauss": "none: the standardised difference of the included and excluded scores",
    "one-run-split-median": "chosen on held-out canaries, median of 11 splits at half the level",
    "fdp-one-run-split-median": "chosen on held-out canaries, median of 11 splits at half the level",
}


def _csv_columns(path: Path) -> tuple[str, list[str], list[str], list[int]]:
    """(kind, score cells, label cells, line number of each row); blank lines are skipped, and a UTF-8
    byte-order mark (as spreadsheet programs write) is not part of the header."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            numbered = [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigurationError("scores", f"cannot read {path} as CSV ({exc})") from None
    if not numbered:
        raise ConfigurationError("scores", f"{path} is empty")
    lines, rows = [line for line, _ in numbered], [row for _, row in numbered]
    header = [cell.strip() for cell in rows[0]]
    labels = [c for c in header if c in LABEL_COLUMNS]
    unknown = [c for c in header if c != "score" and c not in LABEL_COLUMNS]
    if unknown or "score" not in header or len(labels) != 1 or len(header) != 2:
        raise ConfigurationError("scores", f"{path}: the header must be 'score' and one of 'world' (multi-run) "
                                 f"or 'included' (one-run), got {','.join(header)!r}")
    for line, row in zip(lines[1:], rows[1:], strict=True):
        if len(row) != 2:
            raise ConfigurationError("scores", f"{path} line {line}: expected 2 fields, got {len(row)}")
    i, j = header.index("score"), header.index(labels[0])
    return (LABEL_COLUMNS[labels[0]], [r[i].strip() for r in rows[1:]], [r[j].strip() for r in rows[1:]],
            lines[1:])


def _numbers(name: str, cells: list[str], path: Path, lines: list[int]) -> np.ndarray:
    try:
        return np.array([float(c) for c in cells], dtype=float)
    except ValueError:
        bad = next(k for k, c in enumerate(cells) if not _is_float(c))
        line = lines[bad]
        raise ConfigurationError("scores", f"{path} line {line}: {name} {cells[bad]!r} is not a number") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_npy(path: Path, kind: str | None) -> tuple[str, np.ndarray, np.ndarray]:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        reason = "not a .npy file, or it holds Python objects" if isinstance(exc, ValueError) else exc
        raise ConfigurationError("scores", f"cannot read {path} as a .npy array ({reason})") from None
    if array.dtype.names:
        names = set(array.dtype.names)
        labels = [n for n in array.dtype.names if n in LABEL_COLUMNS]
        if names - {"score", *LABEL_COLUMNS} or "score" not in names or len(labels) != 1:
            raise ConfigurationError("scores", f"{path}: fields must be 'score' and one of 'world' or 'included', "
                                     f"got {sorted(names)}")
        nested = [n for n in ("score", labels[0]) if array.dtype[n].shape]
        if nested:
            raise ConfigurationError("scores", f"{path}: field {nested[0]!r} holds an array of shape "
                                     f"{array.dtype[nested[0]].shape} per row; give one number per row")
        found = LABEL_COLUMNS[labels[0]]
        return found, _as_float(array["score"], path), _as_float(array[labels[0]], path)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ConfigurationError("scores", f"{path}: expected a structured array or shape (n, 2), got {array.shape}")
    if kind is None:
        raise ConfigurationError("kind", f"{path} is a plain (n, 2) array: say --kind multi-run or one-run")
    return kind, _as_float(array[:, 0], path), _as_float(array[:, 1], path)


def _as_float(values, path: Path) -> np.ndarray:
    """Real numbers as floats: booleans, integers, floats, or text that parses; complex numbers (whose
    imaginary part a cast would drop), dates and times are refused."""
    if values.dtype.kind not in "biufUS":
        raise ConfigurationError("scores", f"{path}: values must be real numbers, got dtype {values.dtype}")
    try:
        return np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ConfigurationError("scores", f"{path}: values must be numbers") from None


def _check(kind: str, scores: np.ndarray, labels: np.ndarray, path: Path) -> np.ndarray:
    """The labels as booleans, after checking scores and labels (ConfigurationError otherwise)."""
    name = "world" if kind == "multi-run" else "included"
    if not np.all(np.isfinite(scores)):
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ConfigurationError("scores", f"{path}: score {scores[row]} of row {row + 1} is not a finite number")
    if not np.all((labels == 0) | (labels == 1)):
        row = int(np.flatnonzero((labels != 0) & (labels != 1))[0])
        raise ConfigurationError("scores", f"{path}: {name} must be 0 or 1, row {row + 1} has {labels[row]}")
    flags = labels == 1
    counts = (int(np.count_nonzero(~flags)), int(np.count_nonzero(flags)))
    if kind == "multi-run" and min(counts) < MIN_PER_WORLD:
        raise ConfigurationError("scores", f"{path}: too few scores ({counts[0]} with world 0, {counts[1]} with "
                                 f"world 1); a multi-run audit needs at least {MIN_PER_WORLD} per world")
    if kind == "one-run" and (scores.size < MIN_CANARIES or min(counts) == 0):
        raise ConfigurationError("scores", f"{path}: too few canaries ({counts[1]} included, {counts[0]} not); a "
                                 f"one-run audit needs at least {MIN_CANARIES} with both kinds present")
    return flags


def read_scores(path, kind: str | None = None) -> Scores:
    """The scores file at ``path`` (CSV or .npy), validated; ``kind`` must agree with a CSV's header."""
    path = Path(path)
    if kind is not None and kind not in KINDS:
        raise ConfigurationError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    if path.is_dir():
        raise ConfigurationError("scores", f"{path} is a directory; name a CSV or .npy file")
    if not path.is_file():
        raise ConfigurationError("scores", f"no such file: {path}")
    if path.suffix.lower() == ".npy":
        found, scores, labels = _read_npy(path, kind)
    else:
        found, score_cells, label_cells, lines = _csv_columns(path)
        scores, labels = _numbers("score", score_cells, path, lines), _numbers(
            "world" if found == "multi-run" else "included", label_cells, path, lines)
    if kind is not None and kind != found:
        raise ConfigurationError("kind", f"--kind {kind} but {path} holds {found} data")
    return Scores(found, scores, _check(found, scores, labels, path), str(path))
