"""``dpaudit estimate``: exit codes, the report set, null validity (200 repetitions each for multi-run and
one-run scores) and the scores of jax_privacy's documented auditing example."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
from scipy import stats

from reports.cli import main

ROOT = Path(__file__).resolve().parents[2]
MULTI = str(ROOT / "configs" / "estimate_example_multirun.csv")
ONE = str(ROOT / "configs" / "estimate_example_onerun.csv")
REPS = 200
# A valid level-0.05 bound is positive more often than this in 200 repetitions with probability <= 1e-3.
ALLOWED = int(stats.binom.ppf(1 - 1e-3, REPS, 0.05))


def run(*argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["estimate", *argv])
    return code, out.getvalue()


def write(path: Path, header: str, scores, labels) -> str:
    path.write_text(header + "\n" + "".join(f"{s:.9g},{int(b)}\n" for s, b in zip(scores, labels, strict=True)))
    return str(path)


def test_example_files_exit_codes():
    assert run(MULTI, "--claim-epsilon", "1")[0] == 1        # violation: noise cut threefold
    assert run(MULTI, "--claim-epsilon", "5")[0] == 0        # bound 4.4 < 5 < ceiling 6.3
    assert run(MULTI, "--claim-epsilon", "50")[0] == 3       # beyond what 2,000 trials can show
    assert run(ONE, "--claim-epsilon", "1")[0] == 1
    assert run(ONE, "--claim-epsilon", "20")[0] == 3
    assert run(ONE)[0] == 0


def test_report_set(tmp_path):
    code, text = run(ONE, "--claim-epsilon", "1", "--out", str(tmp_path / "rep"))
    assert code == 1 and "wrote" in text
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["status"] == "VIOLATION" and report["exit_code"] == 1
    probe = report["targets"][0]["probes"][0]
    assert probe["kind"] == "scores" and {b["method"] for b in probe["bounds"]} == {"one-run", "fdp-one-run",
                                                                                 "one-run-weighted", "one-run-gauss"}
    assert probe["roc"]["x"][0] == 0.0 and probe["roc"]["x"][-1] == 1.0
    markdown = (tmp_path / "rep" / "report.md").read_text()
    assert "Threshold choice: Bonferroni over the guess counts tried" in markdown
    assert "Mahloujifar" in markdown and (tmp_path / "rep" / "report.html").stat().st_size > 1000


def test_an_empty_out_is_refused(tmp_path, monkeypatch, capsys):
    # `--out ""` wrote report.json, report.md and report.html into the current directory
    monkeypatch.chdir(tmp_path)
    assert main(["estimate", ONE, "--claim-epsilon", "1", "--out", ""]) == 2
    assert "out: is empty" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_a_directory_is_named_as_one(tmp_path, capsys):
    # it was refused as "no such file", which sends the user looking for a missing path
    assert main(["estimate", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_json_with_a_report_set_is_one_json_document(tmp_path, capsys):
    # "wrote report.json, ..." followed the JSON on stdout, so stdout did not parse
    assert main(["estimate", ONE, "--claim-epsilon", "1", "--out", str(tmp_path / "rep"), "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["verdict"]["status"] == "VIOLATION"
    assert "wrote" in captured.err and (tmp_path / "rep" / "report.json").is_file()


def test_byte_order_mark_is_not_part_of_the_header(tmp_path):
    # spreadsheet programs write UTF-8 CSV with a byte-order mark; it was read as a header '\ufeffscore'
    text = Path(MULTI).read_text(encoding="utf-8")
    marked = tmp_path / "marked.csv"
    marked.write_text(text, encoding="utf-8-sig")
    plain = run(MULTI, "--claim-epsilon", "1", "--format", "json")
    with_mark = run(str(marked), "--claim-epsilon", "1", "--format", "json")
    assert with_mark[0] == plain[0] == 1
    assert json.loads(with_mark[1])["bounds"] == json.loads(plain[1])["bounds"]


def test_errors_name_the_line_of_the_file_past_blank_lines(tmp_path, capsys):
    # blank lines are skipped; the line named was counted without them (line 4 for line 5 here)
    for bad_row, words in [("abc,0", "line 5: score 'abc'"), ("3,1,4", "line 5: expected 2 fields")]:
        path = tmp_path / "blank.csv"
        path.write_text(f"score,world\n1,0\n\n2,1\n{bad_row}\n")
        assert main(["estimate", str(path)]) == 2
        assert words in capsys.readouterr().err


def test_multi_run_null_scores_positive_at_most_at_nominal_rate(tmp_path):
    # Both worlds N(0, 1): every bound > 0 is a false positive.
    rng = np.random.default_rng(2025)
    worlds = np.repeat([0, 1], 200)
    positive = {"VIOLATION of epsilon 0": 0}
    for rep in range(REPS):
        path = write(tmp_path / "null.csv", "score,world", rng.normal(size=worlds.size), worlds)
        code, text = run(path, "--format", "json", "--seed", str(rep), "--claim-epsilon", "0", "--resamples", "0")
        assert code in (0, 1, 3), code
        positive["VIOLATION of epsilon 0"] += code == 1  # the claim is true: a violation is a false one
        for bound in json.loads(text)["bounds"]:
            positive[bound["method"]] = positive.get(bound["method"], 0) + (bound["epsilon"] > 0)
    assert set(positive) == {"VIOLATION of epsilon 0", "clopper-pearson", "clopper-pearson-split",
                             "bayesian-jeffreys", "gdp"}
    print("positive bounds in", REPS, "null repetitions:", positive)
    assert max(positive.values()) <= ALLOWED, positive


def test_one_run_null_scores_positive_at_most_at_nominal_rate(tmp_path):
    # Canaries never inserted: the scores are independent of the inclusion bits.
    rng = np.random.default_rng(2026)
    positive = {"one-run": 0, "fdp-one-run": 0, "one-run-weighted": 0, "one-run-gauss": 0}
    for _ in range(REPS):
        included = rng.random(400) < 0.5
        path = write(tmp_path / "null.csv", "score,included", rng.normal(size=400), included)
        code, text = run(path, "--format", "json", "--resamples", "0")
        assert code == 0
        for bound in json.loads(text)["bounds"]:
            positive[bound["method"]] += bound["epsilon"] > 0
    print("positive bounds in", REPS, "null repetitions:", positive)
    assert max(positive.values()) <= ALLOWED, positive


def test_jax_privacy_documented_example(tmp_path):
    # jax_privacy's CanaryScoreAuditor example: out scores 0..99, in scores 0..99 + 9.5. Its AUROC (0.595)
    # is the area under the ROC's convex hull; ours is Mann-Whitney: P(in > out) = 5905 / 10000 exactly.
    out_scores, in_scores = np.arange(100.0), np.arange(100.0) + 9.5
    path = write(tmp_path / "jax.csv", "score,world", np.r_[out_scores, in_scores], np.repeat([0, 1], 100))
    code, text = run(path, "--format", "json", "--claim-epsilon", "1")
    result = json.loads(text)
    assert abs(result["auc"] - np.mean(in_scores[:, None] > out_scores[None, :])) < 1e-12
    assert code in (0, 3) and result["verdict"]["status"] != "VIOLATION"


def test_one_run_inclusion_far_from_half_is_warned(tmp_path):
    included = np.arange(200) < 150   # 150 of 200: binomial p about 1e-12 under inclusion probability 1/2
    path = write(tmp_path / "skew.csv", "score,included", np.random.default_rng(1).normal(size=200), included)
    assert "150 of 200 canaries included" in json.loads(run(path, "--format", "json")[1])["warning"]
    assert json.loads(run(ONE, "--format", "json")[1])["warning"] is None   # 494 of 1000


def test_a_claim_only_the_weighted_bound_refutes_is_a_violation():
    """The one-run example's rigorous bounds: Steinke 3.08, one-run-weighted 3.49. A claim of 3 lies between them:
    the verdict reads the weighted bound's exact p-value for the claim (``attacks.verdict.bound_p_value``), so it is
    a VIOLATION rather than "no evidence against the claim" beside a rigorous bound above it. Deterministic."""
    code, text = run(ONE, "--claim-epsilon", "3", "--format", "json", "--resamples", "0")
    result = json.loads(text)
    weighted = next(b for b in result["bounds"] if b["method"] == "one-run-weighted")
    assert weighted["epsilon"] > 3 and weighted["details"]["claim_p_value"] < 0.025
    assert code == 1 and result["verdict"]["status"] == "VIOLATION"
