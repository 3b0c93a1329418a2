"""spec/: reading the grammar back as tables, and generating the JSON Schema and Markdown.

``python -m pgwire_spec._spec`` regenerates ``spec/message.schema.json`` and
``spec/REFERENCE.md`` from the grammar and the YAML tables; ``tests/test_spec.py`` checks
that the grammar matches ``spec/*.yaml`` field by field and that the generated files are
up to date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from construct import Array, Const, FocusedSeq, FormatField, IfThenElse, Rebuild, Renamed, Select

from . import _primitives as P
from .jsonform import _FIELDS, FORMAT_VERSION
from .pgoutput import grammar as pg_grammar

SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"

_TYPE_NAMES = {
    id(P.Int8): "Int8",
    id(P.Int16): "Int16",
    id(P.UInt16): "UInt16",
    id(P.Int32): "Int32",
    id(P.UInt32): "UInt32",
    id(P.Int64): "Int64",
    id(P.Oid): "Oid",
    id(P.TransactionId): "TransactionId",
    id(P.XLogRecPtr): "XLogRecPtr",
    id(P.TimestampTz): "TimestampTz",
    id(P.Char): "Byte1",
    id(P.Bool8): "Bool8",
    id(P.String): "String",
    id(P.Byten32): "Byten32",
    id(P.RestBytes): "RestBytes",
    id(pg_grammar.TupleData): "TupleData",
}

_WHEN = {"this['_params']['in_stream']": "in_stream", "this['_params']['abort_tail']": "abort_tail",
         "(this['old_kind'] != None)": "old_kind"}


def _type_of(sub: Any) -> dict[str, Any]:
    if id(sub) in _TYPE_NAMES:
        return {"type": _TYPE_NAMES[id(sub)]}
    if isinstance(sub, P.CharIn):
        return {"type": "Byte1", "values": list(sub.valids)}
    if isinstance(sub, Select) and isinstance(sub.subcons[0], P.CharIn):
        return {"type": "Byte1", "values": list(sub.subcons[0].valids), "optional": True}
    if isinstance(sub, Const):
        return {"type": "Byte1", "const": sub.value.decode("latin-1")}
    if isinstance(sub, FocusedSeq):  # PrefixedArray
        count = sub.subcons[0].subcon.subcon
        item = sub.subcons[1].subcon.subcon
        return {"type": "Array", "count": _TYPE_NAMES[id(count)], "items": _items(item)}
    if isinstance(sub, Array):
        return {"type": "Array", "count": repr(sub.count).replace("this['", "").replace("']", ""),
                "items": _items(sub.subcon)}
    raise TypeError(f"no spec name for {sub!r}")


def _items(item: Any) -> Any:
    if isinstance(item, FormatField):
        return _TYPE_NAMES[id(item)]
    return grammar_fields(item)


def grammar_fields(layout: Any) -> list[dict[str, Any]]:
    """The fields of a construct layout in the vocabulary of spec/*.yaml (tag excluded)."""
    out: list[dict[str, Any]] = []
    for node in layout.subcons:
        assert isinstance(node, Renamed)
        if node.name == "tag":
            continue
        sub = node.subcon
        entry: dict[str, Any] = {"name": node.name}
        if isinstance(sub, IfThenElse):
            entry["when"] = _WHEN[repr(sub.condfunc)]
            sub = sub.thensubcon
        if isinstance(sub, Rebuild):
            entry["derived"] = True
            sub = sub.subcon
        entry.update(_type_of(sub))
        out.append(entry)
    return out


def load(name: str) -> dict[str, Any]:
    with open(SPEC_DIR / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)  # type: ignore[no-any-return]


# -- JSON Schema of the decoded form ------------------------------------------------------------

_LSN = {"type": "string", "pattern": "^[0-9A-F]{1,8}/[0-9A-F]{1,8}$", "description": "LSN as X/X"}
_TEXT = {"oneOf": [{"type": "string"},
                   {"type": "object", "properties": {"hex": {"type": "string"}}, "required": ["hex"],
                    "additionalProperties": False}]}
_HEX = {"type": "string", "pattern": "^([0-9a-f]{2})*$"}
_COLUMN = {
    "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "n"}}, "required": ["kind"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "u"}}, "required": ["kind"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "t"}, "text": {"type": "string"}},
         "required": ["kind", "text"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "t"}, "hex": _HEX},
         "required": ["kind", "hex"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "b"}, "hex": _HEX},
         "required": ["kind", "hex"], "additionalProperties": False},
    ]
}


def _kind_schema(kind: Any) -> dict[str, Any]:
    if kind == "lsn":
        return _LSN
    if kind == "int":
        return {"type": "integer"}
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "char":
        return {"type": "string", "minLength": 1, "maxLength": 1}
    if kind == "str":
        return _TEXT
    if kind == "bytes":
        return _HEX
    if kind == "ints":
        return {"type": "array", "items": {"type": "integer"}}
    if kind == "tuple":
        return {"type": "array", "items": {"$ref": "#/$defs/Column"}}
    if isinstance(kind, tuple):
        _, cls, sub = kind
        return {"type": "array", "items": _object_schema(None, sub)}
    if isinstance(kind, dict):
        items = _kind_schema(kind["list"])
        if kind.get("nullable"):  # DataRow's values: NULL is -1 on the wire, null in JSON
            items = {"oneOf": [items, {"type": "null"}]}
        return {"type": "array", "items": items}
    raise TypeError(kind)


def _object_schema(cls: type | None, spec: list[tuple[str, Any]]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    if cls is not None:
        props["type"] = {"const": cls.__name__}
        required.append("type")
        if getattr(cls, "tag", None) is not None:
            props["tag"] = {"const": cls.tag}  # type: ignore[attr-defined]
    for name, kind in spec:
        schema = _kind_schema(kind)
        nullable = cls is not None and _nullable(cls, name)
        props[name] = {"oneOf": [schema, {"type": "null"}]} if nullable else schema
        required.append(name)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _nullable(cls: type, name: str) -> bool:
    ann = getattr(cls, "__annotations__", {}).get(name, "")
    return "None" in str(ann)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every registered message's JSON form."""
    from . import wire  # noqa: F401  (registers the v3 messages' JSON forms)

    defs: dict[str, Any] = {"Column": _COLUMN}
    for cls, spec in sorted(_FIELDS.items(), key=lambda kv: kv[0].__name__):
        defs[cls.__name__] = _object_schema(cls, spec)
    names = sorted(k for k in defs if k != "Column")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "pgwire-spec/message.schema.json",
        "title": f"pgwire-spec message JSON form, format version {FORMAT_VERSION}",
        "description": "The decoded form of every message: pgoutput, streaming replication "
        "payloads and v3 frontend/backend messages. Produced by pgwire_spec.to_json.",
        "oneOf": [{"$ref": f"#/$defs/{n}"} for n in names],
        "$defs": defs,
    }


# -- Markdown reference -------------------------------------------------------------------------


def _field_rows(fields: list[dict[str, Any]], prefix: str = "") -> list[str]:
    rows = []
    for f in fields:
        notes = []
        if f.get("when"):
            notes.append(f"only when {f['when']}")
        if f.get("protocol"):
            notes.append(f"protocol >= {f['protocol']}")
        if "values" in f:
            notes.append("values " + ", ".join(str(v) for v in f["values"]))
        if "const" in f:
            notes.append(f"constant '{f['const']}'")
        if f.get("optional"):
            notes.append("optional")
        if f.get("derived"):
            notes.append(f"= {f['derived']}" if isinstance(f["derived"], str) else "derived")
        typ = f["type"]
        if typ == "Array":
            items = f["items"]
            typ = f"{f['count']} count, then {items if isinstance(items, str) else 'items'}"
        rows.append(f"| `{prefix}{f['name']}` | {typ} | {'; '.join(notes)} |")
        if isinstance(f.get("items"), list):
            rows.extend(_field_rows(f["items"], prefix=f"{prefix}{f['name']}[]."))
    return rows


def markdown() -> str:
    pg = load("pgoutput.yaml")
    repl = load("replication.yaml")
    errata = load("errata.yaml")
    lines = [
        "# pgwire-spec reference (generated)",
        "",
        "Generated by `python -m pgwire_spec._spec` from `spec/pgoutput.yaml`, "
        "`spec/replication.yaml` and `spec/errata.yaml`, which `tests/test_spec.py` checks "
        "against the construct grammar. For decoder authors in any language: every integer is "
        "big-endian; String is NUL-terminated in the client encoding; Byten32 is an Int32 "
        "length then that many bytes.",
        "",
        "## pgoutput messages",
        "",
        "| message | tag | protocol | servers | needs |",
        "|---|---|---|---|---|",
    ]
    for m in pg["messages"]:
        lines.append(f"| {m['name']} | `{m['tag']}` | >= {m['protocol']} | {m['servers']} | "
                     f"{', '.join(m.get('options', [])) or '-'} |")
    for m in pg["messages"]:
        lines += ["", f"### {m['name']} (`{m['tag']}`)", ""]
        if m.get("errata"):
            lines.append("Errata: " + ", ".join(m["errata"]))
            lines.append("")
        lines += ["| field | type | notes |", "|---|---|---|", f"| tag | Byte1 | '{m['tag']}' |"]
        lines += _field_rows(m["fields"])
    td = pg["tuple_data"]
    lines += ["", "### TupleData", "", f"{td['count']} number of columns, then per column:", "",
              "| kind | meaning | value |", "|---|---|---|"]
    for k in td["kinds"]:
        lines.append(f"| `{k['kind']}` | {k['meaning']} | {k['value']} |")
    lines += ["", "## Streaming replication payloads (inside CopyData)", ""]
    for m in repl["messages"]:
        lines += [f"### {m['name']} (`{m['tag']}`, {m['direction']})", "",
                  "| field | type | notes |", "|---|---|---|", f"| tag | Byte1 | '{m['tag']}' |"]
        lines += _field_rows(m["fields"])
        lines.append("")
    lines += ["## Errata", ""]
    for e in errata["errata"]:
        lines += [f"### {e['id']}", "",
                  f"- applies to: {', '.join(e['applies_to'])} (servers {e['servers']})",
                  f"- the docs say: {e['docs_say']}",
                  f"- servers do: {e['servers_do']}"]
        if e.get("decoder"):
            lines.append(f"- reference decoder: {e['decoder']}")
        if e.get("seen_in_other_decoders"):
            lines.append(f"- other decoders: {e['seen_in_other_decoders']}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_all() -> list[Path]:
    out = []
    schema_path = SPEC_DIR / "message.schema.json"
    schema_path.write_text(json.dumps(json_schema(), indent=1) + "\n", encoding="utf-8")
    out.append(schema_path)
    ref = SPEC_DIR / "REFERENCE.md"
    ref.write_text(markdown(), encoding="utf-8")
    out.append(ref)
    return out


if __name__ == "__main__":  # pragma: no cover
    for path in write_all():
        print(f"wrote {path}", file=sys.stderr)
