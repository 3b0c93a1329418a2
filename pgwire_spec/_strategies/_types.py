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
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from ..lsn import PG_EPOCH

__all__ = [
    "PgType",
    "BUILTIN_TYPES",
    "TYPES_BY_NAME",
    "TYPES_BY_OID",
    "UserType",
    "user_types",
    "FIRST_NORMAL_OID",
]

#: OIDs from here on belong to user objects (FirstNormalObjectId).
FIRST_NORMAL_OID = 16384


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


def _int_type(name: str, oid: int, fmt: str) -> PgType:
    bits = struct.calcsize(fmt) * 8
    packer = struct.Struct(">" + fmt)
    if fmt.islower():
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << bits) - 1
    return PgType(name, oid, st.integers(lo, hi), str, packer.pack)


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

_NUMERIC_POS, _NUMERIC_NEG = 0x0000, 0x4000
_NUMERIC_NAN, _NUMERIC_PINF, _NUMERIC_NINF = 0xC000, 0xD000, 0xF000


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
    if v.special is not None:
        return v.special
    ip, fp = divmod(v.unscaled, 10**v.scale)
    text = str(ip) + ("." + str(fp).rjust(v.scale, "0") if v.scale else "")
    return ("-" if v.negative else "") + text


def _numeric_send(v: Numeric) -> bytes:
    """numeric_send: Int16 ndigits, Int16 weight, UInt16 sign, Int16 dscale, base-10000 digits."""
    if v.special is not None:
        sign = {"NaN": _NUMERIC_NAN, "Infinity": _NUMERIC_PINF, "-Infinity": _NUMERIC_NINF}[v.special]
        # numeric_send reads a special value's header as a short header: the dscale bits
        # of 0xD000/0xF000 give 32 (seen on 15), NaN's give 0.
        return struct.pack(">hhHh", 0, 0, sign, (sign & 0x1F80) >> 7)
    ip, fp = divmod(v.unscaled, 10**v.scale)
    groups: list[int] = []
    while ip:
        ip, r = divmod(ip, 10000)
        groups.insert(0, r)
    weight = len(groups) - 1
    frac = str(fp).rjust(v.scale, "0") if v.scale else ""
    frac += "0" * (-len(frac) % 4)
    groups += [int(frac[i:i + 4]) for i in range(0, len(frac), 4)]
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        return struct.pack(">hhHh", 0, 0, _NUMERIC_POS, v.scale)
    sign = _NUMERIC_NEG if v.negative else _NUMERIC_POS
    return struct.pack(f">hhHh{len(groups)}h", len(groups), weight, sign, v.scale, *groups)


# -- floats ---------------------------------------------------------------------------------------


def _neighbours(x: float, width: int) -> tuple[float, float]:
    if width == 64:
        return math.nextafter(x, 0.0), math.nextafter(x, math.inf)
    bits = struct.unpack(">I", struct.pack(">f", x))[0]
    down = struct.unpack(">f", struct.pack(">I", bits - 1))[0]
    up = struct.unpack(">f", struct.pack(">I", bits + 1))[0] if bits + 1 < 0x7F800000 else math.inf
    return down, up


def _float_digits(x: float, width: int) -> tuple[str, int]:
    """The digits float8out/float4out print for a positive finite *x* and the decimal
    exponent of the first digit: PostgreSQL's ryu (d2s.c/f2s.c) gives the fewest digits
    that lie strictly inside the interval of values that round to *x* (a decimal exactly
    halfway to a neighbour is not taken, where Python's repr would take it), and among
    those the one closest to *x*."""
    down, up = _neighbours(x, width)
    fx = Fraction(x)
    lo = (fx + Fraction(down)) / 2
    hi = (fx + Fraction(up)) / 2 if up != math.inf else fx + (fx - Fraction(down))
    e = int(f"{x:e}".partition("e")[2])  # decimal exponent of the first digit …
    while Fraction(10) ** e > fx:  # … made exact (6-digit rounding may carry)
        e -= 1
    while Fraction(10) ** (e + 1) <= fx:
        e += 1
    for digits in range(1, 18):
        # Both neighbours at this many digits, not only the correctly rounded one: the
        # rounded one can fall on or outside the interval while the other lies inside
        # (2**-24 prints as 5.960464477539063e-08 on a real server).
        scale = Fraction(10) ** (e - digits + 1)
        floor = (fx / scale).numerator // (fx / scale).denominator
        inside = [n for n in (floor, floor + 1) if lo < n * scale < hi]
        if inside:
            best = min(inside, key=lambda n: (abs(n * scale - fx), n % 2))
            ds = str(best)
            exp = e + len(ds) - digits  # floor + 1 may carry into a new digit (9.99 -> 10.0)
            return ds.rstrip("0") or "0", exp
    raise AssertionError(f"no decimal form found for {x!r}")  # pragma: no cover


