"""spec/wire.yaml against pgwire_spec/wire/grammar.py, field by field, and against the
message classes (tag, sender)."""

from __future__ import annotations

from typing import Any

from construct import Bytes, Const, FocusedSeq, FormatField, Sequence, Struct

from pgwire_spec import _primitives as P
from pgwire_spec import _spec
from pgwire_spec.wire import grammar
from pgwire_spec.wire.messages import MESSAGE_TYPES

_NAMES = {
    **_spec._TYPE_NAMES,
    id(P.StringBytes): "StringBytes",
    id(P.NullableByten32): "NullableByten32",
    id(grammar.Byte4): "Byte4",
}


def _type(sub: Any) -> Any:
    if id(sub) in _NAMES:
        return _NAMES[id(sub)]
    raise AssertionError(f"no spec name for {sub!r}")


def _items(item: Any) -> Any:
    if isinstance(item, Struct):
        return _fields(item)
    if isinstance(item, Sequence):
        return [_type(s) for s in item.subcons]
    return _type(item)


def _fields(layout: Struct) -> list[dict[str, Any]]:
    out = []
    for node in layout.subcons:
        sub = node.subcon
        entry: dict[str, Any] = {"name": node.name}
        if isinstance(sub, Const):
            assert isinstance(sub.subcon, FormatField)
            entry.update(type=_type(sub.subcon), const=sub.value)
        elif isinstance(sub, P.CharIn):
            entry.update(type="Byte1", values=list(sub.valids))
        elif isinstance(sub, P.TerminatedList):
            entry.update(type="List", items=_items(sub.subcon))
        elif isinstance(sub, FocusedSeq):  # PrefixedArray
            entry.update(type="Array", count=_type(sub.subcons[0].subcon.subcon),
                         items=_items(sub.subcons[1].subcon.subcon))
        else:
            assert not isinstance(sub, Bytes) or sub is grammar.Byte4
            entry["type"] = _type(sub)
        out.append(entry)
    return out


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
