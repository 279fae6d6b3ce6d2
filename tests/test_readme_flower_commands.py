"""The documented Flower commands, run like every other documented command (``tests/test_readme_commands.py``)
but from their own module, so that pytest-xdist can run them beside the others on the second worker; then the
reports they wrote are compared with what README.md, the Flower tutorial and BENCHMARKS.md print. README.md's
own Flower commands and ``configs/audit_flower.toml`` run on Flower's simulation engine (Ray, about 15 s a run);
the documentation pages' on the in-process grid (``tests/test_readme_commands.py::flower_runtime``), where the
same apps run message by message through Flower's own code (its 268 s in the suite became 94 s).

* The outside app ``tests/flower_apps/digits_dp`` (written without any of our code): server-side fixed clipping
  passes with no critical finding; the app scaling its wrapper's noise by 0.5 is a VIOLATION naming
  ``noise-below-accounted`` in both rounds, with the README's noise std and accounted std to their printed
  decimals and p below the printed bound (a lower-tail chi-square at 1e-3 per round, Bonferroni over rounds:
  the correct app fails with probability below 1e-3). The noise is the seed's draw whatever node ids Flower
  gives, so the figures repeat. The client-side case of the same app is in
  ``tests/flower/test_flower_app_audit.py``.
* ``dpaudit audit configs/audit_flower.toml --allow-code --out out/flower``: compared with BENCHMARKS.md's
  figures for it, each to its printed decimals: every node is sampled every round there, so the run repeats at
  its seed to float32 rounding whatever node ids Flower draws.
"""

from __future__ import annotations

import json

import pytest

from tests.test_readme_commands import FLOWER_INSTALLED, run_readme_jobs


def _critical(audit: dict) -> set[str]:
    return {f["code"] for f in audit["findings"] if f["severity"] == "critical"}


@pytest.mark.slow
def test_every_readme_flower_command_runs(tmp_path):
    work = run_readme_jobs(tmp_path, flower=True)
    if not FLOWER_INSTALLED:
        return  # each command exited 2 saying the extra is missing (checked by run_readme_jobs)
    check_digits_dp_figures(json.loads((work / "flower-audit" / "report.json").read_text()),
                            json.loads((work / "flower-half-noise" / "report.json").read_text()))
    check_audit_flower_figures(json.loads((work / "out" / "flower" / "report.json").read_text()))


def check_digits_dp_figures(passed: dict, halved: dict) -> None:
    """The Flower tutorial's "2. Audit an app": its two commands' verdicts, findings and figures."""
    from tests.flower.documented import find, printed, section

    assert passed["verdict"] == "PASS" and not _critical(passed)
    assert passed["details"]["config"]["kind"] == "server-fixed"
    assert halved["verdict"] == "VIOLATION" and "noise-below-accounted" in _critical(halved)
    assert _critical(halved) <= {"noise-below-accounted", "noise-part-below-accounted"}
    figures = find(r"`CRITICAL noise-below-accounted` in both rounds \(noise std ([\d.]+) against the accounted "
                   r"z C / m = ([\d.]+), p below ([\de.-]+);",
                   section("docs/tutorials/flower-app.md", "## 2. Audit an app"))
    found = [f["values"] for f in halved["findings"] if f["severity"] == "critical"
             and f["code"] == "noise-below-accounted"]
    assert sorted(v["round"] for v in found) == [1, 2]
    for values in found:
        assert printed(figures[1], values["noise_std"]) and printed(figures[2], values["accounted"]), values
        assert values["p_value"] < float(figures[3])


def check_audit_flower_figures(report: dict) -> None:
    from tests.flower.documented import between, find, printed, section

    text = between(section("BENCHMARKS.md", "## Flower"), "`dpaudit audit configs/audit_flower.toml --allow-code`",
                   "Must-show 3")
    # (the benchmark's text keeps the probe's word of its day, UNTESTABLE, today's INCONCLUSIVE)
    documented = find(r"seed 3\): PASS \(pld proves ([\d.]+) <= 8\), `flower-app` probe "
                      r"(?:UNTESTABLE|INCONCLUSIVE) at 40 canaries "
                      r"\(ceiling ([\d.]+)\), bounds ([\d.]+) \(Steinke\) and ([\d.]+) \(f-DP\) for both threat "
                      r"models, measured-shift bound ([\d.]+), estimates ([\d.]+) / ([\d.]+) \(final model / all "
                      r"iterates, mu ([\d.]+) / ([\d.]+)\) against the accounted ([\d.]+) \(dpa-rdp\); findings: "
                      r"(?:MEDIUM|INFO) weighted-by-examples, INFO accounted rows \(Flower's no-amplification figure "
                      r"([\d.]+)\)", text)
    target = report["targets"][0]
    verdict, probe = target["verdict"], target["probes"][0]
    values = {f["values"].get("code"): f["values"] for f in target["findings"] if f.get("values")}
    estimate, rows = values["canary-estimate"], values["accounted-rows"]
    bounds = {(b["threat_model"], b["method"]): b["epsilon"] for b in probe["bounds"]}
    assert verdict["status"] == "PASS" and verdict["analytic"]["accountant"] == "pld"
    assert probe["name"] == "flower-app" and verdict["empirical"]["status"] == "INCONCLUSIVE"
    fresh = [verdict["analytic"]["epsilon"], verdict["empirical"]["ceiling"]]
    for method in ("one-run", "fdp-one-run"):
        assert bounds[("final_model", method)] == pytest.approx(bounds[("all_iterates", method)], rel=1e-12)
        fresh.append(bounds[("final_model", method)])
    fresh += [bounds[("all_iterates", "measured-shift")], estimate["final_model_epsilon"],
              estimate["all_iterates_epsilon"], estimate["final_model_mu"], estimate["all_iterates_mu"],
              rows["runs_epsilon"], rows["no-amplification_epsilon"]]
    for doc, value in zip(documented.groups(), fresh, strict=True):
        assert printed(doc, value), (doc, value)
    # weighted-by-examples is INFO where the transcript shows equal weights (every node every round here; BENCHMARKS.md,
    # written before, still prints it as MEDIUM): no finding above INFO
    assert [(f["severity"], f["values"].get("code")) for f in target["findings"] if f["severity"] != "info"] == []
    assert {f["values"].get("code"): f["severity"] for f in target["findings"]}["weighted-by-examples"] == "info"
