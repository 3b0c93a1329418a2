"""Acceptance: real replication clients against the fake walsender.

pg_recvlogical (Debian's postgresql-15) streams pgoutput to a file; psycopg2's
LogicalReplicationConnection consumes, confirms, reconnects and resumes; real PostgreSQL
subscribers of majors 15, 16 and 18 run CREATE SUBSCRIPTION against the fake — with
copy_data true and false, with streaming, and after the fake drops the connection in the
middle of the stream — and their table must end with exactly the scenario's rows.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import Any

import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.lsn import format_lsn
from pgwire_spec.replication.commands import (
    CreateReplicationSlot,
    IdentifySystem,
    Show,
    StartReplication,
    parse_command,
)
from pgwire_spec.walsender import Fault, Scenario, SyncFakeWalsender
from pgwire_spec.walsender._history import compile_history

from .conftest import need_program
from .scenarios import ACCOUNTS, accounts, items

pytestmark = pytest.mark.clients


def _end_lsn(scenario: Scenario) -> int:
    return compile_history(scenario).end_lsn


# ------------------------------------------------------------------------------------------
# pg_recvlogical
# ------------------------------------------------------------------------------------------


def test_pg_recvlogical_streams_pgoutput_to_a_file(tmp_path: Any) -> None:
    recvlogical = need_program("pg_recvlogical")
    scenario = Scenario.from_file(ACCOUNTS)
    out = tmp_path / "stream.bin"
    with SyncFakeWalsender(scenario) as fake:
        base = [recvlogical, "-h", fake.host, "-p", str(fake.port), "-U", fake.user, "-d", "postgres",
                "-S", "rl", "--no-loop"]
        env = {"PGPASSWORD": "s3cret", "PATH": "/usr/bin:/bin"}
        subprocess.run(base + ["--create-slot", "-P", "pgoutput"], check=True, env=env, timeout=30,
                       capture_output=True)
        endpos = format_lsn(_end_lsn(scenario))
        proc = subprocess.run(base + ["--start", "-o", "proto_version=1", "-o", "publication_names=pub",
                                      "-E", endpos, "-f", str(out)], env=env, timeout=60, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()
        sent = [e.payload.data for e in fake.transcript.stream()]
        queries = fake.transcript.queries()
        updates = fake.transcript.status_updates()
    # What pg_recvlogical wrote is every payload the fake sent, each followed by a newline.
    assert out.read_bytes() == b"".join(p + b"\n" for p in sent)
    dec = PgOutputDecoder(protocol_version=1)
    msgs = [dec.decode(p) for p in sent]
    dec.finish()
    assert [m.tag for m in msgs] == ["B", "R", "I", "U", "D", "C"]
    assert msgs[2].new_tuple == ("2", "bob", "3")
    assert msgs[3].new_tuple == ("2", "robert", "4")
    assert msgs[4].old_tuple == ("1", None, None)
    # The conversation of the reference transcript (pg_recvlogical-pg16.log).
    assert queries[0] == "SELECT pg_catalog.set_config('search_path', '', false);"
    # Compared as parsed commands: quoting changes between minor releases.
    commands = [parse_command(q) for q in queries[1:]]
    assert Show("data_directory_mode") in commands and IdentifySystem() in commands
    assert any(isinstance(c, CreateReplicationSlot) and (c.slot_name, c.kind, c.plugin) == ("rl", "logical", "pgoutput")
               for c in commands)
    assert any(isinstance(c, StartReplication) and (c.kind, c.slot_name, c.start_lsn) == ("logical", "rl", 0)
               for c in commands)
    # pg_recvlogical confirmed the end position before it stopped.
    assert updates and updates[-1].flush_lsn == _end_lsn(scenario)


def test_pg_recvlogical_streams_every_message_kind(tmp_path: Any) -> None:
    """The 'everything' example (persona 17, md5) with streaming, two_phase and messages."""
    recvlogical = need_program("pg_recvlogical")
    scenario = Scenario.from_file(ACCOUNTS.parent / "everything.yaml")
    out = tmp_path / "stream.bin"
    with SyncFakeWalsender(scenario) as fake:
        base = [recvlogical, "-h", fake.host, "-p", str(fake.port), "-U", fake.user, "-d", "postgres",
                "-S", "all", "--no-loop"]
        env = {"PGPASSWORD": "s3cret", "PATH": "/usr/bin:/bin"}
        subprocess.run(base + ["--create-slot", "-P", "pgoutput"], check=True, env=env, timeout=30,
                       capture_output=True)
        opts = ["-o", "proto_version=3", "-o", "publication_names=pub", "-o", "streaming=on",
                "-o", "two_phase=on", "-o", "messages=on", "-o", "binary=on"]
        proc = subprocess.run(base + ["--start", *opts, "-E", format_lsn(_end_lsn(scenario)), "-f", str(out)],
                              env=env, timeout=60, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()
        sent = [e.payload.data for e in fake.transcript.stream()]
    assert out.read_bytes() == b"".join(p + b"\n" for p in sent)
    dec = PgOutputDecoder(protocol_version=3, streaming="on", two_phase=True, messages=True, binary=True)
    tags = {dec.decode(p).tag for p in sent}
    dec.finish()
    assert set("BCRYIUDMOSEcAbPKrT") <= tags


# ------------------------------------------------------------------------------------------
# psycopg2
# ------------------------------------------------------------------------------------------


def _consume(cur: Any, until: Any, timeout: float = 30.0) -> list[Any]:
    """Read messages with psycopg2 until ``until(messages)``; confirm each Commit's position."""
    import select

    got: list[Any] = []
    deadline = time.monotonic() + timeout
    dec = PgOutputDecoder(protocol_version=1)
    while not until(got):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {len(got)} messages")
        msg = cur.read_message()
        if msg is None:
            select.select([cur], [], [], 0.5)
            continue
        m = dec.decode(msg.payload)
        got.append((msg.data_start, m))
        if m.tag == "C":
            cur.send_feedback(flush_lsn=msg.data_start, force=True)
    return got


