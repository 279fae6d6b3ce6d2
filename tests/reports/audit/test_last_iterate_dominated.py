"""The last-iterate probe runs only where it adds power (issue 40): beside ``dpsgd-all-iterates`` it is declined
(the final parameters are a post-processing of the iterates that probe reads, at the same cost per trial, so
its bound can only be lower: BENCHMARKS.md "DP-SGD audit target", where it does not refute half the noise and
all-iterates does); listed alone it attacks the final parameters. Planning only: nothing is trained."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.audit.config import parse_config
from reports.audit.runner import AuditOptions, plan_audit

pytest.importorskip("opacus")
SETUPS = Path(__file__).resolve().parents[2] / "dpsgd_outside"
CONFIG = """
[[target]]
algorithm = "dp-sgd"
accountants = ["rdp"]
[target.parameters]
setup = "setup_digits.py:make_setup"
[target.claim]
epsilon = 2.85
delta = 1e-5
neighbouring = "add-remove"
unit = "record"
"""
PROBE = '[[target.probes]]\nname = "{}"\ntrials = 898\n'


def _planned(*names: str) -> dict:
    text = CONFIG + "".join(PROBE.format(name) for name in names)
    (target,) = plan_audit(parse_config(text, "x.toml", allow_code=True, base_dir=SETUPS)["targets"],
                           AuditOptions(estimate=False, progress=False))
    return {p.spec.name: p for p in target.probes}


def test_beside_all_iterates_the_last_iterate_probe_is_declined_with_the_reason():
    planned = _planned("dpsgd-all-iterates", "dpsgd-last-iterate")
    assert planned["dpsgd-all-iterates"].probe is not None
    declined = planned["dpsgd-last-iterate"]
    assert declined.probe is None and "adds no power beside dpsgd-all-iterates" in declined.reason


def test_alone_the_last_iterate_probe_runs():
    planned = _planned("dpsgd-last-iterate")
    assert planned["dpsgd-last-iterate"].probe is not None and not planned["dpsgd-last-iterate"].reason
