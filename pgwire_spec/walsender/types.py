"""Column types of a scenario: names to OIDs, values to their text and binary forms.

A scenario names a column's type the way SQL does (``int4``, ``integer``, ``varchar(20)``,
``numeric(10,2)``, ``timestamptz``, ``int4[]`` …) or by OID (``{oid: 16500, name: mood}``
for any type, including users' types). Values are plain YAML/JSON/Python values; this
module turns them into

* the **text** form (what a real server's output function prints: 'Text values' of
  TupleData and the COPY text format),
* the **binary** form (the type's send function: 'b' values with ``binary = true`` and
  ``COPY … WITH (FORMAT binary)``), for the common built-in types. A type without a binary
  encoder here falls back to text, as a real server does for a type without a send function
  (erratum E-BINARY-FALLBACK; pgoutput.c/proto.c
  check ``typsend``), so one tuple may mix 't' and 'b'.

The type table (names, aliases, OIDs, typmods) and the encoders a server's output and send
functions are matched by live in :mod:`pgwire_spec.pgtypes`; this module turns loose scenario
values into the Python values they take.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..pgtypes import (
    BUILTIN_TYPES,
    FIRST_USER_OID,
    TYPE_ALIASES,
    array_element_text,
    array_send,
    bytea_text,
    date_send,
    float_send,
    float_text,
    jsonb_text,
    numeric_send,
    numeric_text,
    time_send,
    time_text,
    timestamp_send,
    timestamp_text,
    type_modifier,
    type_name,
)

__all__ = [
    "ColumnType",
    "BUILTIN_TYPES",
    "resolve_type",
    "TypeValueError",
    "FIRST_USER_OID",
]

class TypeValueError(ValueError):
    """A value that the column's type cannot hold (raised with the expected form)."""


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A column type: its OID, name, namespace, modifier and element type (arrays)."""

    oid: int
    name: str
    namespace: str = "pg_catalog"
    typmod: int = -1
    #: For arrays, the element type; None otherwise.
    element: ColumnType | None = None
    #: An enum's labels in their sort order (``CREATE TYPE … AS ENUM``), and each label's
    #: pg_enum OID; empty for any other type.
    labels: tuple[str, ...] = ()
    label_oids: tuple[int, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.element is not None

    @property
    def is_user_type(self) -> bool:
        return self.oid >= FIRST_USER_OID

    def text(self, value: Any) -> str | None:
        """The value's text form (None for NULL)."""
        if value is None:
            return None
        if self.element is not None:
            if isinstance(value, str):
                return value
            if not isinstance(value, (list, tuple)):
                raise TypeValueError(f"expected a list for {self.name}, found {value!r}")
            return _array_text(self.element, list(value))
        if self.labels:
            if not isinstance(value, str) or value not in self.labels:
                raise TypeValueError(f"expected a label of enum {self.name} ({', '.join(self.labels)}), "
                                     f"found {value!r}")
            return value
        fmt = _TEXT.get(self.name)
        if fmt is None:
            if isinstance(value, bytes):
                return value.decode("utf-8", "surrogateescape")
            return value if isinstance(value, str) else _generic_text(value)
        return fmt(value)

    @property
    def str_type(self) -> type:
        """The Python type whose values' text form is ``str(value)`` for this column type
        (int for the integer types, str for the string types; else NoneType, which no
        value :meth:`text` is asked about has): a stream renders each row, the common
        values take this short path."""
        if self.element is None:
            fmt = _TEXT.get(self.name)
            if fmt is _int_text:
                return int
            if fmt is _str_text:
                return str
        return type(None)

    def binary(self, value: Any) -> bytes | None:
        """The value's binary (send function) form, or None when this module has no
        encoder for the type (the caller then falls back to text)."""
        if self.element is not None:
            if self.element.name not in _BINARY or not isinstance(value, (list, tuple)):
                return None
            return _array_binary(self.element, list(value))
        if self.labels:
            return str(self.text(value)).encode()  # enum_send: the label's text (enum.c)
        fn = _BINARY.get(self.name)
        if fn is None or self.is_user_type:
            return None
        return fn(value, self)

    @property
    def has_binary(self) -> bool:
        if self.labels:
            return True
        if self.is_user_type:
            return False
        if self.element is not None:
            return self.element.name in _BINARY
        return self.name in _BINARY


