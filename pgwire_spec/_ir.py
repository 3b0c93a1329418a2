"""The grammar's intermediate form: every construct layout lowered once into plain fields.

The construct layouts (``pgoutput/grammar.py``, ``replication/grammar.py``,
``wire/grammar.py``) are the single source of every layout. This module is the one place
that reads construct's node vocabulary: it lowers a layout to a :class:`Layout` of
:class:`Field` (name, type in the vocabulary of ``spec/``, condition, constant, choices,
count and items), and holds the node tests and format helpers that the code generators
(:mod:`pgwire_spec._codegen`, :mod:`pgwire_spec._cgen`) share. The catalogue, the spec
files and the JSON form read the lowered fields instead of walking construct.

Every node a walker does not know is a programming error, reported when the layout is
lowered (at import), never on data.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

from construct import (
    Array,
    Bytes,
    Const,
    FocusedSeq,
    FormatField,
    IfThenElse,
    Pass,
    Rebuild,
    Renamed,
    Select,
    Sequence,
    Struct,
)

from . import _primitives as P

__all__ = [
    "Field",
    "Layout",
    "lower",
    "FMT_NAMES",
    "fmt",
    "size",
    "is_prefixed_array",
    "is_optional_char",
    "is_tuple_data",
    "condition",
    "PARAMS",
    "TYPE_FMT",
    "item_field",
]

#: Big-endian struct codes by their protocol names (for error messages).
FMT_NAMES = {
    "B": "Int8",
    "b": "Int8",
    "H": "UInt16",
    "h": "Int16",
    "I": "UInt32",
    "i": "Int32",
    "L": "UInt32",
    "l": "Int32",
    "Q": "UInt64",
    "q": "Int64",
}

#: The grammar's named primitives by identity, in the vocabulary of spec/*.yaml.
TYPE_NAMES: dict[int, str] = {
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
    id(P.StringBytes): "StringBytes",
    id(P.NullableByten32): "NullableByten32",
}


def fmt(node: FormatField) -> str:
    """The struct code of a big-endian FormatField (``"L"`` for an Oid)."""
    code = node.fmtstr
    if code[0] not in "<>=!":
        raise TypeError(f"format without byte order: {code!r}")
    if code[0] != ">":
        raise TypeError(f"only big-endian formats are used by the protocol, got {code!r}")
    return str(code[1:])


def size(code: str) -> int:
    """The size in bytes of a big-endian struct code."""
    return struct.calcsize(">" + code)


def is_prefixed_array(sub: Any) -> bool:
    """construct's PrefixedArray: FocusedSeq(count / Rebuild(int), items / Array(this.count))."""
    return (
        isinstance(sub, FocusedSeq)
        and len(sub.subcons) == 2
        and isinstance(sub.subcons[0].subcon, Rebuild)
        and isinstance(sub.subcons[0].subcon.subcon, FormatField)
        and isinstance(sub.subcons[1].subcon, Array)
    )


def is_optional_char(sub: Any) -> bool:
    """``Optional(CharIn(...))``: a choice byte that may be absent (Update's 'K'/'O')."""
    return (
        isinstance(sub, Select)
        and len(sub.subcons) == 2
        and isinstance(sub.subcons[0], P.CharIn)
        and sub.subcons[1] is Pass
    )


def is_tuple_data(sub: Any) -> bool:
    """pgoutput's TupleData (an Int16 count, then one kind byte and value per column)."""
    return isinstance(sub, P.TupleValues)


def _expression(expr: Any) -> str:
    """A construct ``this`` expression over fields as text: ``len(relation_ids)``."""
    text = re.sub(r"this\['(\w+)'\]", r"\1", repr(expr)).replace("len_(", "len(")
    if "this" in text:
        raise TypeError(f"unsupported expression: {expr!r}")
    return text


#: The decoding parameters a field's presence may depend on (``this._params.X``).
PARAMS = ("in_stream", "abort_tail")


