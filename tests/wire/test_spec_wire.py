"""spec/wire.yaml against pgwire_spec/wire/grammar.py, field by field, and against the
message classes (tag, sender)."""

from __future__ import annotations

from typing import Any

from pgwire_spec import _ir, _spec
from pgwire_spec.wire import grammar
from pgwire_spec.wire.messages import MESSAGE_TYPES


def _fields(layout: Any) -> list[dict[str, Any]]:
    """The grammar's fields in spec/'s vocabulary, from its intermediate form."""
    return [f.as_dict() for f in _ir.lower("", layout).fields]


def _strip(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in fields:
        entry = {k: v for k, v in f.items() if k != "note"}
        if isinstance(entry.get("items"), list) and entry["items"] and isinstance(entry["items"][0], dict):
            entry["items"] = _strip(entry["items"])
        out.append(entry)
    return out


def test_spec_matches_grammar_field_by_field() -> None:
    spec = _spec.load("wire.yaml")
    assert [m["name"] for m in spec["messages"]] == list(grammar.LAYOUTS), "same messages, same order"
    for m in spec["messages"]:
        cls = MESSAGE_TYPES[m["name"]]
        assert (m["tag"], m["sender"]) == (cls.tag, cls.sender), m["name"]
        assert _strip(m["fields"]) == _fields(grammar.LAYOUTS[m["name"]]), m["name"]
