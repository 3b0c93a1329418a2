"""A replica-identity key TOASTed out of line, on the fake and on a real PostgreSQL 15 side by
side (primary key, and REPLICA IDENTITY USING INDEX): an UPDATE of another column sends the
key as 'u' in the new tuple *and* a 'K' old tuple holding the key de-toasted (heapam.c
heap_update logs the old key when id_has_external), so a decoder must take the key from
the old tuple; a DELETE sends the key de-toasted. Both streams are read with
pg_logical_slot_peek_binary_changes and compared message by message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg2
import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.servers import Server
from pgwire_spec.walsender import Scenario, SyncFakeWalsender
from tests._servers import pg_server  # noqa: F401

pytestmark = pytest.mark.live

KEY = "k" + "0123456789abcdef" * 150   # 2,401 bytes: over the TOAST threshold, stored out of line
TABLES = ("tk_pk", "tk_index")

REAL_SETUP = [
    "CREATE TABLE tk_pk (k text PRIMARY KEY, v int4)",
    "CREATE TABLE tk_index (k text NOT NULL, v int4)",
    "CREATE UNIQUE INDEX tk_index_k ON tk_index (k)",
    "ALTER TABLE tk_index REPLICA IDENTITY USING INDEX tk_index_k",
    "ALTER TABLE tk_pk ALTER COLUMN k SET STORAGE EXTERNAL",
    "ALTER TABLE tk_index ALTER COLUMN k SET STORAGE EXTERNAL",
    "CREATE PUBLICATION ptk FOR TABLE tk_pk, tk_index",
    "SELECT pg_create_logical_replication_slot('stk', 'pgoutput')",
] + [sql for t in TABLES for sql in (
    f"INSERT INTO {t} VALUES ('{KEY}', 1), ('{KEY}2', 2)",
    f"UPDATE {t} SET v = 11 WHERE v = 1",
    f"DELETE FROM {t} WHERE v = 2",
)]

SCENARIO: dict[str, Any] = {
    "server": {"version": "15.4"}, "auth": {"method": "trust"},
    "publications": {"ptk": ["public.tk_pk", "public.tk_index"]},
    "tables": {f"public.{t}": {"columns": [{"name": "k", "type": "text", "key": True}, {"name": "v", "type": "int4"}]}
               for t in TABLES},
    "transactions": [c for t in TABLES for c in (
        {"changes": [{"insert": f"public.{t}", "new": {"k": KEY, "v": 1}},
                     {"insert": f"public.{t}", "new": {"k": KEY + "2", "v": 2}}]},
        {"changes": [{"update": f"public.{t}", "key": {"k": KEY}, "new": {"v": 11}, "unchanged": ["k"]}]},
        {"changes": [{"delete": f"public.{t}", "key": {"k": KEY + "2"}}]},
    )],
}


def _changes(dsn: str, setup: list[str]) -> list[tuple[Any, ...]]:
    """The DML of slot stk decoded: kind, old tuple kind, old tuple, new tuple."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        cur = conn.cursor()
        for sql in setup:
            cur.execute(sql)
        cur.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('stk', NULL, NULL, "
                    "'proto_version', '1', 'publication_names', 'ptk')")
        decoder = PgOutputDecoder(protocol_version=1)
        out = []
        for (data,) in cur.fetchall():
            msg = decoder.decode(bytes(data))
            if isinstance(msg, (m.Insert, m.Update, m.Delete)):
                out.append((type(msg).__name__, getattr(msg, "old_kind", None), getattr(msg, "old_tuple", None),
                            getattr(msg, "new_tuple", None)))
        cur.execute("SELECT pg_drop_replication_slot('stk')")
        return out
    finally:
        conn.close()


def test_a_toasted_key_arrives_as_a_real_15_sends_it(pg_server: Callable[..., Server]) -> None:  # noqa: F811
    real_server = pg_server(15)
    try:
        real = _changes(real_server.dsn, REAL_SETUP)
    finally:
        _drop(real_server.dsn)
    with SyncFakeWalsender(Scenario.from_dict(SCENARIO)) as fake:
        ours = _changes(fake.dsn, ["SELECT pg_create_logical_replication_slot('stk', 'pgoutput')"])
    assert ours == real
    update = next(c for c in real if c[0] == "Update")
    assert update[1] == "K" and update[2] == (KEY, None) and update[3] == (m.UNCHANGED, "11")


def _drop(dsn: str) -> None:
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        cur = conn.cursor()
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'stk'")
        cur.execute("DROP PUBLICATION IF EXISTS ptk")
        cur.execute("DROP TABLE IF EXISTS tk_pk, tk_index")
    finally:
        conn.close()
