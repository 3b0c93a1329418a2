"""Column types and their values in text and binary form, as a server would send them.

Text forms are what the type's output function prints with the settings a replication
client sees (DateStyle ISO, TimeZone UTC, bytea_output hex, extra_float_digits >= 1, i.e.
shortest exact floats); binary forms are what the type's send function writes (the bytes
of a 'b' TupleData value, docs: "Logical Replication Message Formats", TupleData).

Each :class:`PgType` draws a plain Python value and renders it both ways, so a test can
check one against the other; ``tests/strategies/test_types_live.py`` checks both against a
real server's ``<type>out``/``<type>send``.
"""

from __future__ import annotations

import datetime as _dt
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from ..pgtypes import (
    FIRST_NORMAL_OID,
    array_element_text,
    array_send,
    bytea_text,
    date_send,
    float_send,
    float_text,
    jsonb_send,
    jsonb_text,
    numeric_send,
    numeric_text,
    time_send,
    time_text,
    timestamp_send,
    timestamp_text,
    type_modifier,
    type_oid,
)

__all__ = [
    "PgType",
    "BUILTIN_TYPES",
    "TYPES_BY_NAME",
    "TYPES_BY_OID",
    "UserType",
    "user_types",
    "FIRST_NORMAL_OID",
]

@dataclass(frozen=True, slots=True)
class PgType:
    """A column type: its name, OID, a strategy of Python values, and both wire forms.

    ``send`` is None for a type without a binary send function: pgoutput then sends its
    values as text even with ``binary = true`` (erratum E-BINARY-FALLBACK).
    ``toastable``: values can be stored out of line, so an UPDATE may send them as 'u'.
    ``keyable``: the type has a btree opclass, so it can be part of a replica identity.
    """

    name: str
    oid: int
    values: st.SearchStrategy[Any]
    text: Callable[[Any], str]
    send: Callable[[Any], bytes] | None
    toastable: bool = False
    keyable: bool = True
    #: typmod sent in the Relation message (-1: none).
    typmod: int = -1


# -- integers, bool, oid ----------------------------------------------------------------


def _int_type(name: str, fmt: str) -> PgType:
    bits = struct.calcsize(fmt) * 8
    packer = struct.Struct(">" + fmt)
    if fmt.islower():
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << bits) - 1
    return PgType(name, type_oid(name), st.integers(lo, hi), str, packer.pack)


def _bool_text(v: bool) -> str:
    return "t" if v else "f"


def _bool_send(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


# -- text -----------------------------------------------------------------------------------

# Text values never contain NUL (PostgreSQL rejects it) and are valid in the client
# encoding (UTF-8 here), so no lone surrogates.
_TEXT_CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
_TEXT = st.text(_TEXT_CHARS, max_size=24)


def _utf8(v: str) -> bytes:
    return v.encode("utf-8")


# -- numeric ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Numeric:
    """A numeric value: ``unscaled / 10**scale`` with a sign; or NaN / ±Infinity."""

    negative: bool
    unscaled: int
    scale: int
    special: str | None = None  # "NaN", "Infinity", "-Infinity"

    def as_decimal(self) -> Decimal:
        if self.special is not None:
            return Decimal(self.special)
        return Decimal((1 if self.negative else 0, tuple(map(int, str(self.unscaled))), -self.scale))


def _numeric_values() -> st.SearchStrategy[Numeric]:
    finite = st.builds(
        lambda neg, u, s: Numeric(neg and u != 0, u, s),
        st.booleans(),
        st.integers(0, 10**30),
        st.integers(0, 12),
    )
    special = st.sampled_from(["NaN", "Infinity", "-Infinity"]).map(lambda s: Numeric(False, 0, 0, s))
    return st.one_of(finite, special)


def _numeric_text(v: Numeric) -> str:
    return numeric_text(v.as_decimal())


# -- floats ---------------------------------------------------------------------------------------


def _float_text(width: int) -> Callable[[float], str]:
    return lambda x: float_text(x, width)


def _float_send(width: int) -> Callable[[float], bytes]:
    return lambda x: float_send(x, width)


def _numeric_send(v: Numeric) -> bytes:
    return numeric_send(v.as_decimal())


# -- dates and times (DateStyle ISO, TimeZone UTC) ------------------------------------------------

_INFINITIES = st.sampled_from(["infinity", "-infinity"])


def _date_text(v: _dt.date | str) -> str:
    return v if isinstance(v, str) else v.isoformat()


def _timestamp_text(tz: bool) -> Callable[[Any], str]:
    return lambda v: timestamp_text(v, tz)


# -- bytea, uuid, json ----------------------------------------------------------------------------


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.text(_TEXT_CHARS, max_size=8)
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text(_TEXT_CHARS, max_size=5), inner, max_size=3),
        ),
        max_leaves=6,
    )


def _json_text(v: Any) -> str:
    # json keeps its input text as is; any valid JSON text is a value a server can send.
    return json.dumps(v, ensure_ascii=False)


# -- one-dimensional arrays -----------------------------------------------------------------------

