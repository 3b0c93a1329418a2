"""Identifiers longer than NAMEDATALEN-1 (63) bytes, on the fake and on a real PostgreSQL 15
side by side: the replication commands' scanner cuts them with a NOTICE 42622 and uses the cut
name, quoted or not; SQL's scanner does the same for a publication's name; a slot function's
`name` argument is cut silently; nothing reaches ReplicationSlotValidateName's "is too long"."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import psycopg2.extras
import pytest

from pgwire_spec.servers import Server
from pgwire_spec.walsender import Scenario, SyncFakeWalsender
from tests._servers import pg_server  # noqa: F401

pytestmark = pytest.mark.live

LONG_A, LONG_B, LONG_C, LONG_D, LONG_P = ("l" + ch * 99 for ch in "abcdp")

#: On a replication connection (replication=database).
REPLICATION = [
    f"CREATE_REPLICATION_SLOT {LONG_A.upper()} LOGICAL pgoutput",       # unquoted: folded, then cut
    f'CREATE_REPLICATION_SLOT "{LONG_B}" LOGICAL pgoutput',              # quoted: cut
    f'CREATE_REPLICATION_SLOT "X{LONG_B}" LOGICAL pgoutput',             # cut, then invalid (upper case)
    f"START_REPLICATION SLOT {LONG_C} LOGICAL 0/0",                      # cut, then missing
    f"START_REPLICATION SLOT {LONG_C} LOGICAL 0/0 (\"{'o' * 80}\" '1', {'v' * 70} '2')",
    f"DROP_REPLICATION_SLOT {LONG_A}",
    f'DROP_REPLICATION_SLOT "{LONG_B}" WAIT',
]

#: On a plain connection.
SQL = [
    f"SELECT slot_name FROM pg_create_logical_replication_slot('{LONG_D}', 'pgoutput')",
    "SELECT slot_name, length(slot_name::text) FROM pg_replication_slots WHERE slot_name LIKE 'ld%'",
    f"SELECT pg_drop_replication_slot('{LONG_D}')",
    f"CREATE PUBLICATION {LONG_P} FOR ALL TABLES",
    "SELECT pubname FROM pg_publication WHERE pubname LIKE 'lp%'",
    f'DROP PUBLICATION "{LONG_P}"',
]


VARYING = {"consistent_point", "snapshot_name", "lsn"}


def _run(conn: Any, statements: list[str]) -> list[tuple[Any, ...]]:
    """Each statement's outcome: its rows or SQLSTATE and message, and the notices before it."""
    out: list[tuple[Any, ...]] = []
    for stmt in statements:
        cur = conn.cursor()
        conn.notices.clear()
        try:
            cur.execute(stmt)
            rows = None
            if cur.description:  # positions and snapshot names are each server's own
                keep = [i for i, col in enumerate(cur.description) if col.name not in VARYING]
                rows = [tuple(row[i] for i in keep) for row in cur.fetchall()]
            outcome: tuple[Any, ...] = ("ok", rows)
        except psycopg2.Error as exc:
            outcome = ("error", exc.pgcode, exc.diag.message_primary)
        out.append((stmt[:40], outcome, [n.strip() for n in conn.notices]))
    return out


def _outcomes(dsn: str) -> list[tuple[Any, ...]]:
    repl = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    try:
        out = _run(repl, REPLICATION)
    finally:
        repl.close()
    plain = psycopg2.connect(dsn)
    plain.autocommit = True
    try:
        return out + _run(plain, SQL)
    finally:
        plain.close()


@pytest.fixture
def fake() -> Iterator[Callable[[], SyncFakeWalsender]]:
    started: list[SyncFakeWalsender] = []

    def make() -> SyncFakeWalsender:
        server = SyncFakeWalsender(Scenario.from_dict({
            "server": {"version": "15.4"}, "auth": {"method": "trust"}, "publications": {},
            "tables": {"public.t": {"columns": [{"name": "id", "type": "int4", "key": True}]}},
        }))
        server.__enter__()
        started.append(server)
        return server

    try:
        yield make
    finally:
        for server in started:
            server.__exit__(None, None, None)


def test_long_identifiers_as_a_real_15_cuts_them(
    pg_server: Callable[..., Server], fake: Callable[[], SyncFakeWalsender],  # noqa: F811
) -> None:
    real = _outcomes(pg_server(15).dsn)
    ours = _outcomes(fake().dsn)
    for want, got in zip(real, ours, strict=True):
        assert got == want
    # what the real one did, spelled out: a NOTICE per long identifier, the cut name used
    notices = {stmt: notes for stmt, _, notes in real}
    assert notices[REPLICATION[0][:40]] == [
        f'NOTICE:  identifier "{LONG_A}" will be truncated to "{LONG_A[:63]}"']
    assert len(notices[REPLICATION[4][:40]]) == 3   # the slot, then each long option name
    assert real[0][1] == ("ok", [(LONG_A[:63], "pgoutput")])
    assert real[7][1] == ("ok", [(LONG_D[:63],)]) and real[7][2] == []    # a `name` argument: silently
