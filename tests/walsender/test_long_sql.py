"""Plain SQL over 64 Ki characters (walsender/_commands.py MAX_SQL_INLINE): answered, off the
event loop (the core's Compute action), in the connection's order, bounded by a length cap
and a time cap, one at a time per connection, while other connections go on.

Driven without sockets: the test plays the shell, so it decides exactly when a Compute's
work runs; the last tests run the asyncio shell, its worker thread and real sockets."""

from __future__ import annotations

import socket
import time
from typing import Any

from pgwire_spec.walsender import Compute, ServerState, SyncFakeWalsender, Wait
from pgwire_spec.walsender._commands import MAX_SQL_INLINE
from pgwire_spec.walsender.scenario import Limits, Scenario
from pgwire_spec.wire import (
    BackendReader,
    Bind,
    CommandComplete,
    DataRow,
    ErrorResponse,
    Execute,
    Parse,
    Query,
    ReadyForQuery,
    RowDescription,
    StartupMessage,
    Sync,
    encode_message,
)
from pgwire_spec.wire.reader import NeedData

from ._client import Client
from .scenarios import accounts

#: OIDs no catalog holds (past every OID the scenario or the fake assigns).
_NOWHERE = 3_000_000_000
#: How many such OIDs (", 3000000000": 12 characters each) take a statement past the limit.
_PAST_INLINE = MAX_SQL_INLINE // 12 + 100


def _state(**limits: Any) -> ServerState:
    return ServerState(Scenario.from_dict({**accounts(15), "auth": {"method": "trust"}}),
                       limits=Limits(**limits) if limits else None)


def _client(state: ServerState, replication: str | None = None) -> Client:
    c = Client(state)
    c.startup(replication=replication)
    return c


def _in_list(head: str, extra: int, tail: str = "") -> str:
    """*head* (ending in ``IN (`` and at least one value) padded with *extra* OIDs no
    catalog holds, then *tail*."""
    sql = head + "".join(f", {_NOWHERE + i}" for i in range(extra)) + ")" + tail
    assert len(sql) > MAX_SQL_INLINE
    return sql


def _shape(out: list[Any]) -> list[str]:
    names = []
    for m in out:
        if isinstance(m, ErrorResponse):
            names.append("E" + dict(m.fields)["C"])
        elif isinstance(m, CommandComplete):
            names.append(m.command_tag)
        elif isinstance(m, (RowDescription, DataRow, ReadyForQuery)):
            names.append(type(m).__name__)
    return names


def _rows(out: list[Any]) -> list[tuple[Any, ...]]:
    return [m.values for m in out if isinstance(m, DataRow)]


def _until_compute(c: Client) -> Compute:
    """Run the connection until it asks for a Compute (the test holds it)."""
    for _ in range(1000):
        action = c.conn.next_action(c.clock)
        if isinstance(action, Compute):
            return action
        assert not isinstance(action, Wait), "the connection waited instead of asking for a Compute"
        c.reader.feed(action.data)  # type: ignore[attr-defined]
    raise AssertionError("no Compute")


def test_a_long_in_list_is_answered_off_the_loop_as_the_short_one() -> None:
    c = _client(_state())
    short = "SELECT t.oid, t.typname FROM pg_type t WHERE t.oid IN (16, 23, 25, 1043) ORDER BY t.oid"
    expected = c.query(short)
    assert not c.computes and _shape(expected)[:2] == ["RowDescription", "DataRow"]
    long = _in_list("SELECT t.oid, t.typname FROM pg_type t WHERE t.oid IN (16, 23, 25, 1043", _PAST_INLINE,
                    " ORDER BY t.oid")
    assert len(long) > MAX_SQL_INLINE
    out = c.query(long)
    assert len(c.computes) == 1
    assert _rows(out) == _rows(expected) and _shape(out) == _shape(expected)


