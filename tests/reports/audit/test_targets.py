"""Targets: each builds its configuration and mechanism once, and hands its probes its own setting
(fixed-size sampling, replace-one neighbours, a non-default weight schedule) or declines them."""

from __future__ import annotations

import dataclasses
import inspect
from collections import Counter
from pathlib import Path

import pytest

from accounting.errors import ConfigurationError
from accounting.mechanisms import Sampling
from reports.audit import load_config
from reports.audit.config import DEFAULT_CONFIG
from reports.audit.model import Claim, ProbeSpec, TargetSpec, Unavailable
from reports.audit.probes import build_probe
from reports.audit.runner import AuditOptions, audit_target, plan_target
from reports.audit.targets import ProbeDeclined, build_target

ROOT = Path(__file__).resolve().parents[3]
AUDIT_DIR = str(ROOT / "reports" / "audit")


def _count_calls_from_the_audit(monkeypatch, owner, name, counter: Counter):
    """Count calls of ``owner.name`` made directly from a module of reports/audit."""
    original = inspect.getattr_static(owner, name)
    function = original.__func__ if isinstance(original, (classmethod, staticmethod)) else original

    def counting(*args, **kwargs):
        caller = inspect.stack()[1].filename
        if caller.startswith(AUDIT_DIR):
            counter[name] += 1
        return function(*args, **kwargs)

    wrapped = classmethod(counting) if isinstance(original, classmethod) else counting
    monkeypatch.setattr(owner, name, wrapped)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "configs").glob("audit_*.toml")) + [DEFAULT_CONFIG], ids=lambda p: p.name
)
def test_each_target_builds_its_configuration_and_mechanism_once(path, monkeypatch):
    import attacks.probes.duets
    import attacks.probes.flower
    import dpfed.fedzero.private
    import dpfed.fkm.private
    import dpfed.pne.private
    import reports.audit.probes
    import reports.audit.target_mechanism
    from dpfed.duets.config import DuetsConfig
    from dpfed.fedzero.config import FedZeroConfig
    from dpfed.fkm.config import FKMConfig
    from dpfed.fts.config import FTSConfig
    from reports.audit.model import ProbeSection

    counter: Counter = Counter()
    for owner, name in (
        (FTSConfig, "from_preset"),
        (FTSConfig, "mechanism"),
        (dpfed.pne.private, "dp_mechanism"),
        (reports.audit.target_mechanism, "_mechanism"),
        (DuetsConfig, "from_dict"),
        (attacks.probes.duets, "audit_mechanism"),
        (FedZeroConfig, "__init__"),
        (dpfed.fedzero.private, "dp_fedzero_release"),
        (FKMConfig, "__init__"),
        (dpfed.fkm.private, "dp_fkm_release"),
        (attacks.probes.flower.FlowerAppProbe, "observe"),
    ):
        _count_calls_from_the_audit(monkeypatch, owner, name, counter)
    # the probes' own runs and the utility runs are the algorithms' code, not the audit's: stub them
    monkeypatch.setattr(
        reports.audit.probes,
        "run_probe",
        lambda target, planned, *a: ProbeSection(planned.spec.name, planned.spec.kind, "failed", "stubbed"),
    )
    monkeypatch.setattr("reports.audit.runner.run_probe", reports.audit.probes.run_probe)
    for cls in {type(build_target(s)) for s in load_config(path, allow_code=True)["targets"]}:
        monkeypatch.setattr(cls, "utility", lambda self, *a: Unavailable("stubbed"))
    counter.clear()
    specs = [dataclasses.replace(s, accountants=("rdp",)) for s in load_config(path, allow_code=True)["targets"]]
    options = AuditOptions(estimate=False, progress=False)
    for index, spec in enumerate(specs):
        before = Counter(counter)
        audit_target(plan_target(spec, index, options), options, lambda msg: None)
        built = counter - before
        if spec.algorithm.startswith("dp-fts"):
            assert built == Counter({"from_preset": 1, "mechanism": 1}), (spec.name, built)
        elif spec.algorithm == "dp-fed-pne":
            assert built == Counter({"dp_mechanism": 1}), (spec.name, built)
        elif spec.algorithm == "flower-app":  # the app run once, observed, when the target is built (probe stubbed)
            assert built == Counter({"observe": 1}), (spec.name, built)
        elif spec.algorithm in NEW_SYSTEMS:
            config, release = NEW_SYSTEMS[spec.algorithm]
            expected = Counter({config: 1, release: 1}) if spec.algorithm.startswith("dp-") else Counter({config: 1})
            assert built == expected, (spec.name, built)
        else:
            assert built == Counter({"_mechanism": 1}), (spec.name, built)


