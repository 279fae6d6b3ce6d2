"""Client-side clipping checked in the ClientApp's mods (``dpfed.flower.mods``, ``flower_checks.client_clipping``).

The mod chains are read from real flwr 1.42 ClientApps (legacy and Message API), and their order is checked against
what Flower does with it: a mod listed before the clipping mod sees the reply after the clip (run here through
Flower's own ``make_ffn``). Four apps written outside this project (``tests/flower_apps/*client_clipping*``: Flower's
client-side fixed-clipping wrapper, a clip of 100 far above every update) are audited on the in-process grid: with
``fixedclipping_mod`` PASS, without it VIOLATION by ``client-clipping-missing`` although no reply exceeded the clip.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from attacks.flower_checks.client_clipping import client_clipping_findings  # noqa: E402
from dpfed.flower.mods import train_chains  # noqa: E402

APPS = Path(__file__).resolve().parents[1] / "flower_apps"


def _identity(msg, context):
    return msg


def _doubling_mod(msg, context, call_next):  # an app's own mod that changes the update it is handed
    reply = call_next(msg, context)
    reply.content["arrays"] = reply.content["arrays"].__class__([2 * a for a in reply.content["arrays"]
                                                                .to_numpy_ndarrays()])
    return reply


def _message_app(mods=(), train_mods=()):
    from flwr.clientapp import ClientApp

    app = ClientApp(mods=list(mods))
    app.train(mods=list(train_mods))(_identity)
    app.evaluate()(_identity)
    return app


def _codes(findings) -> dict:
    return {f.code: f.severity for f in findings}


def test_chains_read_in_flowers_order_app_mods_first_then_the_functions():
    from flwr.clientapp.mod import LocalDpMod, fixedclipping_mod, message_size_mod

    app = _message_app([message_size_mod], [fixedclipping_mod, LocalDpMod(1.0, 1.0, 1.0, 1e-5)])
    [(name, chain)] = train_chains(app).items()  # the evaluate function is not a training one
    assert name == "train.default"
    assert [m.name for m in chain] == ["message_size_mod", "fixedclipping_mod", "LocalDpMod"]
    assert all(m.flower for m in chain) and [m.clips for m in chain] == [False, True, False]


def test_legacy_client_fn_chain_and_an_unreadable_app():
    from flwr.client.mod import fixedclipping_mod, secaggplus_mod
    from flwr.clientapp import ClientApp

    def client_fn(context):
        raise AssertionError("not called")

    chains = train_chains(ClientApp(client_fn=client_fn, mods=[secaggplus_mod, fixedclipping_mod]))
    assert [m.name for m in chains["client_fn"]] == ["secaggplus_mod", "fixedclipping_mod"]
    assert train_chains(ClientApp(client_fn=client_fn)) == {"client_fn": []}
    assert train_chains(ClientApp()) is None  # no training function: nothing to read
    [unread] = client_clipping_findings(None, "client-fixed")
    assert unread.code == "client-clipping-unread" and unread.severity == "high"


def test_flower_applies_the_first_mod_outermost_so_a_mod_listed_first_changes_the_clipped_reply():
    """The premise of ``client-clipping-order``, checked on Flower's own ``make_ffn``: with ``[own, clip]`` the reply
    leaves with twice the clip; with ``[clip, own]`` at the clip."""
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
    from flwr.clientapp.mod import fixedclipping_mod
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 1  # as Flower's runtime sets them

    def train(msg, context):
        return Message(RecordDict({"arrays": ArrayRecord([np.full(4, 10.0, dtype=np.float32)])}), reply_to=msg)

    def norm_out(mods) -> float:
        app = _message_app(mods)
        app._registered_funcs.clear()
        app.train()(train)
        msg = Message(RecordDict({"arrays": ArrayRecord([np.zeros(4, dtype=np.float32)]),
                                  "config": ConfigRecord({"clipping_norm": 1.0})}), dst_node_id=1,
                      message_type="train")
        reply = app(msg, Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={}))
        return float(np.linalg.norm(reply.content["arrays"].to_numpy_ndarrays()[0]))

    assert norm_out([_doubling_mod, fixedclipping_mod]) == pytest.approx(2.0, rel=1e-6)  # clipped to 1, doubled
    assert norm_out([fixedclipping_mod, _doubling_mod]) == pytest.approx(1.0, rel=1e-6)  # doubled, clipped to 1
    order = _codes(client_clipping_findings(train_chains(_message_app([_doubling_mod, fixedclipping_mod])),
                                            "client-fixed"))
    assert order == {"client-clipping-order": "high"}
    inner = _codes(client_clipping_findings(train_chains(_message_app([fixedclipping_mod, _doubling_mod])),
                                            "client-fixed"))
    assert inner == {"client-clipping": "info"}


def test_missing_unverified_and_kept_updates():
    from flwr.clientapp.mod import adaptiveclipping_mod, fixedclipping_mod, message_size_mod

    def some_clip(msg, context, call_next):  # an app's own mod that clips some nodes only
        if context.node_id == 0:
            return call_next(msg, context)
        return fixedclipping_mod(msg, context, call_next)

    missing = client_clipping_findings(train_chains(_message_app([message_size_mod])), "client-fixed")
    assert _codes(missing) == {"client-clipping-missing": "critical"} and "fixedclipping_mod" in missing[0].message
    assert _codes(client_clipping_findings(train_chains(_message_app([], [])), "client-adaptive")) == {
        "client-clipping-missing": "critical"}
    assert _codes(client_clipping_findings(train_chains(_message_app([some_clip])), "client-fixed")) == {
        "client-clipping-unverified": "high"}
    kept = client_clipping_findings(train_chains(_message_app([message_size_mod], [adaptiveclipping_mod])),
                                    "client-adaptive")
    assert _codes(kept) == {"client-clipping": "info"}
    assert client_clipping_findings(train_chains(_message_app([])), "server-fixed") == []  # the server clips


def _audit(tmp_path, monkeypatch, app: str) -> tuple[int, dict]:
    from reports.cli import main
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)
    out = tmp_path / app
    code = main(["flower", str(APPS / app), "--num-supernodes", "6", "--out", str(out), "--no-progress"])
    return code, json.loads((out / "report.json").read_text())


def _largest_norm(result: dict) -> float:
    return max(max(m["payload"]["norms"]) for m in result["details"]["transcript"]["messages"]
               if m["name"] == "dp_release")


@pytest.mark.slow  # two audits each (seconds: the accountants of what ran)
@pytest.mark.parametrize("app", ["client_clipping", "legacy_client_clipping"])
def test_outside_apps_with_the_mod_pass_and_without_it_are_a_violation_at_a_clip_above_every_update(
        tmp_path, monkeypatch, app):
    code, clipped = _audit(tmp_path, monkeypatch, app)
    assert code == 0 and clipped["verdict"] == "PASS", clipped["findings"]
    assert "client-clipping" in {f["code"] for f in clipped["findings"]}
    code, forgotten = _audit(tmp_path, monkeypatch, f"{app}_forgotten")
    assert code == 1 and forgotten["verdict"] == "VIOLATION"
    critical = {f["code"] for f in forgotten["findings"] if f["severity"] == "critical"}
    assert critical == {"client-clipping-missing"}, forgotten["findings"]
    clip = forgotten["details"]["config"]["clip"]
    assert _largest_norm(forgotten) < clip and _largest_norm(clipped) < clip  # no reply reached the clip of 100
