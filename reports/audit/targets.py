"""Audited systems ("targets"): one class per system, registered by algorithm name.

A target is built once from its ``TargetSpec``: it validates its parameters, builds its configuration
and its mechanism object, and from then on offers

- ``mechanism`` and ``releases`` (what it releases and how often), ``composition()``;
- ``units()``: how many units of privacy the data holds, and what they are called;
- ``calibration()``: the Gaussian calibration formula it uses, if any;
- ``report_parameters()``: its parameters as the report shows them;
- ``utility(seed, runs, log)``: a utility run (or ``Unavailable``);
- ``probe_parameters(name)``: the parameters with which probe ``name`` attacks exactly this target's
  setting, or ``ProbeDeclined`` saying why it cannot.

Adding a system is one small class (subclass ``BaseTarget``: ``algorithms``, ``binders`` from probe names
to its binder methods, ``__init__`` building ``mechanism`` and ``releases``, ``report_parameters``,
``utility``), decorated with ``@register``, in a module listed in ``TARGET_MODULES``.

A non-private system (the seeds' DUETS, FedZero, FKM) is a target too: its ``mechanism`` is None (it adds no
noise), so every accountant reports epsilon = infinity (the limit of vanishing noise), a finite claim is
REFUTED by the tight accountants and its probes can reach only the estimator's ceiling; the verdict table
then says VIOLATION. A system that claims nothing is audited against the claim its private variant makes.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import ClassVar, Protocol

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, Neighbouring, Sampling, SubsampledGaussian
from reports.audit.model import TargetSpec, Unavailable, UtilitySection

MAX_UTILITY_POINTS = 120
# probe parameters a configuration may set although the target binds them: the DP-FTS-DE end-to-end
# probe's cheaper preset (its release fields are checked equal to the target's)
PROBE_MAY_OVERRIDE = frozenset({"preset"})
TARGETS: dict[str, type] = {}
# modules whose ``@register`` classes are the audited systems (a new system adds its module here)
TARGET_MODULES = (
    "reports.audit.target_fts",
    "reports.audit.target_pne",
    "reports.audit.target_mechanism",
    "reports.audit.target_duets",
    "reports.audit.target_fedzero",
    "reports.audit.target_fkm",
    "reports.audit.target_flower",
    "reports.audit.target_dpsgd",
)


class ProbeDeclined(Exception):
    """A probe cannot attack this target's setting; ``reason`` says why (shown in the report)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class Target(Protocol):
    algorithms: ClassVar[tuple[str, ...]]
    spec: TargetSpec
    mechanism: object
    releases: int

    def composition(self) -> Composition: ...
    def tradeoff(self): ...
    def units(self) -> tuple[int | None, str]: ...
    def calibration(self) -> str | None: ...
    def report_parameters(self) -> dict: ...
    def utility(self, seed: np.random.SeedSequence, runs: int, log) -> UtilitySection | Unavailable: ...
    def probe_parameters(self, name: str, explicit: dict) -> dict: ...
    def findings(self, verdict, probes) -> list: ...


def register(cls):
    """Class decorator: make ``cls`` the target of each name in ``cls.algorithms``."""
    for name in cls.algorithms:
        TARGETS[name] = cls
    return cls


def build_target(spec: TargetSpec) -> Target:
    """The target object of ``spec`` (ConfigurationError for an unknown algorithm or bad parameters)."""
    _load_builtin_targets()
    if spec.algorithm not in TARGETS:
        raise ConfigurationError(
            "algorithm", f"unknown algorithm {spec.algorithm!r}; choose one of {', '.join(TARGETS)}"
        )
    return TARGETS[spec.algorithm](spec)


def _load_builtin_targets() -> None:
    import importlib

    for module in TARGET_MODULES:
        importlib.import_module(module)


