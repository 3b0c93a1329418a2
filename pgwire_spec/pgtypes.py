"""The built-in PostgreSQL types: names, OIDs, type modifiers, and their wire forms.

The one table of built-in types (``pg_type.dat``, OIDs stable since PostgreSQL 8) and the
names SQL accepts for them, shared by the fake walsender's scenarios
(:mod:`pgwire_spec.walsender.types`) and the hypothesis strategies.

It also holds the value encoders both need, as a server writes them with the settings a
replication client sees (DateStyle ISO, TimeZone UTC, bytea_output hex, shortest exact
floats): the **text** form (the type's output function) and the **binary** form (its send
function), for values already of the right Python type. Checked against PostgreSQL 15's
``<type>out``/``<type>send`` by ``tests/strategies/test_types_live.py`` and
``tests/walsender/test_types.py``.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from .lsn import PG_EPOCH

__all__ = [
    "BUILTIN_TYPES",
    "TYPE_ALIASES",
    "FIRST_USER_OID",
    "FIRST_NORMAL_OID",
    "type_oid",
    "type_name",
    "type_modifier",
]

#: OIDs below this are built-in (``FirstGenbkiObjectId``); pgoutput sends a Type message
#: only for types at or above it (pgoutput.c, send_relation_and_attrs; erratum
#: E-TYPE-DOMAIN).
FIRST_USER_OID = 10000

#: OIDs from here on belong to user objects (``FirstNormalObjectId``).
FIRST_NORMAL_OID = 16384

#: name -> (oid, array oid)
BUILTIN_TYPES: dict[str, tuple[int, int]] = {
    "bool": (16, 1000),
    "bytea": (17, 1001),
    "char": (18, 1002),
    "name": (19, 1003),
    "int8": (20, 1016),
    "int2": (21, 1005),
    "int2vector": (22, 1006),
    "int4": (23, 1007),
    "text": (25, 1009),
    "oid": (26, 1028),
    "tid": (27, 1010),
    "xid": (28, 1011),
    "json": (114, 199),
    "xml": (142, 143),
    "point": (600, 1017),
    "cidr": (650, 651),
    "float4": (700, 1021),
    "float8": (701, 1022),
    "money": (790, 791),
    "macaddr": (829, 1040),
    "inet": (869, 1041),
    "bpchar": (1042, 1014),
    "varchar": (1043, 1015),
    "date": (1082, 1182),
    "time": (1083, 1183),
    "timestamp": (1114, 1115),
    "timestamptz": (1184, 1185),
    "interval": (1186, 1187),
    "timetz": (1266, 1270),
    "bit": (1560, 1561),
    "varbit": (1562, 1563),
    "numeric": (1700, 1231),
    "uuid": (2950, 2951),
    "pg_lsn": (3220, 3221),
    "jsonb": (3802, 3807),
    "int4range": (3904, 3905),
}

#: The other names SQL accepts for them (``integer``, ``character varying`` …).
TYPE_ALIASES: dict[str, str] = {
    "boolean": "bool",
    "smallint": "int2",
    "integer": "int4",
    "int": "int4",
    "bigint": "int8",
    "serial": "int4",
    "smallserial": "int2",
    "bigserial": "int8",
    "real": "float4",
    "double precision": "float8",
    "float": "float8",
    "decimal": "numeric",
    "character varying": "varchar",
    "character": "bpchar",
    '"char"': "char",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamptz",
    "time without time zone": "time",
    "time with time zone": "timetz",
    "bit varying": "varbit",
}

#: oid -> name; array types are named with a leading underscore (``_int4``), as pg_type does.
_BY_OID: dict[int, str] = {}
for _name, (_oid, _aoid) in BUILTIN_TYPES.items():
    _BY_OID[_oid] = _name
    _BY_OID[_aoid] = "_" + _name


def type_oid(name: str) -> int:
    """The OID of a built-in type named as pg_type does (``int4``, ``_int4`` for its array)
    or by an SQL alias (``integer``). Raises KeyError for an unknown name."""
    if name.startswith("_") and name[1:] in BUILTIN_TYPES:
        return BUILTIN_TYPES[name[1:]][1]
    return BUILTIN_TYPES[TYPE_ALIASES.get(name, name)][0]


def type_name(oid: int) -> str | None:
    """The pg_type name of a built-in type's OID (``_int4`` for an array), or None."""
    return _BY_OID.get(oid)


