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
