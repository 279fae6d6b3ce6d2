"""Strict reading of user-written tables (TOML files): unknown keys, misplaced keys and wrong types are errors.

A schema is a dict mapping each allowed key to what its value must be:

- a ``Kind`` (``NUMBER``, ``INTEGER``, ``STRING``, ``BOOLEAN``, ``STRINGS``, ``NUMBERS``, ``DELTA``,
  ``ANY_TABLE``), optionally wrapped in ``Required(kind)``;
- a nested schema dict (a sub-table);
- ``ArrayOf(schema)`` (an array of tables, as ``[[target]]``).

``check_table(path, data, schema)`` returns ``data`` unchanged when it conforms and otherwise raises
``ConfigurationError`` naming the key's full path (``target[0].parameters.step``) and, for an unknown
key, the keys allowed there. Numbers are never read from strings (``rate = "0.35"`` is an error), and
booleans are not numbers. Value ranges are the business of the object the table configures.
"""

from __future__ import annotations

from dataclasses import dataclass

from accounting.errors import ConfigurationError


@dataclass(frozen=True)
class Kind:
    """A leaf value's type: ``name`` for messages, ``accepts(value)`` to test it."""

    name: str
    types: tuple

    def accepts(self, value) -> bool:
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)


@dataclass(frozen=True)
class ListKind:
    """An array whose every element is of ``element``'s kind."""

    element: Kind

    @property
    def name(self) -> str:
        return f"a list of {self.element.name}s"

    def accepts(self, value) -> bool:
        return isinstance(value, list) and all(self.element.accepts(v) for v in value)


@dataclass(frozen=True)
class Required:
    """A key that must be present."""

    kind: object


@dataclass(frozen=True)
class ArrayOf:
    """An array of tables, each checked against ``schema``."""

    schema: dict


@dataclass(frozen=True)
class AnyTable:
    """A table whose keys are checked elsewhere (for example by the object it configures)."""

    name: str = "a table"


NUMBER = Kind("number", (int, float))
INTEGER = Kind("whole number", (int,))
STRING = Kind("string", (str,))
BOOLEAN = Kind("boolean", (bool,))
NUMBER_OR_STRING = Kind("number or string", (int, float, str))
STRINGS = ListKind(STRING)
NUMBERS = ListKind(NUMBER)
ANY_TABLE = AnyTable()


def _type_name(value) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_table(path: str, data, schema: dict) -> dict:
    """Check ``data`` (a parsed TOML table) against ``schema``; return it, or raise ConfigurationError."""
    if not isinstance(data, dict):
        raise ConfigurationError(path or "config", f"expected a table, got {_type_name(data)}")
    unknown = sorted(set(data) - set(schema))
    if unknown:
        raise ConfigurationError(
            _join(path, unknown[0]), f"unknown key; allowed here: {', '.join(sorted(schema)) or 'none'}"
        )
    for key, spec in schema.items():
        field = _join(path, key)
        if isinstance(spec, Required):
            if key not in data:
                raise ConfigurationError(field, "missing (required)")
            spec = spec.kind
        if key in data:
            check_value(field, data[key], spec)
    return data


def check_value(field: str, value, spec) -> None:
    """Check one value against a leaf kind, a sub-table schema or an array of tables."""
    if isinstance(spec, dict):
        check_table(field, value, spec)
    elif isinstance(spec, ArrayOf):
        if not isinstance(value, list):
            raise ConfigurationError(field, f"expected an array of tables, got {_type_name(value)}")
        for index, item in enumerate(value):
            check_table(f"{field}[{index}]", item, spec.schema)
    elif isinstance(spec, AnyTable):
        if not isinstance(value, dict):
            raise ConfigurationError(field, f"expected {spec.name}, got {_type_name(value)}")
    elif not spec.accepts(value):
        raise ConfigurationError(field, f"expected a {spec.name}, got {_type_name(value)} {value!r}")


def read_strict_toml(path, schema: dict, field: str = "config") -> dict:
    """Read a user's TOML file (``read_toml``) and check it against ``schema``."""
    from accounting.errors import read_toml

    return check_table("", read_toml(path, field), schema)
