"""pgjdbc as a real client, unmodified (Debian's libpostgresql-jdbc-java), against the fake
and against a real PostgreSQL 15 holding the same tables: the program in
data/pgjdbc/PgjdbcClient.java reads the catalogs over the extended query protocol as a
Debezium connector does on connect (and where ResultSetMetaData says each column comes from), creates a publication and a slot, streams one
transaction through pgjdbc's replication API and acknowledges it; both servers (15, and 18
with the 18 persona) must give it the same output. And the extended protocol's errors, message by message, on both."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from pgwire_spec.servers import Server
from pgwire_spec.wire import (
    BackendReader,
    Bind,
    Close,
    Describe,
    ErrorResponse,
    Execute,
    ParameterStatus,
    Parse,
    Query,
    ReadyForQuery,
    StartupMessage,
    Sync,
    encode_message,
)
from pgwire_spec.wire.reader import NeedData
from tests._pgjdbc import compile_pgjdbc_client
from tests._servers import pg_server  # noqa: F401

from .test_sql_live import _real, fake  # noqa: F401

pytestmark = [pytest.mark.live, pytest.mark.clients]

@pytest.fixture(scope="module")
def pgjdbc_client(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command running the compiled program."""
    return compile_pgjdbc_client(tmp_path_factory.mktemp("pgjdbc"))


