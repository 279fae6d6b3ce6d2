"""A user's own mechanism, audited black-box with a learned score (in the spirit of DP-Sniper).

The user supplies a callable ``f(dataset, rng) -> array`` (given as ``"module:function"``) and two
neighbouring datasets in a TOML file (keys ``without`` and ``with``, world 0 and world 1). A classifier
is trained on fresh runs of both worlds (``fit``, on the training half of the trials) and its output is
the score on the other half, so the threshold attack it defines is independent of the test scores and
the estimators' bounds stay valid. If the callable has an attribute ``batched = True`` it is called as
``f(dataset, rng, size)`` and must return ``size`` outputs at once.
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.strict import ANY_VALUE, Required, read_strict_toml
from attacks.probes.base import Probe, check_world

CLASSIFIERS = ("logistic", "boosting")
# A --datasets file: the two worlds, at the top level or under one [datasets] table; any TOML values.
DATASETS_SCHEMA = {"without": Required(ANY_VALUE), "with": Required(ANY_VALUE)}


def require_code_opt_in(field: str, spec, allowed: bool) -> None:
    """Refuse a configuration file's reference to Python code (``"module:function"`` in ``field``) unless
    the user opted in (``--allow-code``): importing it runs arbitrary code with the user's rights."""
    if spec is not None and not allowed:
        raise ConfigurationError(
            field,
            f"the config names Python code to import ({spec!r}); a config that "
            "runs code needs --allow-code (use it only with files you trust)",
        )


def check_spec(spec) -> str:
    """A ``"module:function"`` string (ConfigurationError naming ``mechanism`` otherwise)."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise ConfigurationError("mechanism", f"expected 'module:function', got {spec!r}")
    return spec


def user_code_path() -> None:
    """Like ``python -m``: modules in the working directory are importable (the worker inherits sys.path)."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())


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
    data = read_strict_toml(path, DATASETS_SCHEMA, "datasets", table="datasets", kind="datasets file")
    return _convert(data["without"]), _convert(data["with"])


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

    #: seconds the worker may spend on one call (a batch, or a training set) before it is stopped; not a
    #: parameter of the game, so it is left out of ``params`` (``dpaudit attack --timeout``)
    timeout: float | None = None

    def __post_init__(self):
        if self.classifier not in CLASSIFIERS:
            raise ConfigurationError("classifier", f"choose one of {', '.join(CLASSIFIERS)}")
        self.default_delta = self.delta
        if self.timeout is not None:
            require_number("timeout", self.timeout, low=0, low_open=True)
        check_spec(self.function)
        self._datasets = load_datasets(self.datasets)
        self._model = None
        self._worker = None
        self.worker()  # imports the function now (in the worker), so a bad one is refused before any work

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_worker"] = None  # each process runs its own worker
        return state

    def worker(self):
        """The worker process that runs the user's code (started on first use in each process)."""
        from attacks.probes.user_worker import UserCodeWorker

        if self._worker is None:
            user_code_path()
            self._worker = UserCodeWorker(self.function, self._datasets, self.timeout)
        self._worker.timeout = self.timeout
        return self._worker

    def outputs(self, world: int, trials: int, rng) -> np.ndarray:
        """Raw outputs, shape (trials, output size), computed in the worker process."""
        return self.worker().outputs(check_world(world), int(trials), rng)

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
        fitted = copy.copy(self)
        fitted._worker = self._worker  # one worker per process
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

    def provenance(self) -> dict:
        """The probe's code, the user function's module source and the datasets file's content (the
        module's file is located without importing it: user code only ever runs in the worker)."""
        import importlib.util

        from attacks.probes.base import file_hash

        info = super().provenance()
        user_code_path()
        try:
            spec = importlib.util.find_spec(self.function.split(":")[0])
        except (ImportError, ValueError):
            spec = None
        source = getattr(spec, "origin", None)
        info["function_source"] = file_hash(source) if source and os.path.isfile(source) else "unknown"
        info["datasets_content"] = file_hash(self.datasets)
        return info

    def params(self) -> dict:
        return {
            "function": self.function,
            "datasets": self.datasets,
            "classifier": self.classifier,
            "delta": self.delta,
        }
