"""Strict table reading: unknown keys, misplaced keys and wrong types name the key's full path."""

import pytest

from accounting.errors import ConfigurationError
from accounting.strict import INTEGER, NUMBER, STRING, STRINGS, ArrayOf, Required, check_table

SCHEMA = {
    "title": STRING,
    "target": ArrayOf({"name": Required(STRING), "methods": STRINGS, "parameters": {"steps": INTEGER, "rate": NUMBER}}),
}


def test_conforming_table_is_returned_unchanged():
    data = {"title": "t", "target": [{"name": "a", "methods": ["x"], "parameters": {"steps": 3, "rate": 1}}]}
    assert check_table("", data, SCHEMA) is data


@pytest.mark.parametrize(
    "data, field, words",
    [
        ({"titel": "t"}, "titel", "allowed here: target, title"),
        ({"target": [{"name": "a", "parameters": {"step": 100}}]}, "target[0].parameters.step", "allowed here: rate"),
        ({"target": [{"name": "a", "parameters": {"rate": "0.35"}}]}, "target[0].parameters.rate", "string"),
        ({"target": [{"name": "a", "parameters": {"rate": True}}]}, "target[0].parameters.rate", "boolean"),
        ({"target": [{"name": "a", "parameters": {"steps": 1.5}}]}, "target[0].parameters.steps", "whole number"),
        ({"target": [{"name": ["a", "b"]}]}, "target[0].name", "list"),
        ({"target": [{"name": "a", "methods": 5}]}, "target[0].methods", "list of strings"),
        ({"target": [{}]}, "target[0].name", "missing"),
        ({"target": {"name": "a"}}, "target", "array of tables"),
    ],
)
def test_bad_tables_name_the_full_path(data, field, words):
    with pytest.raises(ConfigurationError) as info:
        check_table("", data, SCHEMA)
    assert info.value.field == field
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_dataclass_schema_follows_the_annotations():
    from dataclasses import dataclass

    from accounting.strict import ANY_VALUE, BOOLEAN, dataclass_schema

    @dataclass
    class Example:
        rate: float = 0.1
        steps: int = 1
        name: str | None = None
        flag: bool = False
        anything: object = None

    schema = dataclass_schema(Example, exclude=("flag",))
    assert schema == {"rate": NUMBER, "steps": INTEGER, "name": STRING, "anything": ANY_VALUE}
    assert dataclass_schema(Example)["flag"] is BOOLEAN
    check_table("", {"rate": 1, "steps": 2, "name": "x", "anything": [1, "a"]}, schema)
    with pytest.raises(ConfigurationError, match="steps: expected a whole number"):
        check_table("", {"steps": 2.0}, schema)


def test_a_wrapper_table_takes_every_key():
    from accounting.strict import check_wrapped

    schema = {"trials": NUMBER, "probe": STRING}
    assert check_wrapped({"attack": {"trials": 3}}, "attack", schema) == {"trials": 3}
    assert check_wrapped({"trials": 3}, "attack", schema) == {"trials": 3}
    with pytest.raises(ConfigurationError) as info:
        check_wrapped({"trials": 3, "attack": {"probe": "x"}}, "attack", schema)
    assert info.value.field == "trials" and "allowed here: attack" in str(info.value)


def test_one_of_kinds_and_long_values_stay_one_short_line(tmp_path):
    from accounting.strict import OneOf, read_strict_toml

    schema = {"methods": OneOf((STRING, STRINGS))}
    check_table("", {"methods": "a,b"}, schema)
    check_table("", {"methods": ["a", "b"]}, schema)
    with pytest.raises(ConfigurationError, match="expected a string or a list of strings, got number 5"):
        check_table("", {"methods": 5}, schema)
    path = tmp_path / "c.toml"
    path.write_text("methods = [" + ", ".join(["1"] * 500) + "]\n")
    with pytest.raises(ConfigurationError) as info:
        read_strict_toml(path, schema)
    message = str(info.value)
    assert len(message) < 200 + len(str(path)) and "\n" not in message and str(path) in message