# ------------------------------------------------------------------------------------------
# The built-in types (pg_type.dat), and the names SQL accepts for them
# ------------------------------------------------------------------------------------------

_TYPE_RE = re.compile(r"^\s*([a-z_][a-z0-9_ \"]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(\[\s*\])?\s*$")


_MAX_OID = (1 << 32) - 1


def _typmod(value: Any) -> int:
    """A type modifier (atttypmod): -1 or a 32-bit signed value as the catalog holds it."""
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value < 1 << 31:
        raise ValueError(f"expected a type modifier from -1 to 2^31-1, found {value!r}")
    return value


def resolve_type(spec: Any) -> ColumnType:
    """A column type from a scenario: a SQL type name, an OID, or a mapping
    ``{oid: N, name: …, namespace: …, typmod: …}``. Raises ValueError naming what it found."""
    if isinstance(spec, dict):
        unknown = set(spec) - {"oid", "name", "namespace", "typmod", "enum", "enum_oids"}
        if unknown:
            raise ValueError(f"expected a type with keys oid, name, namespace, typmod, enum, enum_oids, found "
                             f"{sorted(unknown)}")
        if "enum" in spec or "enum_oids" in spec:
            return _enum_type(spec)
        if "oid" not in spec:
            if "name" in spec:
                base = resolve_type(spec["name"])
                return ColumnType(base.oid, base.name, spec.get("namespace", base.namespace),
                                  _typmod(spec.get("typmod", base.typmod)), base.element)
            raise ValueError("expected a type with an oid or a name, found neither")
        oid = spec["oid"]
        if isinstance(oid, bool) or not isinstance(oid, int) or not 0 < oid <= _MAX_OID:
            raise ValueError(f"expected a type OID from 1 to {_MAX_OID}, found {oid!r}")
        name = spec.get("name")
        known = type_name(oid)
        if name is None:
            name = known if known is not None else f"type_{oid}"
        elif known is not None and known.lstrip("_") != str(name).lstrip("_"):
            name = str(name)
        found = _from_oid(oid) if known is not None else None
        namespace = spec.get("namespace", "pg_catalog" if oid < FIRST_USER_OID else "public")
        typmod = _typmod(spec.get("typmod", -1))
        if found is not None:
            return ColumnType(found.oid, found.name, namespace, typmod, found.element)
        return ColumnType(oid, str(name), str(namespace), typmod)
    if isinstance(spec, int) and not isinstance(spec, bool):
        if type_name(spec) is not None:
            return _from_oid(spec)
        if not 0 < spec <= _MAX_OID:
            raise ValueError(f"expected a type OID from 1 to {_MAX_OID}, found {spec}")
        return ColumnType(spec, f"type_{spec}", "pg_catalog" if spec < FIRST_USER_OID else "public")
    if not isinstance(spec, str):
        raise ValueError(f"expected a type name like 'int4' or 'text', found {spec!r}")
    if spec.strip() == '"char"':
        return ColumnType(18, "char")
    m = _TYPE_RE.match(spec.lower())
    if not m:
        raise ValueError(f"expected a type name like 'int4', 'varchar(20)' or 'int4[]', found {spec!r}")
    raw, a, b, arr = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
    if raw.startswith("pg_catalog."):
        raw = raw[len("pg_catalog."):]
    is_array = bool(arr)
    if raw.startswith("_") and raw[1:] in BUILTIN_TYPES:
        raw, is_array = raw[1:], True
    name = TYPE_ALIASES.get(raw, raw)
    if name not in BUILTIN_TYPES:
        known = ", ".join(sorted(BUILTIN_TYPES))
        raise ValueError(
            f"expected a built-in type name ({known}) or {{oid: N, name: …}} for other types, found {spec!r}"
        )
    oid, array_oid = BUILTIN_TYPES[name]
    typmod = _typmod(type_modifier(name, int(a) if a else None, int(b) if b else None))
    base = ColumnType(oid, name, "pg_catalog", -1 if is_array else typmod)
    if is_array:
        return ColumnType(array_oid, "_" + name, "pg_catalog", typmod, base)
    return base


