"""Real traffic both ways: pg_recvlogical (libpq) talks to a real PostgreSQL 15 through a
relay that reads every byte with FrontendReader and BackendReader and forwards it
unchanged. Every message must decode, and re-encode to exactly the bytes that crossed."""

from __future__ import annotations

import selectors
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from pgwire_spec import (
    Begin,
    Commit,
    DecodeError,
    Insert,
    PgOutputDecoder,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
)
from pgwire_spec.servers import Server
from pgwire_spec.wire import (
    CLOSED,
    NEED_DATA,
    AuthenticationCleartextPassword,
    AuthenticationMD5Password,
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendReader,
    CopyBothResponse,
    CopyData,
    FrontendReader,
    GSSENCRequest,
    PasswordMessage,
    Query,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    StartupMessage,
    Terminate,
    WireMessage,
    encode_message,
)
from tests._pg15 import pg15, pg15_fixture  # noqa: F401  (session fixture)

pytestmark = [pytest.mark.live, pytest.mark.clients]

# The server the relay tests use for authentication: one user per method libpq answers.
_HBA = """\
host all postgres 127.0.0.1/32 trust
host all scram_user 127.0.0.1/32 scram-sha-256
host all md5_user 127.0.0.1/32 md5
host all clear_user 127.0.0.1/32 password
"""
pg15_auth = pg15_fixture({"hba_file": "{dir}/pg_hba.conf"}, name="pg15_auth", files={"pg_hba.conf": _HBA})


@dataclass
class Recorded:
    """One relayed connection: the raw bytes and what the readers made of them."""

    frontend_bytes: bytearray = field(default_factory=bytearray)
    backend_bytes: bytearray = field(default_factory=bytearray)
    frontend: list[WireMessage] = field(default_factory=list)
    backend: list[WireMessage] = field(default_factory=list)
    errors: list[DecodeError] = field(default_factory=list)