class BaseTarget:
    """What every target shares: the spec, the composition, the claimed units, declining probes."""

    algorithms: ClassVar[tuple[str, ...]] = ()
    #: probe name -> name of the method returning its parameters for this target
    binders: ClassVar[dict[str, str]] = {}
    #: the target runs an implementation of the user's (not our own re-creation of a paper's system): with no
    #: probe listed it runs ``default_probes``, and with ``probes = []`` and no ``implementation_test`` of its own
    #: its verdict cannot be a plain PASS (``verdicts.with_untested_implementation``)
    runs_implementation: ClassVar[bool] = False

    @classmethod
    def parameter_schema(cls) -> dict:
        """The keys ``[target.parameters]`` takes, as the strict reader checks them (``accounting.strict``)."""
        return {}

    def default_probes(self) -> tuple:
        """The probes run when the configuration lists none (``ProbeSpec``s, budgets planned by the target)."""
        return ()

    def implementation_test(self) -> str | None:
        """What the target's own checks measure of the run (None: nothing; the probes are its only test)."""
        return None

    def __init__(self, spec: TargetSpec):
        self.spec = spec
        self.claim = spec.claim

    def composition(self) -> Composition | None:
        """What the run releases about one unit (None: it adds no noise, nothing private to compose)."""
        return None if self.mechanism is None else Composition.of(self.mechanism, self.releases)

    def tradeoff(self):
        """The best ROC any attack can reach on this target (computed once; every probe draws it)."""
        if not hasattr(self, "_tradeoff"):
            from reports.audit.accounting import no_noise_tradeoff, tradeoff_curve

            if self.mechanism is None:
                self._tradeoff = no_noise_tradeoff()
            else:
                self._tradeoff = tradeoff_curve(self.mechanism, self.releases)
        return self._tradeoff

    def findings(self, verdict, probes) -> list:
        """Findings only this kind of system has (``reports.audit.findings`` computes the common ones)."""
        return []

    def measured_probes(self, confidence: float) -> tuple:
        """Probe sections of tests the target's own run already made (``ProbeSection``s that ran: e.g. canaries
        through the user's own training); the verdict counts them as it counts the probes. None by default."""
        return ()

    def units(self) -> tuple[int | None, str]:
        if self.claim.units is not None:
            return self.claim.units, self.claim.unit_plural
        return self.default_units()

    def default_units(self) -> tuple[int | None, str]:
        return None, "units"

    def calibration(self) -> str | None:
        return None

    def applicable_probes(self) -> tuple[str, ...]:
        return (*self.binders, "user")

    def check_probe(self, name: str) -> None:
        """ConfigurationError if probe ``name`` does not attack this kind of system at all."""
        if name not in self.applicable_probes():
            raise ConfigurationError(
                "name",
                f"probe {name!r} does not attack a {self.spec.algorithm} "
                f"target; choose from {', '.join(self.applicable_probes())}",
            )

    def probe_parameters(self, name: str, explicit: dict) -> dict:
        """Parameters with which probe ``name`` attacks this target: the target's setting, then the
        configuration's ``explicit`` parameters (ProbeDeclined if the probe cannot attack it)."""
        self.check_probe(name)
        if name == "user":  # the user's own mechanism: only the delta of the claim is shared
            return {"delta": self.claim.delta, **explicit}
        bound = getattr(self, self.binders[name])(name, explicit)
        clash = sorted(set(bound) & set(explicit) - PROBE_MAY_OVERRIDE)
        if clash:
            raise ConfigurationError(
                f"params.{clash[0]}",
                f"set by the target (probe {name!r} attacks the target's own setting); "
                "change it in the target's [parameters] instead",
            )
        return {**bound, **explicit}


def decline_unless_add_remove_poisson(mechanism, probe: str) -> None:
    """A probe that models add/remove neighbours and Poisson sampling declines any other setting."""
    if not isinstance(mechanism, SubsampledGaussian):
        return
    if mechanism.sampling is not Sampling.POISSON:
        raise ProbeDeclined(
            f"{probe} simulates Poisson sampling; this target samples "
            f"{mechanism.sampling.value} and no probe attacks that release yet"
        )
    if mechanism.neighbouring is not Neighbouring.ADD_REMOVE:
        raise ProbeDeclined(
            f"{probe} plays add/remove worlds (the canary present or absent); the claim "
            f"is for {mechanism.neighbouring.value} neighbours"
        )


def decline_preset_mismatch(name: str, **setting) -> None:
    """ProbeDeclined if probe ``name`` (its class default, or its registry preset) fixes one of ``setting``'s
    keys to another value: a variant such as a reward-level or non-private probe must not be silently turned
    into another."""
    import dataclasses

    from attacks.probes import PROBES, probe_class

    defaults = {f.name: f.default for f in dataclasses.fields(probe_class(name))}
    preset = {**defaults, **PROBES[name][1]}
    for key, value in setting.items():
        if key in preset and preset[key] != value:
            raise ProbeDeclined(f"{name} attacks {key} = {preset[key]}; this target has {key} = {value}")