def _array_type(elem: PgType, quoting: bool) -> PgType:
    assert elem.send is not None
    esend = elem.send
    name = "_" + elem.name

    def text(v: list[Any]) -> str:
        return "{" + ",".join(
            "NULL" if x is None else array_element_text(elem.text(x)) if quoting else elem.text(x) for x in v
        ) + "}"

    def send(v: list[Any]) -> bytes:
        return array_send(elem.oid, v, esend)

    values = st.lists(st.one_of(st.none(), elem.values), max_size=4)
    return PgType(name, type_oid(name), values, text, send, toastable=True)


# -- the table --------------------------------------------------------------------------------------


def _build() -> tuple[PgType, ...]:
    int2 = _int_type("int2", "h")
    int4 = _int_type("int4", "i")
    int8 = _int_type("int8", "q")
    oid = _int_type("oid", "I")
    boolean = PgType("bool", type_oid("bool"), st.booleans(), _bool_text, _bool_send)
    text = PgType("text", type_oid("text"), _TEXT, str, _utf8, toastable=True)
    varchar = PgType("varchar", type_oid("varchar"), _TEXT, str, _utf8, toastable=True)
    varchar8 = PgType("varchar", type_oid("varchar"), st.text(_TEXT_CHARS, max_size=8), str, _utf8,
                      toastable=True, typmod=type_modifier("varchar", 8))
    numeric = PgType("numeric", type_oid("numeric"), _numeric_values(), _numeric_text, _numeric_send)
    float4 = PgType("float4", type_oid("float4"), st.floats(width=32), _float_text(32), _float_send(32))
    float8 = PgType("float8", type_oid("float8"), st.floats(), _float_text(64), _float_send(64))
    date = PgType("date", type_oid("date"), st.one_of(st.dates(), _INFINITIES), _date_text, date_send)
    time = PgType("time", type_oid("time"), st.times(), time_text, time_send)
    timestamp = PgType(
        "timestamp", type_oid("timestamp"), st.one_of(st.datetimes(), _INFINITIES), _timestamp_text(False),
        timestamp_send,
    )
    timestamptz = PgType(
        "timestamptz", type_oid("timestamptz"),
        st.one_of(st.datetimes(timezones=st.just(_dt.UTC)), _INFINITIES),
        _timestamp_text(True), timestamp_send,
    )
    uuid = PgType("uuid", type_oid("uuid"), st.uuids(), str, lambda u: u.bytes)
    bytea = PgType("bytea", type_oid("bytea"), st.binary(max_size=24), bytea_text, bytes, toastable=True)
    json_ = PgType("json", type_oid("json"), _json_values(), _json_text, lambda v: _json_text(v).encode("utf-8"),
                   toastable=True, keyable=False)
    jsonb = PgType("jsonb", type_oid("jsonb"), _json_values(), jsonb_text, jsonb_send, toastable=True)
    return (
        int2, int4, int8, oid, boolean, text, varchar, varchar8, numeric, float4, float8, date,
        time, timestamp, timestamptz, uuid, bytea, json_, jsonb,
        _array_type(int4, False),
        _array_type(int8, False),
        _array_type(boolean, False),
        _array_type(text, True),
    )


#: The built-in column types the strategies use (OIDs below 10000: no Type message).
BUILTIN_TYPES: tuple[PgType, ...] = _build()
TYPES_BY_NAME: dict[str, PgType] = {t.name: t for t in BUILTIN_TYPES if t.typmod == -1}
TYPES_BY_OID: dict[int, PgType] = {t.oid: t for t in BUILTIN_TYPES if t.typmod == -1}


# -- user types (OID >= 10000: pgoutput sends a Type message before the Relation) -----------------


@dataclass(frozen=True, slots=True)
class UserType:
    """A user type: what its Type message says and how its values look.

    For a domain, the Type message carries the domain's OID but its base type's namespace
    and name (erratum E-TYPE-DOMAIN); pg_catalog is written as the empty string.
    """

    oid: int
    type_namespace: str
    type_name: str
    pgtype: PgType


def _enum(oid: int, namespace: str, name: str, labels: list[str]) -> UserType:
    # enum_out prints the label; enum_send writes the label's bytes.
    t = PgType(name, oid, st.sampled_from(labels), str, _utf8)
    return UserType(oid, namespace, name, t)


def _domain(oid: int, base: PgType) -> UserType:
    t = PgType(base.name, oid, base.values, base.text, base.send, base.toastable, base.keyable)
    return UserType(oid, "", base.name, t)


def _without_send(oid: int, namespace: str, name: str) -> UserType:
    # An extension type with no send function: text even under binary = true.
    t = PgType(name, oid, _TEXT, str, None, toastable=True, keyable=False)
    return UserType(oid, namespace, name, t)


_IDENT = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10)
_LABELS = st.lists(st.text(_TEXT_CHARS, min_size=1, max_size=8), min_size=1, max_size=4, unique=True)
_DOMAIN_BASES = [t for t in BUILTIN_TYPES if t.typmod == -1 and not t.name.startswith("_")]


def user_types(oid: st.SearchStrategy[int]) -> st.SearchStrategy[UserType]:
    """A user-defined type with the given OID: an enum, a domain over a built-in type, or a
    type without a binary send function."""
    return st.one_of(
        st.builds(_enum, oid, st.sampled_from(["public", "app"]), _IDENT, _LABELS),
        st.builds(_domain, oid, st.sampled_from(_DOMAIN_BASES)),
        st.builds(_without_send, oid, st.sampled_from(["public", "ext"]), _IDENT),
    )

