"""The README's Flower commands, run like every other README command (``tests/test_readme_commands.py``)
but from their own module, so that pytest-xdist can run them beside the others on the second worker.

The report ``dpaudit audit configs/audit_flower.toml --allow-code --out out/flower`` writes (on Flower's
simulation engine) is then compared with BENCHMARKS.md's figures for it, each to its printed decimals: every node
is sampled every round there, so the run repeats at its seed to float32 rounding whatever node ids Flower draws.
"""

from __future__ import annotations

import json

import pytest

from tests.test_readme_commands import FLOWER_INSTALLED, run_readme_jobs


@pytest.mark.slow
def test_every_readme_flower_command_runs(tmp_path):
    run_readme_jobs(tmp_path, flower=True)
    if FLOWER_INSTALLED:
        check_audit_flower_figures(json.loads((tmp_path / "work" / "out" / "flower" / "report.json").read_text()))


def check_audit_flower_figures(report: dict) -> None:
    from tests.flower.documented import between, find, printed, section

    text = between(section("BENCHMARKS.md", "## Flower"), "`dpaudit audit configs/audit_flower.toml --allow-code`",
                   "Must-show 3")
    documented = find(r"seed 3\): PASS \(pld proves ([\d.]+) <= 8\), `flower-app` probe UNTESTABLE at 40 canaries "
                      r"\(ceiling ([\d.]+)\), bounds ([\d.]+) \(Steinke\) and ([\d.]+) \(f-DP\) for both threat "
                      r"models, measured-shift bound ([\d.]+), estimates ([\d.]+) / ([\d.]+) \(final model / all "
                      r"iterates, mu ([\d.]+) / ([\d.]+)\) against the accounted ([\d.]+) \(dpa-rdp\); findings: "
                      r"MEDIUM weighted-by-examples, INFO accounted rows \(Flower's no-amplification figure "
                      r"([\d.]+)\)", text)
    target = report["targets"][0]
    verdict, probe = target["verdict"], target["probes"][0]
    values = {f["values"].get("code"): f["values"] for f in target["findings"] if f.get("values")}
    estimate, rows = values["canary-estimate"], values["accounted-rows"]
    bounds = {(b["threat_model"], b["method"]): b["epsilon"] for b in probe["bounds"]}
    assert verdict["status"] == "PASS" and verdict["analytic"]["accountant"] == "pld"
    assert probe["name"] == "flower-app" and verdict["empirical"]["status"] == "UNTESTABLE"
    fresh = [verdict["analytic"]["epsilon"], verdict["empirical"]["ceiling"]]
    for method in ("one-run", "fdp-one-run"):
        assert bounds[("final_model", method)] == pytest.approx(bounds[("all_iterates", method)], rel=1e-12)
        fresh.append(bounds[("final_model", method)])
    fresh += [bounds[("all_iterates", "measured-shift")], estimate["final_model_epsilon"],
              estimate["all_iterates_epsilon"], estimate["final_model_mu"], estimate["all_iterates_mu"],
              rows["runs_epsilon"], rows["no-amplification_epsilon"]]
    for doc, value in zip(documented.groups(), fresh, strict=True):
        assert printed(doc, value), (doc, value)
    assert [(f["severity"], f["values"].get("code")) for f in target["findings"]
            if f["severity"] != "info"] == [("medium", "weighted-by-examples")]
