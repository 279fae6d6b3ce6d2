"""Loader for the landmine data (``LandmineData.mat``: cell arrays ``feature`` and ``label``, one per field).

The file is user supplied (29 fields, 9 features per location, labels 0/1). Missing or malformed files
raise ``ConfigurationError('landmine_path', ...)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError


def load_landmine(path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return one ``(features (n_i, 9), labels (n_i,))`` pair per field from the ``.mat`` file at ``path``."""
    import scipy.io

    if not path:
        raise ConfigurationError("landmine_path", "no path given for LandmineData.mat")
    path = Path(path)
    if not path.is_file():
        raise ConfigurationError("landmine_path", f"file not found: {path}")
    try:
        data = scipy.io.loadmat(str(path))
    except Exception as exc:  # scipy raises several types for non-.mat content
        raise ConfigurationError(
            "landmine_path", f"not a readable .mat file: {path} ({type(exc).__name__})"
        ) from None
    if "feature" not in data or "label" not in data:
        raise ConfigurationError("landmine_path", f"{path} lacks the 'feature' and 'label' variables")
    features = np.asarray(data["feature"], dtype=object).ravel()
    labels = np.asarray(data["label"], dtype=object).ravel()
    if len(features) == 0 or len(features) != len(labels):
        raise ConfigurationError(
            "landmine_path",
            f"{path}: 'feature' and 'label' must hold the same number "
            f"of fields ({len(features)} vs {len(labels)})",
        )
    fields = []
    for i, (x, y) in enumerate(zip(features, labels, strict=True)):
        try:
            x = np.asarray(x, dtype=float)
            y = np.asarray(y, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ConfigurationError("landmine_path", f"{path}: field {i} is not numeric") from None
        if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 4:
            raise ConfigurationError(
                "landmine_path", f"{path}: field {i} has features {x.shape} and labels {y.shape}"
            )
        fields.append((x, y.astype(int)))
    return fields
