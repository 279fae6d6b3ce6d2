"""The survivor checks of the mechanism module (``benchmarks/mutation_law.py``), DP-DUETS (``mutation_duets.py``)
and DP-FTS-DE (``mutation_fts.py``), and the staged audit of a system.

Deterministic: the checks classify hand-made outputs (each category held, and broken by a one-element change);
one run of the law script on the unmutated module checks its generators (the mirrored release reflects the
plain one about the noiseless one); the staged results use hand-made result tables.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.attacks.benchmark_path import benchmarks_on_path

ROOT = Path(__file__).resolve().parents[2]
with benchmarks_on_path():
    import mutation_score
    from mutation_duets import recalibrated, rescaled
    from mutation_fedzero import after_release
    from mutation_fts import input_only, rescaled_broadcast, server_digests
    from mutation_law import law_categories, law_category, law_outputs
    from mutation_survivors import classify

SIGNAL = {0: np.array([1.0, -2.0, 0.5]), 1: np.array([3.0, 0.0, -1.0])}  # two data sets
NOISE = {"5": np.array([0.3, -1.2, 0.7]), "11": np.array([-0.4, 0.9, 2.1])}  # two seeds


def _outputs(release, mask=None) -> dict:
    """One configuration: release(signal, noise) per seed and data set under the three generators."""
    def out(values):
        return {"values": np.asarray(values, dtype=float).tolist(), "mask": mask}

    return {"config": {seed: {"plain": [out(release(SIGNAL[d], noise)) for d in (0, 1)],
                              "mirrored": [out(release(SIGNAL[d], -noise)) for d in (0, 1)],
                              "noiseless": [out(release(SIGNAL[d], 0 * noise)) for d in (0, 1)]}
                       for seed, noise in NOISE.items()}}


ORIGINAL = _outputs(lambda s, n: s + n)


def _category(release, mask=None):
    return law_category(law_categories(ORIGINAL, _outputs(release, mask)))


def test_each_category_holds_for_the_mutant_it_describes():
    assert _category(lambda s, n: s + n + 1e-13) == "equivalent"
    assert _category(lambda s, n: s - n) == "equal-in-law"
    assert _category(lambda s, n: n) == "data-independent"
    assert _category(lambda s, n: 2.5 * (s + n) - 1.0) == "post-processing"
    assert _category(lambda s, n: s + np.array([1.0, -3.0, 2.0]) * n) == "more-noise"


def test_each_category_fails_on_a_privacy_relevant_change():
    assert _category(lambda s, n: s + 0.5 * n) is None  # less noise
    assert _category(lambda s, n: 2.0 * s + n) is None  # twice the sensitivity
    assert _category(lambda s, n: s + n * (1.0 + (s > 0))) is None  # noise scale read from the data
    assert _category(lambda s, n: s + n, mask=[True, False]) is None  # another sample
    broken = _outputs(lambda s, n: s + n)
    broken["config"]["5"]["plain"][1] = "error: ValueError"
    assert law_category(law_categories(ORIGINAL, broken)) is None  # breaks where the original does not


def test_a_survivor_is_named_by_the_weakest_check_its_configurations_needed():
    assert law_category({"a": "equivalent", "b": "equal-in-law", "c": "more-noise"}) == "more-noise"
    assert law_category({"a": "equivalent", "b": None}) is None
    assert classify("mechanism", {"released_differs": ["a"], "description_differs": [], "breaks": [],
                                  "other_messages_differ": []}, None, "equal-in-law") == "equal-in-law"
    assert classify("mechanism", {"released_differs": ["a"], "description_differs": [], "breaks": [],
                                  "other_messages_differ": []}, None, None) == "missed"


def test_the_law_script_mirrors_and_silences_only_the_noise():
    outputs = law_outputs(ROOT)
    assert len(outputs) == 234 and "script" not in outputs
    assert set(law_categories(outputs, outputs).values()) == {"equivalent"}
    for config in ("gaussian s=2.0 z=1.0", "laplace s=0.5 z=3.0", "subsampled poisson q=0.35 z=1.0 clip=2.0 n=3 plain"):
        for runs in outputs[config].values():
            plain, mirrored, quiet = (np.asarray(runs[k][0]["values"]) for k in ("plain", "mirrored", "noiseless"))
            assert runs["plain"][0]["mask"] == runs["mirrored"][0]["mask"] == runs["noiseless"][0]["mask"]
            assert np.allclose(plain + mirrored, 2.0 * quiet) and not np.allclose(plain, quiet)


def test_a_staged_system_reports_the_first_stage_that_kills(monkeypatch):
    mutants = ["m1", "m2", "m3", "m4"]
    results = {"a:m1": {"verdict": "violation"}, "a:m2": {"verdict": "pass"}, "b:m2": {"verdict": "violation"},
               "a:m3": {"verdict": "pass"}, "b:m3": {"verdict": "pass"}, "a:m4": {"verdict": "pass"}}
    monkeypatch.setattr(mutation_score, "STAGES", {"sys": ("a", "b")})
    monkeypatch.setattr(mutation_score, "system_code", lambda stage, tree, results: (stage, []))
    monkeypatch.setattr(mutation_score, "code_fingerprint", lambda *args, **kwargs: "broad")
    monkeypatch.setattr(mutation_score, "still_valid", lambda entry, tree, broad: True)
    monkeypatch.setattr(mutation_score, "mutants", lambda system, tree: [_Named(m) for m in mutants])
    monkeypatch.setattr(mutation_score, "system_configs", lambda stage: [])
    rows = {m.name: row for m, row in mutation_score.system_results("sys", results)}
    assert rows == {"m1": {"verdict": "violation"}, "m2": {"verdict": "violation"}, "m3": {"verdict": "pass"}}
    first = {m.name: row for m, row in mutation_score.system_results("sys", results, only=("a",))}
    assert set(first) == {"m1", "m2", "m3", "m4"}  # m4 passed stage a and awaits stage b: untested overall


class _Named:
    def __init__(self, name):
        self.name = name

    def fingerprint(self, code):
        return f"{code}:{self.name}"


NO_CHANGE = {"released_differs": ["a"], "description_differs": [], "breaks": [], "other_messages_differ": []}


def _epoch(clip=2.0, z=1.0, path="release", released=((1.0, -2.0), (0.5, 3.0))):
    return {"rate": 0.5, "z": z, "clip": clip, "sampling": "poisson", "neighbouring": "add-remove", "path": path,
            "released": [list(r) for r in released]}


def test_duets_recalibrated_needs_the_same_mechanism_but_its_clip():
    original = {"agent": _epoch(), "reward": _epoch(path="add_noise")}
    assert recalibrated(original, {"agent": _epoch(clip=7.0), "reward": _epoch(clip=2.5, path="add_noise")}, NO_CHANGE)
    assert not recalibrated(original, original, NO_CHANGE)  # nothing changed here: the change is elsewhere
    assert not recalibrated(original, {"agent": _epoch(clip=7.0, z=0.5), "reward": original["reward"]}, NO_CHANGE)
    assert not recalibrated(original, {"agent": _epoch(clip=7.0, path="add_noise"), "reward": original["reward"]},
                            NO_CHANGE)  # no clip any more
    assert not recalibrated(original, {"agent": original["agent"], "reward": _epoch(clip=1.0, path="add_noise")},
                            NO_CHANGE)  # less noise where nothing is clipped
    assert not recalibrated(original, {"agent": _epoch(clip=0.0), "reward": original["reward"]}, NO_CHANGE)
    assert not recalibrated(original, {"agent": _epoch(clip=7.0), "reward": {"error": "ValueError"}}, NO_CHANGE)


def test_duets_rescaled_needs_one_affine_map_on_both_data_sets():
    original = {"agent": _epoch()}
    assert rescaled(original, {"agent": _epoch(path="other", released=((2.0, -4.0), (1.0, 6.0)))}, NO_CHANGE)
    assert not rescaled(original, {"agent": _epoch(path="other", released=((2.0, -4.0), (0.5, 3.0)))}, NO_CHANGE)
    assert not rescaled(original, {"agent": _epoch(clip=3.0, released=((2.0, -4.0), (1.0, 6.0)))}, NO_CHANGE)


def _agents(finite=True, isolated=True, uploads=((1.0, 2.0),), broadcasts=((0.5, -1.0),)):
    return {"finite": finite, "others_unchanged": isolated, "shifted_changed": True,
            "uploads": [list(u) for u in uploads], "broadcasts": [[list(b) for b in broadcasts]] * 2}


def test_fts_input_only_needs_finite_isolated_uploads_and_the_original_server(tmp_path):
    original = {"q=1 seed=5": _agents(), "q=1 seed=11": _agents()}
    server = server_digests(tmp_path)  # the same (absent) server files in both trees
    assert input_only(server, tmp_path, original, {k: _agents(uploads=((9.0, 9.0),)) for k in original}, NO_CHANGE)
    assert not input_only(server, tmp_path, original, {"q=1 seed=5": _agents(isolated=False),
                                                       "q=1 seed=11": _agents()}, NO_CHANGE)
    assert not input_only(server, tmp_path, original, {"q=1 seed=5": _agents(finite=False),
                                                       "q=1 seed=11": _agents()}, NO_CHANGE)
    assert not input_only({**server, "dpfed/fts/server.py": "another"}, tmp_path, original, original, NO_CHANGE)


def test_fts_rescaled_broadcast_needs_the_same_uploads_and_one_affine_map():
    original = {"q=1 seed=5": _agents(), "q=1 seed=11": _agents(broadcasts=((2.0, 3.0),))}
    scaled = {"q=1 seed=5": _agents(broadcasts=((2.0, -1.0),)), "q=1 seed=11": _agents(broadcasts=((5.0, 7.0),))}
    assert rescaled_broadcast(original, scaled, NO_CHANGE)  # 2 x + 1 for both seeds
    other = {"q=1 seed=5": _agents(broadcasts=((2.0, -1.0),)), "q=1 seed=11": _agents(broadcasts=((5.0, 8.0),))}
    assert not rescaled_broadcast(original, other, NO_CHANGE)
    moved = {k: _agents(uploads=((1.0, 2.5),), broadcasts=v["broadcasts"][0]) for k, v in scaled.items()}
    assert not rescaled_broadcast(original, moved, NO_CHANGE)


def test_each_stage_runs_its_own_audit_on_the_survivors_of_the_last(monkeypatch, tmp_path):
    """The second stage runs its own audit (``mutation_audit.py b``), only on the mutants the first let pass."""
    (tmp_path / "m.py").write_text("original\n")
    calls = []

    def fake_audit(tree, stage, timeout):
        calls.append((stage, (tree / "m.py").read_text()))
        killed = stage == "a" and (tree / "m.py").read_text() == "m1"
        return ("violation" if killed else "pass"), (1 if killed else 0), "", 0.1, []

    mutants = [_Mutant("m1"), _Mutant("m2")]
    monkeypatch.setattr(mutation_score, "STAGES", {"sys": ("a", "b")})
    monkeypatch.setattr(mutation_score, "audit", fake_audit)
    monkeypatch.setattr(mutation_score, "code_fingerprint", lambda configs, tree, reads=None, stage=None: stage or "")
    monkeypatch.setattr(mutation_score, "system_configs", lambda stage: [])
    monkeypatch.setattr(mutation_score, "mutants", lambda system, tree: mutants)
    results = tmp_path / "results.json"
    mutation_score.run_system("sys", tmp_path, results, 10.0, log=lambda _: None)
    assert [c for c in calls if c[1] != "original\n"] == [("a", "m1"), ("a", "m2"), ("b", "m2")]
    rows = {m.name: row["verdict"] for m, row in mutation_score.system_results("sys", mutation_score.load(results),
                                                                               tmp_path)}
    assert rows == {"m1": "violation", "m2": "pass"} and (tmp_path / "m.py").read_text() == "original\n"


def test_shards_split_the_mutants_and_each_runs_every_stage_on_its_own(monkeypatch, tmp_path):
    """``--shard k/n``: shard k runs the mutants at positions k, k + n, ...; together the shards run each once, and a
    shard's later stage sees only its own mutants' earlier results (each its own results file, merged afterwards)."""
    (tmp_path / "m.py").write_text("original\n")
    calls = []

    def fake_audit(tree, stage, timeout):
        calls.append((stage, (tree / "m.py").read_text()))
        killed = stage == "a" and (tree / "m.py").read_text() in ("m1", "m4")
        return ("violation" if killed else "pass"), (1 if killed else 0), "", 0.1, []

    mutants = [_Mutant(f"m{i}") for i in range(5)]
    monkeypatch.setattr(mutation_score, "STAGES", {"sys": ("a", "b")})
    monkeypatch.setattr(mutation_score, "audit", fake_audit)
    monkeypatch.setattr(mutation_score, "code_fingerprint", lambda configs, tree, reads=None, stage=None: stage or "")
    monkeypatch.setattr(mutation_score, "system_configs", lambda stage: [])
    monkeypatch.setattr(mutation_score, "mutants", lambda system, tree: mutants)
    for shard in (0, 1):
        mutation_score.run_system("sys", tmp_path, tmp_path / f"r{shard}.json", 10.0, log=lambda _: None,
                                  shard=(shard, 2))
    runs = [c for c in calls if c[1] != "original\n"]
    assert [c for c in runs if c[0] == "a"] == [("a", "m0"), ("a", "m2"), ("a", "m4"), ("a", "m1"), ("a", "m3")]
    assert [c for c in runs if c[0] == "b"] == [("b", "m0"), ("b", "m2"), ("b", "m3")]
    merged = {**mutation_score.load(tmp_path / "r0.json"), **mutation_score.load(tmp_path / "r1.json")}
    rows = {m.name: row["verdict"] for m, row in mutation_score.system_results("sys", merged, tmp_path)}
    assert rows == {"m0": "pass", "m1": "violation", "m2": "pass", "m3": "pass", "m4": "violation"}


class _Mutant(_Named):
    file, line, operator, occurrence, diff = "m.py", 1, "op", 0, ""

    @property
    def source(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, _Mutant) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


def _calls(clip=2.0, z=1.0, first_input=(1.0,), first_output=(0.3,), published_are_outputs=True):
    return {"params": [[0.5, z, clip, "poisson"]] * 2, "published": 2, "published_are_outputs": published_are_outputs,
            "first": {"input": list(first_input), "output": list(first_output)}}


def test_fedzero_after_release_needs_the_original_releases_and_inputs():
    original = {"scalar": _calls(), "vector": _calls(clip=5.0)}
    assert after_release(original, original, NO_CHANGE) == "post-processing"
    assert after_release(original, {"scalar": _calls(), "vector": _calls(clip=9.0, first_output=(0.1,))},
                         NO_CHANGE) == "recalibrated"
    assert after_release(original, {"scalar": _calls(z=0.5), "vector": original["vector"]}, NO_CHANGE) is None
    assert after_release(original, {"scalar": _calls(first_input=(2.0,)), "vector": original["vector"]},
                         NO_CHANGE) is None  # the release's input changed
    assert after_release(original, {"scalar": _calls(first_output=(0.4,)), "vector": original["vector"]},
                         NO_CHANGE) is None  # same mechanism and input, another output
    assert after_release(original, {"scalar": _calls(published_are_outputs=False), "vector": original["vector"]},
                         NO_CHANGE) is None  # publishes something the mechanism did not release
    assert after_release(original, {"scalar": _calls(clip=0.0), "vector": original["vector"]}, NO_CHANGE) is None


def test_a_check_key_changes_with_its_own_system_configurations_only(tmp_path):
    from mutation_mutants import CHECKERS, check_fingerprint

    for name in CHECKERS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((ROOT / name).read_text())
    for top in ("accounting", "dpfed", "attacks", "reports"):
        (tmp_path / top).mkdir()
    before = {s: check_fingerprint(tmp_path, s) for s in ("fedzero", "fts")}
    release = tmp_path / "benchmarks" / "mutation_release.py"
    text = release.read_text()
    release.write_text(text.replace('"--records", "20", "--rate", "0.3"]', '"--records", "21", "--rate", "0.3"]'))
    after = {s: check_fingerprint(tmp_path, s) for s in ("fedzero", "fts")}
    assert after["fts"] == before["fts"] and after["fedzero"] != before["fedzero"]
    release.write_text(release.read_text() + "\n# another line\n")
    assert check_fingerprint(tmp_path, "fts") != before["fts"]  # anything but the table: every system's key
