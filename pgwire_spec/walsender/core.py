"""The sans-IO core of the fake walsender: one :class:`ServerState` per server, one
:class:`Connection` per client, no sockets, no asyncio, no clock of its own.

The I/O shell (:mod:`.server`) drives a connection with two calls::

    conn.receive_data(data)          # bytes from the socket; b"" when the client closed
    action = conn.next_action(now)   # Send(bytes) | Wait(deadline) | Close(reset, crash)

``next_action`` handles every buffered client message, then produces output. While a
replication stream runs it hands out at most :data:`CHUNK` bytes per Send, so the shell's
write buffer — and the server's memory — stays bounded when a consumer is slow: the shell
asks for more only after the socket drained (backpressure). ``Wait(deadline)`` means
"nothing to do until more bytes arrive or *deadline* (the shell's monotonic clock) passes"
— the next keepalive, a time-triggered fault, the end of a stall.

The conversation follows the docs' "Message Flow" and "Streaming Replication Protocol"
chapters and what real servers do (walsender.c, basebackup.c, auth.c) and clients expect
(pg_recvlogical.c, libpqwalreceiver.c, fe-auth.c); errata in ``spec/errata.yaml``.
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CommandSyntaxError, DecodeError, OptionError
from ..lsn import format_lsn
from ..pgoutput.decoder import PgOutputDecoder
from ..replication import commands as rc
from ..replication import frames
from ..replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
)
from ..wire import (
    AuthenticationCleartextPassword,
    AuthenticationMD5Password,
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendKeyData,
    CancelRequest,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyFail,
    CopyOutResponse,
    DataRow,
    EmptyQueryResponse,
    ErrorResponse,
    FieldDescription,
    FrontendReader,
    GSSENCRequest,
    NegotiateProtocolVersion,
    NoticeResponse,
    ParameterStatus,
    PasswordMessage,
    Query,
    ReadyForQuery,
    RowDescription,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    StartupMessage,
    Terminate,
    encode_message,
)
from ..wire.reader import NeedData
from . import _sql
from ._auth import Authenticator, AuthStep, SecretCache
from ._history import History, _Tables, compile_history
from ._render import Notice, Plan, Write, render
from .faults import Fault, FaultBook, last_fired, modify_payload
from .personas import Persona, ServerError, StreamOptions, persona
from .scenario import Scenario
from .stream import Stream
from .transcript import Entry, Transcript

__all__ = ["ServerState", "Connection", "SlotState", "Send", "Wait", "Close", "Action", "CHUNK"]

#: Most bytes handed out per Send while streaming.
CHUNK = 1 << 16
#: Seconds between 1970-01-01 and 2000-01-01 (the protocol's epoch).
_PG_EPOCH_UNIX = 946684800



def pg_now() -> int:
    """The protocol's TimestampTz for now (µs since 2000-01-01 UTC)."""
    return int((time.time() - _PG_EPOCH_UNIX) * 1_000_000)


# ------------------------------------------------------------------------------------------
# Connection phases
# ------------------------------------------------------------------------------------------

#: The phases a connection goes through. ``closing``: a FATAL or a Terminate is queued, no
#: more input is read; ``closed``: the shell was told to close. Input is dispatched only in
#: the first four.
PHASES = ("startup", "auth", "ready", "streaming", "closing", "closed")
INPUT_PHASES = ("startup", "auth", "ready", "streaming")

#: What the connection does with a frontend message, by kind.
MESSAGE_KINDS = ("encryption", "cancel", "startup", "password", "query", "terminate", "copy", "other")
_KIND_OF: dict[type, str] = {
    SSLRequest: "encryption", GSSENCRequest: "encryption", CancelRequest: "cancel",
    StartupMessage: "startup", PasswordMessage: "password", SASLInitialResponse: "password",
    SASLResponse: "password", Query: "query", Terminate: "terminate", CopyData: "copy",
    CopyDone: "copy", CopyFail: "copy",
}


def message_kind(msg: Any) -> str:
    """The row of :data:`TRANSITIONS` a frontend message falls in."""
    return _KIND_OF.get(type(msg), "other")


_STARTUP = frozenset({"startup", "auth", "ready", "closing"})
_AUTH = frozenset({"auth", "ready", "closing"})
_READY = frozenset({"ready", "streaming", "closing"})
_STREAM = frozenset({"streaming", "ready", "closing"})
_CLOSING = frozenset({"closing"})

#: (phase, message kind) -> (action, the phases the connection can be in afterwards).
#: The docs' "Message Flow" chapter, as postgres.c / postmaster.c and walsender.c run it.
TRANSITIONS: dict[tuple[str, str], tuple[str, frozenset[str]]] = {
    # Startup (ProcessStartupPacket): SSLRequest/GSSENCRequest are answered 'N' and the
    # client goes on in plain text; a CancelRequest flags its target and closes; a
    # StartupMessage authenticates (auth) or, with trust, is welcomed (ready); anything else
    # is "invalid startup packet layout", FATAL.
    ("startup", "encryption"): ("startup", frozenset({"startup"})),
    ("startup", "cancel"): ("startup", frozenset({"startup"})),
    ("startup", "startup"): ("startup", _STARTUP),
    ("startup", "password"): ("startup", _CLOSING),
    ("startup", "query"): ("startup", _CLOSING),
    ("startup", "terminate"): ("startup", _CLOSING),
    ("startup", "copy"): ("startup", _CLOSING),
    ("startup", "other"): ("startup", _CLOSING),
    # Authentication (auth.c): only a password/SASL response goes on; a Terminate just
    # ends the exchange (libpq does that when it has no password); the rest is FATAL
    # "expected password response". Untyped startup packets cannot be read once startup is
    # over (the reader then reads typed messages only); handed one, the connection is FATAL.
    ("auth", "password"): ("auth", _AUTH),
    ("auth", "terminate"): ("auth", frozenset({"auth"})),
    ("auth", "encryption"): ("protocol_violation", _CLOSING),
    ("auth", "cancel"): ("protocol_violation", _CLOSING),
    ("auth", "startup"): ("protocol_violation", _CLOSING),
    ("auth", "query"): ("auth", _CLOSING),
    ("auth", "copy"): ("auth", _CLOSING),
    ("auth", "other"): ("auth", _CLOSING),
    # Ready (PostgresMain's loop): a simple Query runs (a START_REPLICATION enters
    # streaming, a fatal error closes); Terminate closes; CopyData/Done/Fail after a COPY
    # the server ended are ignored, as PostgreSQL does; any other message type is FATAL.
    ("ready", "query"): ("query", _READY),
    ("ready", "terminate"): ("terminate", frozenset({"ready"})),
    ("ready", "copy"): ("ignore", frozenset({"ready"})),
    ("ready", "encryption"): ("protocol_violation", _CLOSING),
    ("ready", "cancel"): ("protocol_violation", _CLOSING),
    ("ready", "startup"): ("protocol_violation", _CLOSING),
    ("ready", "password"): ("protocol_violation", _CLOSING),
    ("ready", "other"): ("protocol_violation", _CLOSING),
    # Streaming (walsender.c ProcessRepliesIfAny): every message goes to the running stream
    # (logical, physical WAL or BASE_BACKUP), which answers CopyData/CopyDone/Terminate and
    # refuses the rest; it ends in ready (CopyDone) or closing. Untyped startup packets are
    # not read here (see auth).
    **{("streaming", kind): ("stream", _STREAM) for kind in MESSAGE_KINDS},
    ("streaming", "encryption"): ("protocol_violation", _CLOSING),
    ("streaming", "cancel"): ("protocol_violation", _CLOSING),
    ("streaming", "startup"): ("protocol_violation", _CLOSING),
}