# algorithm -> (the configuration's constructor, the release helper building its mechanism)
NEW_SYSTEMS = {
    name: entry
    for base, entry in (
        ("duets", ("from_dict", "audit_mechanism")),
        ("fedzero", ("__init__", "dp_fedzero_release")),
        ("fkm", ("__init__", "dp_fkm_release")),
    )
    for name in (base, f"dp-{base}")
}


def _mechanism_target(neighbouring="add-remove", **parameters):
    claim = Claim(3.0, 1e-5, neighbouring, "one record")
    params = {"type": "subsampled-gaussian", "rate": 0.2, "noise_multiplier": 1.5, "steps": 3, **parameters}
    return build_target(TargetSpec("t", "mechanism", claim, parameters=params))


def test_a_fixed_size_target_is_attacked_under_fixed_size_sampling():
    target = _mechanism_target(sampling="fixed-size", population=10)
    probe, params = build_probe(target, ProbeSpec("subsampled-gaussian", "mechanism", 100))
    attacked = probe.mechanism().parts[0][0]
    assert params["sampling"] == "fixed-size" and attacked.sampling is Sampling.FIXED_SIZE
    assert attacked.population == target.mechanism.population == 10 and probe.rounds == 3
    assert attacked.rate == target.mechanism.rate and attacked.noise_multiplier == 1.5


def test_replace_one_and_unmodelled_settings_are_declined_with_a_reason():
    with pytest.raises(ProbeDeclined, match="replace-one"):
        build_probe(_mechanism_target("replace-one"), ProbeSpec("subsampled-gaussian", "mechanism", 100))
    claim = Claim(15.17, 29.0**-1.1, "add-remove", "one agent")
    fixed = build_target(TargetSpec("f", "dp-fts-de", claim, parameters={"sampling": "fixed-size"}))
    for name in ("fts-server", "fts-server-reference", "fts-end-to-end"):
        with pytest.raises(ProbeDeclined, match="fixed-size"):
            build_probe(fixed, ProbeSpec(name, "mechanism", 100))
    replace = build_target(TargetSpec("r", "dp-fts-de", dataclasses.replace(claim, neighbouring="replace-one")))
    with pytest.raises(ProbeDeclined, match="replace-one"):
        build_probe(replace, ProbeSpec("fts-server", "mechanism", 100))


def test_a_non_default_weight_schedule_reaches_the_probe():
    claim = Claim(15.17, 29.0**-1.1, "add-remove", "one agent")
    target = build_target(
        TargetSpec("w", "dp-fts-de", claim, parameters={"weight_gap": 5.0, "weight_hold": 3, "rounds": 20})
    )
    probe, _ = build_probe(target, ProbeSpec("fts-server-reference", "mechanism", 100))
    assert (probe.gap, probe.hold, probe.decay, probe.rounds) == (5.0, 3, 30, 20)
    assert probe.schedule == "reference"
    with pytest.raises(ProbeDeclined, match="weight_gap"):  # the end-to-end probe runs the preset's schedule
        build_probe(target, ProbeSpec("fts-end-to-end", "end-to-end", 10, {"preset": "synthetic"}))


def test_a_parameter_the_probe_does_not_declare_is_an_error_not_dropped(monkeypatch):
    target = _mechanism_target()
    original = type(target)._subsampled_probe
    monkeypatch.setattr(type(target), "_subsampled_probe", lambda self, n, e: {**original(self, n, e), "bogus": 1})
    with pytest.raises(TypeError, match="bogus"):
        build_probe(target, ProbeSpec("subsampled-gaussian", "mechanism", 100))


