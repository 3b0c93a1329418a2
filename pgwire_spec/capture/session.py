"""Whole walsender sessions: a sans-IO logical replication client and a thin socket loop.

:class:`ReplicationClient` touches no socket: its methods return the bytes to send
(startup, IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT, START_REPLICATION … LOGICAL, standby
status updates, CopyDone, Terminate), ``receive_data`` takes what the server sent, and
``next_event`` hands out the server's messages one at a time, CopyData payloads decoded
(XLogData with its pgoutput message, keepalives). Every message, both directions, is kept
in :attr:`ReplicationClient.transcript` with its exact bytes.

:func:`record_session` drives a client over a TCP connection to a real server: it creates
a slot, runs a workload through psycopg, streams the changes until the server's WAL end
seen at the end of the workload, ends the COPY with CopyDone, drops the slot and says
Terminate — the conversation of the docs' "Streaming Replication Protocol" section
(walsender.c, pg_recvlogical.c).
"""

from __future__ import annotations

import functools
import select
import socket
import time
from collections.abc import Callable
from typing import Any

import psycopg

from .. import majors
from ..lsn import format_lsn, parse_lsn
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import PrimaryKeepalive, XLogData, decode_copy_data
from ..servers import Server
from ..wire import (
    NEED_DATA,
    AuthenticationOk,
    CopyBothResponse,
    CopyData,
    DataRow,
    ErrorResponse,
    NeedData,
    ReadyForQuery,
    WireMessage,
)
from ._client import ClientBase, Exchange, Replicated, SessionError
from .options import OptionSet
from .workload import Step

__all__ = [
    "NEED_DATA",
    "SessionError",
    "Exchange",
    "Replicated",
    "ReplicationClient",
    "record_session",
    "session_option_sets",
    "capture_sessions",
    "quote_ident",
    "quote_literal",
]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class ReplicationClient(ClientBase):
    """A sans-IO logical replication client (protocol v3, ``replication=database``)."""

    def __init__(
        self,
        *,
        user: str,
        dbname: str,
        decoder_context: dict[str, Any],
        application_name: str = "pgwire-spec",
    ) -> None:
        super().__init__(user=user, application_name=application_name)
        self.dbname = dbname
        self.decoder = PgOutputDecoder(**decoder_context, strict=False)
        #: Rows of the last query, as text tuples.
        self.rows: list[tuple[str | None, ...]] = []
        #: The highest WAL position the server reported (XLogData / keepalive walEnd).
        self.received_lsn = 0
        #: The end of the last complete transaction received (what is safe to flush).
        self.flushable_lsn = 0

    def _reset_rows(self) -> None:
        self.rows = []

    def _add_row(self, row: DataRow) -> None:
        self.rows.append(tuple(None if v is None else bytes(v).decode() for v in row.values))

    # -- what the client sends -------------------------------------------------------------
    def startup(self) -> bytes:
        return self._startup(
            ("database", self.dbname), ("replication", "database"),
            ("application_name", self.application_name), ("client_encoding", "UTF8"),
        )

    def identify_system(self) -> bytes:
        return self.query("IDENTIFY_SYSTEM")

    def create_slot(self, slot: str, major: int, *, two_phase: bool = False) -> bytes:
        # 15+ takes the parenthesised option list; older servers the NOEXPORT_SNAPSHOT word.
        if majors.major(major).generic_options:
            opts = "SNAPSHOT 'nothing'" + (", TWO_PHASE" if two_phase else "")
            return self.query(f"CREATE_REPLICATION_SLOT {quote_ident(slot)} LOGICAL pgoutput ({opts})")
        return self.query(f"CREATE_REPLICATION_SLOT {quote_ident(slot)} LOGICAL pgoutput NOEXPORT_SNAPSHOT")

    def start_replication(self, slot: str, options: dict[str, str], start_lsn: int = 0) -> bytes:
        opts = ", ".join(f"{quote_ident(k)} {quote_literal(v)}" for k, v in options.items())
        return self.query(f"START_REPLICATION SLOT {quote_ident(slot)} LOGICAL {format_lsn(start_lsn)} ({opts})")

    def status_update(self, *, reply_requested: bool = False) -> bytes:
        """'r': written = received, flushed = the end of the last whole transaction, applied 0
        (as pg_recvlogical reports)."""
        return self._status_update(self.received_lsn, self.flushable_lsn, 0, reply_requested)

    def drop_slot(self, slot: str) -> bytes:
        return self.query(f"DROP_REPLICATION_SLOT {quote_ident(slot)}")

    # -- what the server sends -------------------------------------------------------------
    def next_event(self) -> WireMessage | Replicated | NeedData:
        """The next server message (CopyData while streaming as :class:`Replicated`),
        :data:`NEED_DATA`, or raises :class:`SessionError` for an ErrorResponse."""
        got = self._next_message()
        if isinstance(got, NeedData):
            return NEED_DATA
        msg, data = got
        if isinstance(msg, ErrorResponse):
            self.transcript.append(Exchange("B", data, msg))
            fields = dict(msg.fields)
            raise SessionError(f"server error: {fields.get('S', 'ERROR')} {fields.get('C', '')}: {fields.get('M', '')}")
        if isinstance(msg, CopyData) and self.streaming:
            payload = decode_copy_data(msg.data)
            pg = None
            in_stream = False
            if isinstance(payload, XLogData):
                in_stream = self.decoder.in_stream
                pg = self.decoder.decode(payload.data)
                self.received_lsn = max(self.received_lsn, payload.wal_end)
                if self.decoder.state == "idle" and pg.tag in "CcAKrPpM":
                    self.flushable_lsn = max(self.flushable_lsn, payload.wal_end)
            elif isinstance(payload, PrimaryKeepalive):
                self.received_lsn = max(self.received_lsn, payload.wal_end)
                if self.decoder.state == "idle":
                    self.flushable_lsn = max(self.flushable_lsn, payload.wal_end)
            self.transcript.append(Exchange("B", data, msg, payload, pg, in_stream))
            return Replicated(payload, pg)
        self.transcript.append(Exchange("B", data, msg))
        return msg


