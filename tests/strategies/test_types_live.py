"""Column values against a real PostgreSQL 15: the text form of every generated value is
what the type's output function prints (format('%s', …), as pgoutput sends 't' values), and
the binary form is what the type's send function returns (as pgoutput sends 'b' values).
Session settings as a replication client sees them: DateStyle ISO, TimeZone UTC."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import given

from pgwire_spec._strategies._types import BUILTIN_TYPES, PgType, _float_text
from pgwire_spec.servers import Server
from tests._pg15 import pg15  # noqa: F401  (the fixture)
from tests.strategies._common import fast

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def conn(pg15: Server) -> Iterator[psycopg.Connection]:  # noqa: F811
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute("SET DateStyle = 'ISO'; SET TimeZone = 'UTC'; SET extra_float_digits = 1")
        yield c


def _sql_type(t: PgType) -> str:
    name = t.name[1:] + "[]" if t.name.startswith("_") else t.name
    return f"varchar({t.typmod - 4})" if t.typmod != -1 else name


@pytest.mark.parametrize("t", BUILTIN_TYPES, ids=lambda t: _sql_type(t))
def test_text_and_binary_forms_are_what_the_server_makes(conn: psycopg.Connection, t: PgType) -> None:
    sql_type = _sql_type(t)
    (send,) = conn.execute("SELECT typsend::text FROM pg_type WHERE oid = %s", (t.oid,)).fetchone()  # type: ignore[misc]

    @fast(60)
    @given(t.values)
    def check(value: object) -> None:
        text = t.text(value)
        out, sent = conn.execute(
            f"SELECT format('%%s', %s::{sql_type}), {send}(%s::{sql_type})", (text, text)
        ).fetchone()  # type: ignore[misc]
        assert out == text
        assert t.send is not None and bytes(sent) == t.send(value)

    check()


def test_a_float_halfway_to_its_neighbour_prints_as_the_server_prints_it(conn: psycopg.Connection) -> None:
    # Python's repr takes the 16-digit decimal exactly halfway to the next double; the
    # server's ryu does not (seen on 15): 17 digits.
    value = -3.5577895404552088e16
    (out,) = conn.execute("SELECT format('%%s', %s::float8)", (repr(value),)).fetchone()  # type: ignore[misc]
    assert out == _float_text(64)(value) == "-3.5577895404552088e+16"
    assert repr(value) != out
