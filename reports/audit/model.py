"""The typed model of an audit: what is claimed, what each section found, and the verdicts.

Everything here is a frozen dataclass holding numbers and identifiers, never prose (the renderers in
``reports/render_*.py`` write the words). ``to_plain`` turns a result into JSON-ready data once, at the
boundary, and ``from_plain`` restores a cached section from that data.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass, field

from attacks.files import json_safe


class Analytic(enum.Enum):
    """The accountants' verdict on a claim."""

    PROVED = "PROVED"  # a valid upper bound is at most the claim
    REFUTED = "REFUTED"  # a tight accountant exceeds the claim
    UNDETERMINED = "UNDETERMINED"


class Empirical(enum.Enum):
    """The probes' verdict on a claim."""

    VIOLATION = "VIOLATION"  # a rigorous lower bound exceeds the claim
    PASS = "PASS"  # no evidence against it, and the budget could have found some
    INCONCLUSIVE = "INCONCLUSIVE"  # the estimator's ceiling at this budget is below the claim


class Status(enum.Enum):
    PASS = "PASS"
    VIOLATION = "VIOLATION"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True)
class Claim:
    """An (epsilon, delta)-DP claim with its neighbouring relation and unit of privacy."""

    epsilon: float
    delta: float
    neighbouring: str  # "add-remove" | "replace-one"
    unit: str
    source: str = ""
    delta_given: str | None = None  # the delta as written (for example "29^-1.1")
    units: int | None = None  # how many units the data holds (for judging delta), if stated
    unit_plural: str = "units"


@dataclass(frozen=True)
class ProbeSpec:
    """A probe as configured: registry name, depth, trial budget, explicit parameters."""

    name: str
    kind: str  # "mechanism" | "end-to-end"
    trials: int
    params: dict = field(default_factory=dict)
    batch_size: int | None = None


@dataclass(frozen=True)
class TargetSpec:
    """One audited system as configured (the ``Target`` built from it holds the objects)."""

    name: str
    algorithm: str
    claim: Claim
    description: str = ""
    parameters: dict = field(default_factory=dict)
    probes: tuple[ProbeSpec, ...] = ()
    accountants: tuple[str, ...] = ("moments", "rdp", "pld", "prv", "exact", "dpa-rdp")
    utility_runs: int = 1
    reference_delta: float = 1e-5
    base_dir: str = ""  # the configuration file's directory: a parameter naming a path is relative to it
    allow_code: bool = False  # the audit may run code the configuration names (``--allow-code``)
    probes_given: bool = False  # the configuration lists probes (``probes = []`` included: an explicit opt-out)


@dataclass(frozen=True)
class Unavailable:
    """A section that could not be produced, and why."""

    reason: str
    available: bool = False


@dataclass(frozen=True)
class Finding:
    """A computed observation about one target: ``id`` names the rule, ``values`` its numbers."""

    id: str
    severity: str  # "critical" | "high" | "medium" | "low" | "info"
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AccountantRow:
    """One accountant's epsilon for one neighbouring relation and sampling scheme (``claimed_setting``: the
    claim's own; only those rows decide the analytic verdict)."""

    accountant: str
    neighbouring: str
    sampling: str
    delta: float
    epsilon: float | None
    status: str
    reason: str
    claimed_setting: bool


@dataclass(frozen=True)
class Series:
    """A curve of the report: ``y`` against ``x`` (None where there is no value), with its legend ``label``."""

    label: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]


@dataclass(frozen=True)
class Bound:
    """The upper or lower bound a verdict rests on: its value and where it came from."""

    epsilon: float
    source: str  # an accountant name, or "estimator on probe"


@dataclass(frozen=True)
class AccountingSection:
    """The accountants' epsilons for the claimed mechanism composed ``releases`` times, at the claim's delta
    (``rows``) and at ``reference_delta``, with epsilon over the rounds."""

    mechanism: str
    releases: int
    rows: tuple[AccountantRow, ...]
    notes: tuple[str, ...]
    reference_delta: float
    at_reference_delta: tuple[AccountantRow, ...]
    over_rounds: tuple[Series, ...]
    over_rounds_reason: str | None = None

    def claimed_rows(self) -> list[AccountantRow]:
        return [r for r in self.rows if r.claimed_setting and r.status == "ok"]

    def best_upper_bound(self) -> Bound | None:
        """The smallest epsilon of the claimed setting (every accountant is an upper bound)."""
        ok = self.claimed_rows()
        if not ok:
            return None
        best = min(ok, key=lambda r: r.epsilon)
        return Bound(best.epsilon, best.accountant)


@dataclass(frozen=True)
class CalibrationSection:
    """The check of the noise calibration against the claim, and of the classic formula over a grid of epsilons."""

    method: str  # the calibration the target uses
    epsilon: float
    delta: float
    claim_check: dict  # accounting.calibration.CalibrationCheck as a dict
    failure_threshold: float | None
    grid: tuple[dict, ...]


