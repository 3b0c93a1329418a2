"""A real PostgreSQL 15 walsender, spoken to over a plain socket with our encoder and
BackendReader only: SSLRequest, startup with replication=database, IDENTIFY_SYSTEM, an
error, a temporary slot, START_REPLICATION in CopyBoth with real XLogData, CopyDone,
Terminate."""

from __future__ import annotations

import socket
import time
import uuid

import psycopg
import pytest

from pgwire_spec import (
    Begin,
    Commit,
    Insert,
    PgOutputDecoder,
    PrimaryKeepalive,
    Relation,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
    encode,
    format_lsn,
    parse_lsn,
)
from pgwire_spec.servers import Server
from pgwire_spec.wire import (
    CLOSED,
    NEED_DATA,
    AuthenticationOk,
    BackendKeyData,
    BackendReader,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    DataRow,
    ErrorResponse,
    ParameterStatus,
    Query,
    ReadyForQuery,
    RowDescription,
    SSLRequest,
    SSLResponse,
    StartupMessage,
    Terminate,
    WireMessage,
    encode_message,
)
from tests._pg15 import pg15  # noqa: F401  (session fixture)

pytestmark = pytest.mark.live

TIMEOUT = 20.0


class Client:
    """A socket driven by BackendReader and encode_message; nothing else."""

    def __init__(self, server: Server) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
        self.reader = BackendReader()
        self.received: list[WireMessage] = []

    def send(self, *messages: WireMessage) -> None:
        self.sock.sendall(b"".join(encode_message(m) for m in messages))

    def next(self) -> WireMessage | None:
        """The next message; None once the server closed the connection."""
        while True:
            event = self.reader.next_event()
            if event is NEED_DATA:
                self.reader.feed(self.sock.recv(65536))  # b"" (closed) -> CLOSED next
                continue
            if event is CLOSED:
                return None
            assert isinstance(event, WireMessage)
            self.received.append(event)
            return event

    def until(self, cls: type) -> list[WireMessage]:
        out: list[WireMessage] = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            m = self.next()
            assert m is not None, f"server closed the connection; read {out}"
            out.append(m)
            if isinstance(m, cls):
                return out
        raise AssertionError(f"no {cls.__name__} in {TIMEOUT} s; read {out}")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(pg15: Server):  # noqa: F811
    c = Client(pg15)
    try:
        yield c
    finally:
        c.close()


def _start(c: Client, server: Server) -> list[WireMessage]:
    c.send(SSLRequest())
    c.reader.expect_ssl_answer()
    assert c.next() == SSLResponse(False)  # initdb's cluster runs with ssl=off
    c.send(StartupMessage(parameters=(
        ("user", server.user), ("database", server.dbname), ("replication", "database"),
        ("application_name", "pgwire-spec-wire-test"))))
    return c.until(ReadyForQuery)


def test_startup_identify_system_terminate(client: Client, pg15: Server) -> None:  # noqa: F811
    startup = _start(client, pg15)
    assert isinstance(startup[0], AuthenticationOk)  # trust
    params = {m.name: m.value for m in startup if isinstance(m, ParameterStatus)}
    assert params["server_version"].startswith("15.")
    assert params["integer_datetimes"] == "on" and params["client_encoding"] == "UTF8"
    assert params["application_name"] == "pgwire-spec-wire-test"
    keys = [m for m in startup if isinstance(m, BackendKeyData)]
    assert len(keys) == 1 and len(keys[0].secret_key) == 4 and keys[0].process_id > 0
    assert startup[-1] == ReadyForQuery("I")

    client.send(Query("IDENTIFY_SYSTEM"))
    answer = client.until(ReadyForQuery)
    rd, row, done, ready = answer
    assert isinstance(rd, RowDescription) and isinstance(row, DataRow)
    # PostgreSQL 15: timeline is int4 (int8 from 16).
    assert [(f.name, f.type_oid) for f in rd.fields] == [
        ("systemid", 25), ("timeline", 23), ("xlogpos", 25), ("dbname", 25)]
    systemid, timeline, xlogpos, dbname = row.values
    assert systemid is not None and systemid.isdigit() and timeline == b"1" and dbname == b"postgres"
    assert xlogpos is not None and format_lsn(parse_lsn(xlogpos.decode())) == xlogpos.decode()
    assert done == CommandComplete("IDENTIFY_SYSTEM") and ready == ReadyForQuery("I")

    client.send(Query("SELECT nope"))
    error, ready = client.until(ReadyForQuery)
    assert isinstance(error, ErrorResponse)
    assert (error.severity, error.code) == ("ERROR", "42703") and "nope" in (error.message or "")
    assert ready == ReadyForQuery("I")

    client.send(Terminate())
    assert client.next() is None  # the server closes; the reader reports CLOSED


def test_start_replication_in_copy_both(client: Client, pg15: Server) -> None:  # noqa: F811
    suffix = uuid.uuid4().hex[:8]
    table, pub, slot = f"wire_t_{suffix}", f"wire_pub_{suffix}", f"wire_slot_{suffix}"
    with psycopg.connect(pg15.dsn, autocommit=True) as sql:
        sql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
        sql.execute(f"CREATE PUBLICATION {pub} FOR TABLE {table}")
    _start(client, pg15)
    client.send(Query(f'CREATE_REPLICATION_SLOT "{slot}" TEMPORARY LOGICAL pgoutput'))
    rd, row, *_ = client.until(ReadyForQuery)
    assert isinstance(rd, RowDescription) and isinstance(row, DataRow)
    assert [f.name for f in rd.fields] == ["slot_name", "consistent_point", "snapshot_name", "output_plugin"]
    assert row.values[0] == slot.encode() and row.values[3] == b"pgoutput"

    client.send(Query(f"START_REPLICATION SLOT \"{slot}\" LOGICAL 0/0 "
                      f"(proto_version '1', publication_names '{pub}')"))
    assert client.next() == CopyBothResponse(0, ())
    with psycopg.connect(pg15.dsn, autocommit=True) as sql:
        sql.execute(f"INSERT INTO {table} VALUES (1, 'one'), (2, NULL)")

    decoder = PgOutputDecoder(protocol_version=1)
    changes: list[object] = []
    deadline = time.monotonic() + TIMEOUT
    while not any(isinstance(c, Commit) for c in changes) and time.monotonic() < deadline:
        m = client.next()
        assert isinstance(m, CopyData), m
        payload = decode_copy_data(m.data)
        assert encode(payload) == m.data
        if isinstance(payload, XLogData):
            changes.append(decoder.decode(payload.data))
        else:
            assert isinstance(payload, PrimaryKeepalive)
            if payload.reply_requested:
                client.send(CopyData(encode(StandbyStatusUpdate(payload.wal_end, 0, 0, 0, False))))
    assert [type(c) for c in changes] == [Begin, Relation, Insert, Insert, Commit]
    assert [c.new_tuple for c in changes if isinstance(c, Insert)] == [("1", "one"), ("2", None)]

    client.send(CopyDone())
    tail = client.until(ReadyForQuery)
    copy_done = [i for i, m in enumerate(tail) if isinstance(m, CopyDone)]
    assert copy_done, tail
    assert all(isinstance(m, CopyData) for m in tail[: copy_done[0]])  # in-flight keepalives
    # Seen on 15: one more keepalive CopyData can follow the server's CopyDone.
    assert all(isinstance(m, (CopyData, CommandComplete)) for m in tail[copy_done[0] + 1 : -1]), tail
    assert CommandComplete("COPY 0") in tail[copy_done[0]:]
    assert tail[-1] == ReadyForQuery("I")
    client.send(Terminate())
    assert client.next() is None
