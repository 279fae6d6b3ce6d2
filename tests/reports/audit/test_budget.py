"""``dpaudit audit --budget``: the planned trials of default probes cut to what a timed first batch says fits, whole
runs of the set-up's canaries; where too few would remain to certify the claim even with a perfect attack, the
target's one-run probe instead. Planning only (no probe runs); the timing varies with the machine, so the tests
check the cut against the plan without a budget, never a number of seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from accounting.errors import ConfigurationError
from reports.audit.config import parse_config
from reports.audit.runner import AuditOptions, plan_target
from reports.commands.audit import duration_arg

pytest.importorskip("opacus")
SETUP = Path(__file__).resolve().parents[2] / "dpsgd_outside" / "setup_digits.py"
CONFIG = f"""
seed = 1
[[target]]
name = "digits"
algorithm = "dp-sgd"
accountants = ["pld"]
[target.parameters]
setup = "{SETUP}:make_setup"
[target.claim]
epsilon = {{epsilon}}
delta = 1e-5
neighbouring = "add-remove"
unit = "record"
"""


def _plan(epsilon: float, budget: float | None):
    [spec] = parse_config(CONFIG.format(epsilon=epsilon), "t.toml", allow_code=True)["targets"]
    return plan_target(spec, 0, AuditOptions(estimate=False, progress=False, budget=budget))


@pytest.mark.parametrize("text, seconds", [("10m", 600), ("90s", 90), ("1h", 3600), ("2.5", 2.5), (" 3m ", 180)])
def test_durations(text, seconds):
    assert duration_arg(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-1m", "10 minutes", "1d", "m"])
def test_bad_durations_name_the_option(text):
    with pytest.raises(ConfigurationError, match="budget"):
        duration_arg(text)


def test_a_short_budget_cuts_the_planned_trials_to_whole_runs():
    [full] = _plan(2.85, None).probes
    [cut] = _plan(2.85, 0.5).probes
    assert cut.spec.name == full.spec.name == "dpsgd-all-iterates"
    assert cut.trials < full.trials and cut.trials % 898 == 0  # whole runs of the set-up's 898 canaries


def test_a_budget_too_short_to_certify_the_claim_runs_one_run_instead():
    """At claim 8 a perfect multi-run attack needs 23,304 trials to certify anything; one run of canaries fits."""
    [probe] = _plan(8.0, 0.5).probes
    assert probe.spec.name == "dpsgd-one-run" and probe.probe is not None