def test_the_statements_after_a_long_one_run_after_its_answer_in_order() -> None:
    c = _client(_state())
    long = _in_list("SELECT count(*) FROM pg_type WHERE oid IN (23", _PAST_INLINE)
    out = c.query(f"SELECT 1; {long}; SELECT 'after'")
    assert _shape(out) == ["RowDescription", "DataRow", "SELECT 1"] * 3 + ["ReadyForQuery"]
    assert _rows(out) == [(b"1",), (b"1",), (b"after",)]
    # An error in the long one: what follows does not run, one ReadyForQuery.
    broken = _in_list("SELECT count(*) FROM pg_type WHERE oid IN (23", _PAST_INLINE, " AND AND")
    out = c.query(f"{broken}; SELECT 'not run'")
    assert _shape(out) == ["E42601", "ReadyForQuery"]
    assert "syntax error at or near" in dict(next(m for m in out if isinstance(m, ErrorResponse)).fields)["M"]


def test_a_long_publication_list_changes_the_publications_and_an_error_undoes_it() -> None:
    state = _state()
    c = _client(state)
    listed = "CREATE PUBLICATION many FOR TABLE " + ", ".join(["public.accounts"] * 5000)
    assert len(listed) > MAX_SQL_INLINE
    assert _shape(c.query(listed)) == ["CREATE PUBLICATION", "ReadyForQuery"]
    many = state.scenario.publication("many")
    assert many is not None and many.tables == ("public.accounts",)
    # A later error in the Query's implicit transaction undoes it, as in a block.
    undone = listed.replace("many", "undone")
    assert _shape(c.query(f"{undone}; SELECT * FROM nope")) == ["CREATE PUBLICATION", "E42P01", "ReadyForQuery"]
    assert state.scenario.publication("undone") is None
    out = c.query(f"BEGIN; {undone}")
    assert _shape(out) == ["BEGIN", "CREATE PUBLICATION", "ReadyForQuery"] and out[-1].status == "T"
    assert _shape(c.query("ROLLBACK")) == ["ROLLBACK", "ReadyForQuery"]
    assert state.scenario.publication("undone") is None and state.scenario.publication("many") is not None


def test_a_long_statement_may_create_a_slot_on_the_worker() -> None:
    state = _state()
    c = _client(state)
    out = c.query(_in_list("SELECT slot_name FROM pg_create_logical_replication_slot('long_s', 'pgoutput') "
                           "WHERE 1 IN (1", _PAST_INLINE))
    assert len(c.computes) == 1 and _rows(out) == [(b"long_s",)] and "long_s" in state.slots
    b = _client(state, replication="database")
    assert _shape(b.query("DROP_REPLICATION_SLOT long_s"))[-2:] == ["DROP_REPLICATION_SLOT", "ReadyForQuery"]


def test_a_statement_over_the_cap_is_refused_unread_naming_the_cap() -> None:
    c = _client(_state(max_sql_length=100_000))
    long = _in_list("SELECT 1 WHERE 1 IN (1", 20_000)
    out = c.query(long)
    assert not c.computes and _shape(out) == ["E0A000", "ReadyForQuery"]
    detail = dict(next(m for m in out if isinstance(m, ErrorResponse)).fields)["D"]
    assert f"{len(long):,} characters" in detail and "at most 100,000" in detail


def test_the_extended_protocol_still_refuses_one_over_64_kib_saying_so() -> None:
    c = _client(_state())
    c.send(Parse("", _in_list("SELECT 1 WHERE 1 IN (1", _PAST_INLINE), ()), Sync())
    out = c.pump()
    assert not c.computes and _shape(out) == ["E0A000", "ReadyForQuery"]
    fields = dict(next(m for m in out if isinstance(m, ErrorResponse)).fields)
    assert "in the extended query protocol" in fields["D"] and fields["H"] == "Send it as a simple Query."


def test_past_its_time_a_statement_is_canceled_and_the_connection_goes_on() -> None:
    c = _client(_state())
    c.timed_out = True
    out = c.query(_in_list("SELECT 1 WHERE 1 IN (1", _PAST_INLINE) + "; SELECT 'not run'")
    assert _shape(out) == ["E57014", "ReadyForQuery"]
    fields = dict(next(m for m in out if isinstance(m, ErrorResponse)).fields)
    assert fields["M"] == "canceling statement due to statement timeout" and "sql_timeout" in fields["D"]
    c.timed_out = False
    assert _rows(c.query("SELECT 2")) == [(b"2",)]


