"""The Opacus check reads a ClientApp and finds a PrivacyEngine built per message (Flower's Opacus example
pattern), directly, through a helper of the same module, or in a legacy client's ``fit``; an app without
one has no finding. Nothing is run."""

import pytest

pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")
pytest.importorskip("opacus", reason="opacus is not installed")

from attacks.flower_checks.opacus_check import opacus_findings  # noqa: E402
from tests.flower import opacus_client_apps as apps  # noqa: E402


@pytest.mark.parametrize("app, where", [(apps.per_round, "train_with_new_engine"), (apps.through_helper, "make_engine"),
                                        (apps.legacy, "OpacusClient.fit")])
def test_engine_built_per_message_is_found(app, where):
    findings = opacus_findings(app)
    assert [(f.code, f.severity, f.values["function"]) for f in findings] == [("opacus-engine-per-round", "high",
                                                                                where)]


def test_app_without_engine_and_the_example_app_have_no_finding():
    from pathlib import Path

    from dpfed.flower.app_project import load_apps, read_project

    example = read_project(Path(__file__).resolve().parents[2] / "dpfed" / "flower" / "example_app")
    assert opacus_findings(apps.plain) == []
    assert opacus_findings(load_apps(example)[1]) == []
