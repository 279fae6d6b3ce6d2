"""DP-FKM targets with B != 1 reach the probes, and the mutation score's survivor classification.

Deterministic (no sampling): the first checks read planned probes and mechanisms, the others classify
hand-made comparisons.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attacks.probes.fkm import FkmEndToEndProbe, FkmLossProbe
from dpfed.fkm import FKMConfig, make_losses
from reports.audit import AuditOptions
from reports.audit.config import load_config
from reports.audit.runner import plan_target
from tests.attacks.benchmark_path import benchmarks_on_path

ROOT = Path(__file__).resolve().parents[2]
with benchmarks_on_path():
    from mutation_release import compare
    from mutation_survivors import classify, fkm_noise_change


def test_fkm_probes_clip_to_the_configured_bound():
    bound = make_losses(FKMConfig(dim=3, horizon=1, exploration=1.0, step=1e-3, lipschitz=2.5, radius=2.0), 0).bound
    assert bound >= 5.0  # B = lipschitz x radius (or the family's measured Lipschitz constant, if larger)
    probe = FkmLossProbe(noise_multiplier=2.0, lipschitz=2.5, radius=2.0)
    assert probe.mechanism().sensitivity == pytest.approx(2.0 * bound)  # sensitivity 2B, noise z 2B
    end_to_end = FkmEndToEndProbe(noise_multiplier=2.0, lipschitz=2.5)
    assert end_to_end.mechanism().sensitivity > 2.0 * 2.5 - 1e-9


def test_the_bound_target_hands_its_bound_to_both_probes():
    config = load_config(ROOT / "configs" / "audit_fkm_bound.toml")
    options = AuditOptions(seed=config["seed"], confidence=config["confidence"], progress=False, estimate=False)
    bounds = []
    for index, spec in enumerate(config["targets"]):
        planned = plan_target(spec, index, options)
        bound = spec.parameters["lipschitz"]  # the radius is 1: B = lipschitz
        bounds.append(bound)
        for p in planned.probes:
            assert p.probe is not None and p.probe.lipschitz == bound, p.spec.name
            assert p.probe.mechanism().sensitivity >= 2.0 * bound - 1e-9
    assert bounds == [2.5, 2.5, 10.0, 10.0, 1.0]


def _difference(**changed):
    base = {"configurations": 3, "released_differs": [], "description_differs": [], "breaks": [],
            "other_messages_differ": []}
    return {**base, **changed}


def test_survivor_categories_follow_the_comparison():
    assert classify("duets", _difference(), None) == "equivalent"
    assert classify("duets", _difference(other_messages_differ=["a"]), None) == "post-processing"
    assert classify("duets", _difference(breaks=["a"]), None) == "refuses"
    assert classify("duets", _difference(released_differs=["a"]), None) == "missed"
    assert classify("duets", _difference(description_differs=["a"]), None) == "missed"
    assert classify("fkm", _difference(released_differs=["a"]), "same") == "post-processing"
    assert classify("fkm", _difference(released_differs=["a"]), "within-bound") == "within-bound"
    assert classify("fkm", _difference(released_differs=["a"], breaks=["a"]), "within-bound") == "missed"
    assert classify("fkm", _difference(released_differs=["a"]), None) == "missed"
    assert classify("fkm", _difference(released_differs=["a"], description_differs=["a"]), "same") == "missed"
    assert classify("fkm", _difference(released_differs=["a"], description_differs=["a"]), "more") == "more-noise"
    assert classify("duets", _difference(released_differs=["a"]), "more") == "missed"
    assert classify("fkm", _difference(released_differs=["a"]), "data-independent") == "data-independent"
    assert classify("fkm", _difference(released_differs=["a"], breaks=["b"]), "data-independent") == "missed"


def test_fkm_noise_change_needs_the_same_draws_scaled_up():
    original = {"c": {"bound": 2.0, "scale": 4.0, "observed": [[[5.0, -1.0], [2.5, -0.5]]]}}  # noise 0.5, 0.5
    assert fkm_noise_change(original, original) == "same"
    doubled = {"c": {"bound": 2.0, "scale": 8.0, "observed": [[[5.0, -1.0], [3.0, 0.0]]]}}  # noise 1.0, 1.0
    assert fkm_noise_change(original, doubled) == "more"
    halved = {"c": {"bound": 2.0, "scale": 2.0, "observed": [[[5.0, -1.0], [2.25, -0.75]]]}}
    assert fkm_noise_change(original, halved) is None
    unclipped = {"c": {"bound": 2.0, "scale": 4.0, "observed": [[[5.0, -1.0], [5.5, -0.5]]]}}
    assert fkm_noise_change(original, unclipped) is None


def test_compare_sees_a_changed_release_value_and_ignores_a_changed_label():
    message = {"round": 1, "sender": "environment", "receiver": "learner", "name": "loss", "payload": [0.5]}
    play = {"round": 1, "sender": "learner", "receiver": "environment", "name": "play", "payload": [0.1]}
    original = {"c": {"transcript": [message, play], "privacy": {"mechanism": "Gaussian(2, 2.0)"}}}
    relabelled = {"c": {"transcript": [{**message, "round": 2}, play], "privacy": {"mechanism": "Gaussian(2, 2.0)"}}}
    assert compare("fkm", original, relabelled)["other_messages_differ"] == ["c"]
    changed = {"c": {"transcript": [{**message, "payload": [0.5000000000000001]}, play],
                     "privacy": {"mechanism": "Gaussian(2, 2.0)"}}}
    assert compare("fkm", original, changed)["released_differs"] == ["c"]
    assert compare("fkm", original, {"c": {"error": "exit 2: x"}})["breaks"] == ["c"]
    assert compare("mechanism", {"k": [1.0]}, {"k": "error: ValueError"})["breaks"] == ["k"]
    assert compare("mechanism", {"k": [1.0]}, {"k": [1.5]})["released_differs"] == ["k"]


def test_results_are_keyed_by_what_the_audit_reads(tmp_path):
    from mutation_mutants import Mutant, code_fingerprint
    from mutation_score import load, record

    files = (("accounting/a.py", "x = 1\n"), ("configs/c.toml", "seed = 1\n"), ("benchmarks/mutation_audit.py", ""))
    for name, text in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    code = code_fingerprint(["configs/c.toml"], tmp_path)
    mutant = Mutant("fkm", "accounting/a.py", "core/NumberReplacer", 0, 1, "x = 2\n", "-x = 1\n+x = 2")
    (tmp_path / "configs/c.toml").write_text("seed = 2\n")
    assert code_fingerprint(["configs/c.toml"], tmp_path) != code  # a changed audit configuration: new keys
    (tmp_path / "configs/c.toml").write_text("seed = 1\n")
    assert code_fingerprint(["configs/c.toml"], tmp_path) == code
    assert mutant.fingerprint(code) != Mutant(*[*vars(mutant).values()][:5], "x = 3\n", "").fingerprint(code)
    results = tmp_path / "results.json"
    record(results, mutant.fingerprint(code), {"verdict": "pass"})
    record(results, "other", {"verdict": "violation"})
    assert load(results) == {mutant.fingerprint(code): {"verdict": "pass"}, "other": {"verdict": "violation"}}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mutation-")] == []  # no temporary left


def test_within_bound_needs_every_release_inside_the_original_bound_plus_its_noise_draw():
    from mutation_survivors import within_bound

    # original: losses 3 and -0.4 clipped to B = 1, noise draws 0.5 and -0.2
    original = {"c": {"bound": 1.0, "scale": 2.0, "observed": [[[3.0], [1.5]], [[-0.4], [-0.6]]]}}
    clipped_to_0_b = {"c": {"bound": 1.0, "scale": 2.0, "observed": [[[3.0], [1.5]], [[-0.4], [-0.2]]]}}
    assert within_bound(original, clipped_to_0_b)  # [0, B]: 1 + 0.5 and 0 - 0.2
    unclipped = {"c": {"bound": 1.0, "scale": 2.0, "observed": [[[3.0], [3.5]], [[-0.4], [-0.6]]]}}
    assert not within_bound(original, unclipped)  # 3 + 0.5: a value beyond B
    less_noise = {"c": {"bound": 1.0, "scale": 1.0, "observed": [[[3.0], [1.5]], [[-0.4], [-0.6]]]}}
    assert not within_bound(original, less_noise)
    assert not within_bound(original, {"c": {"error": "exit 2"}})


def test_a_result_is_kept_while_the_files_its_audit_read_are_unchanged(tmp_path):
    """Keys from what the unmutated audit imported: a Python file it did not import may change; a file it read,
    a data file, the audit script or a configuration may not; a mutant's run that imported more is checked on
    those files too, and a run stopped before listing its reads holds only while all the code is unchanged."""
    from mutation_mutants import code_fingerprint
    from mutation_score import still_valid

    files = (("accounting/a.py", "x = 1\n"), ("dpfed/unused.py", "y = 1\n"), ("reports/t.html", "<p>\n"),
             ("configs/c.toml", "seed = 1\n"), ("benchmarks/mutation_audit.py", ""))
    for name, text in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    reads = ["accounting/a.py"]
    code, broad = code_fingerprint(["configs/c.toml"], tmp_path, reads), code_fingerprint(["configs/c.toml"], tmp_path)
    (tmp_path / "dpfed/unused.py").write_text("y = 2\n")
    assert code_fingerprint(["configs/c.toml"], tmp_path, reads) == code  # not imported by the audit
    assert code_fingerprint(["configs/c.toml"], tmp_path) != broad
    for name, changed in (("accounting/a.py", "x = 2\n"), ("reports/t.html", "<b>\n"),
                          ("benchmarks/mutation_audit.py", "#\n"), ("configs/c.toml", "seed = 2\n")):
        original = (tmp_path / name).read_text()
        (tmp_path / name).write_text(changed)
        assert code_fingerprint(["configs/c.toml"], tmp_path, reads) != code, name
        (tmp_path / name).write_text(original)
    script = 'TARGETS = {{"fkm": [("configs/c.toml", ("a",))], "pne": [("configs/p.toml", ("{}",))]}}\nrun()\n'
    (tmp_path / "benchmarks/mutation_audit.py").write_text(script.format("b"))
    code = code_fingerprint(["configs/c.toml"], tmp_path, reads, "fkm")
    (tmp_path / "benchmarks/mutation_audit.py").write_text(script.format("c"))  # another system's targets
    assert code_fingerprint(["configs/c.toml"], tmp_path, reads, "fkm") == code
    assert code_fingerprint(["configs/c.toml"], tmp_path, reads, "pne") != code_fingerprint(
        ["configs/c.toml"], tmp_path.parent / tmp_path.name, reads, "fkm")
    (tmp_path / "benchmarks/mutation_audit.py").write_text(script.format("c").replace("run()", "run(1)"))
    assert code_fingerprint(["configs/c.toml"], tmp_path, reads, "fkm") != code  # the audit's own code
    import hashlib

    digest = hashlib.sha256(b"y = 2\n").hexdigest()
    broad = code_fingerprint(["configs/c.toml"], tmp_path)
    assert still_valid({"extra_reads": {"dpfed/unused.py": digest}}, tmp_path, broad)
    (tmp_path / "dpfed/unused.py").write_text("y = 3\n")
    assert not still_valid({"extra_reads": {"dpfed/unused.py": digest}}, tmp_path, broad)
    assert not still_valid({"extra_reads": None, "code_all": broad}, tmp_path, code_fingerprint(["configs/c.toml"],
                                                                                                 tmp_path))


@pytest.mark.slow  # cosmic-ray enumerates the module's mutants: about 7 s on the loaded 2-core machine
def test_every_fkm_mutant_lies_in_its_scope():
    pytest.importorskip("cosmic_ray")
    from mutation_mutants import ROOT as TREE
    from mutation_mutants import SCOPE, function_lines, mutants

    allowed = {(path, n) for path, name, markers in SCOPE["fkm"] for n in function_lines(TREE / path, name, markers)}
    found = mutants("fkm")
    assert len(found) == 40 and len({m.key for m in found}) == 40
    for m in found:
        assert (m.file, m.line) in allowed and m.source != (TREE / m.file).read_text()