def type_modifier(name: str, a: int | None, b: int | None = None) -> int:
    """atttypmod as PostgreSQL stores it for the modifiers written in SQL: ``varchar(a)``,
    ``numeric(a, b)``, ``timestamp(a)`` …; -1 for none."""
    if a is None:
        return -1
    if name in ("varchar", "bpchar"):
        return a + 4  # VARHDRSZ
    if name == "numeric":
        return ((a << 16) | (b or 0)) + 4
    if name in ("timestamp", "timestamptz", "time", "timetz", "interval", "bit", "varbit"):
        return a
    return -1


# ------------------------------------------------------------------------------------------
# Value encoders (not in __all__: used by walsender.types and _strategies._types)
# ------------------------------------------------------------------------------------------

_NUMERIC_POS, _NUMERIC_NEG = 0x0000, 0x4000
_NUMERIC_NAN, _NUMERIC_PINF, _NUMERIC_NINF = 0xC000, 0xD000, 0xF000


def numeric_text(d: Decimal) -> str:
    """numeric_out: plain notation with the value's scale, never an exponent; no minus zero."""
    if d.is_nan():
        return "NaN"
    text = format(d, "f")
    return text[1:] if d.is_zero() and text.startswith("-") else text


def numeric_send(d: Decimal) -> bytes:
    """numeric_send: Int16 ndigits, Int16 weight, UInt16 sign, Int16 dscale, base-10000 digits."""
    if d.is_nan() or d.is_infinite():
        sign = _NUMERIC_NAN if d.is_nan() else _NUMERIC_NINF if d.is_signed() else _NUMERIC_PINF
        # numeric_send reads a special value's header as a short header: the dscale bits
        # of 0xD000/0xF000 give 32 (seen on 15), NaN's give 0.
        return struct.pack(">hhHh", 0, 0, sign, (sign & 0x1F80) >> 7)
    negative, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    unscaled = int("".join(map(str, digits)) or "0")
    if exp >= 0:
        unscaled, scale = unscaled * 10**exp, 0
    else:
        scale = -exp
    ip, fp = divmod(unscaled, 10**scale)
    groups: list[int] = []
    while ip:
        ip, r = divmod(ip, 10000)
        groups.insert(0, r)
    weight = len(groups) - 1
    frac = str(fp).rjust(scale, "0") if scale else ""
    frac += "0" * (-len(frac) % 4)
    groups += [int(frac[i:i + 4]) for i in range(0, len(frac), 4)]
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        return struct.pack(">hhHh", 0, 0, _NUMERIC_POS, scale)
    sign = _NUMERIC_NEG if negative else _NUMERIC_POS
    return struct.pack(f">hhHh{len(groups)}h", len(groups), weight, sign, scale, *groups)


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


def float_text(x: float, width: int) -> str:
    """float8out (*width* 64) / float4out (32): the shortest exact digits, in fixed notation
    when -4 <= exponent < 15 (float4: < 6), like %g with DBL_DIG / FLT_DIG; otherwise
    d.ddde+XX with at least two exponent digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    if width == 32:
        x = struct.unpack(">f", struct.pack(">f", x))[0]
    ds, e = _float_digits(abs(x), width)
    if -4 <= e < (15 if width == 64 else 6):
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


_FLOAT_PACKERS = {64: struct.Struct(">d"), 32: struct.Struct(">f")}
# float8in('NaN') gives the platform's quiet NaN; a send function writes its bits.
_FLOAT_NAN = {64: bytes.fromhex("7ff8000000000000"), 32: bytes.fromhex("7fc00000")}


def float_send(x: float, width: int) -> bytes:
    """float8send (*width* 64) / float4send (32)."""
    return _FLOAT_NAN[width] if math.isnan(x) else _FLOAT_PACKERS[width].pack(x)


_PG_EPOCH_DATE = PG_EPOCH.date()
_NAIVE_EPOCH = PG_EPOCH.replace(tzinfo=None)
_INT32_MAX = (1 << 31) - 1
_INT64_MAX, _INT64_MIN = (1 << 63) - 1, -(1 << 63)


def date_send(v: _dt.date | str) -> bytes:
    """date_send: Int32 days since 2000-01-01; ``"infinity"``/``"-infinity"`` at the ends."""
    if isinstance(v, str):
        return struct.pack(">i", _INT32_MAX if v == "infinity" else -_INT32_MAX - 1)
    return struct.pack(">i", (v - _PG_EPOCH_DATE).days)


def _frac(us: int) -> str:
    return ("." + f"{us:06d}".rstrip("0")) if us else ""


def time_text(v: _dt.time) -> str:
    """time_out: HH:MM:SS with the fraction's trailing zeros dropped."""
    return f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}{_frac(v.microsecond)}"


