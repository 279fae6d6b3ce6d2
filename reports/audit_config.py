"""Audit configuration files (TOML): parsing and validation into ``attacks.audit.TargetSpec`` objects.

Layout::

    title = "..."            # optional
    seed = 2026              # optional (the command's --seed wins)
    confidence = 0.95        # optional

    [[target]]
    name = "..."
    algorithm = "dp-fts-de" | "dp-fts" | "dp-fed-pne" | "mechanism"
    description = "..."      # optional
    accountants = ["moments", "rdp", "pld", "prv", "exact", "dpa-rdp"]   # optional
    utility_runs = 2         # optional
    reference_delta = 1e-5   # optional: the conventional delta the report also accounts at
    [target.parameters]      # the algorithm's parameters (or the bare mechanism's)
    [target.claim]           # epsilon, delta (a number or "N^-x"), neighbouring, unit, [source, units]
    [[target.probes]]        # name (see `dpaudit attack --help`), kind, trials, [params, batch_size]

Every problem raises ``ConfigurationError`` naming the field (for example ``target[0].claim.delta``).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from accounting.errors import ConfigurationError, require_number
from accounting.registry import parse_accountant_names
from attacks.audit import ProbeSpec, TargetSpec
from attacks.audit_targets import check_algorithm
from reports.model import claim_in_words

DEFAULT_CONFIG = Path(__file__).with_name("defaults") / "default_audit.toml"
_POWER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*\^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
TOP_KEYS = {"title", "seed", "confidence", "target"}
TARGET_KEYS = {
    "name",
    "algorithm",
    "description",
    "accountants",
    "utility_runs",
    "reference_delta",
    "parameters",
    "claim",
    "probes",
}
CLAIM_KEYS = {"epsilon", "delta", "neighbouring", "unit", "source", "units", "unit_plural"}
PROBE_KEYS = {"name", "kind", "trials", "params", "batch_size"}


def parse_delta(field: str, value) -> float:
    """A delta given as a number or as a power such as "29^-1.1"; must lie in (0, 1)."""
    if isinstance(value, str):
        match = _POWER.match(value)
        if not match:
            raise ConfigurationError(field, f'expected a number or a power like "29^-1.1", got {value!r}')
        value = float(match.group(1)) ** float(match.group(2))
    return require_number(field, value, low=0, high=1, low_open=True, high_open=True)


def _unknown(field: str, data: dict, allowed: set) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigurationError(
            f"{field}.{extra[0]}" if field else extra[0],
            f"unknown key; expected one of {', '.join(sorted(allowed))}",
        )


def _table(field: str, value) -> dict:
    if not isinstance(value, dict):
        raise ConfigurationError(field, f"expected a table, got {type(value).__name__}")
    return value


def _claim(field: str, data) -> dict:
    if data is None:
        raise ConfigurationError(
            field, "missing: every target needs a claim (epsilon, delta, neighbouring, unit)"
        )
    data = _table(field, data)
    _unknown(field, data, CLAIM_KEYS)
    for key in ("epsilon", "delta", "neighbouring", "unit"):
        if key not in data:
            raise ConfigurationError(f"{field}.{key}", "missing")
    claim = {
        "epsilon": require_number(f"{field}.epsilon", data["epsilon"], low=0, low_open=True),
        "delta": parse_delta(f"{field}.delta", data["delta"]),
        "neighbouring": str(data["neighbouring"]).lower().replace("_", "-"),
        "unit": str(data["unit"]),
    }
    if claim["neighbouring"] not in ("add-remove", "replace-one"):
        raise ConfigurationError(
            f"{field}.neighbouring", f"choose add-remove or replace-one, got {data['neighbouring']!r}"
        )
    if isinstance(data["delta"], str):
        claim["delta_given"] = data["delta"].replace(" ", "")
    if "source" in data:
        claim["source"] = str(data["source"])
    if "units" in data:
        claim["units"] = int(require_number(f"{field}.units", data["units"], low=1, integer=True))
        claim["unit_plural"] = str(data.get("unit_plural", "units"))
    claim["text"] = claim_in_words(claim)
    return claim


def _probe(field: str, data) -> ProbeSpec:
    data = _table(field, data)
    _unknown(field, data, PROBE_KEYS)
    if "name" not in data:
        raise ConfigurationError(f"{field}.name", "missing")
    from attacks.probes import PROBES

    if data["name"] not in PROBES:
        raise ConfigurationError(
            f"{field}.name", f"unknown probe {data['name']!r}; choose from {', '.join(PROBES)}"
        )
    kind = data.get("kind", "end-to-end" if "end-to-end" in data["name"] else "mechanism")
    if kind not in ("mechanism", "end-to-end"):
        raise ConfigurationError(f"{field}.kind", f"choose mechanism or end-to-end, got {kind!r}")
    if "trials" not in data:
        raise ConfigurationError(f"{field}.trials", "missing: the probe's trial budget (trials per world)")
    trials = int(require_number(f"{field}.trials", data["trials"], low=1, integer=True))
    batch = data.get("batch_size")
    if batch is not None:
        batch = int(require_number(f"{field}.batch_size", batch, low=1, integer=True))
    params = dict(_table(f"{field}.params", data.get("params", {})))
    _check_probe_params(f"{field}.params", str(data["name"]), params)
    return ProbeSpec(str(data["name"]), kind, trials, params, batch)


def _check_probe_params(field: str, name: str, params: dict) -> None:
    """Refuse parameters the probe does not have (a probe not built yet is reported when the audit runs)."""
    import dataclasses

    from attacks.probes import probe_class

    try:
        cls = probe_class(name)
    except ConfigurationError:
        return
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigurationError(
            f"{field}.{unknown[0]}", f"not a parameter of probe {name!r}; known: {', '.join(sorted(known))}"
        )


def _check_system(field: str, spec: TargetSpec) -> None:
    """Build the target's mechanism now, so a bad parameter is reported before any work starts."""
    from attacks.audit_targets import protected_units, target_mechanism

    try:
        target_mechanism(spec)
        protected_units(spec)
    except ConfigurationError as exc:
        message = str(exc).split(": ", 1)[-1]
        raise ConfigurationError(f"{field}.parameters.{exc.field}", message) from None


