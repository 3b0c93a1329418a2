"""A client's own shape of a pgoutput message, mapped to the suite's JSON form by a table.

A decoder inside a client (pg-logical-replication's objects, pglogrepl's structs, a Java
bean) is not asked to produce spec/message.schema.json's form: its harness prints the
library's own object as JSON (``{"native": …}`` instead of ``{"message": …}``) and a
:class:`Shape` — one table per client kind, data not code — maps it here: which key names
the message kind, and per kind, our field from their key and how its value is encoded. A
field of ours the table leaves out is one the client does not report: it is not compared
(:attr:`Shape.unreported`), and the report says so.

Encodings (``name`` or ``name:argument``):

``same``
    the value as is (numbers, text, booleans, null);
``lsn``
    ``"X/X"`` text in any case, leading zeros or not (null: ``0/0``);
``unix-us``
    microseconds since 1970-01-01 (ours count from 2000-01-01, protocol docs 53.9);
``bytes``
    lowercase hex text, a list of byte values, or Node's Buffer form ``{"type": "Buffer",
    "data": […]}``;
``map:A=a,B=b``
    their text *A* is our *a*;
``pluck:KEY``
    a list of objects: each one's *KEY*;
``columns:their=ours,…``
    a list of objects, each renamed key by key (values as they are);
``tuple:PATH``
    an object keyed by column name, in the column order of the list at *PATH* of the message
    (objects with ``name``): a missing key is an unchanged TOASTed value (``'u'``), null is
    NULL, text is text, bytes (as above) are binary;
``key-tuple:PATH``
    the same for a key-only tuple: a column not named in *PATH*'s ``keyColumns`` is NULL;
``first:KEY=ENC;KEY=ENC``
    the first of the message's keys present (its value in that encoding, ``ENC`` may be a
    ``tuple:``/``key-tuple:`` with ``|`` for ``:``), else null; with ``KEY=LETTER`` (one
    character) the letter itself;
``bits:KEY=N,…``
    the sum of *N* for each of the message's keys that is true.

Their key ``*`` is the whole message (for ``first`` and ``bits``); a dotted key is a path.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lsn import format_lsn, parse_lsn
from ..pgoutput import messages

__all__ = ["Shape", "MessageShape", "ShapeError", "SHAPES", "shape_of", "compare_only", "map_entry",
           "PG_LOGICAL_REPLICATION"]

#: Microseconds from 1970-01-01 to 2000-01-01.
_UNIX_TO_PG_US = 946_684_800_000_000


class ShapeError(ValueError):
    """A client's object that its shape cannot map (what was expected, what was found), or
    a shape table that does not say what it must."""


@dataclass(frozen=True, slots=True)
class MessageShape:
    """One message kind: our ``type`` and ``tag``, their value of the shape's kind key
    (``theirs``), and ``fields``: (our field, their key, encoding) in our order."""

    type: str
    tag: str
    theirs: str
    fields: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, slots=True)
class Shape:
    """A client kind's shape: ``name``, the key naming the message kind (``kind_key``), a
    :class:`MessageShape` per kind it reports and, per our type, the fields it does not."""

    name: str
    kind_key: str
    messages: tuple[MessageShape, ...]

    @property
    def unreported(self) -> dict[str, frozenset[str]]:
        """Per our message type, the fields of the JSON form this client does not report."""
        out = {}
        for ms in self.messages:
            have = {f for f, _, _ in ms.fields}
            cls = getattr(messages, ms.type, None)
            ours = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
            out[ms.type] = frozenset(f for f in ours if f not in have)
        return out

    def compared(self) -> str:
        """One line per kind: the fields compared, and those not reported."""
        lines = []
        unreported = self.unreported
        for ms in self.messages:
            line = f"{ms.type}: {', '.join(f for f, _, _ in ms.fields) or '(kind only)'}"
            if unreported.get(ms.type):
                line += f" (not reported: {', '.join(sorted(unreported[ms.type]))})"
            lines.append(line)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind_key": self.kind_key,
                "messages": [{"type": ms.type, "tag": ms.tag, "theirs": ms.theirs,
                              "fields": [list(f) for f in ms.fields]} for ms in self.messages]}

    @classmethod
    def from_json(cls, obj: Any, where: str = "shape") -> Shape:
        """A shape from its JSON form (a file a user writes for their client)."""
        try:
            shape = cls(str(obj["name"]), str(obj["kind_key"]), tuple(
                MessageShape(str(m["type"]), str(m["tag"]), str(m["theirs"]),
                             tuple((str(f[0]), str(f[1]), str(f[2])) for f in m["fields"]))
                for m in obj["messages"]))
        except (KeyError, TypeError, IndexError) as exc:
            raise ShapeError(f"{where}: expected {{name, kind_key, messages: [{{type, tag, theirs, fields: "
                             f"[[ours, theirs, encoding], …]}}]}}, found no {exc}") from None
        for ms in shape.messages:
            for ours, _theirs, enc in ms.fields:
                _encoding(enc, f"{where}: {ms.type}.{ours}")
        return shape

    def to_ours(self, native: Any) -> dict[str, Any]:
        """The JSON form of the client's object *native* (only the fields it reports)."""
        if not isinstance(native, Mapping):
            raise ShapeError(f"{self.name}: expected an object, found {type(native).__name__}")
        kind = native.get(self.kind_key)
        ms = next((s for s in self.messages if s.theirs == kind), None)
        if ms is None:
            raise ShapeError(f"{self.name}: expected {self.kind_key} among "
                             f"{', '.join(s.theirs for s in self.messages)}, found {kind!r}")
        out: dict[str, Any] = {"type": ms.type, "tag": ms.tag}
        for ours, theirs, enc in ms.fields:
            value = native if theirs == "*" else _path(native, theirs)
            try:
                out[ours] = _encoding(enc, ours)(value, native)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                raise ShapeError(f"{self.name}: {ms.type}.{ours} from {theirs!r} ({enc}): cannot read "
                                 f"{json.dumps(value, default=str)[:80]}: {exc}") from None
        return out