@dataclass(frozen=True)
class PlannerSection:
    """What the trial budget can show at best: the largest lower bound (``ceiling``) the probes' estimator can
    reach, and the trials a perfect attack would need to reach the claim."""

    trials: int
    delta: float
    confidence: float  # per probe (the audit's confidence split over its probes)
    ceiling: float  # of the estimator the probes use
    perfect_ceiling: float  # of a single threshold fixed in advance (no estimator reaches more)
    trials_for_claim: int | None  # with the estimator the probes use (a perfect attack)
    estimator: str


@dataclass(frozen=True)
class ProbeSection:
    """One probe: ran (with bounds), declined (the target's setting is not one it attacks) or failed."""

    name: str
    kind: str
    outcome: str  # "ran" | "declined" | "failed"
    reason: str | None = None
    threat_model: str = ""
    description: str = ""
    trials: int = 0
    seed: int = 0
    params: dict = field(default_factory=dict)
    bounds: tuple[dict, ...] = ()
    roc: Series | None = None
    auc: float | None = None
    tradeoff: Series | Unavailable | None = None
    true_epsilon: float | None = None
    status: str | None = None  # attacks.verdict status of this probe alone
    p_value: float | None = None
    ceiling: float | None = None  # of the estimator used, at this probe's trials and confidence
    confidence: float | None = None
    batches_total: int = 0
    batches_resumed: int = 0
    power: dict | None = None  # attacks.power.Power.to_dict(): what this budget would refute (None: no reduction)
    findings: tuple[dict, ...] = ()  # a one-run probe's checks of its run: {"code", "severity", "message", "values"}
    roc_metrics: dict | None = None  # attacks.estimators.roc_metrics (descriptive; None: only counts were kept)

    def best_rigorous(self) -> dict | None:
        return max((b for b in self.bounds if b["rigorous"]), key=lambda b: b["epsilon"], default=None)


@dataclass(frozen=True)
class UtilitySection:
    """The utility the private run reaches, round by round, with the epsilon spent by each round."""

    metric: str
    system: str  # "dp-fts-de" | "dp-fed-pne" | ... (the renderer explains the curve from it)
    rounds: tuple[int, ...]
    values: tuple[float, ...]
    stderr: tuple[float | None, ...]
    runs: int
    final: float
    epsilon_spent: tuple[float, ...]
    epsilon_accountant: str
    delta: float
    released: tuple[str, ...] = ()
    context: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AnalyticResult:
    """The accountants' verdict on the claim and the epsilon that decided it."""

    status: Analytic
    epsilon: float | None  # the deciding accountant's epsilon
    accountant: str | None


@dataclass(frozen=True)
class EmpiricalResult:
    """The probes' verdict on the claim, with the best rigorous lower bound and what limited it."""

    status: Empirical
    lower_bound: Bound | None  # the best rigorous lower bound of any probe
    ceiling: float | None  # the largest ceiling of the estimator used, over the probes that ran
    probes_run: int
    failed: tuple[str, ...]  # probes that failed (visible in the summary)
    declined: tuple[str, ...]
    confidence: float  # per probe
    p_value: float | None  # Bonferroni over the probes that ran


@dataclass(frozen=True)
class TargetVerdict:
    """One target's verdict: the row of the verdict table (``rule``) that combined the analytic and empirical
    verdicts, the bounds they rest on, and the gap between them."""

    status: Status
    rule: str  # the row of the verdict table that decided (see reports.audit.verdicts)
    analytic: AnalyticResult
    empirical: EmpiricalResult
    upper_bound: Bound | None
    gap: float | None  # tightest upper bound minus best rigorous lower bound (negative: they contradict)


@dataclass(frozen=True)
class TargetResult:
    """Everything the audit found about one target: what ``report.json`` holds for it."""

    name: str
    algorithm: str
    description: str
    parameters: dict
    claim: Claim
    accounting: AccountingSection | Unavailable
    calibration: CalibrationSection | Unavailable | None
    planner: PlannerSection | Unavailable
    probes: tuple[ProbeSection, ...]
    utility: UtilitySection | Unavailable
    findings: tuple[Finding, ...]
    verdict: TargetVerdict


def to_plain(value):
    """JSON-ready data of a model object (the one sanitiser, ``attacks.files.json_safe``)."""
    return json_safe(value)


def _restore_float(value):
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def from_plain(kind, data):
    """Rebuild a value of type ``kind`` (a model dataclass, tuple, union, enum, float) from plain data."""
    if data is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        if Unavailable in options and isinstance(data, dict) and data.get("available") is False:
            return Unavailable(data["reason"])
        return from_plain(next(k for k in options if k is not Unavailable), data)
    if origin is tuple:
        element = typing.get_args(kind)[0]
        return tuple(from_plain(element, v) for v in data)
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        names = {f.name for f in dataclasses.fields(kind)}
        return kind(**{k: from_plain(hints[k], v) for k, v in data.items() if k in names})
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(data)
    if kind is float:
        return _restore_float(data)
    return data
