"""The SQL surface (walsender/_engine.py, _catalog.py) and the WAL clock (ServerState),
driven without sockets: catalog reads, slot functions, publication DDL that changes the
stream, and positions in a real server's order over every ordering of the calls a client
can make (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgwire_spec import PgOutputDecoder
from pgwire_spec.lsn import format_lsn, parse_lsn
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.replication.messages import PrimaryKeepalive, XLogData, decode_copy_data
from pgwire_spec.walsender import ServerState
from pgwire_spec.walsender._catalog import CATALOG, columns_of
from pgwire_spec.walsender._catalog_layout import attnum, relation_natts, relation_oid
from pgwire_spec.walsender._engine import truncated_identifiers
from pgwire_spec.walsender._history import TxnEvent
from pgwire_spec.walsender.personas import ServerError
from pgwire_spec.walsender.scenario import Limits, Scenario, ScenarioError
from pgwire_spec.wire import (
    Bind,
    CommandComplete,
    CopyData,
    DataRow,
    Describe,
    ErrorResponse,
    Execute,
    NoticeResponse,
    Parse,
    RowDescription,
    Sync,
)

from ._client import Client
from .scenarios import accounts


def _state(major: int = 16, **extra: Any) -> ServerState:
    return ServerState(Scenario.from_dict({**accounts(major), "auth": {"method": "trust"}, **extra}))


def _client(state: ServerState, replication: str | None = None) -> Client:
    c = Client(state)
    c.startup(replication=replication)
    return c


def _rows(out: list[Any]) -> list[tuple[str | None, ...]]:
    return [tuple(None if v is None else v.decode() for v in msg.values) for msg in out if isinstance(msg, DataRow)]


def _columns(out: list[Any]) -> list[tuple[str, int]]:
    desc = next(msg for msg in out if isinstance(msg, RowDescription))
    return [(f.name, f.type_oid) for f in desc.fields]


def _error(out: list[Any]) -> tuple[str, str] | None:
    for msg in out:
        if isinstance(msg, ErrorResponse):
            fields = dict(msg.fields)
            return fields["C"], fields["M"]
    return None


def _ok(out: list[Any]) -> list[Any]:
    assert _error(out) is None, _error(out)
    return out


# ------------------------------------------------------------------------------------------
# RowDescription: a plain column's table OID and attribute number, user types
# ------------------------------------------------------------------------------------------

#: A table with an enum column and a type the fake knows by name only.
_EVENTS = {"public.events": {"oid": 16500, "replica_identity": "full", "columns": [
    {"name": "kind", "type": "varchar(20)"},
    {"name": "mood", "type": {"oid": 16385, "name": "mood", "enum": ["sad", "ok", "happy"]}},
    {"name": "spot", "type": {"oid": 16400, "name": "spot"}}],
    "rows": [{"kind": "open", "mood": "ok", "spot": "(1,2)"}]}}


def _fields(out: list[Any]) -> list[tuple[str, int, int, int, int, int]]:
    desc = next(msg for msg in out if isinstance(msg, RowDescription))
    return [(f.name, f.table_oid, f.column_number, f.type_oid, f.type_size, f.type_modifier) for f in desc.fields]


def test_a_tables_plain_columns_carry_its_oid_and_their_numbers() -> None:
    state = _state()
    oid = state.scenario.tables[0].oid
    c = _client(state)
    # parse_target.c markTargetListOrigin: a plain column (through an alias, a subquery in
    # FROM, *), not an expression, an aggregate, a cast or a set operation's column
    assert _fields(_ok(c.query("SELECT * FROM accounts"))) == [
        ("id", oid, 1, 23, 4, -1), ("name", oid, 2, 25, -1, -1), ("amount", oid, 3, 1700, -1, -1)]
    assert [f[:3] for f in _fields(_ok(c.query(
        "SELECT a.amount, a.id AS n, (a.name), a.id + 1, 1 AS one, a.id::int8, count(*) OVER () "
        "FROM public.accounts a")))] == [
        ("amount", oid, 3), ("n", oid, 1), ("name", oid, 2), ("?column?", 0, 0), ("one", 0, 0), ("id", 0, 0),
        ("count", 0, 0)]
    assert [f[:3] for f in _fields(_ok(c.query("SELECT x.name, x.k FROM (SELECT name, 1 AS k FROM accounts) x")))] \
        == [("name", oid, 2), ("k", 0, 0)]
    assert [f[:3] for f in _fields(_ok(c.query("SELECT id FROM accounts UNION SELECT 2")))] == [("id", 0, 0)]
    assert [f[:3] for f in _fields(_ok(c.query("SELECT max(id) FROM accounts")))] == [("max", 0, 0)]


@pytest.mark.parametrize("major", [10, 11, 15, 16, 17, 18])
def test_catalog_columns_carry_the_relations_oid_and_the_majors_numbers(major: int) -> None:
    c = _client(_state(major))
    # tables: their fixed OIDs (catalog/pg_*.h); a column's number as the major has it
    # (pg_attribute.attnum: 6 up to 15, 5 from 16; oid a system column up to 11)
    out = _ok(c.query("SELECT c.relname, c.oid, a.attnum, t.typname FROM pg_class c JOIN pg_attribute a "
                      "ON a.attrelid = c.oid JOIN pg_type t ON t.oid = a.atttypid"))
    assert [f[:3] for f in _fields(out)] == [
        ("relname", 1259, 1 if major < 12 else 2), ("oid", 1259, -2 if major < 12 else 1),
        ("attnum", 1249, 6 if major < 16 else 5), ("typname", 1247, 1 if major < 12 else 2)]
    # a view: the view's own OID (initdb assigns it; one per major), as regclass gives it
    out = _ok(c.query("SELECT s.slot_name, 'pg_replication_slots'::regclass::oid AS view FROM pg_replication_slots s"))
    slot_name, view = [f[:3] for f in _fields(out)]
    view_oid = int(_rows(_ok(c.query("SELECT 'pg_replication_slots'::regclass::oid")))[0][0] or 0)
    assert slot_name == ("slot_name", view_oid, 1) and view_oid > 0 and view == ("view", 0, 0)
    # a function's column is no relation's
    assert [f[:3] for f in _fields(_ok(c.query("SELECT * FROM pg_current_wal_lsn()")))] == [
        ("pg_current_wal_lsn", 0, 0)]


def test_every_catalog_relation_answered_has_its_oid_and_column_numbers_in_every_major() -> None:
    # a relation added to CATALOG needs its place in _catalog_layout.py (captured from real servers)
    for major in range(10, 19):
        for rel in CATALOG:
            columns = columns_of(rel, major)
            if not columns:
                continue
            assert relation_oid(rel, major) > 0, (rel, major)
            numbers = [attnum(rel, c.name, major) for c in columns]
            assert 0 not in numbers and len(set(numbers)) == len(numbers), (rel, major, numbers)
            assert max(numbers) <= relation_natts(rel, major), (rel, major)


@pytest.mark.parametrize("major", [12, 13])
def test_a_join_using_column_is_the_left_tables_from_13(major: int) -> None:
    c = _client(_state(major))
    out = _ok(c.query("SELECT oid, relname FROM pg_class JOIN pg_namespace USING (oid)"))
    assert [f[:3] for f in _fields(out)] == [("oid", 1259, 1) if major >= 13 else ("oid", 0, 0),
                                             ("relname", 1259, 2)]
    out = _ok(c.query("SELECT oid FROM pg_class FULL JOIN pg_namespace USING (oid)"))
    assert [f[:3] for f in _fields(out)] == [("oid", 0, 0)]


def test_columns_of_user_types_are_described_with_their_types() -> None:
    state = _state(tables=_EVENTS, publications={}, transactions=[])
    c = _client(state)
    out = _ok(c.query("SELECT * FROM events"))
    # an enum: its OID and 4 bytes (pg_enum.c); another user type: its OID, variable size;
    # values in their text form
    assert _fields(out) == [("kind", 16500, 1, 1043, -1, 24), ("mood", 16500, 2, 16385, 4, -1),
                            ("spot", 16500, 3, 16400, -1, -1)]
    assert _rows(out) == [("open", "ok", "(1,2)")]
    out = _ok(c.query("SELECT e.mood, e.mood::text AS t FROM events e WHERE e.mood = 'ok'"))
    assert [(f[0], f[3]) for f in _fields(out)] == [("mood", 16385), ("t", 25)] and _rows(out) == [("ok", "ok")]
    out = _ok(c.query("SELECT x.mood FROM (SELECT mood FROM events) x"))
    assert _fields(out) == [("mood", 16500, 2, 16385, 4, -1)]


def test_the_extended_protocol_describes_as_the_simple_one() -> None:
    state = _state(tables=_EVENTS, publications={}, transactions=[])
    c = _client(state)
    simple = _fields(_ok(c.query("SELECT kind, mood FROM events")))
    c.send(Parse("s", "SELECT kind, mood FROM events"), Describe("S", "s"), Bind("p", "s"), Describe("P", "p"),
           Execute("p", 0), Sync())
    out = _ok(c.pump())
    described = [[(f.name, f.table_oid, f.column_number, f.type_oid, f.type_size, f.type_modifier) for f in m.fields]
                 for m in out if isinstance(m, RowDescription)]
    assert described == [simple, simple] and simple[0][5] == 24  # varchar(20)'s modifier too



# ------------------------------------------------------------------------------------------
# Catalog reads (the 4th failure)
# ------------------------------------------------------------------------------------------


def test_format_type_and_the_attributes_of_each_relation() -> None:
    c = _client(_state())
    out = _ok(c.query("SELECT format_type(23, -1)"))
    assert _columns(out) == [("format_type", 25)] and _rows(out) == [("integer",)]
    out = _ok(c.query("SELECT a.attnum, a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod), a.attnotnull "
                      "FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'public.accounts'::regclass "
                      "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"))
    assert _columns(out) == [("attnum", 21), ("attname", 19), ("atttypid", 26), ("format_type", 25),
                             ("attnotnull", 16)]
    assert _rows(out) == [("1", "id", "23", "integer", "t"), ("2", "name", "25", "text", "f"),
                          ("3", "amount", "1700", "numeric", "f")]
    out = _ok(c.query("SELECT c.relname, n.nspname, c.relkind, c.relreplident, c.oid::regclass "
                      "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                      "WHERE n.nspname = 'public' ORDER BY 1"))
    assert _rows(out) == [("accounts", "public", "r", "d", "accounts"), ("accounts_pkey", "public", "i", "n",
                                                                           "accounts_pkey")]
    out = _ok(c.query("SELECT i.indisprimary, i.indkey FROM pg_index i WHERE i.indrelid = 'accounts'::regclass"))
    assert _columns(out) == [("indisprimary", 16), ("indkey", 22)] and _rows(out) == [("t", "1")]
    out = _ok(c.query("SELECT current_setting('wal_level'), version() LIKE 'PostgreSQL 16%', current_user"))
    assert _rows(out) == [("logical", "t", "postgres")]
    assert _ok(c.query("SHOW wal_level"))


def test_wal_sender_timeout_reported_as_in_force() -> None:
    """SHOW (SQL and replication command) and current_setting() give the timeout the fake
    enforces: PostgreSQL's 60 s by default (guc_tables.c), in SHOW's units (guc.c)."""
    def shown(state: ServerState) -> list[tuple[str | None, ...]]:
        c = _client(state)
        out = _rows(_ok(c.query("SELECT current_setting('wal_sender_timeout'), "
                                "current_setting('authentication_timeout')")))
        out += _rows(_ok(c.query("SHOW wal_sender_timeout")))
        out += _rows(_ok(_client(state, replication="database").query("SHOW wal_sender_timeout")))
        return out

    assert Limits().wal_sender_timeout == 60.0
    assert shown(_state()) == [("1min", "1min"), ("1min",), ("1min",)]
    assert shown(_state(server={"version": "16.4", "wal_sender_timeout": "2s"})) == [("2s", "1min"), ("2s",), ("2s",)]
    # the command line's override (serve --wal-sender-timeout) is what SHOW reports
    over = ServerState(_state().scenario, limits=Limits(wal_sender_timeout=1.5))
    assert shown(over) == [("1500ms", "1min"), ("1500ms",), ("1500ms",)]
    assert shown(ServerState(_state().scenario, limits=Limits(wal_sender_timeout=0))) == [("0", "1min"), ("0",), ("0",)]


def test_the_scenario_tables_read_as_table_sync_copies_them() -> None:
    """``SELECT`` on a scenario table answers the rows COPY gives table sync (the initial
    rows), named, typed and with the column's type modifier as a real server describes
    them; a partitioned table reads its partitions' rows; after a stream ran, what the
    history left (its transactions have committed), or with ``server.history: per_slot``
    the initial rows still."""
    state = _state(16)
    c = _client(state)
    sql = "SELECT * FROM public.accounts ORDER BY id"
    out = _ok(c.query(sql))
    assert _columns(out) == [("id", 23), ("name", 25), ("amount", 1700)]
    (desc,) = [m for m in out if isinstance(m, RowDescription)]
    assert [f.type_modifier for f in desc.fields] == [-1, -1, -1]
    assert _rows(out) == [("1", "alice", "10.50")]
    copied = [x.data for x in _client(state, "database").query("COPY public.accounts TO STDOUT")
              if isinstance(x, CopyData)]
    assert copied == [b"1\talice\t10.50\n"]
    assert _rows(_ok(c.query("SELECT a.name, count(*) FROM accounts a WHERE a.id = 1 GROUP BY a.name"))) == [
        ("alice", "1")]
    assert _go_demo_flow(state)
    assert _rows(_ok(_client(state).query(sql))) == [("2", "robert", "4")]
    per_slot = _state(16, server={"version": "16.4", "history": "per_slot"})
    assert _go_demo_flow(per_slot)
    assert _rows(_ok(_client(per_slot).query(sql))) == [("1", "alice", "10.50")]

    parted = _state(16, tables={
        "public.m": {"partition_by": "RANGE (id)", "columns": [{"name": "id", "type": "int8", "key": True},
                                                               {"name": "v", "type": "varchar(8)"}]},
        "public.m1": {"partition_of": "public.m", "for_values": "FROM (0) TO (10)", "rows": [{"id": 1, "v": "a"}]},
        "public.m2": {"partition_of": "public.m", "for_values": "FROM (10) TO (20)", "rows": [{"id": 11, "v": None}]},
    }, publications={}, transactions=[])
    out = _ok(_client(parted).query("SELECT v, id FROM m ORDER BY id"))
    (desc,) = [m for m in out if isinstance(m, RowDescription)]
    assert [(f.name, f.type_oid, f.type_modifier) for f in desc.fields] == [("v", 1043, 12), ("id", 20, -1)]
    assert _rows(out) == [("a", "1"), (None, "11")]


def test_parameters_for_the_extended_protocol() -> None:
    state = _state()
    c = _client(state)
    ans = state.sql.execute(c.conn, "SELECT format_type($1, $2), $3 IS NULL AS missing", ["1043", "24", None])
    assert ans.rows == (("character varying(20)", "t"),)  # type: ignore[union-attr]
    ans = state.sql.execute(c.conn, "SELECT * FROM pg_create_logical_replication_slot($1, 'pgoutput')", ["p"])
    assert ans.rows[0][0] == "p" and "p" in state.slots  # type: ignore[union-attr]
    with pytest.raises(ServerError) as info:
        state.sql.execute(c.conn, "SELECT $2", ["x"])
    assert info.value.sqlstate == "42P02"


def test_what_a_debezium_connector_reads_on_connect() -> None:
    """Its WAL position (a function in FROM), its role's privileges, its type registry
    (pg_enum, a subquery's columns typed); compared with a real 15 in test_pgjdbc.py."""
    c = _client(_state(15))
    out = _ok(c.query("select * from pg_current_wal_lsn()"))
    assert _columns(out) == [("pg_current_wal_lsn", 3220)] and len(_rows(out)) == 1
    assert _columns(_ok(c.query("SELECT x.l FROM current_setting('wal_level') AS x(l)"))) == [("l", 25)]
    out = _ok(c.query("SELECT r.rolcanlogin, r.rolreplication, r.rolsuper, (SELECT count(*) FROM pg_auth_members m "
                      "WHERE m.member = r.oid) AS groups FROM pg_roles r WHERE r.rolname = current_user"))
    assert _rows(out) == [("t", "t", "t", "0")]
    out = _ok(c.query("SELECT t.typname, e.values FROM pg_catalog.pg_type t LEFT JOIN (SELECT enumtypid AS id, "
                      "array_agg(enumlabel ORDER BY enumsortorder) AS values FROM pg_catalog.pg_enum "
                      "GROUP BY enumtypid) e ON t.oid = e.id WHERE t.oid = 23"))
    assert _columns(out) == [("typname", 19), ("values", 1003)] and _rows(out) == [("int4", None)]


def test_result_shapes_follow_the_persona_major() -> None:
    pub15 = _columns(_ok(_client(_state(15)).query("SELECT * FROM pg_publication_tables")))
    pub14 = _columns(_ok(_client(_state(14)).query("SELECT * FROM pg_publication_tables")))
    assert pub15 == [("pubname", 19), ("schemaname", 19), ("tablename", 19), ("attnames", 1003), ("rowfilter", 25)]
    assert pub14 == pub15[:3]
    slots16 = [n for n, _ in _columns(_ok(_client(_state(16)).query("SELECT * FROM pg_replication_slots")))]
    slots17 = [n for n, _ in _columns(_ok(_client(_state(17)).query("SELECT * FROM pg_replication_slots")))]
    assert "conflicting" in slots16 and "failover" not in slots16 and "failover" in slots17


#: A table of many types: typmods, an enum, an array, a two-column key.
_TYPED = {"public.typed": {"columns": [
    {"name": "a", "type": "int8", "key": True}, {"name": "b", "type": "varchar(20)", "key": True},
    {"name": "c", "type": "numeric(10,2)"}, {"name": "d", "type": "timestamptz(3)"}, {"name": "e", "type": "text[]"},
    {"name": "f", "type": {"oid": 16385, "name": "mood", "enum": ["sad", "ok"]}}, {"name": "g", "type": "bpchar(4)"},
    {"name": "h", "type": "float8"}, {"name": "i", "type": "date"}]}}


@pytest.mark.parametrize("major", [10, 11, 12, 15, 18])
def test_information_schema_describes_the_scenario_tables(major: int) -> None:
    """tables, columns, table_constraints and key_column_usage as information_schema.sql
    of each major writes them (compared with real 15 and 16 in test_sql_live): data_type
    spelled as the standard does, lengths, precisions and scales from the typmods, the key
    NOT NULL; sql_identifier is varchar up to 11, name from 12; enforced from 11,
    nulls_distinct from 15; NOT NULL constraints named from OIDs up to 17, after the
    column on 18."""
    state = _state(major, tables=_TYPED, publications={}, transactions=[])
    c = _client(state)
    ident = 1043 if major < 12 else 19
    out = _ok(c.query("SELECT table_catalog, table_name, table_type, is_insertable_into "
                      "FROM information_schema.tables WHERE table_schema = 'public'"))
    assert _columns(out) == [("table_catalog", ident), ("table_name", ident), ("table_type", 1043),
                             ("is_insertable_into", 1043)]
    assert _rows(out) == [("postgres", "typed", "BASE TABLE", "YES")]
    out = _ok(c.query("SELECT column_name, ordinal_position, is_nullable, data_type, character_maximum_length, "
                      "character_octet_length, numeric_precision, numeric_precision_radix, numeric_scale, "
                      "datetime_precision, udt_schema, udt_name FROM information_schema.columns "
                      "WHERE table_name = 'typed' ORDER BY ordinal_position"))
    assert _columns(out)[:3] == [("column_name", ident), ("ordinal_position", 23), ("is_nullable", 1043)]
    assert _rows(out) == [
        ("a", "1", "NO", "bigint", None, None, "64", "2", "0", None, "pg_catalog", "int8"),
        ("b", "2", "NO", "character varying", "20", "80", None, None, None, None, "pg_catalog", "varchar"),
        ("c", "3", "YES", "numeric", None, None, "10", "10", "2", None, "pg_catalog", "numeric"),
        ("d", "4", "YES", "timestamp with time zone", None, None, None, None, None, "3", "pg_catalog", "timestamptz"),
        ("e", "5", "YES", "ARRAY", None, None, None, None, None, None, "pg_catalog", "_text"),
        ("f", "6", "YES", "USER-DEFINED", None, None, None, None, None, None, "public", "mood"),
        ("g", "7", "YES", "character", "4", "16", None, None, None, None, "pg_catalog", "bpchar"),
        ("h", "8", "YES", "double precision", None, None, "53", "2", None, None, "pg_catalog", "float8"),
        ("i", "9", "YES", "date", None, None, None, None, None, "0", "pg_catalog", "date")]
    out = _ok(c.query("SELECT * FROM information_schema.table_constraints ORDER BY constraint_type DESC, "
                      "constraint_name"))
    names = [n for n, _ in _columns(out)]
    assert ("enforced" in names) == (major >= 11) and ("nulls_distinct" in names) == (major >= 15)
    not_null = ["typed_a_not_null", "typed_b_not_null"] if major >= 18 else ["2200_16384_1_not_null",
                                                                              "2200_16384_2_not_null"]
    assert [(r[2], r[6]) for r in _rows(out)] == [("typed_pkey", "PRIMARY KEY"), *((n, "CHECK") for n in not_null)]
    out = _ok(c.query("SELECT kcu.column_name, kcu.ordinal_position FROM information_schema.table_constraints tc "
                      "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
                      "AND kcu.table_schema = tc.table_schema WHERE tc.constraint_type = 'PRIMARY KEY' "
                      "AND tc.table_name = 'typed' ORDER BY kcu.ordinal_position"))
    assert _rows(out) == [("a", "1"), ("b", "2")]
    if major >= 12:  # a stored generated column (as a real 16 shows it)
        gen = _client(_state(major, publications={}, transactions=[], tables={"public.g": {"columns": [
            {"name": "id", "type": "int4", "key": True}, {"name": "twice", "type": "int8", "generated": "id * 2"}]}}))
        assert _rows(_ok(gen.query("SELECT column_name, column_default, is_generated, generation_expression "
                                   "FROM information_schema.columns WHERE table_name = 'g'"))) == [
            ("id", None, "NEVER", None), ("twice", None, "ALWAYS", "(id * 2)")]
    # information_schema is not on the search path; its other views are outside the surface
    assert _error(c.query("SELECT * FROM tables")) == ("42P01", 'relation "tables" does not exist')
    assert _error(c.query("SELECT * FROM information_schema.views"))[0] == "0A000"  # type: ignore[index]


def test_what_is_outside_the_surface_is_a_clear_error_naming_it() -> None:
    c = _client(_state())
    assert _error(c.query("CREATE TABLE t (x int)")) == ("0A000", "the fake walsender does not run CREATE TABLE")
    assert _error(c.query("SELEC 1")) == ("42601", 'syntax error at or near "SELEC"')
    assert _error(c.query("SELECT * FROM nowhere")) == ("42P01", 'relation "nowhere" does not exist')
    assert _error(c.query("SELECT nope FROM pg_class"))[0] == "42703"  # type: ignore[index]
    assert _error(c.query("SELECT no_such_function(1)"))[0] == "42883"  # type: ignore[index]
    assert _error(c.query("SELECT * FROM other.accounts")) == ("42P01", 'relation "other.accounts" does not exist')
    assert _error(c.query("SELECT * FROM accounts FOR UPDATE"))[0] == "0A000"  # type: ignore[index]
    # what the engine would fetch an extension for is named, nothing is fetched
    assert _error(c.query("SELECT '127.0.0.1'::inet")) == ("0A000", 'the fake walsender does not provide the type "inet"')
    # the connection goes on
    assert _rows(_ok(c.query("SELECT 1"))) == [("1",)]


# ------------------------------------------------------------------------------------------
# Slot functions on a plain connection (the 3rd failure)
# ------------------------------------------------------------------------------------------


def test_slot_functions_create_list_decode_and_drop() -> None:
    state = _state()
    c = _client(state)
    out = _ok(c.query("SELECT * FROM pg_create_logical_replication_slot('s', 'pgoutput')"))
    assert _columns(out) == [("slot_name", 19), ("lsn", 3220)]
    (name, lsn), = _rows(out)
    assert name == "s" and parse_lsn(lsn) <= state.scenario.server.start_lsn
    assert _rows(_ok(c.query("SELECT slot_name, plugin, slot_type, active, confirmed_flush_lsn "
                             "FROM pg_replication_slots"))) == [("s", "pgoutput", "logical", "f", lsn)]
    wal = _rows(_ok(c.query("SELECT pg_current_wal_lsn()")))[0][0]
    assert wal is not None and parse_lsn(wal) >= parse_lsn(lsn)
    assert _error(c.query("SELECT * FROM pg_create_logical_replication_slot('s', 'pgoutput')"))[0] == "42710"  # type: ignore[index]

    peek = "SELECT lsn, xid, data FROM pg_logical_slot_{}_binary_changes('s', NULL, NULL, " \
           "'proto_version', '1', 'publication_names', 'pub')"
    out = _ok(c.query(peek.format("peek")))
    assert _columns(out) == [("lsn", 3220), ("xid", 28), ("data", 17)]
    decoder = PgOutputDecoder(protocol_version=1)
    kinds = [type(decoder.decode(bytes.fromhex(data[2:]))).__name__ for _, _, data in _rows(out)]  # type: ignore[index]
    assert kinds == ["Begin", "Relation", "Insert", "Update", "Delete", "Commit"]
    assert len(_rows(_ok(c.query(peek.format("peek"))))) == 6  # peek leaves the slot where it was
    assert len(_rows(_ok(c.query(peek.format("get"))))) == 6
    assert _rows(_ok(c.query(peek.format("get")))) == []  # get consumed them
    assert parse_lsn(_rows(_ok(c.query("SELECT pg_current_wal_lsn()")))[0][0] or "") >= \
        state.history.end_lsn

    assert _error(c.query("SELECT * FROM pg_logical_slot_get_changes('s', NULL, NULL)"))[0] == "22023"  # type: ignore[index]
    out = _ok(c.query("SELECT pg_drop_replication_slot('s')"))
    assert _columns(out) == [("pg_drop_replication_slot", 2278)] and _rows(out) == [("",)]
    assert _rows(_ok(c.query("SELECT slot_name FROM pg_replication_slots"))) == []
    assert _error(c.query("SELECT pg_drop_replication_slot('s')")) == ("42704", 'replication slot "s" does not exist')


# ------------------------------------------------------------------------------------------
# Publication DDL on a replication connection (the 2nd failure)
# ------------------------------------------------------------------------------------------


def _stream(c: Client, publication: str) -> list[Any]:
    """What slot ``keep`` (created before the history happened) would stream for *publication*."""
    out = _ok(c.query("SELECT data FROM pg_logical_slot_peek_binary_changes('keep', NULL, NULL, "
                      f"'proto_version', '1', 'publication_names', '{publication}')"))
    decoder = PgOutputDecoder(protocol_version=1)
    return [decoder.decode(bytes.fromhex((data or "")[2:])) for data, in _rows(out)]


def test_publication_ddl_changes_the_catalog_and_the_stream() -> None:
    state = _state(16)
    c = _client(state, "database")
    _ok(c.query("CREATE_REPLICATION_SLOT keep LOGICAL pgoutput"))
    out = _ok(c.query("DROP PUBLICATION IF EXISTS demo"))
    assert any(isinstance(x, NoticeResponse) for x in out) and CommandComplete("DROP PUBLICATION") in out
    assert CommandComplete("CREATE PUBLICATION") in _ok(c.query("CREATE PUBLICATION demo FOR ALL TABLES"))
    assert _error(c.query("CREATE PUBLICATION demo FOR ALL TABLES")) == ("42710", 'publication "demo" already exists')
    assert _rows(_ok(c.query("SELECT pubname, puballtables, pubinsert, pubtruncate FROM pg_publication "
                             "ORDER BY pubname"))) == [("demo", "t", "t", "t"), ("pub", "f", "t", "t")]
    assert [type(x).__name__ for x in _stream(c, "demo")] == [
        "Begin", "Relation", "Insert", "Update", "Delete", "Commit"]

    # a publication of no table publishes nothing; adding the table publishes it
    _ok(c.query("CREATE PUBLICATION narrow WITH (publish = 'insert')"))
    assert not [x for x in _stream(c, "narrow") if isinstance(x, (m.Insert, m.Update, m.Delete))]
    _ok(c.query("ALTER PUBLICATION narrow ADD TABLE public.accounts (id, name) WHERE (id > 1)"))
    assert _rows(_ok(c.query("SELECT pubname, tablename, attnames, rowfilter FROM pg_publication_tables "
                             "WHERE pubname = 'narrow'"))) == [("narrow", "accounts", "{id,name}", "(id > 1)")]
    assert _rows(_ok(c.query("SELECT prattrs, pg_get_expr(prqual, prrelid) FROM pg_publication_rel r "
                             "JOIN pg_publication p ON p.oid = r.prpubid WHERE p.pubname = 'narrow'"))) == [
        ("1 2", "(id > 1)")]
    assert [type(x).__name__ for x in _stream(c, "narrow") if isinstance(x, (m.Insert, m.Update, m.Delete))] \
        == ["Insert"]
    _ok(c.query("ALTER PUBLICATION narrow DROP TABLE accounts"))
    assert _rows(_ok(c.query("SELECT count(*) FROM pg_publication_tables WHERE pubname = 'narrow'"))) == [("0",)]
    _ok(c.query("ALTER PUBLICATION narrow RENAME TO wide"))
    _ok(c.query("DROP PUBLICATION wide, demo"))
    assert _error(c.query("DROP PUBLICATION wide")) == ("42704", 'publication "wide" does not exist')
    assert _error(c.query("CREATE PUBLICATION x FOR TABLE nowhere")) == ("42P01", 'relation "nowhere" does not exist')
    assert _rows(_ok(c.query("SELECT pubname FROM pg_publication"))) == [("pub",)]


def test_column_lists_and_schemas_need_15() -> None:
    c = _client(_state(14), "database")
    assert _error(c.query("CREATE PUBLICATION p FOR TABLE accounts (id)"))[0] == "42601"  # type: ignore[index]
    assert _error(c.query("CREATE PUBLICATION p FOR TABLES IN SCHEMA public"))[0] == "42601"  # type: ignore[index]
    c = _client(_state(15), "database")
    _ok(c.query("CREATE PUBLICATION p FOR TABLES IN SCHEMA public"))
    assert _rows(_ok(c.query("SELECT tablename FROM pg_publication_tables WHERE pubname = 'p'"))) == [("accounts",)]


# ------------------------------------------------------------------------------------------
# The WAL clock (the 1st failure, and every ordering of the calls)
# ------------------------------------------------------------------------------------------


def _go_demo_flow(state: ServerState) -> list[Any]:
    """The flow of jackc/pglogrepl's example/pglogrepl_demo/main.go, message for message
    (its module is not carried by Debian and the Go module proxy is not reachable here)."""
    c = _client(state, "database")
    _ok(c.query("DROP PUBLICATION IF EXISTS pglogrepl_demo;"))
    _ok(c.query("CREATE PUBLICATION pglogrepl_demo FOR ALL TABLES;"))
    xlogpos = _rows(_ok(c.query("IDENTIFY_SYSTEM")))[0][2]
    _ok(c.query("CREATE_REPLICATION_SLOT pglogrepl_demo TEMPORARY LOGICAL pgoutput "))
    out = c.query(f"START_REPLICATION SLOT pglogrepl_demo LOGICAL {xlogpos} (proto_version '2', "
                  "publication_names 'pglogrepl_demo', messages 'true', streaming 'true')")
    decoder = PgOutputDecoder(protocol_version=2, streaming="on", messages=True)
    got = []
    for msg in out:
        if isinstance(msg, CopyData):
            payload = decode_copy_data(msg.data)
            if isinstance(payload, XLogData):
                got.append(decoder.decode(payload.data))
    c.copy_done()
    c.terminate()  # its temporary slot goes with it
    return got


def test_the_go_client_demo_flow_receives_the_scenario() -> None:
    got = _go_demo_flow(_state(16))
    assert [type(x).__name__ for x in got] == ["Begin", "Relation", "Insert", "Update", "Delete", "Commit"]


def test_the_go_client_demo_flow_after_a_stream_ran() -> None:
    """Run again against the same server, the Go demo's temporary slot is made after the
    scenario's transaction committed: it receives nothing, as from a real server (snapbuild.c:
    the slot's consistent point is past the commit)."""
    state = _state(16)
    assert _go_demo_flow(state)
    assert _go_demo_flow(state) == []


def test_history_per_slot_gives_every_new_slot_the_scenario() -> None:
    """``server.history: per_slot``: a slot made after a stream ran still has its consistent
    point before the history and, streamed from it, receives every transaction (which no real
    server does); a bad value is a scenario error naming the choices."""
    state = _state(16, server={"version": "16.4", "history": "per_slot"})
    start = state.scenario.server.start_lsn
    for i in range(2):
        c = _client(state, "database")
        cp = parse_lsn(_rows(_ok(c.query(f"CREATE_REPLICATION_SLOT s{i} LOGICAL pgoutput")))[0][1] or "")
        assert cp <= start
        out = c.query(f"START_REPLICATION SLOT s{i} LOGICAL 0/0 (proto_version '1', publication_names 'pub')")
        tags = [p.data[:1] for x in out if isinstance(x, CopyData)
                if isinstance(p := decode_copy_data(x.data), XLogData)]
        assert tags == [b"B", b"R", b"I", b"U", b"D", b"C"]
    with pytest.raises(ScenarioError, match="once or per_slot") as info:
        _state(16, server={"version": "16.4", "history": "every"})
    assert info.value.path == "server.history" and "'every'" in info.value.found


#: The calls a client can make, in any order: IDENTIFY_SYSTEM, pg_current_wal_lsn(), a slot
#: made by the replication command or by SQL, START_REPLICATION of the oldest slot not yet
#: streamed from 0/0 or from the last position the server reported.
_CALLS = st.lists(st.sampled_from(["identify", "wal_lsn", "create", "sql_create", "start", "start_told"]),
                  min_size=1, max_size=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_CALLS)
def test_positions_come_in_a_real_servers_order(calls: list[str]) -> None:
    """The positions the server reports (xlogpos, pg_current_wal_lsn(), consistent points)
    never go back, before or after the history happened; a slot made at time t has a
    consistent point at or after every position reported and every walEnd sent before t;
    a stream carries exactly the scenario's transactions that commit at or after where it
    starts (the later of its slot's consistent point and the position asked for: logical.c
    CreateDecodingContext, snapbuild.c SnapBuildXactNeedsSkip), so a slot made after the
    history streamed receives none of them; a stream's walEnd never goes back."""
    state = _state(16, transactions=[
        {"changes": [{"insert": "public.accounts", "new": {"id": 10 + i, "name": f"n{i}", "amount": "1"}}]}
        for i in range(3)])
    repl = _client(state, "database")
    plain = _client(state)
    reported: list[int] = []  # xlogpos, pg_current_wal_lsn(), consistent points, in order
    streamed = 0  # the furthest walEnd any stream sent
    slots: list[tuple[str, int]] = []  # made, not yet streamed: (name, consistent point)
    commits = [ev.commit_lsn for ev in state.history.events if isinstance(ev, TxnEvent)]
    assert len(commits) == 3
    for i, call in enumerate(calls):
        if call == "identify":
            reported.append(parse_lsn(_rows(_ok(repl.query("IDENTIFY_SYSTEM")))[0][2] or ""))
        elif call == "wal_lsn":
            reported.append(parse_lsn(_rows(_ok(plain.query("SELECT pg_current_wal_lsn()")))[0][0] or ""))
        elif call in ("create", "sql_create"):
            if call == "create":
                out = repl.query(f"CREATE_REPLICATION_SLOT s{i} LOGICAL pgoutput")
            else:
                out = plain.query(f"SELECT slot_name, lsn FROM pg_create_logical_replication_slot('s{i}', 'pgoutput')")
            cp = parse_lsn(_rows(_ok(out))[0][1] or "")
            assert all(cp >= p for p in reported) and cp >= streamed, (cp, reported, streamed)
            reported.append(cp)
            slots.append((f"s{i}", cp))
        elif call in ("start", "start_told") and slots:
            name, cp = slots.pop(0)
            since = reported[-1] if call == "start_told" else 0
            c = _client(state, "database")
            out = c.query(f"START_REPLICATION SLOT {name} LOGICAL {format_lsn(since)} "
                          "(proto_version '1', publication_names 'pub')")
            payloads = [decode_copy_data(x.data) for x in out if isinstance(x, CopyData)]
            got = [p.data[:1] for p in payloads if isinstance(p, XLogData)]
            expected = sum(1 for lsn in commits if lsn >= max(cp, since))
            assert got.count(b"C") == expected, (call, cp, since, commits)
            if not expected:
                assert got == []
            ends = [p.wal_end for p in payloads if isinstance(p, (XLogData, PrimaryKeepalive)) and p.wal_end]
            assert ends == sorted(ends) and all(e >= max(cp, since) for e in ends)
            streamed = max([streamed, *ends])
        if call in ("identify", "wal_lsn"):
            assert reported[-1] >= streamed  # the server's position is past what any stream sent
        assert reported == sorted(reported), reported


def test_copy_reads_the_rows_the_slots_snapshot_sees() -> None:
    """Table sync copies in the snapshot of the slot it made (SNAPSHOT 'use'): made before the
    history, the initial rows, also when the COPY runs after another client streamed; made
    after it, what the history left; with ``server.history: per_slot`` always the initial
    rows, since every slot receives the history."""
    def copy_after_slot(state: ServerState, slot: str) -> list[bytes]:
        c = _client(state, "database")
        _ok(c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ"))
        _ok(c.query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'use')"))
        out = c.query("COPY public.accounts TO STDOUT")
        _ok(c.query("COMMIT"))
        return [x.data for x in out if isinstance(x, CopyData)]

    for history, after in (("once", [b"2\trobert\t4\n"]), ("per_slot", [b"1\talice\t10.50\n"])):
        state = _state(16, server={"version": "16.4", "history": history})
        c = _client(state, "database")
        _ok(c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ"))
        _ok(c.query("CREATE_REPLICATION_SLOT before LOGICAL pgoutput (SNAPSHOT 'use')"))
        assert _go_demo_flow(state)  # another client streams: the history happens
        out = c.query("COPY public.accounts TO STDOUT")
        assert [x.data for x in out if isinstance(x, CopyData)] == [b"1\talice\t10.50\n"]
        _ok(c.query("COMMIT"))
        assert copy_after_slot(state, "after") == after, history


def test_sql_identifiers_over_63_bytes_are_reported_as_scan_l_cuts_them() -> None:
    # quoted: kept as written, cut on a character boundary (é is 2 bytes: 31 fit); unquoted:
    # ASCII letters lower-cased first; strings and short names are no identifiers to cut
    assert truncated_identifiers(f'SELECT "{"é" * 40}", {"Ab" * 40} FROM t WHERE x = \'{"z" * 99}\'') == [
        ("é" * 40, "é" * 31), ("ab" * 40, ("ab" * 40)[:63])]
    assert truncated_identifiers("SELECT 1") == [] and truncated_identifiers("SELECT '\ud800' || x") == []


def test_with_queries_run_and_keep_their_columns_origins() -> None:
    c = _client(_state())
    out = c.query("WITH t AS (SELECT relname, oid FROM pg_class WHERE relname = 'accounts') SELECT relname, oid FROM t")
    assert _rows(out) == [("accounts", str(_state().scenario.tables[0].oid))]
    # followed into the WITH query: pg_class's relname and oid (markTargetListOrigin)
    assert [f[1:3] for f in _fields(out)] == [(1259, 2), (1259, 1)]
    out = c.query("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r")
    assert _rows(out) == [("1",), ("2",), ("3",)] and _columns(out) == [("n", 23)]
    # a name of a WITH query shadows no table outside it
    assert _error(c.query("SELECT * FROM (WITH y AS (SELECT 1) SELECT * FROM y) s, y")) == (
        "42P01", 'relation "y" does not exist')