def time_send(v: _dt.time) -> bytes:
    """time_send: Int64 microseconds since midnight."""
    return struct.pack(">q", ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)


def timestamp_text(v: _dt.datetime | str, tz: bool) -> str:
    """timestamp_out / timestamptz_out (TimeZone UTC) of a naive or UTC datetime; a string
    (``infinity``) as is."""
    if isinstance(v, str):
        return v
    body = f"{v.date().isoformat()} {time_text(v.time())}"
    return body + ("+00" if tz else "")


def interval_text(microseconds: int) -> str:
    """interval_out (IntervalStyle postgres) of an interval holding only a time part, as a
    difference of timestamps makes one: hours past 24 stay hours (``25:00:00.5``)."""
    sign = "-" if microseconds < 0 else ""
    seconds, us = divmod(abs(microseconds), 1_000_000)
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    return f"{sign}{hours:02d}:{m:02d}:{s:02d}{_frac(us)}"


def timestamp_send(v: _dt.datetime | str) -> bytes:
    """timestamp_send / timestamptz_send: Int64 microseconds since 2000-01-01 (an aware
    datetime is taken in UTC, a naive one as is); ``"infinity"``/``"-infinity"`` at the ends."""
    if isinstance(v, str):
        return struct.pack(">q", _INT64_MAX if v == "infinity" else _INT64_MIN)
    if v.tzinfo is not None:
        v = v.astimezone(_dt.UTC)
    delta = v.replace(tzinfo=None) - _NAIVE_EPOCH
    return struct.pack(">q", (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)


def bytea_text(v: bytes) -> str:
    """byteaout with bytea_output = hex."""
    return "\\x" + v.hex()


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


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


def jsonb_text(v: Any) -> str:
    """JsonbToCString: ", " and ": " separators; object keys shorter first, then bytewise;
    numbers as numeric_out prints them. Raises ValueError for what JSON cannot hold."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (float, Decimal)):
        d = Decimal(repr(v)) if isinstance(v, float) else v
        if not d.is_finite():
            raise ValueError(f"expected a finite number in JSON, found {v!r}")
        return numeric_text(d)
    if isinstance(v, str):
        return _escape_json(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(jsonb_text(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: (len(str(k).encode()), str(k).encode()))
        return "{" + ", ".join(f"{_escape_json(str(k))}: {jsonb_text(v[k])}" for k in keys) + "}"
    raise ValueError(f"expected a JSON value, found {v!r}")


def jsonb_send(v: Any) -> bytes:
    """jsonb_send: a version byte (1), then the text."""
    return b"\x01" + jsonb_text(v).encode("utf-8")


_ARRAY_SPACE = frozenset(" \t\n\r\v\f")


def array_element_text(text: str) -> str:
    """An element as array_out writes it: quoted when empty, NULL-like, or holding
    ``{},"\\`` or white space."""
    if text == "" or text.lower() == "null" or any(c in '{},"\\' or c in _ARRAY_SPACE for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def array_send(element_oid: int, values: Sequence[Any], send: Callable[[Any], bytes]) -> bytes:
    """array_send of a one-dimensional array: Int32 ndim, Int32 has-nulls flag, Oid element
    type, per dimension Int32 size and Int32 lower bound (1), then per element Int32 length
    (-1: NULL) and the element's send bytes. An empty array has no dimensions."""
    if not values:
        return struct.pack(">iiI", 0, 0, element_oid)
    out = [struct.pack(">iiIii", 1, 1 if any(x is None for x in values) else 0, element_oid, len(values), 1)]
    for x in values:
        if x is None:
            out.append(b"\xff\xff\xff\xff")
        else:
            raw = send(x)
            out.append(struct.pack(">i", len(raw)) + raw)
    return b"".join(out)
