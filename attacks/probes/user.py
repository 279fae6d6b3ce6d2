"""A user's own mechanism, audited black-box with a learned score (in the spirit of DP-Sniper).

The user supplies a callable ``f(dataset, rng) -> array`` (given as ``"module:function"``) and two
neighbouring datasets in a TOML file (keys ``without`` and ``with``, world 0 and world 1). A classifier
is trained on fresh runs of both worlds (``fit``, on the training half of the trials) and its output is
the score on the other half, so the threshold attack it defines is independent of the test scores and
the estimators' bounds stay valid. If the callable has an attribute ``batched = True`` it is called as
``f(dataset, rng, size)`` and must return ``size`` outputs at once.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, read_toml
from attacks.probes.base import Probe, check_world

CLASSIFIERS = ("logistic", "boosting")


def load_callable(spec: str):
    """Import ``"module:function"`` (ConfigurationError naming ``mechanism`` if it cannot be)."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ConfigurationError("mechanism", f"expected 'module:function', got {spec!r}")
    module_name, attr = spec.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # like ``python -m``: modules in the working directory are importable
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        raise ConfigurationError(
            "mechanism", f"cannot import module {module_name!r} ({type(exc).__name__}: {exc})"
        ) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigurationError("mechanism", f"{module_name!r} has no callable {attr!r}")
    return function


def _convert(value):
    if isinstance(value, list):
        try:
            return np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return [_convert(v) for v in value]
    if isinstance(value, dict):
        return {k: _convert(v) for k, v in value.items()}
    return value


def load_datasets(path: str) -> tuple:
    """The two neighbouring datasets (without, with) from a TOML file; numeric lists become arrays."""
    data = read_toml(path, "datasets")
    data = data.get("datasets", data)
    missing = [k for k in ("without", "with") if k not in data]
    if missing:
        raise ConfigurationError("datasets", f"{path!r} lacks the key {missing[0]!r} (need 'without' and 'with')")
    return _convert(data["without"]), _convert(data["with"])


def _as_outputs(raw, expected: int | None, batched: bool) -> np.ndarray:
    try:
        out = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ConfigurationError("mechanism", f"returned non-numeric output {str(raw)[:60]!r}") from None
    out = out.reshape(expected, -1) if batched else out.reshape(1, -1)
    if out.shape[1] == 0 or not np.all(np.isfinite(out)):
        raise ConfigurationError("mechanism", "returned empty or non-finite output")
    return out


@dataclass
class UserMechanismProbe(Probe):
    """Black-box audit of ``function`` ("module:function") on the datasets in ``datasets``, learned score."""

    function: str = ""
    datasets: str = ""
    classifier: str = "logistic"
    delta: float = 1e-5

    name = "user"
    threat_model = "output only"
    description = "user mechanism f(dataset, rng); classifier score learned on held-out runs (DP-Sniper style)"
    batch_size = 10_000
    needs_training = True

    def __post_init__(self):
        if self.classifier not in CLASSIFIERS:
            raise ConfigurationError("classifier", f"choose one of {', '.join(CLASSIFIERS)}")
        self.default_delta = self.delta
        self._function = load_callable(self.function)
        self._datasets = load_datasets(self.datasets)
        self._model = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_function"] = None  # re-imported where the batch runs
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._function is None:
            self._function = load_callable(self.function)

    def outputs(self, world: int, trials: int, rng) -> np.ndarray:
        """Raw outputs, shape (trials, output size)."""
        dataset = self._datasets[check_world(world)]
        function = self._function
        try:
            if getattr(function, "batched", False):
                return _as_outputs(function(dataset, rng, int(trials)), int(trials), True)
            rows = [_as_outputs(function(dataset, rng), None, False) for _ in range(int(trials))]
        except ConfigurationError:
            raise
        except Exception as exc:  # noqa: BLE001 - a crash in user code is reported in one line
            raise ConfigurationError("mechanism", f"{self.function} raised {type(exc).__name__}: {exc}") from None
        if len({r.shape for r in rows}) > 1:
            raise ConfigurationError("mechanism", "returned outputs of different sizes")
        return np.concatenate(rows)

    @staticmethod
    def _features(outputs: np.ndarray) -> np.ndarray:
        return np.concatenate([outputs, outputs**2], axis=1)

    def fit(self, trials: int, rng) -> UserMechanismProbe:
        """A copy whose score is a classifier trained on ``trials`` fresh runs of each world."""
        x = np.concatenate([self.outputs(0, trials, rng), self.outputs(1, trials, rng)])
        y = np.repeat([0, 1], trials)
        if self.classifier == "logistic":
            from sklearn.linear_model import LogisticRegression
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            model.fit(self._features(x), y)
        else:
            from sklearn.ensemble import HistGradientBoostingClassifier

            model = HistGradientBoostingClassifier(random_state=int(rng.integers(2**31)))
            model.fit(x, y)
        fitted = dataclasses.replace(self)
        fitted._model = model
        fitted.registry_name = getattr(self, "registry_name", self.name)
        return fitted

    def scores(self, world, trials, rng):
        if self._model is None:
            raise ConfigurationError("probe", "the user probe must be trained (fit) before scoring")
        x = self.outputs(world, trials, rng)
        if self.classifier == "logistic":
            return self._model.decision_function(self._features(x))
        proba = self._model.predict_proba(x)[:, 1]
        return np.log(np.clip(proba, 1e-300, None)) - np.log(np.clip(1.0 - proba, 1e-300, None))

    def params(self) -> dict:
        return {
            "function": self.function,
            "datasets": self.datasets,
            "classifier": self.classifier,
            "delta": self.delta,
        }
