"""Protocol transcripts: every message that crosses the network during a federated run.

A ``Transcript`` is an append-only list of ``Message`` records (round, sender, receiver, name,
payload). Attacks observe transcripts (or a filtered view of them), never algorithm internals.
Conventions used by the algorithms in ``dpfed``: the server is ``"server"``, agents are
``"agent<i>"`` (0-based), a broadcast to all agents has receiver ``"*"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SERVER = "server"
BROADCAST = "*"


def agent_name(index: int) -> str:
    """Canonical transcript name of agent ``index`` (0-based)."""
    return f"agent{int(index)}"


@dataclass(frozen=True)
class Message:
    """One message: in ``round`` (1-based), ``sender`` sent ``payload`` named ``name`` to ``receiver``."""

    round: int
    sender: str
    receiver: str
    name: str
    payload: Any

    def to_dict(self) -> dict:
        return {
            "round": self.round,
            "sender": self.sender,
            "receiver": self.receiver,
            "name": self.name,
            "payload": _jsonable(self.payload),
        }


def _jsonable(value: Any) -> Any:
    """Convert numpy arrays/scalars (possibly nested in lists/dicts) to plain JSON types."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass
class Transcript:
    """Append-only record of the messages of one run."""

    messages: list[Message] = field(default_factory=list)

    def add(self, round: int, sender: str, receiver: str, name: str, payload: Any) -> Message:
        """Append one message and return it."""
        message = Message(int(round), str(sender), str(receiver), str(name), payload)
        self.messages.append(message)
        return message

    def filter(
        self,
        name: str | None = None,
        sender: str | None = None,
        receiver: str | None = None,
        round: int | None = None,
    ) -> list[Message]:
        """Messages matching every given criterion (None matches anything), in order of sending."""
        return [
            m
            for m in self.messages
            if (name is None or m.name == name)
            and (sender is None or m.sender == sender)
            and (receiver is None or m.receiver == receiver)
            and (round is None or m.round == round)
        ]

    def payloads(
        self, name: str | None = None, sender: str | None = None, receiver: str | None = None
    ) -> list[Any]:
        """Payloads of ``filter(...)``, in order."""
        return [m.payload for m in self.filter(name=name, sender=sender, receiver=receiver)]

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def to_dict(self) -> dict:
        """JSON-ready representation: ``{"messages": [message dicts]}``."""
        return {"messages": [m.to_dict() for m in self.messages]}

    @classmethod
    def from_dict(cls, data: dict) -> Transcript:
        """Inverse of ``to_dict`` (array payloads come back as nested lists)."""
        t = cls()
        for m in data.get("messages", []):
            t.add(m["round"], m["sender"], m["receiver"], m["name"], m["payload"])
        return t
