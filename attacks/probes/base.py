"""The probe interface: a membership game between two neighbouring worlds.

World 0 is the dataset without the canary, world 1 the neighbouring dataset with it. A probe simulates
what the named adversary sees in ``trials`` independent runs of one world and maps each view to a
score (higher means "canary present"). Scores only need to be a valid test statistic: the estimators'
lower bounds are valid whatever the score, a better score only makes them tighter.

Probes are small picklable dataclasses so that executors can ship them to other processes or to a Dask
cluster; all randomness comes from the ``numpy.random.Generator`` passed to ``scores``.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import inspect
import math
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError, require_number

THREAT_MODELS = ("server view", "broadcast view", "output only")


def check_world(world) -> int:
    """Validate a world index (0 = without canary, 1 = with canary)."""
    if world not in (0, 1) or isinstance(world, bool):
        raise ConfigurationError("world", f"must be 0 (without canary) or 1 (with canary), got {world!r}")
    return int(world)


def check_trials(trials, field: str = "trials") -> int:
    """Validate a number of trials (a whole number >= 1)."""
    return int(require_number(field, trials, low=1, integer=True))


def log_mixture_ratio(dot, mu_sq, rate):
    """log[(1 - q) + q exp(dot - |mu|^2 / 2)]: the log-likelihood ratio of one Poisson-subsampled Gaussian
    release with whitened shift mu, given the whitened output's projection ``dot = <y, mu>`` (an array of
    any backend)."""
    from accounting.mechanisms import array_namespace

    log_in = math.log(rate) + dot - 0.5 * mu_sq
    if rate >= 1.0:
        return log_in
    xp = array_namespace(None, log_in)
    if xp is np:
        return np.logaddexp(math.log1p(-rate), log_in)
    return xp.logaddexp(xp.full_like(log_in, math.log1p(-rate)), log_in)


def backend_full(rng, shape, value: float = 0.0):
    """An array of ``shape`` filled with ``value`` on the generator's backend and device."""
    xp = getattr(rng, "xp", None)
    if xp is None:
        return np.full(shape, float(value))
    return xp.full(shape, float(value), dtype=xp.float64, device=rng.device)


def backend_array(rng, value):
    """``value`` (a NumPy array or number) on the generator's backend and device."""
    from accounting.mechanisms import as_float_array

    xp = getattr(rng, "xp", np)
    return as_float_array(xp, value, rng)


