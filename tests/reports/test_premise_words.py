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
                        "empirical": {"status": "INCONCLUSIVE", "probes_run": 0, "failed": [], "lower_bound": None,
                                      "ceiling": None}}}


@pytest.mark.parametrize("rule", ["proved", "implementation-bug", "untested-implementation"])
def test_proves_only_with_every_premise_observed(rule):
    assert "pld accountant proves the claim" in verdict_reason(_target(rule))
    assert "pld accountant proves the claim" in verdict_reason(_target(rule, []))
    words = verdict_reason(_target(rule, ["each record adds at most the clip C to each noised sum"]))
    assert "proves the claim" not in words and "not observed: each record adds at most the clip C" in words


@pytest.mark.parametrize("accounted_from, assumed", [("loop", True), ("accounted_epochs", False)])
def test_the_setup_form_names_what_it_cannot_observe(accounted_from, assumed):
    """The set-up form runs the user's objects, not their loop: the loop's updates and multiplicity are never
    observed, and the steps only where the set-up tells them."""
    from reports.audit.target_dpsgd import _setup_unobserved

    missing = _setup_unobserved({"steps": {"accounted_from": accounted_from}})
    assert len(missing) == 2 + assumed and any("not their loop" in m for m in missing)
    assert any("steps are assumed" in m for m in missing) == assumed