def _float_text(width: int) -> Callable[[float], str]:
    # float8out/float4out: fixed notation when -4 <= exponent < 15 (float4: < 6), like %g
    # with DBL_DIG / FLT_DIG; otherwise d.ddde+XX with at least two exponent digits.
    limit = 15 if width == 64 else 6

    def text(x: float) -> str:
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        sign = "-" if math.copysign(1.0, x) < 0 else ""
        if x == 0:
            return sign + "0"
        ds, e = _float_digits(abs(x), width)
        if -4 <= e < limit:
            if e < 0:
                body = "0." + "0" * (-e - 1) + ds
            elif len(ds) > e + 1:
                body = ds[: e + 1] + "." + ds[e + 1:]
            else:
                body = ds + "0" * (e + 1 - len(ds))
        else:
            mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
            body = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
        return sign + body

    return text


def _float_send(width: int) -> Callable[[float], bytes]:
    packer = struct.Struct(">d" if width == 64 else ">f")
    # float8in('NaN') gives the platform's quiet NaN; a send function writes its bits.
    nan = bytes.fromhex("7ff8000000000000" if width == 64 else "7fc00000")

    def send(x: float) -> bytes:
        return nan if math.isnan(x) else packer.pack(x)

    return send


# -- dates and times (DateStyle ISO, TimeZone UTC) ------------------------------------------------

_PG_EPOCH_DATE = _dt.date(2000, 1, 1)
_NAIVE_EPOCH = PG_EPOCH.replace(tzinfo=None)
_INT32_MAX = (1 << 31) - 1
_INT64_MAX, _INT64_MIN = (1 << 63) - 1, -(1 << 63)
_INFINITIES = st.sampled_from(["infinity", "-infinity"])


def _date_text(v: _dt.date | str) -> str:
    return v if isinstance(v, str) else v.isoformat()


def _date_send(v: _dt.date | str) -> bytes:
    if isinstance(v, str):
        return struct.pack(">i", _INT32_MAX if v == "infinity" else -_INT32_MAX - 1)
    return struct.pack(">i", (v - _PG_EPOCH_DATE).days)


def _frac(us: int) -> str:
    return ("." + f"{us:06d}".rstrip("0")) if us else ""


def _time_text(v: _dt.time) -> str:
    return f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}{_frac(v.microsecond)}"


def _time_send(v: _dt.time) -> bytes:
    return struct.pack(">q", ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)


def _timestamp_text(tz: bool) -> Callable[[Any], str]:
    def text(v: _dt.datetime | str) -> str:
        if isinstance(v, str):
            return v
        body = f"{v.date().isoformat()} {_time_text(v.time())}"
        return body + ("+00" if tz else "")

    return text