def test_a_probe_for_another_system_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match=r"target\[0\]\.probes\[0\]\.name"):
        spec = TargetSpec(
            "t",
            "mechanism",
            Claim(1.0, 1e-5, "add-remove", "x"),
            parameters={"noise_multiplier": 1.0},
            probes=(ProbeSpec("pne-reward", "mechanism", 10),),
        )
        plan_target(spec, 0, AuditOptions(estimate=False))


def test_a_declined_probe_is_in_the_report(tmp_path):
    from reports.cli import main
    from reports.model import load_report

    config = tmp_path / "declined.toml"
    config.write_text(DECLINED)
    assert main(["audit", str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    target = load_report(tmp_path / "out" / "report.json")["targets"][0]
    probe = target["probes"][0]
    assert probe["outcome"] == "declined" and "replace-one" in probe["reason"]
    assert target["verdict"]["empirical"]["declined"] == ["subsampled-gaussian"]
    assert any(f["id"] == "probe-declined" for f in target["findings"])
    assert "declined this target" in (tmp_path / "out" / "report.md").read_text()


DECLINED = """
[[target]]
name = "replace-one subsampled Gaussian"
algorithm = "mechanism"
accountants = ["pld"]
[target.parameters]
type = "subsampled-gaussian"
rate = 0.1
noise_multiplier = 2.0
steps = 2
[target.claim]
epsilon = 2.0
delta = 1e-5
neighbouring = "replace-one"
unit = "one record"
[[target.probes]]
name = "subsampled-gaussian"
trials = 100
"""


def test_a_planted_bug_of_the_target_reaches_its_end_to_end_probe():
    """The bug is part of the audited system: the end-to-end probe must run it (and only it)."""
    fts_claim = Claim(0.3, 29.0**-1.1, "add-remove", "one agent")
    params = {"preset": "synthetic", "noise_multiplier": 8.0, "planted_bug": "renormalise-sampled"}
    fts = build_target(TargetSpec("f", "dp-fts-de", fts_claim, parameters=params))
    probe, bound = build_probe(fts, ProbeSpec("fts-end-to-end", "end-to-end", 10))
    assert bound["planted_bug"] == probe.planted_bug == "renormalise-sampled"
    assert fts.report_parameters()["planted_bug"] == "renormalise-sampled"
    pne_claim = Claim(1.0, 1e-5, "replace-one", "one reward")
    pne = build_target(TargetSpec("p", "dp-fed-pne", pne_claim, parameters={"planted_bug": "unnoised-final-upload"}))
    probe, _ = build_probe(pne, ProbeSpec("pne-end-to-end", "end-to-end", 10, {"final_upload": True}))
    assert probe.planted_bug == "unnoised-final-upload"
    with pytest.raises(ConfigurationError, match="planted_bug"):
        build_target(TargetSpec("p", "dp-fed-pne", pne_claim, parameters={"planted_bug": "typo"}))


def test_a_probe_parameter_the_target_binds_is_refused():
    """Overriding the target's noise in a probe would attack another mechanism than the claimed one."""
    claim = Claim(1.0, 1e-5, "add-remove", "one record")
    target = build_target(
        TargetSpec("g", "mechanism", claim, parameters={"type": "gaussian", "calibration": "classic"})
    )
    with pytest.raises(ConfigurationError, match="noise_multiplier.*set by the target"):
        build_probe(target, ProbeSpec("gaussian", "mechanism", 100, {"noise_multiplier": 0.1}))
    # the DP-FTS-DE end-to-end probe's cheaper preset is the one allowed exception
    fts = build_target(TargetSpec("f", "dp-fts-de", Claim(15.17, 29.0**-1.1, "add-remove", "one agent")))
    probe, _ = build_probe(fts, ProbeSpec("fts-end-to-end", "end-to-end", 10, {"preset": "synthetic"}))
    assert probe.preset == "synthetic"
