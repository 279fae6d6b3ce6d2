"""Every key a user writes or reads has a meaning on the reference pages: the report schema's properties, the
audit configuration's keys and each probe's ``--param`` keys (``reports/reference_pages.py`` writes the pages)."""

from __future__ import annotations

import json
from pathlib import Path

from reports import reference_pages

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "reports" / "schema" / "report.schema.json"


def _property_definitions(node, path=""):
    """(path, definition) of every property the schema defines, at any depth (not an ``if`` condition's)."""
    if isinstance(node, dict):
        for key, sub in node.items():
            if key == "if":
                continue
            if key == "properties" and isinstance(sub, dict):
                for name, prop in sub.items():
                    yield f"{path}/{name}", prop
                    yield from _property_definitions(prop, f"{path}/{name}")
            else:
                yield from _property_definitions(sub, f"{path}/{key}" if key not in ("items", "anyOf", "oneOf")
                                                 else path)
    elif isinstance(node, list):
        for sub in node:
            yield from _property_definitions(sub, path)


def test_every_report_schema_property_has_a_description():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    found = list(_property_definitions(schema))
    assert len(found) > 100  # the walk reaches the nested properties (bounds' items, the oneOf sections)
    blank = [path for path, prop in found if not str(prop.get("description", "")).strip()]
    assert not blank, f"report schema properties without a description: {blank}"


def test_the_report_schema_page_shows_every_description():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    page = reference_pages.report_schema_page()
    tables = page.split("## The schema, verbatim")[0]
    for path, prop in _property_definitions(schema):
        words = " ".join(prop["description"].split()).replace("|", "\\|")
        assert f"| {words} |" in tables, path


def test_a_blank_description_is_caught(tmp_path):
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    schema["$defs"]["claim"]["properties"]["epsilon"]["description"] = " "
    assert any(not prop["description"].strip() for _, prop in _property_definitions(schema))
