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


def _targets():
    from reports.audit import targets

    targets._load_builtin_targets()
    return targets.TARGETS


def test_every_configuration_key_has_a_meaning_on_the_page():
    from reports.audit import config
    from reports.parameter_meanings import configuration_meanings, target_parameter_meanings

    page = reference_pages.configuration_page()
    tables = {"top level": config.CONFIG_SCHEMA, "target": config.TARGET_SCHEMA, "claim": config.CLAIM_SCHEMA,
              "probes": config.PROBE_SCHEMA}
    meanings = [(f"{table}.{key}", text) for table, schema in tables.items()
                for key, text in configuration_meanings(table, schema).items()]
    for algorithm, cls in _targets().items():
        meanings += [(f"{algorithm}.{key}", text) for key, text in target_parameter_meanings(cls).items()]
    assert len(meanings) > 150
    missing = [key for key, text in meanings if not (text or "").strip()]
    assert not missing, f"configuration keys without a meaning (reports/parameter_meanings.py): {missing}"
    for key, text in meanings:
        assert f"| `{key.rsplit('.', 1)[1]}` |" in page and " ".join(text.split()) in page, key


def test_a_key_without_a_meaning_is_reported():
    from reports.parameter_meanings import target_parameter_meanings

    class NewTarget:
        @classmethod
        def parameter_schema(cls):
            return {"a_key_nobody_described": None}

    assert target_parameter_meanings(NewTarget) == {"a_key_nobody_described": None}


def test_the_choices_named_are_those_the_code_accepts():
    """Texts that list allowed values read them from the code: a new objective or planted bug appears."""
    from dpfed.fts.server import PLANTED_BUGS
    from dpfed.pne.objectives import OBJECTIVES
    from reports.parameter_meanings import target_parameter_meanings

    targets = _targets()
    pne = target_parameter_meanings(targets["dp-fed-pne"])
    assert all(f"`{name}`" in pne["objective"] for name in OBJECTIVES)
    fts = target_parameter_meanings(targets["dp-fts-de"])
    assert all(f"`{name}`" in fts["planted_bug"] for name in PLANTED_BUGS)


def _accepted_params(name: str) -> list[str]:
    """The keys ``dpaudit attack`` accepts for a probe (``reports.commands.attack.check_params``'s schema)."""
    from accounting.strict import dataclass_schema
    from attacks.probes import probe_class

    return sorted(dataclass_schema(probe_class(name), exclude=("timeout",)))


def test_every_probe_parameter_is_on_the_probes_page_with_a_meaning():
    from attacks.probes import PROBES
    from reports.commands.attack import param_rows

    page = reference_pages.probes_page()
    sections = page.split("## Probe parameters")[1].split("## Estimators")[0].split("\n### ")[1:]
    for name in PROBES:
        section = next(s for s in sections if f"`{name}`" in s.split("\n", 1)[0])
        listed = sorted(line.split("`")[1] for line in section.splitlines() if line.startswith("| `"))
        assert listed == _accepted_params(name), name
        rows = param_rows(name)
        assert sorted(row[0] for row in rows) == _accepted_params(name), name
        blank = [row[0] for row in rows if not row[3].strip()]
        assert not blank, f"{name}: parameters without a meaning (reports/parameter_meanings.py): {blank}"


def test_attack_list_with_a_probe_prints_its_parameters(capsys):
    from reports.cli import main

    assert main(["attack", "bug-no-clip", "--list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
    assert sorted(rows) == _accepted_params("bug-no-clip")
    assert "no-clip" in rows["bug"].split()[2]  # the registered name's preset is the default shown
    assert main(["attack", "no-such-probe", "--list"]) == 2


def test_a_dataclass_target_lists_its_fields_not_its_class_variables():
    """``StrictConfig.toml_table`` is a ClassVar: the page listed it as a key the reader then refused."""
    import dataclasses

    from dpfed.duets.config import DuetsConfig
    from dpfed.fts import FTSConfig

    targets = _targets()
    assert set(targets["dp-fts-de"].parameter_schema()) == {f.name for f in dataclasses.fields(FTSConfig)} | {"preset"}
    assert set(targets["dp-duets"].parameter_schema()) == {f.name for f in dataclasses.fields(DuetsConfig)}
