"""The stable JSON form of every message (documented by ``spec/message.schema.json``).

Used by the fixtures, the CLI and the conformance suite, so decoders in any language can
compare their output with ours. The form is derived from the grammar: a field whose wire
type is XLogRecPtr is an LSN in ``X/X`` text; bytes are lowercase hex; a tuple is a list of
``{"kind": "t", "text": …}`` / ``{"kind": "b", "hex": …}`` / ``{"kind": "n"}`` /
``{"kind": "u"}``; every object names its ``type`` (the class name) and its ``tag``.

Text that is not valid UTF-8 (kept through surrogateescape) is given as ``{"hex": …}``
in place of the string, so the JSON itself is always valid UTF-8.
"""

from __future__ import annotations

from dataclasses import fields as dc_fields
from typing import Any

from . import _ir
from . import _primitives as P
from .errors import DecodeError
from .lsn import format_lsn, parse_lsn
from .pgoutput import grammar as pg_grammar
from .pgoutput import messages as pg_messages
from .replication import grammar as repl_grammar
from .replication import messages as repl_messages

__all__ = ["to_json", "from_json", "register", "FORMAT_VERSION"]

FORMAT_VERSION = 1

# kind of a field: "lsn", "int", "str", "char", "bool", "bytes", "tuple", "ints", or a class
_FIELDS: dict[type, list[tuple[str, Any]]] = {}
_BY_NAME: dict[str, type] = {}
#: per class: (the JSON object's first keys, [(field, converter or None)]), from _FIELDS
_OUT: dict[type, tuple[dict[str, Any], list[tuple[str, Any]]]] = {}


_INTS = frozenset({"Int8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "Oid", "TransactionId",
                   "TimestampTz"})
_BYTES = frozenset({"Byten32", "RestBytes", "StringBytes", "NullableByten32"})


def _type_kind(name: str) -> str:
    """The JSON kind of a value of a wire type (from the grammar's intermediate form)."""
    if name == "XLogRecPtr":
        return "lsn"
    if name in _INTS:
        return "int"
    if name == "String":
        return "str"
    if name == "Byte1":
        return "char"
    if name == "Bool8":
        return "bool"
    if name in _BYTES or (name.startswith("Byte") and name[4:].isdigit()):
        return "bytes"
    if name == "TupleData":
        return "tuple"
    raise TypeError(f"no JSON form for {name}")


def _kind(f: _ir.Field, nested: dict[int, type]) -> Any:
    if f.type == "List":
        return _items_kind(f, nested)
    if f.type == "Array":
        if isinstance(f.items, str) and _type_kind(f.items) == "int":
            return "ints"
        return _items_kind(f, nested)
    return _type_kind(f.type)


def _items_kind(f: _ir.Field, nested: dict[int, type]) -> Any:
    """The kind of a list of *f*'s items: objects for a nested layout, lists for a Sequence
    of text (a name/value pair), else a list of the item's kind."""
    item = f.items
    if isinstance(item, _ir.Layout):
        return ("array", nested[id(item.struct)], _layout_fields(item, nested))
    if isinstance(item, tuple):
        kinds = {"str" if k == "char" else k for k in (_type_kind(t) for t in item)}
        if len(kinds) != 1:
            raise TypeError(f"no JSON form for a Sequence of mixed kinds: {item!r}")
        return {"list": {"list": kinds.pop()}}
    assert item is not None
    if item == "NullableByten32":
        return {"list": "bytes", "nullable": True}
    return {"list": _type_kind(item)}


def _layout_fields(layout: _ir.Layout, nested: dict[int, type]) -> list[tuple[str, Any]]:
    # Constants (the tag, Insert's 'N', an authentication code) and counts the encoder
    # recomputes are not fields.
    return [(f.name, _kind(f, nested)) for f in layout.fields if f.const is None and not f.derived]


def register(layouts: dict[str, Any], classes: dict[str, type], nested: dict[int, type] | None = None) -> None:
    """Give the message classes of a grammar family their JSON form."""
    for name, layout in layouts.items():
        cls = classes[name]
        _FIELDS[cls] = _layout_fields(_ir.lower(name, layout), nested or {})
        _BY_NAME[name] = cls
        _OUT.pop(cls, None)


def register_plain(cls: type, kinds: dict[str, Any]) -> None:
    """Give a message class that has no construct layout a JSON form, field by field."""
    _FIELDS[cls] = list(kinds.items())
    _BY_NAME[cls.__name__] = cls
    _OUT.pop(cls, None)


register(
    pg_grammar.LAYOUTS,
    dict(pg_messages.MESSAGE_TYPES),
    {id(pg_grammar.RelationColumn): pg_messages.RelationColumn},
)
register(repl_grammar.LAYOUTS, dict(repl_messages.MESSAGE_TYPES))


def _text_out(value: str) -> Any:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return {"hex": value.encode(P.ENCODING, P.ERRORS).hex()}


