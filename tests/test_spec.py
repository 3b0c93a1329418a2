"""spec/ against the grammar, field by field; generated files up to date; schema valid."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from pgwire_spec import _spec, to_json
from pgwire_spec.pgoutput import grammar as pg_grammar
from pgwire_spec.replication import grammar as repl_grammar
from tests.pgoutput.vectors import VECTORS

_COMPARED = ("name", "type", "when", "values", "const", "optional", "count")


def _norm(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in fields:
        entry = {k: f[k] for k in _COMPARED if k in f}
        if f["type"] != "Byte1":
            # values listed for integer flags document what servers send; the grammar
            # constrains only Byte1 choices.
            entry.pop("values", None)
        if "values" in entry:
            entry["values"] = [str(v) for v in entry["values"]]
        if f.get("derived"):
            entry["derived"] = True
        if "items" in f:
            items = f["items"]
            entry["items"] = items if isinstance(items, str) else _norm(items)
        out.append(entry)
    return out


@pytest.mark.parametrize(
    "spec_file, layouts",
    [("pgoutput.yaml", pg_grammar.LAYOUTS), ("replication.yaml", repl_grammar.LAYOUTS)],
)
def test_grammar_matches_spec_field_by_field(spec_file: str, layouts: dict[str, Any]) -> None:
    spec = _spec.load(spec_file)
    assert [m["name"] for m in spec["messages"]] == list(layouts), "same messages, same (docs') order"
    for m in spec["messages"]:
        layout = layouts[m["name"]]
        tag = layout.subcons[0].subcon.value.decode()
        assert tag == m["tag"], m["name"]
        assert _norm(_spec.grammar_fields(layout)) == _norm(m["fields"]), m["name"]


def test_errata_cited_in_spec_exist() -> None:
    ids = {e["id"] for e in _spec.load("errata.yaml")["errata"]}
    for spec_file in ("pgoutput.yaml", "replication.yaml"):
        for m in _spec.load(spec_file)["messages"]:
            assert set(m.get("errata", [])) <= ids, m["name"]
    import re

    for module in (pg_grammar, repl_grammar):
        source = open(module.__file__, encoding="utf-8").read()
        cited = set(re.findall(r"\bE-[A-Z0-9-]*[A-Z0-9]", source))
        assert cited and cited <= ids, cited - ids


def test_generated_files_are_up_to_date() -> None:
    with open(_spec.SPEC_DIR / "REFERENCE.md", encoding="utf-8") as fh:
        assert fh.read() == _spec.markdown(), "run: python -m pgwire_spec._spec"
    for name, text in (("pgoutput.yaml", _spec.pgoutput_yaml()), ("replication.yaml", _spec.replication_yaml())):
        with open(_spec.SPEC_DIR / name, encoding="utf-8") as fh:
            assert fh.read() == text, f"spec/{name} is stale: run python -m pgwire_spec._spec"
    with open(_spec.SPEC_DIR / "message.schema.json", encoding="utf-8") as fh:
        assert json.load(fh) == _spec.json_schema(), "run: python -m pgwire_spec._spec"


def test_json_form_of_every_vector_validates_against_the_schema() -> None:
    schema = _spec.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in VECTORS:
        validator.validate(json.loads(json.dumps(to_json(v.message))))


def test_schema_rejects_a_wrong_form() -> None:
    validator = jsonschema.Draft202012Validator(_spec.json_schema())
    bad = {"type": "Begin", "tag": "B", "final_lsn": 5, "commit_time": 1, "xid": 2}
    assert not validator.is_valid(bad)