def decline_uncarried_fields(name: str, config, carried, ignored=()) -> None:
    """ProbeDeclined if ``config`` sets a field away from its default that probe ``name`` cannot carry (the
    probe would replay another setting than the target's)."""
    import dataclasses

    changed = [
        f.name
        for f in dataclasses.fields(config)
        if f.name not in carried and f.name not in ignored and getattr(config, f.name) != f.default
    ]
    if changed:
        raise ProbeDeclined(f"{name} replays the defaults of {', '.join(changed)}; this target sets them")


def split_parameters(spec: TargetSpec, schema: dict, privacy_schema: dict) -> tuple[dict, dict]:
    """A target's parameters checked strictly against ``schema`` (its configuration's fields and
    ``privacy_schema``): (configuration fields, privacy fields). Only a private variant ("dp-...") takes privacy
    fields."""
    from accounting import strict

    params = strict.check_table("parameters", dict(spec.parameters), schema)
    privacy = {k: params.pop(k) for k in list(params) if k in privacy_schema}
    if privacy and not spec.algorithm.startswith("dp-"):
        raise ConfigurationError(
            f"parameters.{next(iter(privacy))}", f"not a parameter of non-private {spec.algorithm}"
        )
    return params, privacy


def regret_utility(target, metric: str, curves: np.ndarray, releases, context: dict) -> UtilitySection:
    """The utility section of a regret curve (runs, rounds), with the epsilon spent after ``releases[t]``
    releases at round t + 1 (RDP accountant)."""
    claim = target.claim
    return utility_curve(
        metric,
        np.arange(1, curves.shape[1] + 1),
        curves,
        spent_over_rounds(target.mechanism, releases, claim.delta),
        system=target.spec.algorithm,
        epsilon_accountant="rdp",
        delta=claim.delta,
        context=context,
    )


def schema_of_dataclass(cls, extra: dict | None = None) -> dict:
    """A strict-table schema (``accounting.strict``) from a dataclass's field types."""
    from accounting import strict

    kinds = {int: strict.INTEGER, float: strict.NUMBER, str: strict.STRING, bool: strict.BOOLEAN}
    fields = {f.name for f in dataclasses.fields(cls)}  # not a ClassVar such as StrictConfig.toml_table
    schema = {}
    for name, hint in typing.get_type_hints(cls).items():
        if name not in fields:
            continue
        options = [h for h in typing.get_args(hint) if h is not type(None)] or [hint]
        kind = kinds.get(options[0], strict.ANY_TABLE)
        schema[name] = strict.NUMBER if kind is strict.INTEGER and float in options else kind
    return {**schema, **(extra or {})}


def spent_over_rounds(mechanism, releases, delta: float) -> np.ndarray:
    """Epsilon spent (RDP accountant, an upper bound) after each round, given how many releases each round
    has made so far; a run without noise (``mechanism`` None) has spent infinity after its first release."""
    from accounting.rdp import epsilon_curve

    releases = np.asarray(releases, dtype=int)
    if mechanism is None:
        return np.where(releases > 0, math.inf, 0.0)
    spent = np.zeros(len(releases))
    counts, where = np.unique(releases[releases > 0], return_inverse=True)
    if counts.size:
        spent[releases > 0] = epsilon_curve(mechanism, counts, delta)[where]
    return spent


def utility_curve(metric: str, rounds, curves: np.ndarray, spent, **fields) -> UtilitySection:
    """A utility section from per-run curves (runs, rounds): mean, standard error, thinned to a plot."""
    runs = curves.shape[0]
    mean = curves.mean(axis=0)
    stderr = curves.std(axis=0, ddof=1) / math.sqrt(runs) if runs > 1 else np.full(mean.shape, np.nan)
    idx = np.unique(np.linspace(0, len(rounds) - 1, min(len(rounds), MAX_UTILITY_POINTS)).round().astype(int))
    return UtilitySection(
        metric=metric,
        rounds=tuple(int(rounds[i]) for i in idx),
        values=tuple(float(mean[i]) for i in idx),
        stderr=tuple(float(stderr[i]) if np.isfinite(stderr[i]) else None for i in idx),
        runs=runs,
        final=float(mean[-1]),
        epsilon_spent=tuple(float(spent[i]) for i in idx),
        **fields,
    )