_MISSING = object()


def _path(obj: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(obj, Mapping) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _bytes(v: Any) -> bytes:
    if isinstance(v, str):
        return bytes.fromhex(v)
    if isinstance(v, Mapping) and v.get("type") == "Buffer":
        v = v.get("data")
    if isinstance(v, list):
        return bytes(v)
    raise TypeError(f"expected bytes (hex text, a list of byte values or a Buffer), found {type(v).__name__}")


def _value(v: Any) -> dict[str, Any]:
    if v is _MISSING:
        return {"kind": "u"}
    if v is None:
        return {"kind": "n"}
    if isinstance(v, str):
        return {"kind": "t", "text": v}
    if isinstance(v, Mapping | list):
        return {"kind": "b", "hex": _bytes(v).hex()}
    return {"kind": "t", "text": json.dumps(v)}


def _lsn(v: Any, _msg: Any) -> str:
    return "0/0" if v is None or v is _MISSING else format_lsn(parse_lsn(str(v)))


def _same(v: Any, _msg: Any) -> Any:
    if v is _MISSING:
        raise KeyError("not in the object")
    return v


def _columns_of(msg: Any, path: str) -> list[Any]:
    cols = _path(msg, path)
    if not isinstance(cols, list):
        raise TypeError(f"expected a column list at {path!r}")
    return cols


def _encoding(enc: str, where: str) -> Callable[[Any, Any], Any]:
    """The function of encoding *enc*: (their value, their whole message) -> ours."""
    name, _, arg = enc.partition(":")
    if name == "same":
        return _same
    if name == "lsn":
        return _lsn
    if name == "unix-us":
        return lambda v, _m: int(v) - _UNIX_TO_PG_US
    if name == "bytes":
        return lambda v, _m: _bytes(v).hex()
    if name == "map":
        table = dict(p.split("=", 1) for p in arg.split(",") if "=" in p)
        return lambda v, _m: table[str(v)]
    if name == "pluck":
        return lambda v, _m: [None if x is None else x[arg] for x in v]
    if name == "columns":
        renames = [p.split("=", 1) for p in arg.split(",") if "=" in p]
        return lambda v, _m: [{ours: c[theirs] for theirs, ours in renames} for c in v]
    if name == "tuple":
        return lambda v, m: [_value(v.get(str(c["name"]), _MISSING) if isinstance(v, Mapping) else _MISSING)
                             for c in _columns_of(m, arg + ".columns")]
    if name == "key-tuple":
        def key_tuple(v: Any, m: Any) -> list[dict[str, Any]]:
            keys = _path(m, arg + ".keyColumns")
            keys = keys if isinstance(keys, list) else []
            return [_value(v[c["name"]]) if c["name"] in keys and c["name"] in v else {"kind": "n"}
                    for c in _columns_of(m, arg + ".columns")]
        return key_tuple
    if name == "first":
        choices = []
        for part in arg.split(";"):
            key, _, sub = part.partition("=")
            choices.append((key, sub if len(sub) == 1 else _encoding(sub.replace("|", ":"), where)))

        def first(_v: Any, m: Any) -> Any:
            for key, sub in choices:
                if isinstance(m, Mapping) and m.get(key) is not None:
                    return sub if isinstance(sub, str) else sub(m[key], m)
            return None
        return first
    if name == "bits":
        bits = [(k, int(n)) for k, n in (p.split("=", 1) for p in arg.split(",") if "=" in p)]
        return lambda _v, m: sum(n for k, n in bits if m.get(k))
    raise ShapeError(f"{where}: unknown encoding {enc!r} (expected same, lsn, unix-us, bytes, map:, pluck:, "
                     f"columns:, tuple:, key-tuple:, first:, bits:)")


# -- the shapes shipped ------------------------------------------------------------------------

_TUPLE = "tuple:relation"
_OLD = "first:key=key-tuple|relation;old=tuple|relation"

#: npm's pg-logical-replication 2.x: what its PgoutputParser returns (src/output-plugins/
#: pgoutput/pgoutput-parser.ts), printed by JSON.stringify with exact 64-bit integers.
#: It does not report a message's xid (no streaming), a Commit's or Begin's raw fields
#: beyond these, nor a Relation column's order apart from its list.
PG_LOGICAL_REPLICATION = Shape("pg-logical-replication", "tag", (
    MessageShape("Begin", "B", "begin", (("final_lsn", "commitLsn", "lsn"), ("commit_time", "commitTime", "unix-us"),
                                         ("xid", "xid", "same"))),
    MessageShape("Commit", "C", "commit", (("flags", "flags", "same"), ("commit_lsn", "commitLsn", "lsn"),
                                           ("end_lsn", "commitEndLsn", "lsn"),
                                           ("commit_time", "commitTime", "unix-us"))),
    MessageShape("Origin", "O", "origin", (("origin_lsn", "originLsn", "lsn"), ("name", "originName", "same"))),
    MessageShape("Type", "Y", "type", (("type_oid", "typeOid", "same"), ("namespace", "typeSchema", "same"),
                                       ("name", "typeName", "same"))),
    MessageShape("Relation", "R", "relation", (
        ("relation_id", "relationOid", "same"), ("namespace", "schema", "same"), ("name", "name", "same"),
        ("replica_identity", "replicaIdentity", "map:default=d,nothing=n,full=f,index=i"),
        ("columns", "columns", "columns:flags=flags,name=name,typeOid=type_oid,typeMod=type_modifier"))),
    MessageShape("Insert", "I", "insert", (("relation_id", "relation.relationOid", "same"),
                                           ("new_tuple", "new", _TUPLE))),
    MessageShape("Update", "U", "update", (("relation_id", "relation.relationOid", "same"),
                                           ("old_kind", "*", "first:key=K;old=O"), ("old_tuple", "*", _OLD),
                                           ("new_tuple", "new", _TUPLE))),
    MessageShape("Delete", "D", "delete", (("relation_id", "relation.relationOid", "same"),
                                           ("old_kind", "*", "first:key=K;old=O"), ("old_tuple", "*", _OLD))),
    MessageShape("Truncate", "T", "truncate", (("options", "*", "bits:cascade=1,restartIdentity=2"),
                                               ("relation_ids", "relations", "pluck:relationOid"))),
    MessageShape("LogicalMessage", "M", "message", (("flags", "flags", "same"), ("lsn", "messageLsn", "lsn"),
                                                    ("prefix", "prefix", "same"), ("content", "content", "bytes"))),
))

#: Shapes by the name a harness's hello or ``--client-shape`` gives.
SHAPES: dict[str, Shape] = {PG_LOGICAL_REPLICATION.name: PG_LOGICAL_REPLICATION}


def shape_of(name_or_path: str | Path | Mapping[str, Any] | None) -> Shape | None:
    """A shipped shape by name, a shape's JSON form, or a JSON file holding one."""
    if name_or_path is None:
        return None
    if isinstance(name_or_path, Mapping):
        return Shape.from_json(name_or_path)
    found = SHAPES.get(str(name_or_path))
    if found is not None:
        return found
    path = Path(name_or_path)
    if not path.is_file():
        raise ShapeError(f"client shape: expected one of {', '.join(SHAPES)} or a JSON file, found {str(name_or_path)!r}")
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ShapeError(f"client shape {path}: cannot read it as JSON: {exc}") from None
    return Shape.from_json(obj, str(path))


def compare_only(expected: Mapping[str, Any], unreported: Mapping[str, Sequence[str]] | None) -> Mapping[str, Any]:
    """*expected* without the fields its client does not report."""
    if not unreported:
        return expected
    drop = unreported.get(str(expected.get("type")), ())
    return {k: v for k, v in expected.items() if k not in drop} if drop else expected


def map_entry(entry: Mapping[str, Any], shape: Shape | None) -> Mapping[str, Any]:
    """A result entry with the client's object (``{"native": …}``) as one with ours; an
    object the shape cannot read becomes a message that says why (it then differs)."""
    if "native" not in entry or "message" in entry or "error" in entry:
        return entry
    if shape is None:
        return {"message": {"unmapped": "a 'native' entry, but no shape was declared (hello 'shape', --client-shape)"}}
    try:
        return {"message": shape.to_ours(entry["native"])}
    except ShapeError as exc:
        return {"message": {"unmapped": str(exc)}}
