"""Column types: names to OIDs, values to text and binary forms — the binary forms checked
against a real server's send functions."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from pgwire_spec.walsender.types import BUILTIN_TYPES, ColumnType, TypeValueError, resolve_type
from tests._servers import pg_server  # noqa: F401  (fixture)


@pytest.mark.parametrize(("spec", "oid", "name", "typmod"), [
    ("int4", 23, "int4", -1),
    ("integer", 23, "int4", -1),
    ("bigint", 20, "int8", -1),
    ("varchar(20)", 1043, "varchar", 24),
    ("character varying(5)", 1043, "varchar", 9),
    ("numeric(10,2)", 1700, "numeric", (10 << 16 | 2) + 4),
    ("timestamp with time zone", 1184, "timestamptz", -1),
    ("int4[]", 1007, "_int4", -1),
    ("_text", 1009, "_text", -1),
    ('"char"', 18, "char", -1),
    (25, 25, "text", -1),
    ({"oid": 16500, "name": "mood", "namespace": "public"}, 16500, "mood", -1),
])
def test_resolve_type(spec: Any, oid: int, name: str, typmod: int) -> None:
    t = resolve_type(spec)
    assert (t.oid, t.name, t.typmod) == (oid, name, typmod)


def test_user_types_are_text_only_and_need_a_type_message() -> None:
    t = resolve_type({"oid": 16500, "name": "mood"})
    assert t.is_user_type and not t.has_binary and t.namespace == "public"
    assert t.text("happy") == "happy" and t.binary("happy") is None


def test_an_enum_type_takes_its_labels() -> None:
    """CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'): label OIDs even and ascending after the
    type's (pg_enum.c), values only among the labels, sent as the label's text (enum_send)."""
    t = resolve_type({"oid": 16385, "name": "mood", "enum": ["sad", "ok", "happy"]})
    assert t.labels == ("sad", "ok", "happy") and t.label_oids == (16386, 16388, 16390)
    assert resolve_type({"oid": 16500, "name": "mood", "enum": ["a", "b"]}).label_oids == (16502, 16504)
    assert t.text("ok") == "ok" and t.has_binary and t.binary("happy") == b"happy"
    with pytest.raises(TypeValueError, match=r"a label of enum mood \(sad, ok, happy\), found 'meh'"):
        t.text("meh")
    given = resolve_type({"oid": 16385, "name": "mood", "enum": ["x", "y"], "enum_oids": [17001, 17000]})
    assert given.label_oids == (17001, 17000)


@pytest.mark.parametrize("bad", [
    {"oid": 16385, "enum": []}, {"oid": 16385, "enum": ["a", "a"]}, {"oid": 16385, "enum": ["x" * 64]},
    {"oid": 23, "enum": ["a"]}, {"oid": 16385, "enum": ["a"], "enum_oids": [1, 2]}, {"oid": 16385, "enum": [""]},
    {"oid": 16385, "enum_oids": [1]}, {"oid": 16385, "enum": "a,b"},
])
def test_bad_enum_types(bad: Any) -> None:
    with pytest.raises(ValueError, match="expected"):
        resolve_type(bad)


@pytest.mark.parametrize("bad", ["int77", "varchar(", 3.5, {"name": "x", "bogus": 1}, -4])
def test_unknown_types_are_errors(bad: Any) -> None:
    with pytest.raises(ValueError, match="expected"):
        resolve_type(bad)


@pytest.mark.parametrize(("type_", "value", "text"), [
    ("int4", 7, "7"), ("int4", "-7", "-7"), ("bool", True, "t"), ("bool", "off", "f"),
    ("float8", 1.5, "1.5"), ("float8", float("inf"), "Infinity"), ("numeric", "10.50", "10.50"),
    ("text", "tab\there", "tab\there"), ("bytea", b"\x00\xff", "\\x00ff"),
    ("jsonb", {"a": [1, 2]}, '{"a": [1, 2]}'), ("date", dt.date(2024, 2, 29), "2024-02-29"),
    ("timestamptz", dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC), "2024-01-01 12:00:00+00"),
    ("int4[]", [1, None, 3], "{1,NULL,3}"), ("text[]", ["a b", ""], '{"a b",""}'),
])
def test_text_forms(type_: str, value: Any, text: str) -> None:
    assert resolve_type(type_).text(value) == text


@pytest.mark.parametrize(("type_", "value"), [("int4", "x"), ("int2", True), ("bool", "maybe"), ("uuid", "nope"),
                                              ("numeric", "1.2.3")])
def test_bad_values(type_: str, value: Any) -> None:
    with pytest.raises(TypeValueError, match="expected"):
        resolve_type(type_).text(value)


def test_numeric_binary_layout() -> None:
    # numeric_send: ndigits, weight, sign, dscale, base-10000 digits (10.50 = 10 . 5000)
    assert resolve_type("numeric").binary("10.50") == bytes.fromhex("0002" "0000" "0000" "0002" "000a" "1388")
    assert resolve_type("numeric").binary("-0.00001") == bytes.fromhex("0001" "fffe" "4000" "0005" "03e8")
    assert resolve_type("numeric").binary("0") == bytes.fromhex("0000" "0000" "0000" "0000")


# value, SQL literal of the same value for the server
_LIVE: list[tuple[str, Any, str]] = [
    ("bool", True, "true"), ("int2", -3, "-3"), ("int4", 123456, "123456"), ("int8", -2**40, str(-2**40)),
    ("oid", 4000000000, "4000000000"), ("float4", 1.5, "1.5"), ("float8", -2.25, "-2.25"),
    ("numeric", "10.50", "10.50"), ("numeric", "-12345678.000012", "-12345678.000012"), ("numeric", "0", "0"),
    ("numeric", "NaN", "'NaN'"), ("numeric", decimal.Decimal("1e20"), "1e20"),
    ("text", "héllo", "'héllo'"), ("varchar", "v", "'v'"), ("bpchar", "c", "'c'"), ("name", "nm", "'nm'"),
    ("char", "x", "'x'"), ("bytea", b"\x00\x01\xff", "'\\x0001ff'"), ("json", {"a": 1}, "'{\"a\": 1}'"),
    ("jsonb", {"a": 1}, "'{\"a\": 1}'"), ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                                         "'6ba7b810-9dad-11d1-80b4-00c04fd430c8'"),
    ("date", "2024-02-29", "'2024-02-29'"), ("date", "infinity", "'infinity'"),
    ("timestamp", "2024-02-29 12:34:56.789", "'2024-02-29 12:34:56.789'"),
    ("timestamptz", "2024-02-29 12:34:56+02", "'2024-02-29 12:34:56+02'"),
    ("time", "12:30:00.5", "'12:30:00.5'"), ("int4[]", [1, None, 3], "'{1,NULL,3}'"),
    ("text[]", ["a", "b c"], "'{a,\"b c\"}'"),
]


@pytest.mark.live
def test_binary_forms_equal_the_servers_send_functions(pg_server: Any) -> None:  # noqa: F811
    import psycopg

    server = pg_server(15)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        for name, value, literal in _LIVE:
            t = resolve_type(name + ("" if name.endswith("]") else ""))
            sql_type = t.name if not t.is_array else (t.element.name + "[]")  # type: ignore[union-attr]
            if sql_type == "char":
                sql_type = '"char"'
            (sent,) = conn.execute(f"SELECT send_of({literal}::{sql_type})".replace(
                "send_of(", f"{_send_function(t)}(")).fetchone()  # type: ignore[misc]
            assert t.binary(value) == bytes(sent), (name, value)
            (out,) = conn.execute(f"SELECT ({literal}::{sql_type})::text").fetchone()  # type: ignore[misc]
            # (bool::text is 'true', boolout gives 't'; the others print the same value
            # another way than we were given it)
            if name not in ("bool", "float4", "json", "jsonb", "timestamptz", "numeric", "time", "timestamp"):
                assert t.text(value) == out, (name, value)


def _send_function(t: ColumnType) -> str:
    if t.is_array:
        return "array_send"
    return {"bpchar": "bpcharsend", "char": "charsend", "numeric": "numeric_send", "date": "date_send",
            "timestamp": "timestamp_send", "timestamptz": "timestamptz_send", "time": "time_send",
            "uuid": "uuid_send", "jsonb": "jsonb_send", "json": "json_send"}.get(t.name, f"{t.name}send")


def test_every_builtin_has_a_distinct_oid() -> None:
    oids = [o for pair in BUILTIN_TYPES.values() for o in pair]
    assert len(oids) == len(set(oids))
