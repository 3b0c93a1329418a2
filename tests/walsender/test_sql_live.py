"""The SQL surface against real PostgreSQL: the catalog queries clients send answered by the
fake as by a real 15 and 16 with the same tables and publications (the test runs all three);
the Go client's demo flow over a socket, on the fake and on a real 15; a client creating its
publication and slot by SQL, then pg_recvlogical streaming the scenario; statements over
64 Ki characters answered as a real 15 answers them."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.replication.messages import XLogData, decode_copy_data
from pgwire_spec.servers import Server
from pgwire_spec.walsender import Scenario, SyncFakeWalsender
from pgwire_spec.wire import (
    BackendReader,
    CopyBothResponse,
    CopyData,
    CopyDone,
    DataRow,
    ErrorResponse,
    Query,
    ReadyForQuery,
    StartupMessage,
    encode_message,
)
from pgwire_spec.wire.reader import NeedData
from tests._servers import pg_server  # noqa: F401

from .conftest import need_program

pytestmark = pytest.mark.live

#: Two tables of several types and replica identities, and the transactions of the issue.
SCENARIO: dict[str, Any] = {
    "server": {"version": "15.4"},
    "auth": {"method": "trust"},
    "publications": {},
    "tables": {
        "public.accounts": {"columns": [{"name": "id", "type": "int4", "key": True}, {"name": "name", "type": "text"},
                                        {"name": "amount", "type": "numeric(10,2)"}],
                            "rows": [{"id": 1, "name": "alice", "amount": "10.50"},
                                     {"id": 7, "name": "zoë", "amount": None}]},
        "public.events": {"replica_identity": "full",
                          "columns": [{"name": "at", "type": "timestamptz"}, {"name": "kind", "type": "varchar(20)"},
                                      {"name": "n", "type": "int8"}, {"name": "ok", "type": "bool"},
                                      {"name": "tags", "type": "text[]"},
                                      {"name": "mood", "type": {"oid": 16385, "name": "mood",
                                                                "enum": ["sad", "ok", "happy"]}}],
                          "rows": [{"kind": "open", "n": 5000000000, "ok": True, "tags": ["a", "b c"]},
                                   {"kind": "close", "n": -1, "ok": False, "tags": []}]},
    },
    "transactions": [
        {"changes": [{"insert": "public.accounts", "new": {"id": 2, "name": "bob", "amount": "3.00"}},
                     {"update": "public.accounts", "key": {"id": 2}, "new": {"name": "robert"}},
                     {"delete": "public.accounts", "key": {"id": 2}}]},
    ],
}

#: The same on a real server.
SCHEMA = [
    "DROP TYPE IF EXISTS public.mood",
    "CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE public.accounts (id int4 PRIMARY KEY, name text, amount numeric(10,2))",
    "CREATE TABLE public.events (at timestamptz, kind varchar(20), n int8, ok bool, tags text[], mood public.mood)",
    "ALTER TABLE public.events REPLICA IDENTITY FULL",
    "INSERT INTO public.accounts VALUES (1, 'alice', 10.50), (7, 'zoë', NULL)",
    "INSERT INTO public.events VALUES (NULL, 'open', 5000000000, true, '{a,\"b c\"}'), (NULL, 'close', -1, false, '{}')",
]
WORKLOAD = [
    "INSERT INTO public.accounts VALUES (2, 'bob', 3.00)",
    "UPDATE public.accounts SET name = 'robert' WHERE id = 2",
    "DELETE FROM public.accounts WHERE id = 2",
]
DDL = [
    "DROP PUBLICATION IF EXISTS cmp_all",
    "CREATE PUBLICATION cmp_all FOR ALL TABLES",
    "CREATE PUBLICATION cmp_cols FOR TABLE public.accounts (id, name) WHERE (id > 1)",
    "CREATE PUBLICATION cmp_ins FOR TABLE public.events WITH (publish = 'insert, update')",
    "ALTER PUBLICATION cmp_ins ADD TABLE public.accounts",
    "SELECT slot_name FROM pg_create_logical_replication_slot('cmp_slot', 'pgoutput')",
]

#: Catalog queries as clients write them; no answer may depend on an OID a server assigns.
QUERIES = [
    "SELECT format_type(23, -1), format_type(1043, 24), format_type(1700, 655366), format_type(1184, -1), "
    "format_type(1009, -1), format_type(16, -1), format_type(1114, 3)",
    "SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attisdropped, a.attlen "
    "FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = 'public' AND c.relname IN ('accounts', 'events') ORDER BY c.relname, a.attnum",
    "SELECT a.attname, a.atttypid, a.atttypmod FROM pg_attribute a "
    "WHERE a.attrelid = 'public.events'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
    "SELECT c.relname, c.relkind, c.relreplident, c.relnatts, c.relhasindex FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY c.relname",
    "SELECT t.oid, t.typname, t.typlen, t.typbyval, t.typtype, t.typcategory, t.typelem, t.typarray FROM pg_type t "
    "WHERE t.oid IN (16, 20, 23, 25, 1009, 1043, 1700, 1184) ORDER BY t.oid",
    "SELECT i.indisprimary, i.indisunique, i.indkey, i.indnatts, i.indisreplident FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 'accounts'",
    "SELECT pubname, puballtables, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot "
    "FROM pg_catalog.pg_publication ORDER BY pubname",
    "SELECT * FROM pg_catalog.pg_publication_tables ORDER BY pubname, schemaname, tablename",
    "SELECT p.pubname, c.relname, r.prattrs, pg_get_expr(r.prqual, r.prrelid) FROM pg_publication_rel r "
    "JOIN pg_publication p ON p.oid = r.prpubid JOIN pg_class c ON c.oid = r.prrelid ORDER BY 1, 2",
    "SELECT gpt.relid::regclass, gpt.attrs, pg_get_expr(gpt.qual, gpt.relid) FROM pg_publication p, "
    "LATERAL pg_get_publication_tables(p.pubname) gpt WHERE p.pubname = 'cmp_cols'",
    "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'cmp_all'",
    "SELECT slot_name, plugin, slot_type, database, temporary, active, two_phase FROM pg_replication_slots",
    "SELECT current_setting('wal_level'), current_setting('server_encoding'), current_setting('integer_datetimes')",
    "SHOW wal_level",
    # an enum type's labels (Debezium's type registry reads them), as CREATE TYPE … AS ENUM makes them
    "SELECT t.typname, t.typtype, t.typcategory, t.typlen, t.typbyval, e.labels FROM pg_type t LEFT JOIN "
    "(SELECT enumtypid AS id, array_agg(enumlabel ORDER BY enumsortorder) AS labels FROM pg_enum GROUP BY enumtypid) e "
    "ON t.oid = e.id WHERE t.typname = 'mood'",
    "SELECT e.enumsortorder, e.enumlabel, e.oid::int8 % 2 = 0 AS even, e.oid > e.enumtypid AS after_type "
    "FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = 'mood' ORDER BY e.enumsortorder",
    "SELECT a.attname, a.attlen, a.attbyval, a.attstorage FROM pg_attribute a "
    "WHERE a.attrelid = 'public.events'::regclass AND a.attname = 'mood'",
    "SHOW wal_sender_timeout",
    "SELECT current_setting('wal_sender_timeout'), current_setting('authentication_timeout')",
    "SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname IN ('public', 'pg_catalog') ORDER BY 1",
    "SELECT pg_current_wal_lsn() IS NOT NULL AS has_position, current_database() = 'postgres'",
    # pg_settings: settings no install or test server sets (guc_tables.c's defaults)
    "SELECT name, setting, unit, category, short_desc, context, vartype, min_val, max_val, enumvals, boot_val "
    "FROM pg_settings WHERE name IN ('wal_level', 'wal_sender_timeout', 'block_size', 'wal_segment_size', "
    "'integer_datetimes', 'standard_conforming_strings', 'IntervalStyle', 'bytea_output', 'track_commit_timestamp', "
    "'max_slot_wal_keep_size', 'statement_timeout', 'default_transaction_isolation', 'work_mem', "
    "'maintenance_work_mem', 'checkpoint_timeout', 'max_wal_size', 'min_wal_size', 'hot_standby', "
    "'wal_receiver_timeout', 'synchronous_standby_names', 'password_encryption', 'client_min_messages', "
    "'max_sync_workers_per_subscription') ORDER BY name",
    "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'wal_level'",
    "SELECT count(*) FROM pg_settings WHERE name = 'timezone'",
    "SELECT current_setting('block_size'), current_setting('IntervalStyle'), current_setting('wal_segment_size')",
    "SHOW max_slot_wal_keep_size",
    # information_schema, as ORMs and Debezium-style clients read it (NOT NULL constraints
    # are named from OIDs up to 17: compared by count)
    "SELECT * FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('accounts', 'events') "
    "ORDER BY table_name",
    "SELECT * FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN ('accounts', 'events') "
    "ORDER BY table_name, ordinal_position",
    "SELECT c.column_name, c.data_type, c.character_maximum_length, c.numeric_precision, c.numeric_scale, "
    "c.is_nullable, c.udt_name FROM information_schema.columns c WHERE c.table_schema = 'public' "
    "AND c.table_name = 'events' "
    "ORDER BY c.ordinal_position",
    "SELECT tc.table_name, tc.constraint_name, tc.constraint_type, kcu.column_name, kcu.ordinal_position, "
    "kcu.position_in_unique_constraint FROM information_schema.table_constraints tc "
    "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
    "AND kcu.table_schema = tc.table_schema AND kcu.table_name = tc.table_name "
    "WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY' "
    "AND tc.table_name IN ('accounts', 'events') ORDER BY 1, 5",
    "SELECT table_name, constraint_type, is_deferrable, initially_deferred, enforced, nulls_distinct, count(*) "
    "FROM information_schema.table_constraints WHERE table_schema = 'public' AND table_name IN ('accounts', 'events') "
    "GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2",
    # the scenario's tables themselves, as table sync copies them
    "SELECT * FROM public.accounts ORDER BY id",
    "SELECT id, name, amount FROM accounts WHERE id = 1",
    "SELECT e.kind, e.n, e.ok, e.tags, e.at FROM public.events e ORDER BY e.n",
    "SELECT count(*), max(n) FROM public.events WHERE ok",
    # RowDescription's origins (compared by the relation's name, not its OID): a user type's
    # column, a subquery's, a view's, a join's, a set operation's
    "SELECT e.mood, e.kind, x.mood AS again FROM public.events e, (SELECT mood FROM public.events) x WHERE false",
    "SELECT s.slot_name, s.active, r.rolname FROM pg_replication_slots s, pg_roles r WHERE false",
    "SELECT c.oid, relname FROM pg_class c JOIN pg_namespace USING (oid) WHERE false",
    "SELECT id FROM public.accounts UNION ALL SELECT 2 ORDER BY 1",
    # WITH queries: a catalog's rows, a scenario table's, a column list renaming, a
    # recursive one (origins followed into a non-recursive one's query)
    "WITH t AS (SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = 'public') SELECT relname, relkind FROM t ORDER BY relname",
    "WITH a AS (SELECT id, name FROM public.accounts) SELECT x.id, x.name FROM a x ORDER BY 1",
    "WITH k(col) AS (SELECT attname FROM pg_attribute WHERE attrelid = 'public.accounts'::regclass AND attnum > 0) "
    "SELECT col FROM k ORDER BY 1",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
    "SELECT * FROM (WITH y AS (SELECT id FROM public.accounts) SELECT id FROM y) s ORDER BY 1",
    # pgjdbc's ResultSetMetaData (PgResultSetMetaData.fetchFieldMetaData) for two origins
    "SELECT c.relname, n.nspname, a.attname, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), "
    "a.attidentity != '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE '%nextval(%' "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON (c.relnamespace = n.oid) "
    "JOIN pg_catalog.pg_attribute a ON (c.oid = a.attrelid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) "
    "LEFT JOIN pg_catalog.pg_attrdef d ON (d.adrelid = a.attrelid AND d.adnum = a.attnum) "
    "JOIN (SELECT 'public.accounts'::regclass::oid AS oid, 2 AS attnum UNION ALL "
    "SELECT 'pg_class'::regclass::oid, 2 UNION ALL SELECT 'pg_replication_slots'::regclass::oid, 1) vals "
    "ON (c.oid = vals.oid AND a.attnum = vals.attnum) ORDER BY 1",
]


def _origin(cur: Any, table_oid: int | None) -> str | None:
    """The relation a result column comes from (RowDescription's table OID), by name: OIDs
    differ between servers and majors, the relation they name does not."""
    if not table_oid:
        return None
    cur.execute("SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = %s", (table_oid,))
    return str(cur.fetchone()[0])


def _type(cur: Any, oid: int) -> int | str:
    """A built-in type's OID; a user type's name (its OID is the server's to assign)."""
    if oid < 16384:
        return oid
    cur.execute("SELECT format_type(%s, NULL)", (oid,))
    return str(cur.fetchone()[0])


def _answers(dsn: str, setup: list[str]) -> list[Any]:
    """The answers to QUERIES after *setup*; what the setup made is dropped after."""
    return _outcomes(dsn, QUERIES, setup, ["SELECT pg_drop_replication_slot('cmp_slot')",
                                          *(f"DROP PUBLICATION {pub}" for pub in ("cmp_all", "cmp_cols", "cmp_ins"))])


def _outcomes(dsn: str, statements: Sequence[str], setup: Sequence[str] = (), cleanup: Sequence[str] = ()) -> list[Any]:
    """Each statement's command tag, column names, type OIDs (a user type's by name), sizes,
    origins (the relation's name and the column's number) and rows (text), or its SQLSTATE
    and message, over psycopg2 (simple protocol), after *setup*, before *cleanup*."""
    import psycopg2

    out: list[Any] = []
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for sql in setup:
                cur.execute(sql)
            for sql in statements:
                try:
                    cur.execute(sql)
                except psycopg2.Error as exc:
                    out.append((sql, "error", exc.pgcode, exc.diag.message_primary))
                    continue
                status, description = cur.statusmessage, list(cur.description or ())
                rows = [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()] \
                    if description else []
                columns = [(d.name, _type(cur, d.type_code), d.internal_size, d.table_column,
                            _origin(cur, d.table_oid)) for d in description]
                out.append((sql, status, columns, rows))
            for sql in cleanup:
                cur.execute(sql)
    finally:
        conn.close()
    return out


@pytest.fixture
def fake() -> Iterator[Callable[[int], SyncFakeWalsender]]:
    started: list[SyncFakeWalsender] = []

    def start(major: int) -> SyncFakeWalsender:
        server = SyncFakeWalsender(Scenario.from_dict({**SCENARIO, "server": {"version": f"{major}.4"}}))
        server.__enter__()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for s in started:
            s.__exit__(None, None, None)


def _real(pg_server: Callable[..., Server], major: int) -> Server:  # noqa: F811
    server = pg_server(major)
    import psycopg2

    conn = psycopg2.connect(server.dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS public.accounts, public.events")
        for sql in SCHEMA:
            cur.execute(sql)
    conn.close()
    return server


@pytest.mark.parametrize("major", [15, 16])
def test_catalog_queries_answer_as_a_real_server(pg_server: Callable[..., Server], fake: Any,  # noqa: F811
                                                 major: int) -> None:
    real = _answers(_real(pg_server, major).dsn, DDL)
    ours = _answers(fake(major).dsn, DDL)
    differ = [(r, o) for r, o in zip(real, ours, strict=True) if r != o]
    assert not differ, "\n\n".join(f"{r[0]}\n  real: {r[1:]}\n  fake: {o[1:]}" for r, o in differ)


# ------------------------------------------------------------------------------------------
# The Go client's demo flow (jackc/pglogrepl, example/pglogrepl_demo/main.go)
# ------------------------------------------------------------------------------------------


class _RawClient:
    """A v3 client on a socket: the messages pglogrepl's demo sends, in its order."""

    def __init__(self, host: str, port: int, user: str, database: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=20)
        self.reader = BackendReader()
        self.sock.sendall(encode_message(StartupMessage(parameters=(
            ("user", user), ("database", database), ("replication", "database")))))
        self.until(ReadyForQuery)

    def next(self) -> Any:
        while True:
            ev = self.reader.next_event()
            if not isinstance(ev, NeedData):
                return ev
            data = self.sock.recv(65536)
            if not data:
                raise AssertionError("the server closed the connection")
            self.reader.feed(data)

    def until(self, kind: type) -> list[Any]:
        out = []
        while True:
            msg = self.next()
            out.append(msg)
            if isinstance(msg, ErrorResponse):
                raise AssertionError(dict(msg.fields))
            if isinstance(msg, kind):
                return out

    def exec(self, sql: str) -> list[Any]:
        self.sock.sendall(encode_message(Query(sql)))
        return self.until(ReadyForQuery)


def _go_demo(host: str, port: int, user: str, after_start: Callable[[], None] | None = None) -> list[str]:
    c = _RawClient(host, port, user, "postgres")
    try:
        c.exec("DROP PUBLICATION IF EXISTS pglogrepl_demo;")
        c.exec("CREATE PUBLICATION pglogrepl_demo FOR ALL TABLES;")
        (row,) = [m for m in c.exec("IDENTIFY_SYSTEM") if isinstance(m, DataRow)]
        xlogpos = row.values[2].decode()
        c.exec("CREATE_REPLICATION_SLOT pglogrepl_demo TEMPORARY LOGICAL pgoutput ")
        c.sock.sendall(encode_message(Query(
            f"START_REPLICATION SLOT pglogrepl_demo LOGICAL {xlogpos} (proto_version '2', "
            "publication_names 'pglogrepl_demo', messages 'true', streaming 'true')")))
        c.until(CopyBothResponse)
        if after_start is not None:
            after_start()
        decoder = PgOutputDecoder(protocol_version=2, streaming="on", messages=True)
        kinds: list[str] = []
        while "Commit" not in kinds:
            msg = c.next()
            if isinstance(msg, CopyData):
                payload = decode_copy_data(msg.data)
                if isinstance(payload, XLogData):
                    kinds.append(type(decoder.decode(payload.data)).__name__)
        return kinds
    finally:
        c.sock.close()


def test_the_go_demo_flow_receives_the_same_on_the_fake_and_a_real_15(pg_server: Any,  # noqa: F811
                                                                        fake: Any) -> None:
    with_fake = _go_demo("127.0.0.1", fake(15).port, "postgres")
    real = _real(pg_server, 15)

    def workload() -> None:
        import psycopg2

        conn = psycopg2.connect(real.dsn)
        conn.autocommit = False
        with conn.cursor() as cur:
            for sql in WORKLOAD:
                cur.execute(sql)
        conn.commit()
        conn.close()

    with_real = _go_demo(real.host, real.port, real.user, workload)
    assert with_fake == with_real == ["Begin", "Relation", "Insert", "Update", "Delete", "Commit"]


def _second_slot(dsn: str, host: str, port: int, user: str, commit: Callable[[], None]) -> dict[str, Any]:
    """A slot, a transaction committed, a stream from the slot to its Commit, then
    IDENTIFY_SYSTEM, a second slot and what decoding it gives (peeked: nothing waits)."""
    import psycopg2

    from pgwire_spec.lsn import parse_lsn

    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    c = None
    try:
        cur.execute("DROP PUBLICATION IF EXISTS clock_pub")
        cur.execute("CREATE PUBLICATION clock_pub FOR TABLE public.accounts")
        cur.execute("SELECT lsn FROM pg_create_logical_replication_slot('clock_first', 'pgoutput')")
        first_cp = parse_lsn(cur.fetchone()[0])
        commit()
        c = _RawClient(host, port, user, "postgres")
        c.sock.sendall(encode_message(Query(
            "START_REPLICATION SLOT clock_first LOGICAL 0/0 (proto_version '1', publication_names 'clock_pub')")))
        c.until(CopyBothResponse)
        decoder = PgOutputDecoder(protocol_version=1)
        kinds: list[str] = []
        commit_end = 0
        while "Commit" not in kinds:
            msg = c.next()
            if isinstance(msg, CopyData) and isinstance(payload := decode_copy_data(msg.data), XLogData):
                decoded = decoder.decode(payload.data)
                kinds.append(type(decoded).__name__)
                commit_end = getattr(decoded, "end_lsn", commit_end)
        c.sock.sendall(encode_message(CopyDone()))
        c.until(ReadyForQuery)
        (row,) = [m for m in c.exec("IDENTIFY_SYSTEM") if isinstance(m, DataRow)]
        xlogpos = parse_lsn(row.values[2].decode())
        (row,) = [m for m in c.exec("CREATE_REPLICATION_SLOT clock_second LOGICAL pgoutput") if isinstance(m, DataRow)]
        second_cp = parse_lsn(row.values[1].decode())
        cur.execute("SELECT count(*) FROM pg_logical_slot_peek_binary_changes('clock_second', NULL, NULL, "
                    "'proto_version', '1', 'publication_names', 'clock_pub')")
        second = cur.fetchone()[0]
        cur.execute("SELECT pg_current_wal_lsn()")
        now = parse_lsn(cur.fetchone()[0])
        return {"first": kinds, "second": second,
                "order": first_cp < commit_end <= xlogpos <= second_cp <= now}
    finally:
        # both slots are released (the stream ended with CopyDone; a slot made by the command
        # is released at once), so they drop while the connection is still open
        cur.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'clock_%'")
        for (slot,) in cur.fetchall():
            cur.execute(f"SELECT pg_drop_replication_slot('{slot}')")
        cur.execute("DROP PUBLICATION IF EXISTS clock_pub")
        conn.close()
        if c is not None:
            c.sock.close()


def test_a_slot_made_after_a_stream_receives_nothing_on_the_fake_as_on_a_real_15(
        pg_server: Any, fake: Any) -> None:  # noqa: F811
    """A second slot made after the first streamed the committed transaction has its
    consistent point past it (and past IDENTIFY_SYSTEM's xlogpos, itself past the Commit),
    and decoding it gives nothing, on a real 15 as on the fake (snapbuild.c)."""
    server = fake(15)
    ours = _second_slot(server.dsn, server.host, server.port, "postgres", lambda: None)
    real = _real(pg_server, 15)

    def workload() -> None:
        import psycopg2

        conn = psycopg2.connect(real.dsn)
        with conn.cursor() as cur:
            for sql in WORKLOAD:
                cur.execute(sql)
        conn.commit()
        conn.close()

    theirs = _second_slot(real.dsn, real.host, real.port, real.user, workload)
    assert ours == theirs == {"first": ["Begin", "Relation", "Insert", "Update", "Delete", "Commit"], "second": 0,
                              "order": True}


# ------------------------------------------------------------------------------------------
# A client creates its publication and slot by SQL, pg_recvlogical streams
# ------------------------------------------------------------------------------------------


@pytest.mark.clients
def test_publication_and_slot_by_sql_then_pg_recvlogical_streams(tmp_path: Any, fake: Any) -> None:
    import psycopg2

    recvlogical = need_program("pg_recvlogical")
    server = fake(16)
    conn = psycopg2.connect(server.dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE PUBLICATION app_pub FOR TABLE public.accounts")
        cur.execute("SELECT * FROM pg_create_logical_replication_slot('app_slot', 'pgoutput')")
        (slot, lsn), = cur.fetchall()
        cur.execute("SELECT pg_current_wal_lsn()")
    conn.close()
    out = tmp_path / "stream.bin"
    history_end = server.state.history.end_lsn
    end = f"{history_end >> 32:X}/{history_end & 0xFFFFFFFF:X}"
    proc = subprocess.run([recvlogical, "-d", server.dsn, "-S", "app_slot", "--start", "--no-loop", "-E", end,
                           "-o", "proto_version=1", "-o", "publication_names=app_pub", "-f", str(out)],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    payloads = [e.payload.data for e in server.transcript.stream()]
    decoder = PgOutputDecoder(protocol_version=1)
    assert [type(decoder.decode(p)).__name__ for p in payloads] == [
        "Begin", "Relation", "Insert", "Update", "Delete", "Commit"]
    queries = server.transcript.queries()
    assert queries[:2] == ["CREATE PUBLICATION app_pub FOR TABLE public.accounts",
                           "SELECT * FROM pg_create_logical_replication_slot('app_slot', 'pgoutput')"]
    assert any(q.startswith("START_REPLICATION SLOT \"app_slot\" LOGICAL") or
               q.startswith("START_REPLICATION SLOT app_slot LOGICAL") for q in queries)
    print(server.transcript.text())


#: pg_stat_replication's columns a client reads that do not depend on a pid, a clock or a
#: socket (compared); the positions, the client's port, its start and last reply only as
#: present (the lags are compared in test_stat_replication: whether a real server has a
#: sample yet depends on its WAL activity).
STAT_QUERY = ("SELECT application_name, state, sync_state, sync_priority, usename = current_user AS own, "
              "sent_lsn IS NOT NULL AS sent, write_lsn IS NOT NULL AS written, "
              "replay_lsn <= sent_lsn AS behind, client_addr = '127.0.0.1' AS local, client_port > 0 AS tcp, "
              "backend_start IS NOT NULL AS started, reply_time IS NOT NULL AS replied FROM pg_stat_replication")


def _streaming_stats(dsn: str) -> list[Any]:
    """pg_stat_replication (STAT_QUERY) while pg_recvlogical streams a slot of its own."""
    import time

    import psycopg2

    recvlogical = need_program("pg_recvlogical")
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    proc = None
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT slot_name FROM pg_create_logical_replication_slot('stat_slot', 'pgoutput')")
            cur.execute("CREATE PUBLICATION stat_pub FOR ALL TABLES")
            proc = subprocess.Popen([recvlogical, "-d", dsn, "-S", "stat_slot", "--start", "-s", "1",
                                     "-o", "proto_version=1", "-o", "publication_names=stat_pub", "-f", "/dev/null"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 20
            rows: list[Any] = []
            while time.monotonic() < deadline:
                cur.execute(STAT_QUERY)
                columns = [(d.name, d.type_code) for d in cur.description or ()]
                rows = [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()]
                if rows and rows[0][6] == "True":  # a status update arrived
                    break
                time.sleep(0.2)
            proc.terminate()
            proc.wait(10)
            for _ in range(50):  # the server may not yet have seen the client go (slot still active)
                try:
                    cur.execute("SELECT pg_drop_replication_slot('stat_slot')")
                    break
                except psycopg2.errors.ObjectInUse:
                    time.sleep(0.2)
            cur.execute("DROP PUBLICATION stat_pub")
            return [columns, rows]
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        conn.close()


@pytest.mark.parametrize("major", [15, 16])
def test_pg_stat_replication_shows_the_streaming_walsender_as_a_real_server(
        pg_server: Callable[..., Server], fake: Any, major: int) -> None:  # noqa: F811
    real = _streaming_stats(_real(pg_server, major).dsn)
    ours = _streaming_stats(fake(major).dsn)
    # pg_recvlogical reports no replay position (0): NULL, so is the comparison
    assert real[1] == [("pg_recvlogical", "streaming", "async", "0", "True", "True", "True", None, "True",
                        "True", "True", "True")]
    assert ours == real


# ------------------------------------------------------------------------------------------
# Statements over 64 Ki characters (answered off the fake's event loop)
# ------------------------------------------------------------------------------------------


def _long_statements() -> list[str]:
    nowhere = "".join(f", {3_000_000_000 + i}" for i in range(50_000))  # OIDs no catalog holds
    names = "".join(f", 'no''such_{i:05}'" for i in range(10_000))  # a quote in each
    negative = "".join(f", {-1000 - i}" for i in range(12_000))
    listed = ", public.accounts" * 5_000
    return [
        f"SELECT t.oid, t.typname, t.typlen FROM pg_type t WHERE t.oid IN (16, 20, 23, 25, 1043{nowhere}) "
        "ORDER BY t.oid",
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname = 'public' AND c.relname IN ('accounts', 'events'{names}) ORDER BY 1",
        f"SELECT t.typname, t.typlen FROM pg_type t WHERE t.oid IN (16, 20, 23, 25) AND t.typlen IN (-1, 1, 2.5, "
        f"8, NULL{negative}) ORDER BY 1",
        f"CREATE PUBLICATION cmp_long FOR TABLE public.events{listed}",
        "SELECT pubname, schemaname, tablename FROM pg_publication_tables WHERE pubname = 'cmp_long' ORDER BY 3",
        f"CREATE PUBLICATION cmp_cols_twice FOR TABLE public.accounts (id){listed}",
        f"CREATE PUBLICATION cmp_missing FOR TABLE public.events{listed}, public.no_such_table",
        f"SELECT count(*) FROM pg_type WHERE oid IN (23{nowhere}) AND AND",
        "DROP PUBLICATION cmp_long",
    ]


def test_statements_over_64_kib_answered_as_a_real_15(pg_server: Callable[..., Server], fake: Any) -> None:  # noqa: F811
    statements = _long_statements()
    assert all(len(s) > 1 << 16 for s in statements if "FOR TABLE" in s or " IN (" in s)
    real_dsn = _real(pg_server, 15).dsn
    try:
        real = _outcomes(real_dsn, statements)
    finally:
        _outcomes(real_dsn, ["DROP PUBLICATION IF EXISTS cmp_long"])  # the server is shared by the session
    ours = _outcomes(fake(15).dsn, statements)
    assert [r[1] for r in real] == ["SELECT 5", "SELECT 2", "SELECT 3", "CREATE PUBLICATION", "SELECT 2", "error", "error",
                                    "error", "DROP PUBLICATION"]
    differ = [(r, o) for r, o in zip(real, ours, strict=True) if r != o]
    assert not differ, "\n\n".join(f"{r[0][:80]}…\n  real: {r[1:]}\n  fake: {o[1:]}" for r, o in differ)
