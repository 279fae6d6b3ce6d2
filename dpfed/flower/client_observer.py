"""A client mod that observes the private training inside each real client's ClientApp call (opacus).

``ClientObserver(directory)`` runs around the project's ClientApp (inside the canary mod, so only real nodes
pass through it) in whichever process Flower runs the client (a Ray actor in simulation). For every message
it runs the call inside ``dpfed.dpsgd.observe.observing_opacus`` and writes what opacus ran as one JSON file
in ``directory`` (written to a temporary name and renamed: a file is whole or absent): the node, its
``partition-id``, the round (the message's group id), the message type, and the ``OpacusLog``. A call in
which opacus did nothing writes a record too (its lists are empty), so the audit knows which clients trained
without DP. When opacus is not installed the call runs unobserved and the record says so.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".client.json"


@dataclass(frozen=True)
class ClientObserver:
    """A Flower mod (``mod(msg, context, call_next)``) writing one observation per message into ``directory``;
    ``canaries``: gradient canaries through each client's own private optimizer in every training call
    (``dpfed.dpsgd.loop_canaries``: the coins and coordinates seeded by ``seed`` and the client's partition, the same
    in each of its rounds; the sampling fresh each round), their scores written with the observation."""

    directory: str
    canaries: int = 0
    seed: int = 0
    quiet: bool = False  # Flower's INFO log off in the ClientApp's process (``dpfed.flower.quiet``)

    def __call__(self, msg, context, call_next):
        from dpfed.flower.canary_keys import MARKER

        if self.quiet:
            from dpfed.flower.quiet import quiet_here

            quiet_here()

        if MARKER in context.node_config:  # a legacy canary running the project's ClientApp: not a real client
            return call_next(msg, context)
        record = {"node_id": int(context.node_id), "partition_id": _partition(context),
                  "round": _round(msg), "message_type": str(msg.metadata.message_type)}
        try:
            from dpfed.dpsgd.observe import observing_opacus
        except ModuleNotFoundError:  # no torch/opacus in this environment: nothing to observe
            record["opacus"] = None
            reply = call_next(msg, context)
        else:
            plan = self._canaries(record)
            with observing_opacus(plan) as log:
                reply = call_next(msg, context)
            record["opacus"] = log.to_dict()
            if plan is not None and plan.refusal is not None:
                record["canaries"] = {"refusal": plan.refusal}
            elif plan is not None and plan.steps:
                record["canaries"] = {"scores": plan.scores.tolist(), "included": plan.included.tolist(),
                                      "steps": plan.steps}
        write_record(self.directory, record)
        return reply


    def _canaries(self, record):
        if not self.canaries or not record["message_type"].startswith("train") or record["partition_id"] is None:
            return None
        from dpfed.dpsgd.loop_canaries import LoopCanaries

        return LoopCanaries(self.canaries, seed=(int(self.seed) * 1_000_003 + record["partition_id"]) % 2**63,
                            stream=record["round"] or 0, strict=False)


def _partition(context):
    value = context.node_config.get("partition-id")
    return None if value is None else int(value)


def _round(msg):
    """The round: the Message API's ``server-round`` config entry, else the message's group id (the legacy
    workflows set it to the round); None when neither holds one."""
    for record in msg.content.config_records.values():
        if "server-round" in record:
            return int(record["server-round"])
    try:
        return int(msg.metadata.group_id)
    except (TypeError, ValueError):
        return None


def write_record(directory: str, record: dict) -> None:
    path = Path(directory) / f"{os.getpid()}-{uuid.uuid4().hex[:12]}{SUFFIX}"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record), encoding="utf-8")
    os.replace(temporary, path)


def read_records(directory: str) -> list[dict]:
    """Every observation written in ``directory``, ordered by round then node (a round of None first)."""
    records = [json.loads(p.read_text(encoding="utf-8")) for p in Path(directory).glob(f"*{SUFFIX}")]
    return sorted(records, key=lambda r: (r["round"] if r["round"] is not None else -1, r["node_id"]))