def condition(expr: Any) -> tuple[str, bool]:
    """A field's presence condition: (the name of a decoding parameter, False), or (the name
    of an earlier field, True) for "present when that field is not None"."""
    text = repr(expr)
    m = re.fullmatch(r"this\['_params'\]\['(\w+)'\]", text)
    if m and m.group(1) in PARAMS:
        return m.group(1), False
    m = re.fullmatch(r"\(this\['(\w+)'\] != None\)", text)
    if m:
        return m.group(1), True
    raise TypeError(f"unsupported condition: {expr!r}")


@dataclass(frozen=True)
class Field:
    """One field of a layout, lowered."""

    name: str
    #: the spec/ type name: Int8 ... XLogRecPtr, Byte1, Bool8, String, Byten32, RestBytes,
    #: StringBytes, NullableByten32, ByteN, TupleData, Array, List
    type: str
    #: present only under this condition (``in_stream``, ``abort_tail``, ``old_kind``)
    when: str | None = None
    #: the condition is "the field ``when`` is present" (else a decoding parameter)
    when_field: bool = False
    #: recomputed by the encoder (a count), not a field of the message class: the expression
    derived: str | None = None
    #: a constant: bytes for a tag byte, an int for a code
    const: bytes | int | None = None
    #: the characters a Byte1 may take
    values: tuple[str, ...] | None = None
    #: a Byte1 choice that may be absent
    optional: bool = False
    #: an Array's count type, or an Array's count field
    count: str | None = None
    #: the items of an Array or List: a type name, a nested layout (its own class), or a
    #: tuple of type names (a Sequence: a name/value pair)
    items: str | Layout | tuple[str, ...] | None = None
    #: the big-endian struct code of an integer field (``"L"``)
    fmt: str | None = None
    #: the construct node (for the code generators)
    node: Any = field(default=None, compare=False, repr=False)
    #: the construct node of the value, inside any condition or rebuild
    sub: Any = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The field in the vocabulary of spec/*.yaml."""
        out: dict[str, Any] = {"name": self.name}
        if self.when is not None:
            out["when"] = self.when
        if self.derived:
            out["derived"] = self.derived
        out["type"] = self.type
        if self.values is not None:
            out["values"] = list(self.values)
        if self.optional:
            out["optional"] = True
        if self.const is not None:
            out["const"] = self.const.decode("latin-1") if isinstance(self.const, bytes) else self.const
        if self.count is not None:
            out["count"] = self.count
        if self.items is not None:
            items = self.items
            if isinstance(items, str):
                out["items"] = items
            elif isinstance(items, Layout):
                out["items"] = [f.as_dict() for f in items.fields]
            else:
                out["items"] = list(items)
        return out


@dataclass(frozen=True)
class Layout:
    """A message layout, lowered: its tag byte (when the layout starts with one) and fields."""

    name: str
    tag: str | None
    #: every field after the tag, in order
    fields: tuple[Field, ...]
    struct: Any = field(compare=False, repr=False)
    #: every field, the tag included (what a decoder reads)
    all_fields: tuple[Field, ...] = field(default=(), compare=False, repr=False)

    @property
    def conditions(self) -> frozenset[str]:
        """The conditions any field depends on (``in_stream``: carries the streamed xid)."""
        return frozenset(f.when for f in self.fields if f.when is not None)


#: The struct code of each integer type name (``"Oid"`` -> ``"L"``).
TYPE_FMT: dict[str, str] = {
    "Int8": fmt(P.Int8), "Int16": fmt(P.Int16), "UInt16": fmt(P.UInt16), "Int32": fmt(P.Int32),
    "UInt32": fmt(P.UInt32), "Int64": fmt(P.Int64), "Oid": fmt(P.Oid),
    "TransactionId": fmt(P.TransactionId), "XLogRecPtr": fmt(P.XLogRecPtr),
    "TimestampTz": fmt(P.TimestampTz),
}


def item_field(type_name: str) -> Field:
    """An item of an Array, List or Sequence given by its type name, as a field without a
    name (what a code generator reads values by)."""
    return Field("", type_name, fmt=TYPE_FMT.get(type_name))


def _type_name(sub: Any) -> str:
    if id(sub) in TYPE_NAMES:
        return TYPE_NAMES[id(sub)]
    raise TypeError(f"no type name for {sub!r}")


def _items(item: Any) -> str | Layout | tuple[str, ...]:
    if isinstance(item, Struct):
        every = tuple(_field(n) for n in item.subcons)
        return Layout("", None, every, item, every)
    if isinstance(item, Sequence):
        return tuple(_type_name(s) for s in item.subcons)
    return _type_name(item)


def _field(node: Any) -> Field:
    if not isinstance(node, Renamed):
        raise TypeError(f"unnamed field in layout: {node!r}")
    name, sub = node.name, node.subcon
    when = None
    when_field = False
    derived = None
    if isinstance(sub, IfThenElse):
        if sub.elsesubcon is not Pass:
            raise TypeError(f"If with an else branch: {node!r}")
        when, when_field = condition(sub.condfunc)
        sub = sub.thensubcon
    if isinstance(sub, Rebuild):
        derived = _expression(sub.func)
        sub = sub.subcon
    kw: dict[str, Any] = {"name": name, "when": when, "when_field": when_field, "derived": derived,
                          "node": node}
    kw["sub"] = sub
    target = sub.subcon if isinstance(sub, Const) else sub
    if isinstance(target, FormatField):
        kw["fmt"] = fmt(target)
    if id(sub) in TYPE_NAMES:
        return Field(type=TYPE_NAMES[id(sub)], **kw)
    if isinstance(sub, Const):
        if isinstance(sub.value, bytes):
            return Field(type="Byte1" if len(sub.value) == 1 else f"Byte{len(sub.value)}",
                         const=sub.value, **kw)
        return Field(type=_type_name(sub.subcon), const=sub.value, **kw)
    if isinstance(sub, P.CharIn):
        return Field(type="Byte1", values=tuple(sub.valids), **kw)
    if is_optional_char(sub):
        return Field(type="Byte1", values=tuple(sub.subcons[0].valids), optional=True, **kw)
    if is_tuple_data(sub):
        return Field(type="TupleData", **kw)
    if is_prefixed_array(sub):
        count = sub.subcons[0].subcon.subcon
        return Field(type="Array", count=_type_name(count), items=_items(sub.subcons[1].subcon.subcon), **kw)
    if isinstance(sub, Array):
        text = repr(sub.count)
        m = re.fullmatch(r"this\['(\w+)'\]", text)
        if m is None:
            raise TypeError(f"array count not understood: {sub.count!r}")
        return Field(type="Array", count=m.group(1), items=_items(sub.subcon), **kw)
    if isinstance(sub, P.TerminatedList):
        return Field(type="List", items=_items(sub.subcon), **kw)
    if isinstance(sub, Bytes) and isinstance(sub.length, int):
        return Field(type=f"Byte{sub.length}", **kw)
    raise TypeError(f"the intermediate form does not know {sub!r} (field {name})")


def lower(name: str, layout: Struct) -> Layout:
    """Lower one construct layout. A first field ``tag`` holding one constant byte is the
    message's tag; the v3 wire layouts carry their tag in the framing instead."""
    every = tuple(_field(n) for n in layout.subcons)
    tag = None
    fields = every
    if every and every[0].name == "tag":
        const = every[0].const
        if not (isinstance(const, bytes) and len(const) == 1):
            raise TypeError(f"{name}: a tag must be one constant byte")
        tag = const.decode("latin-1")
        fields = every[1:]
    return Layout(name, tag, fields, layout, every)
