"""A report says an accountant "proves the claim" only when the target observed every premise of the claim; a
target naming premises it did not observe (the DP-SGD train form: ``premises_not_observed`` among its parameters)
gets the accountant's bound of what ran and the words "not observed" instead."""

from __future__ import annotations

import pytest

from reports.render_text import verdict_reason


def _target(rule: str, missing=None) -> dict:
    parameters = {} if missing is None else {"premises_not_observed": missing}
    return {"claim": {"epsilon": 3.0, "delta": 1e-5}, "parameters": parameters, "findings": [],
            "verdict": {"rule": rule, "analytic": {"accountant": "pld", "epsilon": 2.99},
                        "empirical": {"status": "UNTESTABLE", "probes_run": 0, "failed": [], "lower_bound": None,
                                      "ceiling": None}}}


@pytest.mark.parametrize("rule", ["proved", "implementation-bug", "untested-implementation"])
def test_proves_only_with_every_premise_observed(rule):
    assert "pld accountant proves the claim" in verdict_reason(_target(rule))
    assert "pld accountant proves the claim" in verdict_reason(_target(rule, []))
    words = verdict_reason(_target(rule, ["each record adds at most the clip C to each noised sum"]))
    assert "proves the claim" not in words and "not observed: each record adds at most the clip C" in words