class Probe(abc.ABC):
    """Base class of all probes.

    Subclasses are dataclasses that set the class attributes below and implement ``scores``.
    """

    name: str = ""
    threat_model: str = "output only"
    description: str = ""
    #: trials per executor task; chosen so one batch takes well under a second to a few seconds.
    batch_size: int = 100_000
    #: probes whose score is learned from data implement ``fit`` and set this flag.
    needs_training: bool = False
    #: the delta at which the probe's claim is usually stated (CLI default).
    default_delta: float = 1e-5
    #: rough peak bytes of working memory per trial of a batch (sizes batches against free memory).
    memory_per_trial: int = 64
    #: array backends whose generators ``scores`` accepts (``attacks.backend``).
    backends: tuple = ("numpy",)
    #: a one-run probe (``attacks.probes.one_run``) runs the system once with ``trials`` canaries (``run_once``)
    #: instead of scoring two worlds.
    one_run: bool = False
    #: the command that runs this probe where ``dpaudit attack`` cannot (it needs more than the probe's
    #: parameters, e.g. a Flower app project); ``attack --list`` names it and ``attack`` refuses the probe.
    run_by: str | None = None

    def device_bytes_per_trial(self) -> int:
        """Working memory per trial of a batch on a torch device (sizes CUDA batches against its free
        memory, ``attacks.backend.device_batch_size``); default ``memory_per_trial``."""
        return int(self.memory_per_trial)

    @abc.abstractmethod
    def scores(self, world: int, trials: int, rng: np.random.Generator) -> np.ndarray:
        """Scores of ``trials`` independent runs of ``world`` (shape ``(trials,)``, higher = canary)."""

    def mechanism(self):
        """The mechanism or composition under attack, as the accountants see it (None if unknown)."""
        return None

    def true_epsilon(self, delta: float) -> float | None:
        """Tight epsilon at ``delta`` of the mechanism a correct implementation runs, if known."""
        return None

    def params(self) -> dict:
        """The probe's parameters (JSON-compatible), enough to rebuild it with ``get_probe``."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.generic):
                value = value.item()
            out[f.name] = value
        return out

    def provenance(self) -> dict:
        """What produced the scores beyond the parameters: SHA-256 of the source of the probe's class
        (and its bases) and of the mechanism modules it runs, by module name, and ``project_code`` (every
        file the scores can depend on: an end-to-end probe runs a whole algorithm of ``dpfed`` and reads its
        presets). A checkpoint written under other code is not resumed."""
        import accounting.mechanisms
        import attacks.probes.planted

        modules = {c.__module__ for c in type(self).__mro__ if c.__module__ != "builtins"}
        modules |= {accounting.mechanisms.__name__, attacks.probes.planted.__name__}
        return {**{name: module_hash(name) for name in sorted(modules)}, "project_code": project_code_hash()}

    def bug_name(self) -> str | None:
        """The planted bug this probe runs (its ``bug`` or ``planted_bug`` field), None if correct."""
        bug = self.__dict__.get("bug") or self.__dict__.get("planted_bug")
        return None if bug in (None, "none") else str(bug)

    def metadata(self, delta: float | None = None) -> dict:
        """Name (of the probe class; ``registry_name`` is the name it was asked for, e.g. a planted-bug
        probe's), planted bug, threat model, description, parameters, attacked mechanism and (where known)
        true epsilon."""
        mech = self.mechanism()
        info = {
            "name": self.name,
            "registry_name": getattr(self, "registry_name", self.name),
            "planted_bug": self.bug_name(),
            "threat_model": self.threat_model,
            "description": self.description,
            "params": self.params(),
            "mechanism": repr(mech) if mech is not None else None,
        }
        if delta is not None:
            try:
                info["true_epsilon"] = self.true_epsilon(delta)
            except ConfigurationError:
                raise
            except Exception as exc:  # an accountant failure must not stop an attack
                info["true_epsilon"] = None
                info["true_epsilon_error"] = f"{type(exc).__name__}: {exc}"
        return info


PROJECT_ROOT = Path(__file__).resolve().parents[2]
CODE_PACKAGES = ("accounting", "dpfed", "attacks")  # the layers a probe's scores can depend on
CODE_SUFFIXES = (".py", ".toml")  # source, and data read at run time (dpfed/presets/*.toml)


def project_code_hash(root: Path | None = None) -> str:
    """SHA-256 over the relative paths and contents of every source and data file of ``CODE_PACKAGES``."""
    root = PROJECT_ROOT if root is None else Path(root)
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted(p for p in (root / package).rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file()):
            digest.update(f"{path.relative_to(root)}\0{file_hash(path)}\0".encode())
    return digest.hexdigest()


def file_hash(path) -> str:
    """SHA-256 of a file's bytes ("missing" if it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return "missing"


def module_hash(name: str) -> str:
    """SHA-256 of an imported module's source file ("unknown" for modules without one)."""
    import sys

    module = sys.modules.get(name)
    try:
        path = inspect.getsourcefile(module) if module is not None else None
    except TypeError:
        path = None
    return file_hash(path) if path else "unknown"


def accountant_epsilon(target, delta: float, names=("pld",)) -> float | None:
    """Epsilon of ``target`` at ``delta`` from the first accountant in ``names`` that answers, else None."""
    from accounting.registry import account_all

    for result in account_all(target, delta, names=list(names)):
        if result.ok:
            return float(result.epsilon)
    return None