_ACTIONS = {
    "startup": "_act_startup", "auth": "_act_auth", "query": "_act_query", "terminate": "_act_terminate",
    "ignore": "_act_ignore", "protocol_violation": "_act_protocol_violation", "stream": "_act_stream",
}


# ------------------------------------------------------------------------------------------
# Actions
# ------------------------------------------------------------------------------------------


class Action:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Send(Action):
    data: bytes


@dataclass(frozen=True, slots=True)
class Wait(Action):
    """Nothing to do until bytes arrive or *deadline* (None: no deadline) passes."""

    deadline: float | None


@dataclass(frozen=True, slots=True)
class Close(Action):
    """Close the connection: ``reset`` with RST; ``crash``: every connection of the server."""

    reset: bool = False
    crash: bool = False


# ------------------------------------------------------------------------------------------
# Server-wide state
# ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SlotState:
    name: str
    kind: str  # logical | physical
    plugin: str | None
    database: str | None
    confirmed_flush: int
    restart_lsn: int
    two_phase: bool = False
    failover: bool = False
    temporary: bool = False
    #: The connection using the slot (START_REPLICATION), or None.
    active: int | None = None
    #: The connection that created a temporary slot.
    owner: int | None = None


class ServerState:
    """Everything the connections of one fake server share: the scenario (compiled once),
    the persona, the slots, the faults' bookkeeping, the transcript and a plan cache."""

    def __init__(self, scenario: Scenario, *, record: bool = True, clock: Callable[[], float] = time.monotonic,
                 extra_faults: list[Fault] | None = None, wall_clock: Callable[[], float] = time.time,
                 pid: int | None = None, random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        """*clock* is the monotonic clock deadlines are measured on, *wall_clock* the time
        of day (Unix seconds) sendTime fields carry, *pid* the first backend pid handed out
        (by default derived from this process), *random_bytes* the source of cancel keys,
        salts and nonces: pass fixed ones to replay a connection byte for byte."""
        self.scenario = scenario
        self.wall_clock = wall_clock
        self.random_bytes = random_bytes
        self.persona: Persona = persona(scenario.server.major)
        self.history: History = compile_history(scenario)
        self.version = scenario.server.version
        self.clock = clock
        self.started = clock()
        self.transcript: Transcript | None = Transcript() if record else None
        self.faults = FaultBook(list(scenario.faults) + list(extra_faults or []))
        self.secrets = SecretCache(scenario.auth.passwords, random_bytes)
        self.slots: dict[str, SlotState] = {}
        start = scenario.server.start_lsn
        for s in scenario.slots:
            self.slots[s.name] = SlotState(
                s.name, "logical" if s.plugin else "physical", s.plugin,
                scenario.server.database if s.plugin else None,
                s.confirmed_flush if s.confirmed_flush is not None else start, start,
                s.two_phase, False, s.temporary)
        #: The server's current WAL position: the end of the scenario's history, growing
        #: with keepalive ``advance``.
        self.wal_lsn = max(self.history.end_lsn, start)
        self.connections: dict[int, Connection] = {}
        self.count = 0
        self.down_until = -1.0
        self._pid = pid - 1 if pid is not None else 20000 + (os.getpid() % 1000) * 10
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._frames: dict[tuple[Any, ...], list[tuple[int, bytes]]] = {}
        self.closed_connections = 0

    # -- connections -----------------------------------------------------------------------
    def connect(self, peer: str = "127.0.0.1") -> Connection:
        self.count += 1
        conn = Connection(self, self.count, peer)
        self.connections[conn.id] = conn
        return conn

    def forget(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)
        for slot in list(self.slots.values()):
            if slot.active == conn.id:
                slot.active = None
            if slot.temporary and slot.owner == conn.id:
                del self.slots[slot.name]

    def pg_now(self) -> int:
        """The protocol's TimestampTz for now on the wall clock (µs since 2000-01-01 UTC)."""
        return int((self.wall_clock() - _PG_EPOCH_UNIX) * 1_000_000)

    def next_pid(self) -> int:
        self._pid += 1
        return self._pid

    def record(self, entry: Entry) -> None:
        if self.transcript is not None:
            self.transcript.add(entry)

    def elapsed(self) -> float:
        return self.clock() - self.started

    # -- plans -----------------------------------------------------------------------------
    def plan(self, options: StreamOptions, start: int) -> Plan:
        key = (options, start)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 64:
                self._plans.clear()
                self._frames.clear()
            plan = render(self.history, self.persona, options, start)
            self._plans[key] = plan
        return plan

    def add_fault(self, fault: Fault) -> None:
        self.faults.add(fault)


# ------------------------------------------------------------------------------------------
# One connection
# ------------------------------------------------------------------------------------------

_FATAL_RULES = frozenset({"unknown-message-tag", "length-out-of-range", "truncated", "unsupported-protocol-version",
                          "unknown-request-code", "unexpected-data"})


@dataclass(slots=True)
class _Stream:
    """A running START_REPLICATION … LOGICAL."""

    slot: SlotState
    options: StreamOptions
    plan: Plan
    started: float
    index: int = 0  # next plan item
    sent: int = 0  # XLogData messages sent
    wal_end: int = 0  # highest position sent
    done_keepalive: bool = False
    next_keepalive: float = 0.0
    faults: list[int] = field(default_factory=list)
    paused_until: float | None = None
    paused_forever: bool = False
    #: The server sent CopyDone (a shutdown): it sends nothing more and waits for the
    #: client's CopyDone.
    done_sending: bool = False
    decoder: PgOutputDecoder | None = None


class Connection:
    """One client connection's conversation (sans-IO)."""

    def __init__(self, server: ServerState, conn_id: int, peer: str) -> None:
        self.server = server
        self.id = conn_id
        self.peer = peer
        self.reader = FrontendReader()
        self.out: list[bytes] = []
        self.phase = "startup"  # startup | auth | ready | streaming | closing | closed
        self.params: dict[str, str] = {}
        self.user = ""
        self.database: str | None = None
        self.replication = "false"  # false | database | physical
        self.auth: Authenticator | None = None
        self.pid = server.next_pid()
        self.secret = server.random_bytes(4)
        self.tx = "I"
        self.stream: _Stream | None = None
        #: The running stream (a :class:`~pgwire_spec.walsender.stream.Stream`: logical,
        #: physical WAL or BASE_BACKUP) while the phase is ``streaming``.
        self.delegate: Stream | None = None
        self.close_action: Close | None = None
        self.eof = False
        self.cancel_requested = False
        self.bytes_sent = 0
        self.messages_sent = 0
        #: Positions the client reported ('r'): write, flush, apply.
        self.positions = (0, 0, 0)
        self._record(event="connected")

    # -- recording and sending -------------------------------------------------------------
    def _record(self, direction: str = "B", message: Any = None, payload: Any = None, pgoutput: Any = None,
                event: str | None = None) -> None:
        if self.server.transcript is not None:
            self.server.record(Entry(self.id, direction, self.server.elapsed(), message, payload, pgoutput, event))

    def send(self, message: Any) -> None:
        data = encode_message(message)
        self.out.append(data)
        self.messages_sent += 1
        if self.server.transcript is not None:
            payload = None
            if isinstance(message, CopyData) and self.phase == "streaming":
                try:
                    payload = decode_copy_data(message.data)
                except DecodeError:
                    payload = None
            self._record("B", message, payload)

    def send_error(self, err: ServerError) -> None:
        fields = err.fields()
        if err.severity in ("WARNING", "NOTICE", "INFO", "LOG", "DEBUG"):
            self.send(NoticeResponse(fields))
        else:
            self.send(ErrorResponse(fields))

    def fatal(self, err: ServerError, *, reset: bool = False) -> None:
        if err.severity not in ("FATAL", "PANIC"):
            err = ServerError(err.sqlstate, err.message, severity="FATAL", detail=err.detail, hint=err.hint)
        self.send_error(err)
        self.close_action = Close(reset=reset)
        self.phase = "closing"

    # -- the shell's calls -----------------------------------------------------------------
    def receive_data(self, data: bytes) -> None:
        if self.eof:
            return
        if not data:
            self.eof = True
        try:
            self.reader.feed(bytes(data))
        except ValueError:
            pass

    def next_action(self, now: float) -> Action:
        if self.phase == "closed":
            return Close()
        if self.out:
            return self._flush()
        if self.close_action is not None:
            self.phase = "closed"
            self._record(event="reset" if self.close_action.reset else "closed")
            self.server.forget(self)
            return self.close_action
        stream = self.stream
        if stream is not None and self.phase == "streaming":
            if stream.paused_forever:
                if self.eof:
                    return self._gone()
                return Wait(None)
            if stream.paused_until is not None:
                if now < stream.paused_until:
                    if self.eof:
                        return self._gone()
                    return Wait(stream.paused_until)
                stream.paused_until = None
        self._handle_input(now)
        if self.out:
            return self._flush()
        if self.close_action is not None:
            return self.next_action(now)
        if self.eof and self.phase != "closed":
            return self._gone()
        if self.phase == "streaming" and self.delegate is not None:
            return self.delegate.produce(now)
        return Wait(None)

    def _gone(self) -> Action:
        self.phase = "closed"
        self._record(event="closed")
        self.server.forget(self)
        return Close()

    def _flush(self) -> Action:
        data = b"".join(self.out) if len(self.out) > 1 else self.out[0]
        self.out = []
        self.bytes_sent += len(data)
        return Send(data)

    # -- input -----------------------------------------------------------------------------
    def _handle_input(self, now: float) -> None:
        while self.close_action is None and self.phase not in ("closing", "closed"):
            try:
                ev = self.reader.next_event()
            except DecodeError as err:
                self._bad_input(err)
                continue
            if isinstance(ev, NeedData) or not hasattr(ev, "tag"):
                return
            self._dispatch(ev, now)
            if self.stream is not None and (self.stream.paused_until is not None or self.stream.paused_forever):
                return

    def _bad_input(self, err: DecodeError) -> None:
        self._record("F", event=f"malformed input: {err}")
        if self.phase in ("startup", "auth") or err.rule in _FATAL_RULES:
            self.fatal(ServerError("08P01", "invalid frontend message", detail=str(err)))
            return
        self.send_error(ServerError("08P01", "invalid frontend message", detail=str(err)))
        if self.phase == "ready":
            self._ready()

    def _dispatch(self, msg: Any, now: float) -> None:
        if not isinstance(msg, CopyData) or self.server.transcript is None:
            self._record("F", msg)
        action, _ = TRANSITIONS[(self.phase, message_kind(msg))]
        getattr(self, _ACTIONS[action])(msg, now)

    # -- the table's actions ---------------------------------------------------------------
    def _act_startup(self, msg: Any, now: float) -> None:
        self._startup(msg)

    def _act_auth(self, msg: Any, now: float) -> None:
        self._auth_message(msg)

    def _act_query(self, msg: Any, now: float) -> None:
        self._query(msg.sql, now)

    def _act_terminate(self, msg: Any, now: float) -> None:
        self.close_action = Close()

    def _act_ignore(self, msg: Any, now: float) -> None:
        pass

    def _act_protocol_violation(self, msg: Any, now: float) -> None:
        # A message without a type byte (SSLRequest, CancelRequest, StartupMessage) is only
        # read before startup completes; a caller handing one later gets the same FATAL.
        kind = ord(msg.tag) if isinstance(msg.tag, str) and len(msg.tag) == 1 else 0
        self.fatal(ServerError("08P01", f"invalid frontend message type {kind}"))

    def _act_stream(self, msg: Any, now: float) -> None:
        assert self.delegate is not None
        self.delegate.input(msg, now)

    # -- what a stream may use (walsender.stream) ------------------------------------------
    def record(self, direction: str = "B", message: Any = None, payload: Any = None, *,
               event: str | None = None) -> None:
        """Add to the transcript (when the server records one)."""
        self._record(direction, message, payload, event=event)

    def result(self, columns: tuple[tuple[str, int], ...], rows: Any, tag: str) -> None:
        """Send a command's result set: RowDescription, DataRows, CommandComplete."""
        self._result(columns, rows, tag)

    def keepalive(self, wal_end: int, reply_requested: bool) -> None:
        """Send a Primary keepalive stamped with the server's wall clock."""
        self._keepalive(wal_end, reply_requested)

    @staticmethod
    def check_slot_name(name: str) -> None:
        """Raise the ServerError a real server gives for an invalid slot name."""
        Connection._check_slot_name(name)

    def start_stream(self, stream: Stream) -> None:
        """Enter the ``streaming`` phase with *stream* running it."""
        self.delegate = stream
        self.phase = "streaming"

    def finish_stream(self) -> None:
        """Leave the ``streaming`` phase: back to commands, ReadyForQuery."""
        self.delegate = None
        self.phase = "ready"
        self._ready()

    def close(self, *, reset: bool = False, crash: bool = False) -> None:
        """Close the connection once the queued output is sent."""
        self.close_action = Close(reset=reset, crash=crash)
        self.phase = "closing"

    # -- startup and authentication --------------------------------------------------------
    def _startup(self, msg: Any) -> None:
        if isinstance(msg, (SSLRequest, GSSENCRequest)):
            # No TLS, no GSSAPI: 'N', and the client goes on in plain text.
            self.out.append(b"N")
            self._record("B", event="answered 'N'")
            return
        if isinstance(msg, CancelRequest):
            for other in list(self.server.connections.values()):
                if other.pid == msg.process_id and other.secret == msg.secret_key:
                    other.cancel_requested = True
            self.close_action = Close()
            return
        if not isinstance(msg, StartupMessage):
            self.fatal(ServerError("08P01", "invalid startup packet layout"))
            return
        params = dict(msg.parameters)
        self.params = params
        if msg.protocol_version & 0xFFFF or any(k.startswith("_pq_.") for k in params):
            self.send(NegotiateProtocolVersion(0, tuple(k for k in params if k.startswith("_pq_."))))
        user = params.get("user")
        if not user:
            self.fatal(ServerError("28000", "no PostgreSQL user name specified in startup packet"))
            return
        self.user = user
        repl = params.get("replication", "false").lower()
        if repl == "database":
            self.replication = "database"
        elif repl in ("true", "on", "yes", "1"):
            self.replication = "physical"
        elif repl in ("false", "off", "no", "0"):
            self.replication = "false"
        else:
            self.fatal(ServerError("22023", f'invalid value for parameter "replication": "{params["replication"]}"',
                                   hint="Valid values are: \"false\", 0, \"true\", 1, \"database\"."))
            return
        if self.server.clock() < self.server.down_until:
            self.fatal(ServerError("57P03", "the database system is starting up"))
            return
        db = params.get("database") or user
        if self.replication != "physical":
            if db != self.server.scenario.server.database:
                self.fatal(ServerError("3D000", f'database "{db}" does not exist'))
                return
            self.database = db
        auth = self.server.scenario.auth
        refuse = False
        for i in self.server.faults.for_connection(params, "auth"):
            if self.server.faults.fire(i):
                refuse = True
                self._record(event="fault:refuse_auth")
        self.auth = Authenticator(auth.method, user, auth.passwords, self.server.secrets, refuse=refuse,
                                  random_bytes=self.server.random_bytes)
        self.phase = "auth"
        try:
            step = self.auth.start()
        except ServerError as err:
            self.fatal(err)
            return
        self._auth_step(step)

    def _auth_step(self, step: AuthStep) -> None:
        if step.kind == "ok":
            self.send(AuthenticationOk())
            self._welcome()
            return
        if step.kind == "cleartext":
            self.send(AuthenticationCleartextPassword())
        elif step.kind == "md5":
            self.send(AuthenticationMD5Password(step.data))
        elif step.kind == "sasl":
            self.send(AuthenticationSASL((step.data.decode(),)))
        elif step.kind == "sasl-continue":
            self.send(AuthenticationSASLContinue(step.data))
        elif step.kind == "sasl-final":
            self.send(AuthenticationSASLFinal(step.data))
            self.send(AuthenticationOk())
            self._welcome()
            return
        assert step.expect is not None
        self.reader.expect_password(step.expect)  # type: ignore[arg-type]

    def _auth_message(self, msg: Any) -> None:
        assert self.auth is not None
        try:
            if isinstance(msg, PasswordMessage):
                step = self.auth.password(msg.password)
            elif isinstance(msg, SASLInitialResponse):
                step = self.auth.sasl_initial(msg.mechanism, msg.data)
            elif isinstance(msg, SASLResponse):
                step = self.auth.sasl_response(msg.data)
            elif isinstance(msg, Terminate):
                self.close_action = Close()
                return
            else:
                raise ServerError("08P01", f"expected password response, got message type {ord(msg.tag)}",
                                  severity="FATAL")
        except ServerError as err:
            self.fatal(err)
            return
        self._auth_step(step)

    def _welcome(self) -> None:
        sc = self.server.scenario.server
        extra = dict(sc.parameters)
        enc = self.params.get("client_encoding", sc.encoding)
        if enc.upper().replace("-", "").replace("_", "") in ("UTF8", "UNICODE"):
            enc = "UTF8"
        for name, value in self.server.persona.parameter_status(
                version=self.server.version, user=self.user,
                application_name=self.params.get("application_name", ""),
                client_encoding=enc, server_encoding=sc.encoding):
            self.send(ParameterStatus(name, extra.pop(name, value)))
        for name, value in extra.items():
            self.send(ParameterStatus(name, value))
        self.send(BackendKeyData(self.pid, self.secret))
        self.phase = "ready"
        self._ready()

    def _ready(self) -> None:
        self.send(ReadyForQuery(self.tx))

    # -- queries ---------------------------------------------------------------------------
    def _query(self, sql: str, now: float) -> None:
        for stmt in _sql.split_statements(sql):
            try:
                if self.tx == "E" and not re.match(r"\s*(rollback|abort|commit|end)\b", stmt, re.IGNORECASE):
                    raise ServerError("25P02", "current transaction is aborted, commands ignored until end "
                                               "of transaction block")
                try:
                    started = self._statement(stmt, now)
                except (ServerError, RecursionError):
                    raise
                except Exception as exc:  # a bug of ours must not take the connection down
                    raise ServerError("XX000", f"internal error of the fake walsender: "
                                               f"{type(exc).__name__}: {exc}") from None
            except ServerError as err:
                self.send_error(err)
                if self.tx == "T":
                    self.tx = "E"
                if err.severity in ("FATAL", "PANIC"):
                    self.close_action = Close()
                    return
                break
            if started:
                return  # START_REPLICATION: ReadyForQuery comes when the stream ends
        self._ready()

    def _statement(self, stmt: str, now: float) -> bool:
        """Run one statement; True when it started streaming."""
        major = self.server.persona.major
        if self.replication != "false":
            try:
                cmd = rc.parse_command(stmt, server_major=major)
            except CommandSyntaxError as exc:
                raise ServerError("42601", "syntax error",
                                  detail=f"expected {exc.expected}, found {exc.found} at position {exc.position}") from None
            except OptionError as exc:
                raise ServerError("42601", str(exc)) from None
            if cmd is not None:
                return self._command(cmd, now)
            if self.replication == "physical":
                raise ServerError("08P01", "cannot execute SQL commands in WAL sender for physical replication")
        ans = _sql.answer(self.server.scenario, self.server.persona, self.server.version, stmt, self.tx != "I")
        self._answer(ans)
        return False

    def _answer(self, ans: Any) -> None:
        if isinstance(ans, _sql.Empty):
            self.send(EmptyQueryResponse())
        elif isinstance(ans, _sql.Command):
            if ans.transaction == "begin":
                if self.tx == "T":
                    self.send_error(ServerError("25001", "there is already a transaction in progress",
                                                severity="WARNING"))
                self.tx = "T"
            elif ans.transaction == "commit":
                tag = "ROLLBACK" if self.tx == "E" else ans.tag
                if self.tx == "I":
                    self.send_error(ServerError("25P01", "there is no transaction in progress", severity="WARNING"))
                self.tx = "I"
                self.send(CommandComplete(tag))
                return
            elif ans.transaction == "rollback":
                if self.tx == "I":
                    self.send_error(ServerError("25P01", "there is no transaction in progress", severity="WARNING"))
                self.tx = "I"
            self.send(CommandComplete(ans.tag))
        elif isinstance(ans, _sql.Result):
            self._result(ans.columns, ans.rows, ans.tag)
            for name, value in ans.parameters:
                self.send(ParameterStatus(name, value))
        elif isinstance(ans, _sql.CopyOut):
            self._copy_out(ans)

    def _result(self, columns: tuple[tuple[str, int], ...], rows: Any, tag: str) -> None:
        self.send(RowDescription(tuple(
            FieldDescription(name, 0, 0, oid, _TYPE_SIZES.get(oid, -1), -1, 0) for name, oid in columns)))
        for row in rows:
            self.send(DataRow(tuple(None if v is None else (v if isinstance(v, bytes) else v.encode())
                                    for v in row)))
        self.send(CommandComplete(tag))

    def _copy_out(self, ans: _sql.CopyOut) -> None:
        fmt = 1 if ans.binary else 0
        rows = [_Tables._complete(ans.table, dict(r)) for r in ans.table.rows]
        if ans.binary:
            # Validate first: an error must come before CopyOutResponse.
            encoded = [_sql.copy_binary_row(ans.columns, r) for r in rows]
        else:
            encoded = [_sql.copy_text_row(ans.columns, r) for r in rows]
        self.send(CopyOutResponse(fmt, tuple(fmt for _ in ans.columns)))
        if ans.binary:
            if encoded:
                encoded[0] = _sql.COPY_BINARY_HEADER + encoded[0]
                for chunk in encoded:
                    self.send(CopyData(chunk))
                self.send(CopyData(_sql.COPY_BINARY_TRAILER))
            else:
                self.send(CopyData(_sql.COPY_BINARY_HEADER + _sql.COPY_BINARY_TRAILER))
        else:
            for chunk in encoded:
                self.send(CopyData(chunk))
        self.send(CopyDone())
        self.send(CommandComplete(f"COPY {len(rows)}"))

    # -- replication commands --------------------------------------------------------------
    def _command(self, cmd: Any, now: float) -> bool:
        persona_ = self.server.persona
        if cmd.keyword not in persona_.commands:
            raise ServerError("42601", "syntax error")
        if self.server.scenario.physical is not None:
            from ..physical.serve import command as physical_command

            handled = physical_command(self, cmd, now)
            if handled is not None:
                return handled
        if isinstance(cmd, rc.IdentifySystem):
            sc = self.server.scenario.server
            self._result((("systemid", 25), ("timeline", persona_.timeline_type), ("xlogpos", 25), ("dbname", 25)),
                         [(sc.system_id, str(sc.timeline), format_lsn(self.server.wal_lsn), self.database)],
                         "IDENTIFY_SYSTEM")
            return False
        if isinstance(cmd, rc.Show):
            name = cmd.name
            value = _sql.answer(self.server.scenario, persona_, self.server.version, f"SHOW {name}")
            assert isinstance(value, _sql.Result)
            self._result(value.columns, value.rows, "SHOW")
            return False
        if isinstance(cmd, rc.TimelineHistory):
            self._timeline_history(cmd.timeline)
            return False
        if isinstance(cmd, rc.CreateReplicationSlot):
            self._create_slot(cmd)
            return False
        if isinstance(cmd, rc.DropReplicationSlot):
            self._drop_slot(cmd)
            return False
        if isinstance(cmd, rc.ReadReplicationSlot):
            self._read_slot(cmd)
            return False
        if isinstance(cmd, rc.AlterReplicationSlot):
            self._alter_slot(cmd)
            return False
        if isinstance(cmd, rc.StartReplication):
            return self._start(cmd, now)
        raise ServerError("0A000", f"{cmd.keyword} is not served by the fake walsender",
                          hint="It serves logical replication: IDENTIFY_SYSTEM, SHOW, TIMELINE_HISTORY, the slot "
                               "commands and START_REPLICATION … LOGICAL.")

    def _timeline_history(self, tli: int) -> None:
        sc = self.server.scenario.server
        fname = f"{tli:08X}.history"
        if tli < 2 or tli > sc.timeline:
            raise ServerError("58P01", f'could not open file "pg_wal/{fname}": No such file or directory')
        lines = []
        for t in range(1, tli):
            lines.append(f"{t}\t{format_lsn(sc.start_lsn - (tli - t) * 0x1000)}\tno recovery target specified\n")
        self._result((("filename", 25), ("content", 17)), [(fname, "".join(lines).encode())], "TIMELINE_HISTORY")

    @staticmethod
    def _check_slot_name(name: str) -> None:
        if not name:
            raise ServerError("42602", f'replication slot name "{name}" is too short')
        if len(name.encode()) >= 64:
            raise ServerError("42622", f'replication slot name "{name}" is too long')
        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ServerError("42602", f'replication slot name "{name}" contains invalid character',
                              hint="Replication slot names may only contain lower case letters, numbers, "
                                   "and the underscore character.")

    def _create_slot(self, cmd: rc.CreateReplicationSlot) -> None:
        persona_ = self.server.persona
        self._check_slot_name(cmd.slot_name)
        opts = cmd.options_dict()
        allowed = {"snapshot", "two_phase", "reserve_wal", "failover"}
        for name in opts:
            if name not in allowed or (name == "failover" and persona_.major < 17) or (
                    name == "two_phase" and persona_.major < 14):
                raise ServerError("42601", f'unrecognized option: {name}')
        if cmd.slot_name in self.server.slots:
            raise ServerError("42710", f'replication slot "{cmd.slot_name}" already exists')
        snapshot = opts.get("snapshot", "export" if cmd.kind == "logical" else None)
        if snapshot is not None and snapshot not in ("export", "nothing", "use"):
            raise ServerError("22023", f'unrecognized value for CREATE_REPLICATION_SLOT option "snapshot": "{snapshot}"')
        try:
            two_phase, failover = cmd.two_phase, cmd.failover
        except OptionError as exc:
            raise ServerError("42601", str(exc)) from None
        start = self.server.scenario.server.start_lsn
        if cmd.kind == "logical":
            if self.replication != "database":
                raise ServerError("55000", "logical decoding requires a database connection")
            if snapshot == "use" and self.tx != "T":
                raise ServerError("25001", "CREATE_REPLICATION_SLOT ... (SNAPSHOT 'use') must be called inside a "
                                           "transaction")
            if snapshot in ("export", "nothing") and self.tx != "I":
                raise ServerError("25001", f"CREATE_REPLICATION_SLOT ... (SNAPSHOT '{snapshot}') must not be "
                                           "called inside a transaction")
            if cmd.plugin != "pgoutput":
                raise ServerError("58P01", f'could not access file "{cmd.plugin}": No such file or directory',
                                  hint="The fake walsender decodes with pgoutput only.")
            slot = SlotState(cmd.slot_name, "logical", cmd.plugin, self.database, start, start, two_phase,
                             failover, cmd.temporary, None, self.id if cmd.temporary else None)
            snapshot_name = f"{self.pid:08X}-{len(self.server.slots) + 1:08X}-1" if snapshot == "export" else None
            row: tuple[str | None, ...] = (cmd.slot_name, format_lsn(start), snapshot_name, cmd.plugin)
        else:
            reserve = cmd.reserve_wal
            slot = SlotState(cmd.slot_name, "physical", None, None, 0, start if reserve else 0, False,
                             failover, cmd.temporary, None, self.id if cmd.temporary else None)
            row = (cmd.slot_name, format_lsn(start) if reserve else None, None, None)
        self.server.slots[cmd.slot_name] = slot
        self._result((("slot_name", 25), ("consistent_point", 25), ("snapshot_name", 25), ("output_plugin", 25)),
                     [row], "CREATE_REPLICATION_SLOT")

    def _slot(self, name: str) -> SlotState:
        slot = self.server.slots.get(name)
        if slot is None:
            raise ServerError("42704", f'replication slot "{name}" does not exist')
        return slot

    def _drop_slot(self, cmd: rc.DropReplicationSlot) -> None:
        slot = self._slot(cmd.slot_name)
        if slot.active is not None and slot.active != self.id:
            other = self.server.connections.get(slot.active)
            raise ServerError("55006", f'replication slot "{slot.name}" is active for PID '
                                       f'{other.pid if other else 0}')
        del self.server.slots[slot.name]
        self.send(CommandComplete("DROP_REPLICATION_SLOT"))

    def _read_slot(self, cmd: rc.ReadReplicationSlot) -> None:
        slot = self.server.slots.get(cmd.slot_name)
        cols = (("slot_type", 25), ("restart_lsn", 25), ("restart_tli", 20))
        if slot is None:
            self._result(cols, [(None, None, None)], "READ_REPLICATION_SLOT")
            return
        if slot.kind == "logical":
            raise ServerError("0A000", "cannot use READ_REPLICATION_SLOT with a logical replication slot")
        tli = str(self.server.scenario.server.timeline) if slot.restart_lsn else None
        self._result(cols, [("physical", format_lsn(slot.restart_lsn) if slot.restart_lsn else None, tli)],
                     "READ_REPLICATION_SLOT")

    def _alter_slot(self, cmd: rc.AlterReplicationSlot) -> None:
        slot = self._slot(cmd.slot_name)
        for name, value in cmd.options:
            if name == "failover":
                slot.failover = value is None or value is True or str(value).lower() in ("true", "on", "1")
            elif name == "two_phase" and self.server.persona.major >= 18:
                slot.two_phase = value is None or value is True or str(value).lower() in ("true", "on", "1")
            else:
                raise ServerError("42601", f"unrecognized option: {name}")
        self.send(CommandComplete("ALTER_REPLICATION_SLOT"))

    # -- streaming -------------------------------------------------------------------------
    def _start(self, cmd: rc.StartReplication, now: float) -> bool:
        if cmd.kind != "logical":
            raise ServerError("0A000", "physical replication is not served by the fake walsender",
                              hint="It serves START_REPLICATION SLOT … LOGICAL.")
        if self.tx != "I":
            raise ServerError("25001", "START_REPLICATION cannot run inside a transaction block")
        if self.replication != "database":
            raise ServerError("55000", "logical decoding requires a database connection")
        assert cmd.slot_name is not None
        slot = self._slot(cmd.slot_name)
        if slot.kind != "logical":
            raise ServerError("55000", "cannot use physical replication slot for logical decoding")
        if slot.database != self.database:
            raise ServerError("55000", f'replication slot "{slot.name}" was not created in this database')
        if slot.active is not None and slot.active != self.id:
            other = self.server.connections.get(slot.active)
            raise ServerError("55006", f'replication slot "{slot.name}" is active for PID '
                                       f'{other.pid if other else 0}')
        options = self.server.persona.parse_options(list(cmd.options))
        start = max(cmd.start_lsn, slot.confirmed_flush)
        plan = self.server.plan(options, start)
        slot.active = self.id
        self.send(CopyBothResponse(0, ()))
        self.start_stream(_LogicalStream(self))
        st = _Stream(slot, options, plan, now, wal_end=start)
        st.faults = self.server.faults.for_connection(self.params, "stream", slot.name)
        st.next_keepalive = now + self.server.scenario.keepalive.interval
        if self.server.transcript is not None and self.server.scenario.raw is not None:
            st.decoder = PgOutputDecoder(**options.decoder_options(), strict=False)
        self.stream = st
        self._keepalive(start, False)
        return True

    def _keepalive(self, wal_end: int, reply_requested: bool) -> None:
        now = self.server.pg_now()
        self.out.append(frames.keepalive(wal_end, now, reply_requested))
        self.messages_sent += 1
        if self.server.transcript is not None:
            self._record("B", None, PrimaryKeepalive(wal_end, now, reply_requested))

    def _end_stream(self, *, copy_done: bool) -> None:
        st = self.stream
        self.stream = None
        self.delegate = None
        if st is not None and st.slot.active == self.id:
            st.slot.active = None
        self.phase = "ready"
        if copy_done:
            self.send(CopyDone())
            self.send(CommandComplete("COPY 0"))
            self.send(CommandComplete("START_REPLICATION"))
        self._ready()

    def _stream_input(self, msg: Any, now: float) -> None:
        st = self.stream
        assert st is not None
        if isinstance(msg, CopyData):
            try:
                payload = decode_copy_data(msg.data)
            except DecodeError as err:
                self._record("F", msg)
                self.fatal(ServerError("08P01", "invalid standby message", detail=str(err)))
                return
            self._record("F", msg, payload)
            if isinstance(payload, StandbyStatusUpdate):
                self.positions = (payload.write_lsn, payload.flush_lsn, payload.apply_lsn)
                # A logical slot's confirmed_flush follows the flush position (walsender.c
                # ProcessStandbyReplyMessage -> LogicalConfirmReceivedLocation).
                if payload.flush_lsn and payload.flush_lsn > st.slot.confirmed_flush:
                    st.slot.confirmed_flush = payload.flush_lsn
                if payload.reply_requested:
                    self._keepalive(max(st.wal_end, self.server.wal_lsn if st.index >= len(st.plan.items) else 0),
                                    False)
            elif isinstance(payload, HotStandbyFeedback):
                pass
            else:
                self.fatal(ServerError("08P01", f'unexpected message type "{payload.tag}"'))
            return
        if isinstance(msg, CopyDone):
            if st.done_sending:
                # walsender.c WalSndDone: both sides sent CopyDone; the server exits
                self.send(CommandComplete("COPY 0"))
                self.close_action = Close()
                self.phase = "closing"
                return
            self._end_stream(copy_done=True)
            return
        if isinstance(msg, CopyFail):
            self.send_error(ServerError("57014", f"COPY from stdin failed: {msg.message}"))
            self._end_stream(copy_done=False)
            return
        if isinstance(msg, Terminate):
            self.close_action = Close()
            return
        self.fatal(ServerError("08P01", f'unexpected message type 0x{ord(msg.tag):02X} during COPY from stdin'))

    def _due_faults(self, st: _Stream, now: float, at_end: bool) -> list[Fault]:
        out = []
        faults = self.server.faults
        for i in list(st.faults):
            f = faults.faults[i]
            due = (f.after_messages is not None and st.sent >= f.after_messages) or (
                f.after_seconds is not None and now - st.started >= f.after_seconds)
            if f.after_messages is None and f.after_seconds is None:
                due = True  # crash with no trigger: at once
            if due:
                st.faults.remove(i)
                if faults.fire(i):
                    out.append(f)
        return out

    def _apply_fault(self, f: Fault, st: _Stream, now: float) -> str:
        """Apply a fault; returns 'stop' (stop producing now), 'go' or a frame modifier."""
        self._record(event=f"fault:{f.action}")
        a = f.action
        if a in ("disconnect", "reset"):
            self.close_action = Close(reset=a == "reset")
            self.phase = "closing"
            return "stop"
        if a == "crash":
            self.close_action = Close(reset=True, crash=True)
            self.phase = "closing"
            if f.seconds:
                self.server.down_until = self.server.clock() + f.seconds
            return "stop"
        if a == "stall":
            if f.seconds is None:
                st.paused_forever = True
            else:
                st.paused_until = now + f.seconds
            return "stop"
        if a == "delay":
            st.paused_until = now + (f.seconds or 0.0)
            return "stop"
        if a == "keepalive":
            self._keepalive(st.wal_end, True)
            return "go"
        if a == "shutdown":
            # A server shutting down ends the COPY itself (walsender.c WalSndDone): CopyDone,
            # then nothing more until the client answers with its CopyDone.
            self.send(CopyDone())
            st.done_sending = True
            return "stop"
        if a == "error":
            err = ServerError(f.sqlstate, f.message, severity=f.severity)
            if f.severity in ("FATAL", "PANIC"):
                self.fatal(err)
            else:
                self.send_error(err)
                self._end_stream(copy_done=False)
            return "stop"
        return a  # corrupt | truncate | duplicate: applied to the next frame

    def _produce(self, now: float) -> Action:
        st = self.stream
        assert st is not None
        if self.cancel_requested:
            self.cancel_requested = False
            self.send_error(ServerError("57014", "canceling statement due to user request"))
            self._end_stream(copy_done=False)
            return self._flush()
        if st.done_sending:
            return Wait(None)
        items = st.plan.items
        n_items = len(items)
        modifiers: list[str] = []
        if st.faults:
            for f in self._due_faults(st, now, st.index >= n_items):
                r = self._apply_fault(f, st, now)
                if r == "stop":
                    return self._flush() if self.out else self.next_action(now)
                if r != "go":
                    modifiers.append(r)
        if st.index < n_items:
            limit = n_items
            if st.faults:
                # Stop at the next positional fault.
                for i in st.faults:
                    f = self.server.faults.faults[i]
                    if f.after_messages is not None and f.after_messages > st.sent:
                        limit = min(limit, st.index + (f.after_messages - st.sent))
            self._frames(st, limit, now, modifiers)
            if self.out:
                return self._flush()
        if st.index >= n_items:
            if not st.done_keepalive:
                st.done_keepalive = True
                st.wal_end = max(st.wal_end, st.plan.end_lsn)
                self._keepalive(st.wal_end, False)
                st.next_keepalive = now + self.server.scenario.keepalive.interval
                return self._flush()
            deadline = st.next_keepalive
            for i in st.faults:
                f = self.server.faults.faults[i]
                if f.after_seconds is not None:
                    deadline = min(deadline, st.started + f.after_seconds)
            if now >= st.next_keepalive:
                ka = self.server.scenario.keepalive
                self.server.wal_lsn += ka.advance
                st.wal_end = max(st.wal_end, self.server.wal_lsn)
                self._keepalive(st.wal_end, ka.reply_requested)
                st.next_keepalive = now + ka.interval
                return self._flush()
            return Wait(deadline)
        return Wait(None)

    def _frames(self, st: _Stream, limit: int, now: float, modifiers: list[str]) -> None:
        """Append XLogData frames for plan items [index, limit), up to about CHUNK bytes."""
        items = st.plan.items
        ts = self.server.pg_now()
        if not modifiers and (st.decoder is None or self.server.transcript is None):
            self._fast_frames(st, limit, ts)
            if st.index >= limit or st.index >= len(items) or not isinstance(items[st.index], Notice):
                return
        out = self.out
        record = self.server.transcript is not None
        pack = frames.xlog_data
        i = st.index
        size = 0
        while i < limit and size < CHUNK:
            item = items[i]
            i += 1
            if isinstance(item, Notice):
                err = item.error
                if err.severity in ("WARNING", "NOTICE"):
                    self.send_error(err)
                    continue
                st.index = i
                self.send_error(err)
                self._end_stream(copy_done=False)
                return
            payload = item.payload
            copies = 1
            if modifiers:
                payload, copies = modify_payload(self.server.faults, payload, modifiers)
                modifiers = []
            lsn = item.lsn
            frame = pack(lsn, lsn, ts, payload)
            for _ in range(copies):
                out.append(frame)
                size += len(frame)
                if record:
                    self._record_write(st, lsn, ts, payload, item)
            st.sent += 1
            self.messages_sent += 1
            if lsn > st.wal_end:
                st.wal_end = lsn
        st.index = i

    def _fast_frames(self, st: _Stream, limit: int, ts: int) -> None:
        """Frames straight from the plan's shared byte string: one slice, sendTime patched in
        place; stops before a Notice."""
        fr = st.plan.frames()
        i = st.index
        stop = min(limit, fr.next_notice[i])
        if stop <= i:
            return
        offsets = fr.offsets
        # the first item whose end lies CHUNK bytes past the start
        j = bisect.bisect_left(offsets, offsets[i] + CHUNK, i + 1, stop + 1)
        j = max(i + 1, min(j, stop))
        self.out.append(fr.run(i, j, frames.send_time(ts)))
        n = j - i
        st.sent += n
        self.messages_sent += n
        top = fr.max_lsn[j - 1]
        if top > st.wal_end:
            st.wal_end = top
        if self.server.transcript is not None:
            self.server.transcript.add_stream(self.id, self.server.elapsed(), st.plan.items, i, j, ts)
        st.index = j

    def _last_fault(self, action: str) -> Fault:
        return last_fired(self.server.faults, action)

    def _record_write(self, st: _Stream, lsn: int, ts: int, payload: bytes, item: Write) -> None:
        msg = item.message
        if msg is None and st.decoder is not None:
            try:
                msg = st.decoder.decode(payload)
            except DecodeError:
                msg = None
        self._record("B", None, XLogData(lsn, lsn, ts, payload), msg)


_TYPE_SIZES = {16: 1, 18: 1, 19: 64, 20: 8, 21: 2, 23: 4, 26: 4, 1700: -1}


class _LogicalStream:
    """The logical replication stream as a :class:`Stream`: the connection runs it itself
    (its plan, faults and keepalives live in ``Connection.stream``)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def input(self, msg: Any, now: float) -> None:
        self.conn._stream_input(msg, now)

    def produce(self, now: float) -> Action:
        if self.conn.stream is None:
            return Wait(None)
        return self.conn._produce(now)

