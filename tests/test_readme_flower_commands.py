"""The README's Flower commands, run like every other README command (``tests/test_readme_commands.py``)
but from their own module, so that pytest-xdist can run them beside the others on the second worker.

Two of them audit the outside app ``tests/flower_apps/digits_dp`` (written without any of our code) and
write their reports, read here: server-side fixed clipping passes with no critical finding; the app
scaling its wrapper's noise by 0.5 is a VIOLATION naming ``noise-below-accounted`` (a lower-tail
chi-square at 1e-3 per round, Bonferroni over rounds: the correct app fails with probability below 1e-3;
half the noise gives p below 1e-90, measured 4e-98 and 1e-96). The client-side case of the same app is
in ``tests/flower/test_flower_app_audit.py``.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.test_readme_commands import run_readme_jobs


def _critical(audit: dict) -> set[str]:
    return {f["code"] for f in audit["findings"] if f["severity"] == "critical"}


@pytest.mark.slow
def test_every_readme_flower_command_runs(tmp_path):
    work = run_readme_jobs(tmp_path, flower=True)
    if importlib.util.find_spec("flwr") is None:
        return  # each command exited 2 saying the extra is missing (checked by run_readme_jobs)
    passed = json.loads((work / "flower-audit.json").read_text())
    assert passed["verdict"] == "PASS" and not _critical(passed)
    assert passed["details"]["config"]["kind"] == "server-fixed"
    halved = json.loads((work / "flower-half-noise.json").read_text())
    assert halved["verdict"] == "VIOLATION" and "noise-below-accounted" in _critical(halved)
    assert _critical(halved) <= {"noise-below-accounted", "noise-part-below-accounted"}