def _target(field: str, data) -> TargetSpec:
    data = _table(field, data)
    _unknown(field, data, TARGET_KEYS)
    if "algorithm" not in data:
        raise ConfigurationError(f"{field}.algorithm", "missing")
    try:
        algorithm = check_algorithm(data["algorithm"])
    except ConfigurationError as exc:
        raise ConfigurationError(f"{field}.algorithm", str(exc).split(": ", 1)[1]) from None
    claim = _claim(f"{field}.claim", data.get("claim"))
    probes = data.get("probes", [])
    if not isinstance(probes, list):
        raise ConfigurationError(f"{field}.probes", "expected an array of tables ([[target.probes]])")
    try:
        accountants = tuple(parse_accountant_names(data.get("accountants")))
    except ConfigurationError as exc:
        raise ConfigurationError(f"{field}.accountants", str(exc).split(": ", 1)[1]) from None
    spec = TargetSpec(
        name=str(data.get("name", algorithm)),
        algorithm=algorithm,
        claim=claim,
        description=str(data.get("description", "")),
        parameters=dict(_table(f"{field}.parameters", data.get("parameters", {}))),
        probes=tuple(_probe(f"{field}.probes[{i}]", p) for i, p in enumerate(probes)),
        accountants=accountants if "accountants" in data else TargetSpec.accountants,
        utility_runs=int(
            require_number(f"{field}.utility_runs", data.get("utility_runs", 1), low=1, integer=True)
        ),
        reference_delta=parse_delta(f"{field}.reference_delta", data.get("reference_delta", 1e-5)),
    )
    _check_system(field, spec)
    return spec


def parse_config(text: str, source: str = "<string>") -> dict:
    """Validate a configuration; returns {title, seed, confidence, targets, raw, text, hash, source}."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError("config", f"{source} is not valid TOML ({exc})") from None
    _unknown("", raw, TOP_KEYS)
    targets = raw.get("target")
    if not targets:
        raise ConfigurationError("target", "missing: the configuration audits no target ([[target]])")
    if not isinstance(targets, list):
        raise ConfigurationError("target", "expected an array of tables ([[target]])")
    specs = [_target(f"target[{i}]", t) for i, t in enumerate(targets)]
    confidence = require_number(
        "confidence", raw.get("confidence", 0.95), low=0, high=1, low_open=True, high_open=True
    )
    seed = int(require_number("seed", raw.get("seed", 0), low=0, integer=True))
    return {
        "title": str(raw.get("title", "dpfed-audit report")),
        "seed": seed,
        "confidence": confidence,
        "targets": specs,
        "raw": raw,
        "text": text,
        "source": source,
        "hash": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def load_config(path: str | Path | None) -> dict:
    """Read and validate a configuration file (the built-in default when ``path`` is None)."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError("config", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError("config", f"cannot read {path} ({exc})") from None
    source = "built-in default (reports/defaults/default_audit.toml)" if path == DEFAULT_CONFIG else str(path)
    return parse_config(text, source)