@pytest.mark.parametrize("explicit", [False, True], ids=["from_0/0", "from_confirmed"])
def test_psycopg2_consumes_confirms_and_resumes_without_loss_or_duplicates(explicit: bool) -> None:
    pytest.importorskip("psycopg2")
    import psycopg2
    import psycopg2.extras

    data = items(16, small=12, big=10, initial=2, rollback_in_big=False)
    scenario = Scenario.from_dict(data)
    expected_xids = [e.xid for e in compile_history(scenario).events if getattr(e, "outcome", "") == "commit"]
    with SyncFakeWalsender(scenario) as fake:
        def connect() -> Any:
            conn = psycopg2.connect(fake.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
            return conn, conn.cursor()

        conn, cur = connect()
        cur.create_replication_slot("ps", output_plugin="pgoutput")
        cur.start_replication(slot_name="ps", decode=False,
                              options={"proto_version": "1", "publication_names": "pub"})
        first = _consume(cur, lambda got: sum(1 for _, m in got if m.tag == "C") >= 5)
        confirmed = [lsn for lsn, m in first if m.tag == "C"][-1]
        deadline = time.monotonic() + 10
        while fake.slots["ps"].confirmed_flush < confirmed and time.monotonic() < deadline:
            cur.send_feedback(flush_lsn=confirmed, force=True)
            time.sleep(0.05)
        assert fake.slots["ps"].confirmed_flush == confirmed
        conn.close()

        # Reconnect from the confirmed position (asked for, or 0/0: the server starts at
        # the slot's confirmed_flush).
        conn, cur = connect()
        cur.start_replication(slot_name="ps", decode=False, start_lsn=confirmed if explicit else 0,
                              options={"proto_version": "1", "publication_names": "pub"})
        rest = _consume(cur, lambda got: sum(1 for _, m in got if m.tag == "C")
                        >= len(expected_xids) - 5)
        conn.close()
    xids = [m.xid for _, m in first + rest if m.tag == "B"]
    assert xids == expected_xids  # every committed transaction exactly once, in order
    inserted = [m.new_tuple[0] for _, m in first + rest if m.tag == "I"]
    assert len(inserted) == len(set(inserted))
    assert 777777 not in [int(v) for v in inserted]  # the aborted transaction never shows


# ------------------------------------------------------------------------------------------
# Real subscribers
# ------------------------------------------------------------------------------------------


def _text_rows(conn: Any, table: str, columns: list[str]) -> list[tuple[str | None, ...]]:
    cols = ", ".join(f"{c}::text" for c in columns)
    return sorted(conn.execute(f"SELECT {cols} FROM {table}").fetchall(), key=repr)


def _expected(scenario: Scenario, table: str, copy_data: bool) -> list[tuple[str | None, ...]]:
    t = scenario.table(table)
    rows = scenario.final_rows(table, include_initial=copy_data)
    return sorted((tuple(c.type.text(r.get(c.name)) for c in t.columns) for r in rows), key=repr)


_DDL = {
    "public.accounts": "CREATE TABLE public.accounts (id int4 PRIMARY KEY, name text, amount numeric)",
    "public.items": "CREATE TABLE public.items (id int8 PRIMARY KEY, payload text, n int4)",
}


def _subscribe(server: Any, fake: SyncFakeWalsender, scenario: Scenario, table: str, *, copy_data: bool,
               streaming: str = "off", timeout: float = 90.0, name: str | None = None) -> tuple[list[Any], list[Any]]:
    """Create a database and a subscription on the subscriber *server*, wait until its table
    holds the expected rows (or time out), drop everything; return (rows, expected)."""
    import psycopg

    db = f"sub_{uuid.uuid4().hex[:10]}"
    name = name or f"s_{uuid.uuid4().hex[:8]}"
    expected = _expected(scenario, table, copy_data)
    columns = [c.name for c in scenario.table(table).columns]
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    dsn = server.dsn.replace(f"dbname={server.dbname}", f"dbname={db}")
    rows: list[Any] = []
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(_DDL[table])
            conninfo = fake.dsn.replace("'", "''")
            conn.execute(f"CREATE SUBSCRIPTION {name} CONNECTION '{conninfo}' PUBLICATION pub "
                         f"WITH (copy_data = {str(copy_data).lower()}, streaming = {streaming})")
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                rows = _text_rows(conn, table, columns)
                states = {s for (s,) in conn.execute("SELECT srsubstate FROM pg_subscription_rel").fetchall()}
                if rows == expected and states == {"r"}:
                    # stays so: nothing more arrives
                    time.sleep(0.3)
                    rows = _text_rows(conn, table, columns)
                    break
                time.sleep(0.1)
            conn.execute(f"DROP SUBSCRIPTION {name}")
    finally:
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    return rows, expected


SUBSCRIBER_MAJORS = [15, 16, 18]


@pytest.mark.live
@pytest.mark.parametrize("copy_data", [True, False], ids=["copy_data", "no_copy"])
@pytest.mark.parametrize("major", SUBSCRIBER_MAJORS)
def test_subscriber_ends_with_the_scenarios_rows(subscriber_server: Any, major: int, copy_data: bool) -> None:
    server = subscriber_server(major)
    scenario = Scenario.from_dict(accounts(major))
    with SyncFakeWalsender(scenario) as fake:
        rows, expected = _subscribe(server, fake, scenario, "public.accounts", copy_data=copy_data)
        queries = fake.transcript.queries()
    assert rows == expected
    assert expected == ([("2", "robert", "4")])
    if copy_data:
        assert any(q.startswith("COPY public.accounts") for q in queries)
    else:
        assert not any(q.startswith("COPY") for q in queries)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("major", SUBSCRIBER_MAJORS)
def test_subscriber_applies_a_streamed_transaction(subscriber_server: Any, major: int) -> None:
    server = subscriber_server(major)
    scenario = Scenario.from_dict(items(major))
    streaming = "parallel" if major >= 16 else "on"
    with SyncFakeWalsender(scenario) as fake:
        rows, expected = _subscribe(server, fake, scenario, "public.items", copy_data=True, streaming=streaming)
        tags = [m.tag for m in fake.transcript.pgoutput() if m is not None]
    assert rows == expected
    # The big transaction really was streamed, with a subtransaction abort in it.
    assert "S" in tags and "E" in tags and "c" in tags and "A" in tags


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("copy_data", [True, False], ids=["copy_data", "no_copy"])
@pytest.mark.parametrize("major", SUBSCRIBER_MAJORS)
def test_subscriber_recovers_after_the_fake_drops_the_connection_mid_stream(
        subscriber_server: Any, major: int, copy_data: bool) -> None:
    server = subscriber_server(major)
    scenario = Scenario.from_dict(items(major, big=300))
    # The apply worker's stream (its slot is named after the subscription) is reset after
    # 40 messages, once: in the middle of the small transactions.
    name = f"s_{uuid.uuid4().hex[:8]}"
    with SyncFakeWalsender(scenario, faults=[Fault("reset", after_messages=40, slot=name)]) as fake:
        rows, expected = _subscribe(server, fake, scenario, "public.items", copy_data=copy_data,
                                    streaming="on", name=name)
        events = fake.transcript.events()
    assert "fault:reset" in events
    assert rows == expected


@pytest.mark.live
@pytest.mark.parametrize(("major", "persona_major"), [(18, 14), (16, 10), (15, 17)])
def test_subscriber_talks_to_a_publisher_of_another_major(subscriber_server: Any, major: int,
                                                          persona_major: int) -> None:
    """The subscriber picks its queries and protocol version by the publisher's
    server_version: the fake answers each major's forms."""
    server = subscriber_server(major)
    scenario = Scenario.from_dict(accounts(persona_major))
    with SyncFakeWalsender(scenario) as fake:
        rows, expected = _subscribe(server, fake, scenario, "public.accounts", copy_data=True)
        starts = [q for q in fake.transcript.queries() if q.startswith("START_REPLICATION")]
    assert rows == expected
    # the subscriber asks for the highest version both know
    expected_proto = min({10: 1, 14: 2, 17: 4}[persona_major], {15: 3, 16: 4, 18: 4}[major])
    assert all(f"proto_version '{expected_proto}'" in q for q in starts)