def _timestamp_send(v: _dt.datetime | str) -> bytes:
    if isinstance(v, str):
        return struct.pack(">q", _INT64_MAX if v == "infinity" else _INT64_MIN)
    delta = v.replace(tzinfo=None) - _NAIVE_EPOCH
    return struct.pack(">q", (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)


# -- bytea, uuid, json ----------------------------------------------------------------------------


def _bytea_text(v: bytes) -> str:
    return "\\x" + v.hex()


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


def _escape_json(s: str) -> str:
    # escape_json(): \" \\ \b \f \n \r \t, other control characters as \u00xx, the rest as is
    out = ['"']
    for ch in s:
        if ch in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _jsonb_text(v: Any) -> str:
    """JsonbToCString: ", " and ": " separators; object keys shorter first, then bytewise."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _escape_json(v)
    if isinstance(v, list):
        return "[" + ", ".join(_jsonb_text(x) for x in v) + "]"
    keys = sorted(v, key=lambda k: (len(k.encode()), k.encode()))
    return "{" + ", ".join(f"{_escape_json(k)}: {_jsonb_text(v[k])}" for k in keys) + "}"


def _json_text(v: Any) -> str:
    # json keeps its input text as is; any valid JSON text is a value a server can send.
    return json.dumps(v, ensure_ascii=False)


def _jsonb_send(v: Any) -> bytes:
    return b"\x01" + _jsonb_text(v).encode("utf-8")


# -- one-dimensional arrays -----------------------------------------------------------------------

_ARRAY_SPACE = frozenset(" \t\n\r\v\f")


def _array_elem_text(text: str, quote_always_needed: bool) -> str:
    needs = quote_always_needed and (
        text == ""
        or text.lower() == "null"
        or any(c in '{},"\\' or c in _ARRAY_SPACE for c in text)
    )
    if not needs:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array_type(name: str, oid: int, elem: PgType, quoting: bool) -> PgType:
    assert elem.send is not None
    esend = elem.send

    def text(v: list[Any]) -> str:
        return "{" + ",".join(
            "NULL" if x is None else _array_elem_text(elem.text(x), quoting) for x in v
        ) + "}"

    def send(v: list[Any]) -> bytes:
        # array_send: Int32 ndim, Int32 has-nulls flag, Oid element type, per dimension
        # Int32 size and Int32 lower bound (1), then per element Int32 length (-1: NULL) and
        # the element's send bytes. An empty array has no dimensions.
        if not v:
            return struct.pack(">iiI", 0, 0, elem.oid)
        out = [struct.pack(">iiIii", 1, 1 if None in v else 0, elem.oid, len(v), 1)]
        for x in v:
            if x is None:
                out.append(b"\xff\xff\xff\xff")
            else:
                raw = esend(x)
                out.append(struct.pack(">i", len(raw)) + raw)
        return b"".join(out)

    values = st.lists(st.one_of(st.none(), elem.values), max_size=4)
    return PgType(name, oid, values, text, send, toastable=True)


# -- the table --------------------------------------------------------------------------------------


def _build() -> tuple[PgType, ...]:
    int2 = _int_type("int2", 21, "h")
    int4 = _int_type("int4", 23, "i")
    int8 = _int_type("int8", 20, "q")
    oid = _int_type("oid", 26, "I")
    boolean = PgType("bool", 16, st.booleans(), _bool_text, _bool_send)
    text = PgType("text", 25, _TEXT, str, _utf8, toastable=True)
    varchar = PgType("varchar", 1043, _TEXT, str, _utf8, toastable=True)
    varchar8 = PgType("varchar", 1043, st.text(_TEXT_CHARS, max_size=8), str, _utf8, toastable=True,
                      typmod=8 + 4)
    numeric = PgType("numeric", 1700, _numeric_values(), _numeric_text, _numeric_send)
    float4 = PgType(
        "float4", 700, st.floats(width=32), _float_text(32), _float_send(32)
    )
    float8 = PgType("float8", 701, st.floats(), _float_text(64), _float_send(64))
    date = PgType(
        "date", 1082, st.one_of(st.dates(), _INFINITIES), _date_text, _date_send
    )
    time = PgType("time", 1083, st.times(), _time_text, _time_send)
    timestamp = PgType(
        "timestamp", 1114, st.one_of(st.datetimes(), _INFINITIES), _timestamp_text(False), _timestamp_send
    )
    timestamptz = PgType(
        "timestamptz", 1184,
        st.one_of(st.datetimes(timezones=st.just(_dt.UTC)), _INFINITIES),
        _timestamp_text(True), _timestamp_send,
    )
    uuid = PgType("uuid", 2950, st.uuids(), str, lambda u: u.bytes)
    bytea = PgType("bytea", 17, st.binary(max_size=24), _bytea_text, bytes, toastable=True)
    json_ = PgType("json", 114, _json_values(), _json_text, lambda v: _json_text(v).encode("utf-8"),
                   toastable=True, keyable=False)
    jsonb = PgType("jsonb", 3802, _json_values(), _jsonb_text, _jsonb_send, toastable=True)
    return (
        int2, int4, int8, oid, boolean, text, varchar, varchar8, numeric, float4, float8, date,
        time, timestamp, timestamptz, uuid, bytea, json_, jsonb,
        _array_type("_int4", 1007, int4, False),
        _array_type("_int8", 1016, int8, False),
        _array_type("_bool", 1000, boolean, False),
        _array_type("_text", 1009, text, True),
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