def _demo(command: list[str], host: str, port: int, user: str, *extra: str) -> list[str]:
    proc = subprocess.run([*command, "demo", host, str(port), user, *extra], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("major", [15, 18])
def test_pgjdbc_demo_gives_the_same_output_on_the_fake_and_a_real_server(
        pgjdbc_client: list[str], pg_server: Callable[..., Server], fake: Any, major: int) -> None:  # noqa: F811
    server = fake(major)
    ours = _demo(pgjdbc_client, "127.0.0.1", server.port, "postgres")
    real = _real(pg_server, major)
    # On the real server the program writes the scenario's transaction itself.
    theirs = _demo(pgjdbc_client, real.host, real.port, real.user, "--workload")
    assert ours == theirs
    assert ours[-8:] == ["message B", "message R public.accounts", "message I", "message U", "message D",
                         "message C", "confirmed_flush_lsn reached the commit: true", "slot dropped"]
    assert "binary-params row: 42 7 t null" in ours and "bad-query: 42703" in ours
    # ResultSetMetaData found each column's relation by RowDescription's table OID and number
    assert "origins column who: table accounts schema public column name nullable 1 auto-increment false " \
           "type text" in ours
    assert "origins column relname: table pg_class schema pg_catalog column relname nullable 0 " \
           "auto-increment false type name" in ours
    # pgjdbc ran its catalog reads over the extended protocol, its replication over simple queries
    kinds = {type(e.message).__name__ for e in server.transcript.entries if e.direction == "F"}
    assert {"Parse", "Bind", "Describe", "Execute", "Sync", "Close", "Query"} <= kinds


# ------------------------------------------------------------------------------------------
# The extended protocol message by message, on the fake and on a real 15
# ------------------------------------------------------------------------------------------

#: Batches, each ending with Sync; what comes back is compared message name by message name
#: (an error by its SQLSTATE).
BATCHES: list[list[Any]] = [
    [Parse("a", "SELECT $1::int4, $2"), Describe("S", "a"), Parse("a", "SELECT 1"), Bind("", "a"), Sync()],
    [Bind("", "nope"), Sync()],
    [Bind("", "a", (), (b"1",), ()), Sync()],
    [Parse("", "SELECT 1; SELECT 2"), Sync()],
    [Parse("", ""), Bind("", ""), Describe("P", ""), Execute(), Sync()],
    [Execute("zz"), Sync()],
    [Parse("", "SET extra_float_digits = 3"), Bind("", ""), Describe("P", ""), Execute("", 1), Sync()],
    [Describe("S", "nope"), Sync()],
    [Close("S", "nope"), Close("P", "nope"), Sync()],
    [Parse("", "SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid IN (16, 20, 23) ORDER BY t.oid"),
     Bind("p1", "", (), (), (1,)), Execute("p1", 2), Execute("p1", 2), Execute("p1", 2), Sync()],
    [Parse("", "SELECT 1, 2"), Bind("", "", (), (), (1, 0, 1)), Sync()],
    [Parse("", "SELECT $1::int4"), Bind("", "", (1,), (b"\x00\x01",), ()), Sync()],
    [Parse("", "SELECT $1::int4"), Bind("", "", (0, 1), (b"1",), ()), Sync()],
    [Parse("", "SELEC"), Query("SELECT 1"), Sync()],  # a simple Query is skipped too
    # parameter types a real server infers: from a cast, from the catalog column compared
    [Parse("", "SELECT slot_name FROM pg_replication_slots WHERE slot_name = $1 AND active = $2 AND $3::int8 > 0 "
               "AND $4 = plugin"), Describe("S", ""), Sync()],
    [Parse("", "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = $1 OR c.relname = $2"),
     Describe("S", ""), Sync()],
]


def _exchange(host: str, port: int, user: str, replication: bool,
              batches: list[list[Any]] | None = None) -> list[list[str]]:
    params = [("user", user), ("database", "postgres")] + ([("replication", "database")] if replication else [])
    with socket.create_connection((host, port), timeout=20) as sock:
        reader = BackendReader()
        sock.sendall(encode_message(StartupMessage(parameters=tuple(params))))

        def until_ready() -> list[Any]:
            out: list[Any] = []
            while True:
                ev = reader.next_event()
                if isinstance(ev, NeedData):
                    data = sock.recv(65536)
                    assert data, "the server closed the connection"
                    reader.feed(data)
                    continue
                out.append(ev)
                if isinstance(ev, ReadyForQuery):
                    return out

        until_ready()
        answers = []
        for batch in BATCHES if batches is None else batches:
            sock.sendall(b"".join(encode_message(m) for m in batch))
            answers.append([f"E{m.code}" if isinstance(m, ErrorResponse) else
                            f"DataRow{m.values}" if type(m).__name__ == "DataRow" else
                            f"ParameterDescription{m.parameter_types}" if type(m).__name__ == "ParameterDescription"
                            else type(m).__name__
                            for m in until_ready() if not isinstance(m, ParameterStatus)])
    return answers


@pytest.mark.parametrize("replication", [False, True], ids=["plain", "replication"])
def test_extended_protocol_answers_as_a_real_15(pg_server: Callable[..., Server], fake: Any,  # noqa: F811
                                                replication: bool) -> None:
    real = pg_server(15)
    theirs = _exchange(real.host, real.port, real.user, replication)
    ours = _exchange("127.0.0.1", fake(15).port, "postgres", replication)
    assert ours == theirs
    if replication:
        assert all(answer in (["E08P01", "ReadyForQuery"], ["ReadyForQuery"]) for answer in ours)
    else:
        assert ours[9] == ["ParseComplete", "BindComplete", "DataRow(b'bool',)", "DataRow(b'int8',)",
                           "PortalSuspended", "DataRow(b'int4',)", "CommandComplete", "CommandComplete",
                           "ReadyForQuery"]
        assert ours[-2][1] == "ParameterDescription(19, 16, 20, 19)" and ours[-1][1] == "ParameterDescription(26, 19)"


# ------------------------------------------------------------------------------------------
# Effects at Execute, one implicit transaction up to Sync, on the fake and on a real 15
# ------------------------------------------------------------------------------------------


def _step(sql: str) -> list[Any]:
    return [Parse("", sql), Bind("", ""), Execute()]


#: Fails at Execute on both (42704).
_FAILS = "SELECT pg_drop_replication_slot('no_such_slot')"
_PUBS = _step("SELECT count(*) FROM pg_publication WHERE pubname LIKE 'tx%'")
_SLOTS = _step("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'tx%'")
_CREATE_SLOT = "SELECT slot_name FROM pg_create_logical_replication_slot('{}', 'pgoutput')"

TX_BATCHES: list[list[Any]] = [
    [Parse("", "CREATE PUBLICATION tx_p0 FOR ALL TABLES"), Bind("", ""), Sync()],  # bound, never run
    [*_PUBS, Sync()],
    [*_step("CREATE PUBLICATION tx_p1 FOR ALL TABLES"), *_step(_FAILS), Sync()],  # undone by the error
    [*_PUBS, Sync()],
    [*_step(_CREATE_SLOT.format("tx_s1")), *_step(_FAILS), Sync()],  # a slot stays
    [*_SLOTS, Sync()],
    [*_step("CREATE PUBLICATION tx_p2 FOR ALL TABLES"), *_step(_CREATE_SLOT.format("tx_s2")), Sync()],  # 25001
    [*_PUBS, *_SLOTS, Sync()],
    [*_step("BEGIN"), *_step("CREATE PUBLICATION tx_p3 FOR ALL TABLES"), Sync()],
    [*_step("ROLLBACK"), *_PUBS, Sync()],
    [Query("CREATE PUBLICATION tx_q1 FOR ALL TABLES; DROP PUBLICATION tx_none")],  # a simple Query's statements: one too
    [*_PUBS, Sync()],
    [Parse("d", _CREATE_SLOT.format("tx_s3")), Describe("S", "d"), Bind("", "d"), Describe("P", ""), Sync()],
    [*_SLOTS, *_step("CREATE PUBLICATION tx_p4 FOR ALL TABLES"), Sync()],  # committed at Sync
    [*_PUBS, *_step("DROP PUBLICATION tx_p4"), *_step("SELECT pg_drop_replication_slot('tx_s1')"), Sync()],
    [*_step("BEGIN"), *_step(_CREATE_SLOT.format("tx_s4")), Sync()],  # in a block without writes: allowed
    [*_step("ROLLBACK"), *_SLOTS, Sync()],  # and not rolled back
]


def test_statement_effects_and_the_implicit_transaction_as_a_real_15(
        pg_server: Callable[..., Server], fake: Any) -> None:  # noqa: F811
    real = pg_server(15)
    try:
        theirs = _exchange(real.host, real.port, real.user, False, TX_BATCHES)
    finally:
        import psycopg2

        with psycopg2.connect(real.dsn) as conn, conn.cursor() as cur:
            conn.autocommit = True
            cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                        "WHERE slot_name LIKE 'tx%'")
            cur.execute("SELECT pubname FROM pg_publication WHERE pubname LIKE 'tx%'")
            for (name,) in cur.fetchall():
                cur.execute(f"DROP PUBLICATION {name}")
    ours = _exchange("127.0.0.1", fake(15).port, "postgres", False, TX_BATCHES)
    assert ours == theirs
    zero, one = "DataRow(b'0',)", "DataRow(b'1',)"
    assert zero in ours[1] and ours[3] == ours[1] == ours[11]  # not run at Bind; undone by the error
    assert one in ours[5] and ours[6][-2] == "E25001" and ours[7].count(zero) == ours[7].count(one) == 1
    assert zero in ours[9] and ours[10][-2] == "E42704"
    assert ours[12] == ["ParseComplete", "ParameterDescription()", "RowDescription", "BindComplete",
                        "RowDescription", "ReadyForQuery"] and one in ours[13] and one in ours[14]
    assert "DataRow(b'tx_s4',)" in ours[15] and one in ours[16]
