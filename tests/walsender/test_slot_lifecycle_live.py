"""An invalidated slot on a real server and on the fake of the same major, side by side:
pg_replication_slots' columns and what it shows, and the 55000 START_REPLICATION meets.
The real slot loses its WAL to max_slot_wal_keep_size (wal_removed) and, on 18, sits idle
past idle_replication_slot_timeout (idle_timeout). 15 (Debian's) by default; 16, 17 and 18
(npm builds) with PGWIRE_SPEC_ALL_MAJORS=1."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from pgwire_spec.servers import ProviderError, provider
from pgwire_spec.walsender import Scenario, SyncFakeWalsender

pytestmark = pytest.mark.live
psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2-binary is in the test extra")
extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")

ALL_MAJORS = os.environ.get("PGWIRE_SPEC_ALL_MAJORS") == "1"
CASES = [(15, "wal_removed")] + ([(16, "wal_removed"), (17, "wal_removed"), (18, "wal_removed"),
                                   (18, "idle_timeout")] if ALL_MAJORS else [])
#: What is compared (the rest holds positions and times that differ by nature).
SHOWN = ("slot_name", "plugin", "slot_type", "active", "wal_status", "safe_wal_size", "two_phase", "conflicting",
         "invalidation_reason", "failover", "synced")


def _observe(dsn: str) -> tuple[list[str], dict[str, Any], tuple[str | None, str | None, str | None]]:
    """pg_replication_slots' columns and slot s's row (restart_lsn: whether NULL), and the
    error START_REPLICATION on s meets."""
    conn = psycopg2.connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM pg_replication_slots WHERE slot_name = 's'")
            columns = [d[0] for d in cur.description]
            row = dict(zip(columns, cur.fetchone()))
    finally:
        conn.close()
    shown = {k: row[k] for k in SHOWN if k in row}
    shown["restart_lsn is null"] = row["restart_lsn"] is None
    shown["inactive_since is null"] = row.get("inactive_since", "absent") is None
    rconn = extras.LogicalReplicationConnection(dsn)
    try:
        with pytest.raises(psycopg2.Error) as info:
            rconn.cursor().start_replication(slot_name="s", decode=False,
                                             options={"proto_version": "1", "publication_names": "pub"})
    finally:
        rconn.close()
    d = info.value.diag
    return columns, shown, (info.value.pgcode, d.message_primary, d.message_detail)


def _invalidate(major: int, cause: str) -> Any:
    settings = ({"idle_replication_slot_timeout": "1s"} if cause == "idle_timeout"
                else {"max_slot_wal_keep_size": "1MB", "wal_keep_size": "0"})
    prov = provider("system" if major == 15 else "npm", major, settings=settings)
    try:
        prov.start()
    except ProviderError as exc:
        pytest.skip(f"no PostgreSQL {major}: {exc}")
    server = prov.server
    assert server is not None
    conn = psycopg2.connect(server.dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE accounts (id int4 PRIMARY KEY, name text)")
        cur.execute("CREATE PUBLICATION pub FOR TABLE accounts")
        cur.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
        if cause == "idle_timeout":
            time.sleep(2.2)
        else:
            for i in range(4):
                cur.execute("INSERT INTO accounts SELECT g, repeat('x', 1000) FROM generate_series(%s, %s) g",
                            (i * 3000, i * 3000 + 2999))
                cur.execute("SELECT pg_switch_wal()")
        cur.execute("CHECKPOINT")
        cur.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 's'")
        assert cur.fetchone() == ("lost",), "the real server did not invalidate the slot"
    conn.close()
    return prov


@pytest.mark.parametrize(("major", "cause"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_an_invalidated_slot_as_the_real_server_shows_it(major: int, cause: str) -> None:
    prov = _invalidate(major, cause)
    try:
        assert prov.server is not None
        real = _observe(prov.server.dsn)
    finally:
        prov.stop()
    scenario = Scenario.from_dict({
        "server": {"version": f"{major}.4"},
        "publications": {"pub": ["public.accounts"]},
        "tables": {"public.accounts": {"columns": [{"name": "id", "type": "int4", "key": True},
                                                  {"name": "name", "type": "text"}]}},
        "slots": [{"name": "s", "invalidated": cause}],
    })
    with SyncFakeWalsender(scenario) as fake:
        faked = _observe(fake.dsn)
    assert faked[0] == real[0]  # the columns, in order
    assert faked[1] == real[1]
    assert faked[2] == real[2]  # SQLSTATE, message, detail