def _tuple_out(values: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    append = out.append
    for v in values:
        if type(v) is str:
            if v.isascii():
                append({"kind": "t", "text": v})
                continue
            t = _text_out(v)
            append({"kind": "t", "text": t} if t is v else {"kind": "t", "hex": t["hex"]})
        elif v is None:
            append({"kind": "n"})
        elif v is P.UNCHANGED:
            append({"kind": "u"})
        elif isinstance(v, str):
            t = _text_out(v)
            append({"kind": "t", "hex": t["hex"]} if isinstance(t, dict) else {"kind": "t", "text": t})
        else:
            append({"kind": "b", "hex": bytes(v).hex()})
    return out


def _bytes_out(value: Any) -> str:
    return bytes(value).hex()


def _converter(kind: Any) -> Any:
    """The function giving a non-None value of *kind* its JSON form; None for values that
    are their own JSON form. The same forms as :func:`_value_out`, chosen once per field."""
    if kind in ("int", "bool", "char"):
        return None
    simple = {"lsn": format_lsn, "str": _text_out, "bytes": _bytes_out, "ints": list, "tuple": _tuple_out}
    if isinstance(kind, str) and kind in simple:
        return simple[kind]
    return lambda value: _value_out(kind, value)




def _out_spec(cls: type) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    try:
        spec = _FIELDS[cls]
    except KeyError:
        raise TypeError(f"no JSON form for {cls.__name__}") from None
    head: dict[str, Any] = {"type": cls.__name__}
    tag = getattr(cls, "tag", None)
    if tag is not None:
        head["tag"] = tag
    compiled = _OUT[cls] = (head, [(name, _converter(kind)) for name, kind in spec])
    return compiled


def _text_in(value: Any) -> str:
    if isinstance(value, dict):
        return bytes.fromhex(value["hex"]).decode(P.ENCODING, P.ERRORS)
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {type(value).__name__}")
    return value


def _value_out(kind: Any, value: Any) -> Any:
    if value is None:
        return None
    if kind == "lsn":
        return format_lsn(value)
    if kind in ("int", "bool", "char"):
        return value
    if kind == "str":
        return _text_out(value)
    if kind == "bytes":
        return bytes(value).hex()
    if kind == "ints":
        return list(value)
    if kind == "tuple":
        return _tuple_out(value)
    if isinstance(kind, tuple):
        _, _cls, sub = kind
        return [{n: _value_out(k, getattr(item, n)) for n, k in sub} for item in value]
    if isinstance(kind, dict):  # plain classes: {"list": kind} or nested plain fields
        return [_value_out(kind["list"], v) for v in value]
    raise TypeError(kind)


def _value_in(kind: Any, value: Any) -> Any:
    if value is None:
        return None
    if kind == "lsn":
        return parse_lsn(value)
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"expected an integer, found {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, found {value!r}")
        return value
    if kind == "char":
        if not isinstance(value, str) or len(value) != 1:
            raise TypeError(f"expected a one-character string, found {value!r}")
        return value
    if kind == "str":
        return _text_in(value)
    if kind == "bytes":
        return bytes.fromhex(value)
    if kind == "ints":
        return tuple(_value_in("int", v) for v in value)
    if kind == "tuple":
        out: list[Any] = []
        for col in value:
            k = col["kind"]
            if k == "n":
                out.append(None)
            elif k == "u":
                out.append(P.UNCHANGED)
            elif k == "t":
                out.append(col["text"] if "text" in col else _text_in({"hex": col["hex"]}))
            elif k == "b":
                out.append(bytes.fromhex(col["hex"]))
            else:
                raise ValueError(f"expected tuple kind n, u, t or b, found {k!r}")
        return tuple(out)
    if isinstance(kind, tuple):
        _, cls, sub = kind
        return tuple(cls(**{n: _value_in(k, item[n]) for n, k in sub}) for item in value)
    if isinstance(kind, dict):
        return tuple(_value_in(kind["list"], v) for v in value)
    raise TypeError(kind)


def to_json(message: Any, *, omit: str | None = None) -> dict[str, Any]:
    """The JSON form (a dict ready for ``json.dumps``) of a message object; *omit*: a field
    left out, not converted (a CopyData's or XLogData's bytes, given decoded or stored apart)."""
    cls = type(message)
    try:
        head, spec = _OUT[cls]
    except KeyError:
        head, spec = _out_spec(cls)
    out = head.copy()
    if omit is not None:
        spec = [field for field in spec if field[0] != omit]
    for name, conv in spec:
        value = getattr(message, name)
        out[name] = value if conv is None or value is None else conv(value)
    return out


def from_json(obj: dict[str, Any]) -> Any:
    """The message object of a JSON form. Raises DecodeError (rule ``invalid-json``) naming
    the field that is wrong."""
    if not isinstance(obj, dict):
        raise DecodeError("invalid-json", expected="a JSON object", found=type(obj).__name__)
    name = obj.get("type")
    cls = _BY_NAME.get(name)  # type: ignore[arg-type]
    if cls is None:
        raise DecodeError(
            "invalid-json", expected=f"type one of {sorted(_BY_NAME)}", found=repr(name), field="type"
        )
    values = {}
    for field_name, kind in _FIELDS[cls]:
        try:
            raw = obj[field_name]
        except KeyError:
            names = {f.name for f in dc_fields(cls)}
            if field_name in names and _has_default(cls, field_name):
                continue
            raise DecodeError(
                "invalid-json", expected=f"field {field_name!r}", found="nothing",
                field=f"{name}.{field_name}",
            ) from None
        try:
            values[field_name] = _value_in(kind, raw)
        except (TypeError, ValueError, KeyError) as exc:
            raise DecodeError(
                "invalid-json", expected=f"a valid {field_name}", found=f"{raw!r} ({exc})",
                field=f"{name}.{field_name}",
            ) from None
    return cls(**values)


def _has_default(cls: type, name: str) -> bool:
    from dataclasses import MISSING

    for f in dc_fields(cls):
        if f.name == name:
            return f.default is not MISSING
    return False