def test_one_at_a_time_and_the_others_go_on_meanwhile() -> None:
    state = _state()
    a = _client(state)
    b = _client(state, replication="database")
    e = _client(state)
    a.send(Query(_in_list("SELECT count(*) FROM pg_type WHERE oid IN (23", _PAST_INLINE)), Query("SELECT 'second'"))
    held = _until_compute(a)
    # While a's work is out: a reads nothing more and hands out nothing else.
    assert isinstance(a.conn.next_action(a.clock), Wait)
    # Another connection's replication command is answered at once ...
    assert _shape(b.query("IDENTIFY_SYSTEM")) == ["RowDescription", "DataRow", "IDENTIFY_SYSTEM", "ReadyForQuery"]
    # ... its SQL is queued behind a's (a Compute of its own) ...
    assert _rows(b.query("SELECT 'b'")) == [(b"b",)] and len(b.computes) == 1
    # ... and an extended-protocol exchange is held until the worker is free.
    e.send(Parse("", "SELECT 'e'", ()), Bind("", "", (), (), ()), Execute("", 0), Sync())
    assert _shape(e.pump()) == [] and e.waits[-1].deadline is not None
    a.conn.computed(held.work(lambda: False))
    out = a.pump()
    assert _shape(out) == ["RowDescription", "DataRow", "SELECT 1", "ReadyForQuery"] * 2
    assert _rows(out) == [(b"1",), (b"second",)]
    assert _rows(e.pump()) == [(b"e",)]


# ------------------------------------------------------------------------------------------
# The asyncio shell: the work on a worker thread, the loop serving the others meanwhile
# ------------------------------------------------------------------------------------------


class _Socket:
    """A v3 client on a socket (trust authentication)."""

    def __init__(self, server: SyncFakeWalsender, replication: str | None = None) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=120)
        self.reader = BackendReader()
        params = [("user", "postgres"), ("database", "postgres")]
        if replication is not None:
            params.append(("replication", replication))
        self.sock.sendall(encode_message(StartupMessage(parameters=tuple(params))))
        self.until_ready()

    def until_ready(self) -> list[Any]:
        out: list[Any] = []
        while not out or not isinstance(out[-1], ReadyForQuery):
            ev = self.reader.next_event()
            if isinstance(ev, NeedData):
                data = self.sock.recv(1 << 16)
                assert data, "the server closed the connection"
                self.reader.feed(data)
            else:
                out.append(ev)
        return out

    def query(self, sql: str) -> list[Any]:
        self.sock.sendall(encode_message(Query(sql)))
        return self.until_ready()


def _eventually(what: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "not within two minutes"
        time.sleep(0.01)


def test_while_a_worker_parses_a_long_statement_another_connection_is_answered() -> None:
    scenario = Scenario.from_dict({**accounts(15), "auth": {"method": "trust"}})
    with SyncFakeWalsender(scenario) as server:
        a, b = _Socket(server), _Socket(server, replication="database")
        try:
            # ~1 MB (under the default cap of 1 Mi characters): seconds of the worker's time
            long = _in_list("SELECT count(*) FROM pg_type WHERE oid IN (23", 80_000)
            assert 900_000 < len(long) <= Limits().max_sql_length
            a.sock.sendall(encode_message(Query(long)))
            _eventually(lambda: server.state.computing)
            assert _shape(b.query("IDENTIFY_SYSTEM"))[-2:] == ["IDENTIFY_SYSTEM", "ReadyForQuery"]
            # answered while the worker still had a's statement
            assert server.state.computing
            assert _rows(a.until_ready()) == [(b"1",)]
            assert _rows(b.query("SELECT 'b'")) == [(b"b",)]
        finally:
            a.sock.close()
            b.sock.close()


def test_past_its_time_the_shell_cancels_the_work_and_the_connection_goes_on() -> None:
    scenario = Scenario.from_dict({**accounts(15), "auth": {"method": "trust"}})
    with SyncFakeWalsender(scenario, limits=Limits(sql_timeout=0.001)) as server:
        a = _Socket(server)
        try:
            out = a.query(_in_list("SELECT count(*) FROM pg_type WHERE oid IN (23", 33_000))
            assert _shape(out) == ["E57014", "ReadyForQuery"]
            assert _rows(a.query("SELECT 2")) == [(b"2",)]
            _eventually(lambda: not server.state.computing)
        finally:
            a.sock.close()
