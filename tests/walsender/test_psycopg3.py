"""psycopg 3 (a base dependency; its binary wheel carries libpq 18) as a real client of the
extended query protocol: server-side parameters, binary parameters and results, prepared
statements, pipeline mode (Flush, one Sync for several statements) and an error inside a
pipeline, answered by the fake as by a real 15; and with ``max_protocol_version=latest``
it negotiates protocol 3.2 with the 18 persona and cancels with the 32-byte key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgwire_spec.servers import Server
from pgwire_spec.walsender import Scenario, SyncFakeWalsender
from pgwire_spec.wire import BackendKeyData, CancelRequest
from tests._servers import pg_server  # noqa: F401

from .test_sql_live import SCENARIO, _real


def _session(dsn: str) -> list[Any]:
    out: list[Any] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT slot_name, active FROM pg_replication_slots WHERE slot_name = %s", ["nope"])
        out.append(("text parameter", [(d.name, d.type_code) for d in cur.description or ()], cur.fetchall()))
        cur = conn.cursor(binary=True)
        cur.execute("SELECT %b::int4 + 1 AS n, %b::int8 AS big, %b::bool AS flag, %b::text AS t, %b AS u",
                    [41, 7, True, "x", "y"])
        out.append(("binary", [(d.name, d.type_code) for d in cur.description or ()], cur.fetchall()))
        for oid in (16, 23, 25):
            out.append(("prepared", conn.execute("SELECT typname FROM pg_type WHERE oid = %s", [oid],
                                                 prepare=True).fetchall()))
        with conn.pipeline():
            first = conn.execute("SELECT current_setting('server_version_num')::int >= 100000 AS ok")
            second = conn.execute("SELECT count(*) FROM pg_publication WHERE pubname = %s", ["x"])
        out.append(("pipeline", first.fetchall(), second.fetchall()))
        with pytest.raises(psycopg.errors.UndefinedColumn), conn.pipeline():
            conn.execute("SELECT no_such FROM pg_class")
            conn.execute("SELECT 1")
        out.append(("after the error", conn.execute("SELECT %s::text AS still", ["ok"]).fetchall()))
        with conn.cursor() as cur:
            cur.executemany("SELECT %s::int4", [(1,), (2,)])
    return out


@pytest.mark.live
def test_psycopg3_answered_as_by_a_real_15(pg_server: Callable[..., Server]) -> None:  # noqa: F811
    with SyncFakeWalsender(Scenario.from_dict({**SCENARIO, "server": {"version": "15.4"}})) as fake:
        ours = _session(f"host=127.0.0.1 port={fake.port} user=postgres dbname=postgres")
    real = _real(pg_server, 15)
    assert ours == _session(f"host={real.host} port={real.port} user={real.user} dbname=postgres")
    assert ours[1] == ("binary", [("n", 23), ("big", 20), ("flag", 16), ("t", 25), ("u", 25)],
                       [(42, 7, True, "x", "y")])


def test_psycopg3_negotiates_3_2_and_cancels_with_the_long_key() -> None:
    if psycopg.pq.version() < 180000:
        pytest.skip(f"psycopg's libpq is {psycopg.pq.version()}: protocol 3.2 needs libpq 18")
    with SyncFakeWalsender(Scenario.from_dict({**SCENARIO, "server": {"version": "18.1"}})) as fake:
        dsn = f"host=127.0.0.1 port={fake.port} user=postgres dbname=postgres max_protocol_version=latest"
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.info.pgconn.full_protocol_version == 30002
            conn.cancel_safe()  # an idle backend forgets it
            assert conn.execute("SELECT 1").fetchall() == [(1,)]
        sent = [e.message for e in fake.transcript.entries if e.message is not None]
    key = next(m for m in sent if isinstance(m, BackendKeyData))
    cancel = next(m for m in sent if isinstance(m, CancelRequest))
    assert len(key.secret_key) == 32 and (cancel.process_id, cancel.secret_key) == (key.process_id, key.secret_key)