class _Conn:
    """The thin I/O shell: a socket and a client."""

    def __init__(self, server: Server, client: ReplicationClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((server.host, server.port), timeout=timeout)
        except OSError as exc:
            raise SessionError(f"cannot connect to {server.host}:{server.port}: {exc}") from None

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def event(self, wait: float | None = None) -> WireMessage | Replicated | None:
        """The next event; None when nothing arrived within *wait* seconds."""
        deadline = time.monotonic() + (self.timeout if wait is None else wait)
        while True:
            ev = self.client.next_event()
            if ev is not NEED_DATA:
                return ev  # type: ignore[return-value]
            left = deadline - time.monotonic()
            if left <= 0:
                if wait is not None:
                    return None
                raise SessionError(f"the server sent nothing for {self.timeout:.0f} s")
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                data = self.sock.recv(1 << 16)
                self.client.receive_data(data)
                if not data:
                    ev = self.client.next_event()
                    if ev is NEED_DATA:
                        raise SessionError("the server closed the connection")
                    return ev  # type: ignore[return-value]

    def until(self, kind: type) -> None:
        while not isinstance(self.event(), kind):
            pass

    def close(self) -> None:
        self.sock.close()


def record_session(
    server: Server,
    opts: OptionSet,
    run_workload: Callable[[], None],
    *,
    slot: str = "pgws_session",
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> ReplicationClient:
    """Record one walsender conversation on *server*: create *slot*, run the workload, stream
    its changes with *opts* until the WAL end seen after the workload, end cleanly."""
    say = progress or (lambda _m: None)
    client = ReplicationClient(user=server.user, dbname=server.dbname, decoder_context=opts.context())
    conn = _Conn(server, client, timeout)
    slot_made = False
    try:
        conn.send(client.startup())
        ev = conn.event()
        if not isinstance(ev, AuthenticationOk):
            raise SessionError(f"session capture needs trust authentication, the server asked for {type(ev).__name__}")
        conn.until(ReadyForQuery)
        conn.send(client.identify_system())
        conn.until(ReadyForQuery)
        conn.send(client.create_slot(slot, server.major, two_phase=opts.two_phase))
        conn.until(ReadyForQuery)
        slot_made = True
        say(f"pg{server.major}: session {opts.name}: slot {slot} created, running the workload")
        run_workload()
        with psycopg.connect(server.dsn, autocommit=True) as sql:
            end = parse_lsn(str(sql.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]))  # type: ignore[index]
        conn.send(client.start_replication(slot, opts.pgoutput_options()))
        conn.until(CopyBothResponse)
        asked = False
        while True:
            ev = conn.event(wait=2.0)
            if isinstance(ev, Replicated) and isinstance(ev.payload, PrimaryKeepalive) and ev.payload.reply_requested:
                conn.send(client.status_update())
            caught_up = client.received_lsn >= end and client.decoder.state == "idle"
            if caught_up:
                break
            if ev is None:
                if asked:
                    raise SessionError(f"streaming stalled at {format_lsn(client.received_lsn)}, "
                                       f"expected to reach {format_lsn(end)}")
                conn.send(client.status_update(reply_requested=True))  # ask for a keepalive
                asked = True
            else:
                asked = False
        say(f"pg{server.major}: session {opts.name}: caught up at {format_lsn(client.received_lsn)}")
        conn.send(client.status_update())
        conn.send(client.copy_done())
        # The server may still send CopyData before its CopyDone; then CommandComplete, ReadyForQuery.
        conn.until(ReadyForQuery)
        conn.send(client.drop_slot(slot))
        conn.until(ReadyForQuery)
        slot_made = False
        conn.send(client.terminate())
        return client
    finally:
        conn.close()
        if slot_made:
            try:
                with psycopg.connect(server.dsn, autocommit=True) as sql:
                    for _ in range(50):
                        try:
                            sql.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                            break
                        except psycopg.errors.ObjectInUse:
                            time.sleep(0.1)
            except psycopg.Error:
                pass


def session_option_sets(major: int, publication: str) -> list[OptionSet]:
    """The option sets recorded as whole sessions: the richest one per major, and from 16
    protocol 4 with streaming = on as well (the 9-byte Stream Abort)."""
    from .options import max_protocol

    top = max_protocol(major)
    if top == 1:
        return [OptionSet("p1", 1, publication)]
    streaming = "parallel" if top >= 4 else "on"
    sets = [OptionSet(f"p{top}-{streaming}-messages", top, publication, streaming=streaming, messages=True)]
    if top >= 4:
        sets.append(OptionSet(f"p{top}-streaming-messages", top, publication, streaming="on", messages=True))
    return sets


def _run_actions(session: Any, wl: Any) -> None:
    for step in wl.actions:
        session.run(step, "workload")
    # make the workload's WAL flushed, so the walsender can send all of it
    for sql in ("BEGIN", "SET LOCAL synchronous_commit = on", "SELECT txid_current()", "COMMIT"):
        session.run(Step(sql), "flush")


def capture_sessions(prov: Any, *, progress: Callable[[str], None] | None = None) -> list[Any]:
    """Start *prov*'s server and record one session per :func:`session_option_sets`;
    returns the :class:`~pgwire_spec.capture.session_fixture.SessionFile` objects."""
    from .live import _drop_builtin, _Session
    from .session_fixture import build_session
    from .workload import MAIN_PUBLICATION, session_workload

    say = progress or (lambda _m: None)
    out = []
    with prov as server:
        say(f"{prov.describe()}: PostgreSQL {server.version} on {server.host}:{server.port}")
        wl = session_workload()
        for opts in session_option_sets(server.major, MAIN_PUBLICATION):
            session = _Session(server)
            try:
                _drop_builtin(session.conn("a"))
                for step in wl.setup:
                    session.run(step, "setup")
                client = record_session(server, opts, functools.partial(_run_actions, session, wl),
                                        progress=progress)
                sf = build_session(client, major=server.major, server_version=server.version,
                                   provider=prov.describe(), opts=opts, workload=wl.name, slot="pgws_session")
                say(f"pg{server.major}: session {opts.name}: {sf.captured} messages, {len(sf.messages)} kept")
                out.append(sf)
            finally:
                try:
                    _drop_builtin(session.conn("a"))
                except Exception:  # pragma: no cover - best effort
                    pass
                session.close()
    return out