class Relay(threading.Thread):
    """Accepts clients on a free loopback port and relays each to the server."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections: list[Recorded] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            rec = Recorded()
            self.connections.append(rec)
            self._relay(client, rec)

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)
        self.listener.close()

    def _relay(self, client: socket.socket, rec: Recorded) -> None:
        upstream = socket.create_connection((self.server.host, self.server.port), timeout=30)
        frontend, backend = FrontendReader(), BackendReader()
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ, "F")
        sel.register(upstream, selectors.EVENT_READ, "B")
        open_sides = 2
        try:
            while open_sides:
                events = sel.select(timeout=0.2)
                if not events and self.stopping.is_set():
                    break  # stopped, and nothing more in flight (a client's last Terminate is read)
                for key, _ in events:
                    src: socket.socket = key.fileobj  # type: ignore[assignment]
                    dst = upstream if key.data == "F" else client
                    data = src.recv(65536)
                    if key.data == "F":
                        rec.frontend_bytes += data
                        self._read(frontend, data, rec.frontend, rec, lambda m: _client_said(m, backend))
                    else:
                        rec.backend_bytes += data
                        self._read(backend, data, rec.backend, rec, lambda m: _server_said(m, frontend))
                    if not data:
                        sel.unregister(src)
                        open_sides -= 1
                        try:
                            dst.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                        continue
                    dst.sendall(data)
        finally:
            sel.close()
            client.close()
            upstream.close()

    @staticmethod
    def _read(reader: FrontendReader | BackendReader, data: bytes, out: list[WireMessage],
              rec: Recorded, react: Callable[[WireMessage], None]) -> None:
        reader.feed(data)
        while True:
            try:
                event = reader.next_event()
            except DecodeError as err:
                rec.errors.append(err)
                if reader._error is err:
                    return
                continue
            if event is NEED_DATA or event is CLOSED:
                return
            assert isinstance(event, WireMessage)
            out.append(event)
            react(event)


def _client_said(message: WireMessage, backend: BackendReader) -> None:
    # The client asked for encryption: the server's next byte is the answer.
    if isinstance(message, SSLRequest):
        backend.expect_ssl_answer()
    elif isinstance(message, GSSENCRequest):
        backend.expect_gssenc_answer()


def _server_said(message: WireMessage, frontend: FrontendReader) -> None:
    # What a server knows from its own authentication state: which 'p' comes next.
    if isinstance(message, AuthenticationSASL):
        frontend.expect_password("sasl-initial")
    elif isinstance(message, AuthenticationSASLContinue):
        frontend.expect_password("sasl-response")


@pytest.fixture
def relay(pg15: Server):  # noqa: F811
    r = Relay(pg15)
    r.start()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture
def auth_relay(pg15_auth: Server):
    r = Relay(pg15_auth)
    r.start()
    try:
        yield r
    finally:
        r.stop()


def _recvlogical(server: Server, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    assert server.bin_dir is not None
    cmd = [str(server.bin_dir / "pg_recvlogical"), "-h", "127.0.0.1", "-p", str(port), "-U", server.user,
           "-d", server.dbname, "--no-loop", *args]
    env = {"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def test_pg_recvlogical_through_the_readers(relay: Relay, pg15: Server, tmp_path: Path) -> None:  # noqa: F811
    suffix = uuid.uuid4().hex[:8]
    table, pub, slot = f"relay_t_{suffix}", f"relay_pub_{suffix}", f"relay_slot_{suffix}"
    with psycopg.connect(pg15.dsn, autocommit=True) as sql:
        sql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
        sql.execute(f"CREATE PUBLICATION {pub} FOR TABLE {table}")
    made = _recvlogical(pg15, relay.port, "--slot", slot, "--create-slot", "-P", "pgoutput")
    assert made.returncode == 0, made.stderr
    with psycopg.connect(pg15.dsn, autocommit=True) as sql:
        sql.execute(f"INSERT INTO {table} VALUES (1, 'one'), (2, NULL)")
        endpos = sql.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
    out = tmp_path / "stream.bin"
    started = _recvlogical(pg15, relay.port, "--slot", slot, "--start", "-E", endpos, "-f", str(out),
                           "-o", "proto_version=1", "-o", f"publication_names={pub}")
    assert started.returncode == 0, started.stderr
    dropped = _recvlogical(pg15, relay.port, "--slot", slot, "--drop-slot")
    assert dropped.returncode == 0, dropped.stderr
    relay.stop()

    assert len(relay.connections) == 3
    for rec in relay.connections:
        assert rec.errors == []
        # Every message re-encodes to exactly the bytes that crossed, in both directions.
        assert b"".join(encode_message(m) for m in rec.frontend) == bytes(rec.frontend_bytes)
        assert b"".join(encode_message(m) for m in rec.backend) == bytes(rec.backend_bytes)
        startup = next(m for m in rec.frontend if isinstance(m, StartupMessage))
        assert startup.params["replication"] == "database"
        assert startup.params["application_name"] == "pg_recvlogical"
        assert Query("IDENTIFY_SYSTEM") in rec.frontend
        assert isinstance(rec.frontend[-1], Terminate)

    streaming = relay.connections[1]
    assert CopyBothResponse(0, ()) in streaming.backend
    decoder = PgOutputDecoder(protocol_version=1)
    changes = []
    for m in streaming.backend:
        if isinstance(m, CopyData) and isinstance(payload := decode_copy_data(m.data), XLogData):
            changes.append(decoder.decode(payload.data))
    kinds = [type(c) for c in changes]
    assert kinds[0] is Begin and kinds[-1] is Commit and kinds.count(Insert) == 2, kinds
    feedback = [decode_copy_data(m.data) for m in streaming.frontend if isinstance(m, CopyData)]
    assert feedback and all(isinstance(f, StandbyStatusUpdate) for f in feedback)


def test_password_scram_md5_and_cleartext_through_the_readers(auth_relay: Relay, pg15_auth: Server) -> None:
    with psycopg.connect(pg15_auth.dsn, autocommit=True) as sql:
        for user, encryption in (("scram_user", "scram-sha-256"), ("md5_user", "md5"), ("clear_user", "md5")):
            sql.execute(f"SET password_encryption = '{encryption}'")
            sql.execute(f"DROP ROLE IF EXISTS {user}")
            sql.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw-{user}'")
    for user in ("scram_user", "md5_user", "clear_user"):
        psycopg.connect(host="127.0.0.1", port=auth_relay.port, user=user, password=f"pw-{user}",
                        dbname="postgres", sslmode="disable", connect_timeout=10).close()
    auth_relay.stop()

    scram, md5, clear = auth_relay.connections
    for rec in (scram, md5, clear):
        assert rec.errors == []
        assert b"".join(encode_message(m) for m in rec.frontend) == bytes(rec.frontend_bytes)
        assert b"".join(encode_message(m) for m in rec.backend) == bytes(rec.backend_bytes)
        assert AuthenticationOk() in rec.backend
    # SCRAM: no -PLUS without TLS; libpq's client-first-message has an empty user name.
    assert scram.backend[0] == AuthenticationSASL(("SCRAM-SHA-256",))
    first, final = scram.frontend[1], scram.frontend[2]
    assert isinstance(first, SASLInitialResponse) and first.mechanism == "SCRAM-SHA-256"
    assert first.data is not None and first.data.startswith(b"n,,n=,r=")
    assert isinstance(final, SASLResponse) and final.data.startswith(b"c=biws,r=")
    assert isinstance(scram.backend[1], AuthenticationSASLContinue)
    assert isinstance(scram.backend[2], AuthenticationSASLFinal) and scram.backend[2].data.startswith(b"v=")
    # MD5: "md5" + 32 hex digits; cleartext: the password itself.
    assert isinstance(md5.backend[0], AuthenticationMD5Password) and len(md5.backend[0].salt) == 4
    assert isinstance(md5.frontend[1], PasswordMessage) and len(md5.frontend[1].password) == 35
    assert md5.frontend[1].password.startswith(b"md5")
    assert clear.backend[0] == AuthenticationCleartextPassword()
    assert clear.frontend[1] == PasswordMessage(b"pw-clear_user")