def _enum_type(spec: dict[str, Any]) -> ColumnType:
    """``{oid: N, name: mood, enum: [sad, ok, happy]}``: a user's enum type, as ``CREATE TYPE
    mood AS ENUM ('sad', 'ok', 'happy')`` makes it. Its labels' OIDs are the even numbers after
    the type's (pg_enum.c EnumValuesCreate takes even OIDs, sorted in label order), unless
    ``enum_oids`` names them."""
    oid, labels = spec.get("oid"), spec.get("enum")
    if isinstance(oid, bool) or not isinstance(oid, int) or not FIRST_USER_OID <= oid <= _MAX_OID:
        raise ValueError(f"expected an enum type's OID from {FIRST_USER_OID} to {_MAX_OID}, found {oid!r}")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise ValueError(f"expected enum: a non-empty list of labels, found {labels!r}")
    for label in labels:
        if not label or len(label.encode()) > 63:
            # pg_enum.c: invalid enum label; labels must be 1 to NAMEDATALEN - 1 bytes
            raise ValueError(f"expected enum labels of 1 to 63 bytes, found {label!r}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"expected distinct enum labels, found {labels!r}")
    first = oid + 1 + (oid + 1) % 2
    oids = spec.get("enum_oids", [first + 2 * i for i in range(len(labels))])
    if (not isinstance(oids, list) or len(oids) != len(labels) or len(set(oids)) != len(oids)
            or not all(isinstance(o, int) and not isinstance(o, bool) and 0 < o <= _MAX_OID for o in oids)):
        raise ValueError(f"expected enum_oids: one distinct OID per label ({len(labels)}), found {oids!r}")
    name = spec.get("name", f"type_{oid}")
    return ColumnType(oid, str(name), str(spec.get("namespace", "public")), _typmod(spec.get("typmod", -1)),
                      None, tuple(labels), tuple(oids))


def _from_oid(oid: int) -> ColumnType:
    name = type_name(oid)
    assert name is not None
    if name.startswith("_"):
        elem = BUILTIN_TYPES[name[1:]][0]
        return ColumnType(oid, name, "pg_catalog", -1, ColumnType(elem, name[1:]))
    return ColumnType(oid, name)


# ------------------------------------------------------------------------------------------
# Text forms (the output functions)
# ------------------------------------------------------------------------------------------


def _int_text(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeValueError(f"expected an integer, found {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return str(int(value))
    raise TypeValueError(f"expected an integer, found {value!r}")


def _bool_text(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, str) and value.lower() in ("t", "true", "on", "yes", "y", "1"):
        return "t"
    if isinstance(value, str) and value.lower() in ("f", "false", "off", "no", "n", "0"):
        return "f"
    raise TypeValueError(f"expected a boolean, found {value!r}")


def _float_number(value: Any, width: int) -> float:
    try:
        f = float(value)
        return f if width == 64 else struct.unpack("!f", struct.pack("!f", f))[0]
    except (OverflowError, struct.error):
        raise TypeValueError(f"expected a float{width // 8} in range, found {value!r}") from None


def _float_text(value: Any, width: int = 64) -> str:
    if isinstance(value, bool):
        raise TypeValueError(f"expected a number, found {value!r}")
    if isinstance(value, (int, float)):
        return float_text(_float_number(value, width), width)
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            if value not in ("NaN", "Infinity", "-Infinity"):
                raise TypeValueError(f"expected a number, found {value!r}") from None
        return value
    raise TypeValueError(f"expected a number, found {value!r}")


def _numeric_text(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeValueError(f"expected a number, found {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return numeric_text(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        try:
            decimal.Decimal(value)
        except decimal.InvalidOperation:
            raise TypeValueError(f"expected a number, found {value!r}") from None
        return value.strip()
    raise TypeValueError(f"expected a number, found {value!r}")


def _str_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bytea_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytea_text(bytes(value))
    if isinstance(value, str):
        if value.startswith("\\x"):
            bytes.fromhex(value[2:])
            return value
        return "\\x" + value.encode().hex()
    raise TypeValueError(f"expected bytes or '\\x…' hex text, found {value!r}")


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def _jsonb_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return jsonb_text(value)
    except ValueError as exc:
        raise TypeValueError(str(exc)) from None


def _date_text(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise TypeValueError(f"expected a date, found {value!r}")


def _timestamp_text(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        return timestamp_text(value, False)
    if isinstance(value, _dt.date):
        return value.isoformat() + " 00:00:00"
    if isinstance(value, str):
        return value
    raise TypeValueError(f"expected a timestamp, found {value!r}")


def _timestamptz_text(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return timestamp_text(value.astimezone(_dt.UTC), True)
    if isinstance(value, _dt.date):
        return value.isoformat() + " 00:00:00+00"
    if isinstance(value, str):
        return value
    raise TypeValueError(f"expected a timestamp, found {value!r}")


def _time_text(value: Any) -> str:
    if isinstance(value, _dt.time):
        return time_text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML reads 12:30:00 as sexagesimal seconds
        return f"{value // 3600:02d}:{value // 60 % 60:02d}:{value % 60:02d}"
    if isinstance(value, str):
        return value
    raise TypeValueError(f"expected a time, found {value!r}")


def _uuid_text(value: Any) -> str:
    try:
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    except ValueError:
        raise TypeValueError(f"expected a UUID, found {value!r}") from None


def _char_text(value: Any) -> str:
    text = _str_text(value)
    if len(text.encode()) > 1:
        raise TypeValueError(f'expected one byte for "char", found {value!r}')
    return text


def _generic_text(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, _dt.datetime):
        return _timestamptz_text(value) if value.tzinfo else _timestamp_text(value)
    if isinstance(value, _dt.date):
        return value.isoformat()
    return str(value)


_TEXT: dict[str, Callable[[Any], str]] = {
    "bool": _bool_text,
    "int2": _int_text,
    "int4": _int_text,
    "int8": _int_text,
    "oid": _int_text,
    "xid": _int_text,
    "float4": lambda value: _float_text(value, 32),
    "float8": _float_text,
    "numeric": _numeric_text,
    "text": _str_text,
    "varchar": _str_text,
    "bpchar": _str_text,
    "name": _str_text,
    "char": _char_text,
    "bytea": _bytea_text,
    "json": _json_text,
    "jsonb": _jsonb_text,
    "date": _date_text,
    "timestamp": _timestamp_text,
    "timestamptz": _timestamptz_text,
    "time": _time_text,
    "uuid": _uuid_text,
}


def _array_text(element: ColumnType, values: list[Any]) -> str:
    """Array output: ``{1,2,NULL,"a b"}`` (quotes around empty, NULL-like and special text)."""
    parts = []
    for v in values:
        if isinstance(v, (list, tuple)):
            parts.append(_array_text(element, list(v)))
            continue
        t = element.text(v)
        if t is None:
            parts.append("NULL")
        else:
            parts.append(array_element_text(t))
    return "{" + ",".join(parts) + "}"


# ------------------------------------------------------------------------------------------
# Binary forms (the send functions)
# ------------------------------------------------------------------------------------------

_I2, _I4, _I8 = struct.Struct("!h"), struct.Struct("!i"), struct.Struct("!q")
_U4 = struct.Struct("!I")


def _int_bin(st: struct.Struct) -> Callable[[Any, ColumnType], bytes]:
    def enc(value: Any, t: ColumnType) -> bytes:
        try:
            return st.pack(int(_int_text(value)))
        except struct.error:
            raise TypeValueError(f"expected a {t.name} in range, found {value!r}") from None

    return enc


def _oid_bin(value: Any, t: ColumnType) -> bytes:
    try:
        return _U4.pack(int(_int_text(value)))
    except struct.error:
        raise TypeValueError(f"expected an OID in range, found {value!r}") from None


def _float_bin(width: int) -> Callable[[Any, ColumnType], bytes]:
    def enc(value: Any, t: ColumnType) -> bytes:
        text = _float_text(value, width)
        f = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.get(text)
        return float_send(_float_number(text, width) if f is None else f, width)

    return enc


def _text_bin(value: Any, t: ColumnType) -> bytes:
    return _str_text(value).encode("utf-8", "surrogateescape")


def _bool_bin(value: Any, t: ColumnType) -> bytes:
    return b"\x01" if _bool_text(value) == "t" else b"\x00"


def _bytea_bin(value: Any, t: ColumnType) -> bytes:
    return bytes.fromhex(_bytea_text(value)[2:])


def _json_bin(value: Any, t: ColumnType) -> bytes:
    return _json_text(value).encode()


def _jsonb_bin(value: Any, t: ColumnType) -> bytes:
    # jsonb_send: a version byte (1) then the text.
    return b"\x01" + _jsonb_text(value).encode()


def _uuid_bin(value: Any, t: ColumnType) -> bytes:
    return uuid.UUID(_uuid_text(value)).bytes


def _char_bin(value: Any, t: ColumnType) -> bytes:
    return _char_text(value).encode()


def _parse_date(text: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text.strip())
    except ValueError:
        raise TypeValueError(f"expected a date like 2024-01-31, found {text!r}") from None


def _date_bin(value: Any, t: ColumnType) -> bytes:
    text = _date_text(value)
    return date_send(text if text in ("infinity", "-infinity") else _parse_date(text))


def _parse_timestamp(text: str, tz: bool) -> _dt.datetime:
    s = text.strip().replace(" ", "T", 1)
    if re.search(r"[+-]\d\d$", s):
        s += ":00"
    try:
        value = _dt.datetime.fromisoformat(s)
    except ValueError:
        raise TypeValueError(f"expected a timestamp like 2024-01-31 12:00:00, found {text!r}") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value


def _timestamp_bin(value: Any, t: ColumnType) -> bytes:
    text = _timestamp_text(value) if t.name == "timestamp" else _timestamptz_text(value)
    if text in ("infinity", "-infinity"):
        return timestamp_send(text)
    parsed = _parse_timestamp(text, t.name == "timestamptz")
    # timestamp input ignores a zone offset; timestamptz's is taken into UTC.
    return timestamp_send(parsed.replace(tzinfo=None) if t.name == "timestamp" else parsed)


def _time_bin(value: Any, t: ColumnType) -> bytes:
    text = _time_text(value)
    try:
        tv = _dt.time.fromisoformat(text.strip())
    except ValueError:
        raise TypeValueError(f"expected a time like 12:30:00, found {text!r}") from None
    return time_send(tv)


def _numeric_bin(value: Any, t: ColumnType) -> bytes:
    return numeric_send(decimal.Decimal(_numeric_text(value)))


_BINARY: dict[str, Callable[[Any, ColumnType], bytes]] = {
    "bool": _bool_bin,
    "int2": _int_bin(_I2),
    "int4": _int_bin(_I4),
    "int8": _int_bin(_I8),
    "oid": _oid_bin,
    "xid": _oid_bin,
    "float4": _float_bin(32),
    "float8": _float_bin(64),
    "numeric": _numeric_bin,
    "text": _text_bin,
    "varchar": _text_bin,
    "bpchar": _text_bin,
    "name": _text_bin,
    "char": _char_bin,
    "bytea": _bytea_bin,
    "json": _json_bin,
    "jsonb": _jsonb_bin,
    "date": _date_bin,
    "timestamp": _timestamp_bin,
    "timestamptz": _timestamp_bin,
    "time": _time_bin,
    "uuid": _uuid_bin,
}


def _array_binary(element: ColumnType, values: list[Any]) -> bytes:
    """array_send of a one-dimensional array."""

    def send(v: Any) -> bytes:
        b = element.binary(v)
        if b is None:
            raise TypeValueError(f"no binary form for {element.name} elements")
        return b

    return array_send(element.oid, values, send)
