"""Strict construction of the algorithms' frozen configuration dataclasses (shared by FTS and DUETS).

A subclass is a frozen dataclass that sets ``toml_table``; it gets ``replace``, ``to_dict``, ``from_dict``
and ``from_toml``, all of which reject an unknown key with a ``ConfigurationError`` naming it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from accounting.errors import ConfigurationError, read_toml


def _reject_unknown(cls, keys) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise ConfigurationError(unknown[0], "unknown configuration key")


class StrictConfig:
    """Mixin for frozen configuration dataclasses read from dicts and TOML files."""

    toml_table: ClassVar[str] = ""

    def replace(self, **changes):
        """A copy with ``changes`` applied (validated again)."""
        _reject_unknown(type(self), changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        _reject_unknown(cls, data)
        return cls(**data)

    @classmethod
    def from_toml(cls, path, **overrides):
        """Read a TOML file of top-level keys (optionally under the ``[toml_table]`` table)."""
        data = read_toml(Path(path), "config")
        data = dict(data.get(cls.toml_table, data))
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(data)
