"""The extended query protocol on the fake's connections (sans-IO): what a real 15 answers
to the same messages (seen with a raw client; tests/walsender/test_pgjdbc.py compares the
two live), the skip to Sync after an error, and the refusal on a replication connection."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.walsender._extended import receive_binary
from pgwire_spec.walsender.personas import ServerError
from pgwire_spec.wire import (
    Bind,
    Close,
    CommandComplete,
    DataRow,
    Describe,
    ErrorResponse,
    Execute,
    Flush,
    NoData,
    ParameterDescription,
    Parse,
    Query,
    ReadyForQuery,
    Sync,
)

from ._client import Client
from .scenarios import accounts


def _client(replication: str | None = None) -> Client:
    c = Client(ServerState(Scenario.from_dict({**accounts(15), "auth": {"method": "trust"}})))
    c.startup("postgres", replication=replication)
    assert c.conn.phase == "ready"
    return c


def _run(c: Client, *messages: Any) -> list[Any]:
    c.send(*messages)
    return c.pump()


def _shape(out: list[Any]) -> list[str]:
    """Message names, an error as its SQLSTATE."""
    return [f"E{m.code}" if isinstance(m, ErrorResponse) else type(m).__name__ for m in out]


def test_parse_bind_describe_execute_sync_as_pgjdbc_sends_them() -> None:
    c = _client()
    out = _run(c, Parse("S_1", "SELECT slot_name FROM pg_replication_slots WHERE slot_name = $1", (1043,)),
               Bind("", "S_1", (0,), (b"nope",), ()), Describe("P", ""), Execute("", 0), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "RowDescription", "CommandComplete", "ReadyForQuery"]
    assert [(f.name, f.type_oid, f.format) for f in out[2].fields] == [("slot_name", 19, 0)]
    assert out[3] == CommandComplete("SELECT 0")
    # the named statement stays: bound again with another value
    out = _run(c, Bind("", "S_1", (), (b"x",), ()), Execute("", 0), Sync())
    assert _shape(out) == ["BindComplete", "CommandComplete", "ReadyForQuery"]


def test_describe_statement_gives_parameter_types_and_columns() -> None:
    c = _client()
    out = _run(c, Parse("a", "SELECT $1::int4 AS n, $2 AS t, $3 AS v", (0, 0, 1043)), Describe("S", "a"), Sync())
    assert _shape(out) == ["ParseComplete", "ParameterDescription", "RowDescription", "ReadyForQuery"]
    assert out[1] == ParameterDescription((23, 25, 1043))
    assert [(f.name, f.type_oid) for f in out[2].fields] == [("n", 23), ("t", 25), ("v", 1043)]
    out = _run(c, Parse("b", "SET extra_float_digits = 3"), Describe("S", "b"), Sync())
    assert out[1:3] == [ParameterDescription(()), NoData()]


def test_row_limit_suspends_the_portal_and_counts_each_execute() -> None:
    c = _client()
    sql = "SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid IN (16, 20, 23, 25, 1700) ORDER BY t.oid"
    out = _run(c, Query("BEGIN"), Parse("", sql), Bind("C_1", ""), Execute("C_1", 2), Sync())
    assert _shape(out)[-4:] == ["BindComplete", "DataRow", "DataRow", "PortalSuspended", "ReadyForQuery"][-4:]
    assert out[-1] == ReadyForQuery("T")
    out = _run(c, Execute("C_1", 2), Sync(), Execute("C_1", 2), Sync(), Execute("C_1", 2), Sync())
    assert _shape(out) == ["DataRow", "DataRow", "PortalSuspended", "ReadyForQuery",
                           "DataRow", "CommandComplete", "ReadyForQuery", "CommandComplete", "ReadyForQuery"]
    assert [m.values[0] for m in out if isinstance(m, DataRow)] == [b"int4", b"text", b"numeric"]
    assert [m.command_tag for m in out if isinstance(m, CommandComplete)] == ["SELECT 1", "SELECT 0"]
    out = _run(c, Close("P", "C_1"), Parse("", "COMMIT"), Bind("", ""), Execute("", 1), Sync())
    assert _shape(out) == ["CloseComplete", "ParseComplete", "BindComplete", "CommandComplete", "ReadyForQuery"]
    assert out[-1] == ReadyForQuery("I")


def test_binary_parameters_and_results() -> None:
    c = _client()
    out = _run(c, Parse("", "SELECT $1::int4 + 1 AS n, $2::int8 AS big, $3::bool AS flag, $4::text AS t",
                        (23, 20, 16, 0)),
               Bind("", "", (1, 1, 1, 0), (struct.pack(">i", 41), struct.pack(">q", 7), b"\x01", None), (1, 0, 0, 0)),
               Describe("P", ""), Execute(), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "RowDescription", "DataRow", "CommandComplete",
                           "ReadyForQuery"]
    assert [f.format for f in out[2].fields] == [1, 0, 0, 0]
    assert out[3] == DataRow((struct.pack(">i", 42), b"7", b"t", None))


@pytest.mark.parametrize(("oid", "value", "text"), [
    (21, b"\xff\xfe", "-2"), (23, b"\x00\x00\x06\xa4", "1700"), (20, struct.pack(">q", -5), "-5"),
    (26, b"\xff\xff\xff\xff", "4294967295"), (701, struct.pack(">d", 1.5), "1.5"), (16, b"\x00", "f"),
    (1043, "é".encode(), "é"), (17, b"\x01\xff", "\\x01ff"), (3220, struct.pack(">Q", 0x1_0000_0010), "1/10"),
])
def test_binary_parameter_types(oid: int, value: bytes, text: str) -> None:
    assert receive_binary(oid, value, 1) == text


@pytest.mark.parametrize(("oid", "value", "sqlstate"), [
    (23, b"\x00\x01", "08P01"),   # pq_copymsgbytes: insufficient data left in message
    (23, b"\x00" * 5, "22P03"),   # incorrect binary data format in bind parameter 1
    (25, b"\xff", "22021"),       # not UTF-8
    (1186, b"\x00" * 16, "0A000"),  # interval: no receive function here, said so
])
def test_bad_binary_parameters(oid: int, value: bytes, sqlstate: str) -> None:
    with pytest.raises(ServerError) as exc:
        receive_binary(oid, value, 1)
    assert exc.value.sqlstate == sqlstate


def test_errors_skip_to_sync_as_a_real_server() -> None:
    """The sequence and SQLSTATEs a real 15 answered to the same messages."""
    c = _client()
    out = _run(c,
               Parse("a", "SELECT $1::int4, $2"), Parse("a", "SELECT 1"), Bind("", "a"), Sync(),
               Bind("", "nope"), Sync(),
               Bind("", "a", (), (b"1",), ()), Sync(),
               Parse("", "SELECT 1; SELECT 2"), Sync(),
               Parse("", "SELEC 1"), Bind("", ""), Execute(), Sync(),
               Execute("zz"), Sync(),
               Parse("", "SELECT 1, 2"), Bind("", "", (), (), (1, 0, 1)), Sync(),
               Parse("", "SELECT $1::int4"), Bind("", "", (0, 1), (b"1",), ()), Sync(),
               Describe("S", "nope"), Sync(),
               Close("S", "nope"), Close("P", "nope"), Sync(),
               Parse("", ""), Bind("", ""), Describe("P", ""), Execute(), Sync())
    assert _shape(out) == [
        "ParseComplete", "E42P05", "ReadyForQuery",
        "E26000", "ReadyForQuery",
        "E08P01", "ReadyForQuery",
        "E42601", "ReadyForQuery",
        "E42601", "ReadyForQuery",
        "E34000", "ReadyForQuery",
        "ParseComplete", "E08P01", "ReadyForQuery",
        "ParseComplete", "E08P01", "ReadyForQuery",
        "E26000", "ReadyForQuery",
        "CloseComplete", "CloseComplete", "ReadyForQuery",
        "ParseComplete", "BindComplete", "NoData", "EmptyQueryResponse", "ReadyForQuery"]
    assert out[5].message == 'bind message supplies 1 parameters, but prepared statement "a" requires 2'


def test_an_empty_statement_with_declared_parameters_binds() -> None:
    """Bound, it is still empty (no internal error of the fake). A real 15 fails this Bind with
    its own internal error, XX000 "cache lookup failed for type 0": the fake does not copy that."""
    out = _run(_client(), Parse("a", "", (0, 0)), Bind("", "a", (), (None, None), ()), Execute(), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "EmptyQueryResponse", "ReadyForQuery"]


def test_a_query_after_an_error_is_skipped_until_sync() -> None:
    """As a real 15: every message up to Sync, a simple Query too."""
    c = _client()
    out = _run(c, Parse("", "SELEC"), Query("SELECT 1"), Sync(), Query("SELECT 2"))
    assert _shape(out) == ["E42601", "ReadyForQuery", "RowDescription", "DataRow", "CommandComplete",
                           "ReadyForQuery"]
    assert out[3] == DataRow((b"2",))


def test_an_error_in_a_transaction_block_fails_it() -> None:
    c = _client()
    out = _run(c, Query("BEGIN"), Parse("", "SELECT no_such FROM pg_class"), Bind("", ""), Execute(), Sync(),
               Parse("", "SELECT 1"), Sync(), Parse("", "ROLLBACK"), Bind("", ""), Execute(), Sync())
    assert _shape(out)[-8:] == ["E42703", "ReadyForQuery", "E25P02", "ReadyForQuery",
                                "ParseComplete", "BindComplete", "CommandComplete", "ReadyForQuery"]
    assert [m.status for m in out if isinstance(m, ReadyForQuery)][-3:] == ["E", "E", "I"]


def test_flush_sends_without_ending_the_cycle_and_a_query_drops_the_unnamed_statement() -> None:
    c = _client()
    out = _run(c, Parse("", "SELECT 'x' AS a"), Describe("S", ""), Flush())
    assert _shape(out) == ["ParseComplete", "ParameterDescription", "RowDescription"]
    assert [(f.name, f.type_oid) for f in out[2].fields] == [("a", 25)]
    out = _run(c, Query("SELECT 1"), Bind("", ""), Sync())
    assert _shape(out)[-2:] == ["E26000", "ReadyForQuery"]


def test_a_replication_connection_refuses_the_protocol_until_sync() -> None:
    """A real 15 walsender: 08P01 on the first message, nothing more up to Sync, then
    ReadyForQuery; Flush and Sync alone are served; simple queries go on."""
    c = _client("database")
    out = _run(c, Parse("", "SELECT 1"), Bind("", ""), Execute(), Sync(), Query("IDENTIFY_SYSTEM"))
    assert _shape(out)[:2] == ["E08P01", "ReadyForQuery"]
    assert out[0].message == "extended query protocol not supported in a replication connection"
    assert "CommandComplete" in _shape(out[2:])
    assert _run(c, Flush(), Sync()) == [ReadyForQuery("I")]


def test_a_statement_calling_a_slot_function_is_described_without_running_it() -> None:
    c = _client()
    sql = "SELECT * FROM pg_create_logical_replication_slot($1, 'pgoutput')"
    out = _run(c, Parse("s", sql), Describe("S", "s"), Sync())
    assert _shape(out) == ["ParseComplete", "ParameterDescription", "RowDescription", "ReadyForQuery"]
    assert [(f.name, f.type_oid) for f in out[2].fields] == [("slot_name", 19), ("lsn", 3220)]
    out = _run(c, Bind("", "s", (), (b"jdbc",), ()), Describe("P", ""), Sync())
    assert _shape(out) == ["BindComplete", "RowDescription", "ReadyForQuery"]
    assert not c.state.slots  # neither describing nor binding it created anything
    out = _run(c, Bind("", "s", (), (b"jdbc",), ()), Describe("P", ""), Execute(), Sync())
    assert _shape(out) == ["BindComplete", "RowDescription", "DataRow", "CommandComplete", "ReadyForQuery"]
    assert [f.name for f in out[1].fields] == ["slot_name", "lsn"] and "jdbc" in c.state.slots
    # columns the parse tree cannot type: refused before anything runs
    out = _run(c, Parse("", "SELECT (pg_create_logical_replication_slot('x', 'pgoutput')).slot_name"),
               Bind("", ""), Execute(), Sync())
    assert _shape(out) == ["ParseComplete", "E0A000", "ReadyForQuery"] and "x" not in c.state.slots


def _pubs(c: Client) -> list[str]:
    """The publications made here (the scenario's own "pub" left out)."""
    return [p.name for p in c.state.scenario.publications if p.name != "pub"]


def _step(sql: str) -> list[Any]:
    return [Parse("", sql), Bind("", ""), Execute()]


#: A statement that fails at Execute (42704), on a real server as here.
_FAILS = "SELECT pg_drop_replication_slot('no_such_slot')"


def test_effects_happen_at_execute_and_an_error_before_sync_undoes_publication_ddl() -> None:
    """postgres.c: the messages up to Sync are one implicit transaction."""
    c = _client()
    out = _run(c, Parse("", "CREATE PUBLICATION p0 FOR ALL TABLES"), Bind("", ""), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "ReadyForQuery"] and _pubs(c) == []
    out = _run(c, *_step("CREATE PUBLICATION p1 FOR ALL TABLES"), *_step(_FAILS), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "CommandComplete", "ParseComplete", "BindComplete",
                           "E42704", "ReadyForQuery"]
    assert _pubs(c) == []  # rolled back with the implicit transaction
    # a slot is not transactional: it stays; a slot after publication DDL is 25001
    _run(c, *_step("SELECT * FROM pg_create_logical_replication_slot('s1', 'pgoutput')"),
         *_step(_FAILS), Sync())
    assert "s1" in c.state.slots
    out = _run(c, *_step("CREATE PUBLICATION p2 FOR ALL TABLES"),
               *_step("SELECT * FROM pg_create_logical_replication_slot('s2', 'pgoutput')"), Sync())
    assert _shape(out)[-2:] == ["E25001", "ReadyForQuery"] and "s2" not in c.state.slots and _pubs(c) == []
    # committed at Sync; an explicit block's DDL until ROLLBACK, or an error in it
    _run(c, *_step("CREATE PUBLICATION p3 FOR ALL TABLES"), Sync())
    _run(c, *_step("BEGIN"), *_step("DROP PUBLICATION p3"), *_step("CREATE PUBLICATION p4 FOR ALL TABLES"), Sync())
    assert _pubs(c) == ["p4"]
    _run(c, *_step("ROLLBACK"), Sync())
    assert _pubs(c) == ["p3"]
    out = _run(c, *_step("BEGIN"), *_step("CREATE PUBLICATION p5 FOR ALL TABLES"), Sync(),
               *_step("CREATE PUBLICATION p3 FOR ALL TABLES"), Sync(), *_step("COMMIT"), Sync())
    assert "E42710" in _shape(out) and out[-2] == CommandComplete("ROLLBACK") and _pubs(c) == ["p3"]
    out = _run(c, *_step("BEGIN"), *_step("CREATE PUBLICATION p6 FOR ALL TABLES"), *_step("COMMIT"),
               *_step(_FAILS), Sync())
    assert _pubs(c) == ["p3", "p6"]  # COMMIT ended the transaction before the error


def test_a_simple_query_of_several_statements_is_one_transaction() -> None:
    c = _client()
    out = c.query("CREATE PUBLICATION q1 FOR ALL TABLES; SELECT no_such FROM pg_class")
    assert "E42703" in _shape(out) and _pubs(c) == []
    c.query("CREATE PUBLICATION q2 FOR ALL TABLES")
    c.query("BEGIN")
    c.query("DROP PUBLICATION q2")
    assert _pubs(c) == []
    c.query("ROLLBACK")
    assert _pubs(c) == ["q2"] and c.state.publication_oids["q2"]


def test_statement_effects_and_publication_ddl_over_the_extended_protocol() -> None:
    c = _client()
    out = _run(c, Parse("", "CREATE PUBLICATION p1 FOR TABLE public.accounts"), Bind("", ""), Describe("P", ""),
               Execute(), Sync(),
               Parse("", "SELECT COUNT(1) FROM pg_publication WHERE pubname = $1", (1043,)),
               Bind("", "", (), (b"p1",), ()), Execute(), Sync())
    assert _shape(out) == ["ParseComplete", "BindComplete", "NoData", "CommandComplete", "ReadyForQuery",
                           "ParseComplete", "BindComplete", "DataRow", "CommandComplete", "ReadyForQuery"]
    assert out[3] == CommandComplete("CREATE PUBLICATION")
    assert out[7] == DataRow((b"1",))


# ------------------------------------------------------------------------------------------
# Any sequence: typed answers, never an exception, ReadyForQuery at each Sync
# ------------------------------------------------------------------------------------------

_SQL = st.sampled_from([
    "SELECT 1", "SELECT $1::int4", "SELECT $1, $2", "SELECT typname FROM pg_type WHERE oid = $1", "",
    "SET extra_float_digits = 3", "BEGIN", "COMMIT", "ROLLBACK", "SELECT no_such FROM pg_class",
    "CREATE PUBLICATION p FOR ALL TABLES", "DROP PUBLICATION IF EXISTS p", "SELECT 1; SELECT 2", "SELEC",
    "SELECT * FROM pg_create_logical_replication_slot($1, 'pgoutput')",
]) | st.text(st.characters(exclude_characters="\x00"), max_size=20)  # a String holds no NUL
_NAME = st.sampled_from(["", "a", "b"])
_VALUE = st.none() | st.binary(max_size=9) | st.sampled_from([b"1", b"s1", b"\x00\x00\x00\x07"])
_FORMATS = st.lists(st.sampled_from([0, 1, 2]), max_size=3).map(tuple)
_MESSAGE = st.one_of(
    st.builds(Parse, _NAME, _SQL, st.lists(st.sampled_from([0, 16, 20, 23, 25, 1043, 1186]), max_size=3).map(tuple)),
    st.builds(Bind, _NAME, _NAME, _FORMATS, st.lists(_VALUE, max_size=3).map(tuple), _FORMATS),
    st.builds(Describe, st.sampled_from("SP"), _NAME),
    st.builds(Execute, _NAME, st.integers(-1, 3)),
    st.builds(Close, st.sampled_from("SP"), _NAME),
    st.just(Flush()), st.just(Sync()), st.just(Query("SELECT 1")),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MESSAGE, max_size=12))
def test_any_sequence_gets_typed_answers_and_ready_at_each_sync(messages: list[Any]) -> None:
    c = _client()
    out = _run(c, *messages, Sync())
    assert c.closed is None and c.conn.phase == "ready"
    assert isinstance(out[-1], ReadyForQuery)
    # one per Sync, and one per Query not skipped after an error
    syncs, queries = sum(isinstance(m, Sync) for m in messages) + 1, sum(isinstance(m, Query) for m in messages)
    assert syncs <= sum(isinstance(m, ReadyForQuery) for m in out) <= syncs + queries
    internal = [m for m in out if isinstance(m, ErrorResponse) and m.code == "XX000"]
    assert not internal, internal
