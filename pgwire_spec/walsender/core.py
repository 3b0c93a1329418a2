"""The sans-IO core of the fake walsender: one :class:`ServerState` per server, one
:class:`Connection` per client, no sockets, no asyncio, no clock of its own.

The I/O shell (:mod:`.server`) drives a connection with two calls::

    conn.receive_data(data)          # bytes from the socket; b"" when the client closed
    action = conn.next_action(now)   # Send(bytes) | Wait(deadline) | Close(reset, crash)
                                     # | Compute(work, timeout): conn.computed(work(cancelled))

``next_action`` handles every buffered client message, then produces output. While a
replication stream runs it hands out at most :data:`CHUNK` bytes per Send, so the shell's
write buffer — and the server's memory — stays bounded when a consumer is slow: the shell
asks for more only after the socket drained (backpressure). ``Wait(deadline)`` means
"nothing to do until more bytes arrive or *deadline* (the shell's monotonic clock) passes"
— the next keepalive, a time-triggered fault, the end of a stall.

The conversation follows the docs' "Message Flow" and "Streaming Replication Protocol"
chapters and what real servers do (walsender.c, basebackup.c, auth.c) and clients expect
(pg_recvlogical.c, libpqwalreceiver.c, fe-auth.c); errata in ``spec/errata.yaml``.

This module holds the phase table and :class:`Connection`'s driving loop; what the
connection does is split by what it is: ``_startup`` (startup packet, authentication),
``_commands`` (queries, replication commands), ``_streaming`` (the logical stream), on the
shared types of ``_base``; ``stream`` is the interface every stream implements.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DecodeError
from ..lsn import format_lsn
from ..replication.messages import (
    decode_copy_data,
)
from ..wire import (
    PROTOCOL_3_0,
    CancelRequest,
    CopyData,
    CopyDone,
    CopyFail,
    ErrorResponse,
    FrontendReader,
    GSSENCRequest,
    NoticeResponse,
    PasswordMessage,
    Query,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    StartupMessage,
    Terminate,
    encode_message,
)
from ..wire.reader import NeedData
from ._auth import Authenticator, SecretCache
from ._base import CHUNK, Action, Close, Compute, Send, SlotState, Wait, _Stream
from ._commands import _Commands
from ._engine import SqlEngine
from ._extended import EXTENDED_MESSAGES, _Extended, _Portal
from ._extended import _Statement as _PreparedStatement
from ._history import History, _Tables, compile_history
from ._render import Plan, render
from ._startup import _Startup
from ._streaming import _Streaming
from .faults import Fault, FaultBook, check_slot_fault
from .personas import Persona, ServerError, StreamOptions, persona
from .publications import Publication
from .scenario import Limits, Scenario, Table
from .stream import Stream
from .transcript import Entry, Transcript

__all__ = ["ServerState", "Connection", "ConnectionStatus", "SlotState", "Send", "Wait", "Close", "Compute", "Action",
           "CHUNK"]

#: The shell stops reading a client that has this many unconsumed bytes buffered (and a
#: whole message among them).
INPUT_HIGH_WATER = 1 << 18

#: How often a DROP_REPLICATION_SLOT … WAIT looks whether the slot was released (seconds).
DROP_WAIT_POLL = 0.02

#: Seconds between 1970-01-01 and 2000-01-01 (the protocol's epoch).
_PG_EPOCH_UNIX = 946684800

#: How far before the scenario's first transaction the WAL clock starts, and how far a new
#: slot moves it (an xl_running_xacts record, aligned).
_PRE_HISTORY = 0x800
_RUNNING_XACTS = 0x28
#: The OIDs of publications created start past the scenario's tables.
_FIRST_OWN_OID = 200000


# ------------------------------------------------------------------------------------------
# Connection phases
# ------------------------------------------------------------------------------------------

#: The phases a connection goes through. ``closing``: a FATAL or a Terminate is queued, no
#: more input is read; ``closed``: the shell was told to close. Input is dispatched only in
#: the first four.
PHASES = ("startup", "auth", "ready", "streaming", "closing", "closed")
INPUT_PHASES = ("startup", "auth", "ready", "streaming")

#: What the connection does with a frontend message, by kind.
MESSAGE_KINDS = ("encryption", "cancel", "startup", "password", "query", "extended", "terminate", "copy", "other")
_KIND_OF: dict[type, str] = {
    SSLRequest: "encryption", GSSENCRequest: "encryption", CancelRequest: "cancel",
    StartupMessage: "startup", PasswordMessage: "password", SASLInitialResponse: "password",
    SASLResponse: "password", Query: "query", Terminate: "terminate", CopyData: "copy",
    CopyDone: "copy", CopyFail: "copy", **{cls: "extended" for cls in EXTENDED_MESSAGES},
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
    ("startup", "extended"): ("startup", _CLOSING),
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
    ("auth", "extended"): ("auth", _CLOSING),
    ("auth", "copy"): ("auth", _CLOSING),
    ("auth", "other"): ("auth", _CLOSING),
    # Ready (PostgresMain's loop): a simple Query runs (a START_REPLICATION enters
    # streaming, a fatal error closes); Terminate closes; CopyData/Done/Fail after a COPY
    # the server ended are ignored, as PostgreSQL does; any other message type is FATAL.
    ("ready", "query"): ("query", _READY),
    # The extended query protocol (Parse … Sync) runs on plain connections; a walsender
    # answers its messages with an ERROR up to Sync (see _extended).
    ("ready", "extended"): ("extended", frozenset({"ready", "closing"})),
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
    "ignore": "_act_ignore", "extended": "_act_extended", "protocol_violation": "_act_protocol_violation", "stream": "_act_stream",
}


# ------------------------------------------------------------------------------------------
# Server-wide state
# ------------------------------------------------------------------------------------------


class ServerState:
    """Everything the connections of one fake server share: the scenario (compiled once),
    the persona, the slots, the faults' bookkeeping, the transcript and a plan cache."""

    def __init__(self, scenario: Scenario, *, record: bool = True, clock: Callable[[], float] = time.monotonic,
                 extra_faults: list[Fault] | None = None, wall_clock: Callable[[], float] = time.time,
                 pid: int | None = None, random_bytes: Callable[[int], bytes] = os.urandom,
                 limits: Limits | None = None) -> None:
        """*clock* is the monotonic clock deadlines are measured on, *wall_clock* the time
        of day (Unix seconds) sendTime fields carry, *pid* the first backend pid handed out
        (by default derived from this process), *random_bytes* the source of cancel keys,
        salts and nonces: pass fixed ones to replay a connection byte for byte. *limits*
        replace the scenario's ``server`` limits."""
        self.scenario = scenario
        self.limits: Limits = limits if limits is not None else scenario.server.limits
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
                s.confirmed_flush if s.confirmed_flush is not None else start,
                0 if s.invalidated == "wal_removed" else start,  # its WAL is gone
                s.two_phase, False, s.temporary, hold=s.hold_after_disconnect, invalidated=s.invalidated,
                inactive_since=self.wall_clock())
        # The WAL clock, one per server: every position a client is told (IDENTIFY_SYSTEM's
        # xlogpos, pg_current_wal_lsn(), a new slot's consistent point) is read from it, so
        # they come in the order a real server's WAL gives them. The scenario's transactions
        # happen after every slot: until a client first decodes (START_REPLICATION, the SQL
        # decoding functions) the clock stands before server.start_lsn, each slot created
        # moving it on by a running-xacts record as creating a logical decoding context does
        # (snapbuild.c), never past start_lsn; then it stands at the history's end, growing
        # with keepalive ``advance`` and each slot created since, whose consistent point lies
        # past the history: it receives none of it, as on a real server. With
        # ``server.history: per_slot`` a slot created after that still gets a consistent point
        # before the history (every slot receives it; table sync copies the initial rows),
        # which no real server does. A scenario slot already past start_lsn means the history
        # has happened.
        positions = [p for sl in self.slots.values() for p in (sl.confirmed_flush, sl.restart_lsn)]
        #: The history has happened (see above).
        self.happened = any(p > start for p in positions)
        #: The server's current WAL position.
        self.wal_lsn = (max(self.history.end_lsn, start, *positions) if self.happened
                        else max([max(start - _PRE_HISTORY, 0), *positions]))
        #: The publications' OIDs (pg_publication.oid), by name.
        self.publication_oids: dict[str, int] = {}
        self._oid = _FIRST_OWN_OID
        for pub in scenario.publications:
            self.publication_oids[pub.name] = self.next_oid()
        self._sql: SqlEngine | None = None
        #: The connections whose statement a worker answers now (Compute): while any does,
        #: every other statement for the SQL engine goes to the worker too, after it, so the
        #: engine is used by one thread at a time. A set: the worker removes its own.
        self.computing: set[int] = set()
        #: Held while the slots or the WAL clock change: a worker answering a long statement
        #: may run a slot function while the loop runs a replication command. Uncontended
        #: otherwise.
        self.slots_lock = threading.RLock()
        self.connections: dict[int, Connection] = {}
        self.count = 0
        self.down_until = -1.0
        self._pid = pid - 1 if pid is not None else 20000 + (os.getpid() % 1000) * 10
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._frames: dict[tuple[Any, ...], list[tuple[int, bytes]]] = {}
        self.closed_connections = 0
        for i, f in enumerate(self.faults.faults):
            if f.at_once and self.faults.fire(i):
                self.slot_fault(f, None)  # a slot invalidated or dropped before anyone connects

    # -- connections -----------------------------------------------------------------------
    def connect(self, peer: str = "127.0.0.1", port: int | None = None) -> Connection:
        """A new client from address *peer* and TCP *port* (None: not TCP; the driver knows
        them). Past ``max_connections`` it is not counted among the connections and is
        refused after its startup packet, as the postmaster does."""
        self.count += 1
        conn = Connection(self, self.count, peer, port)
        if len(self.connections) >= self.limits.max_connections:
            conn.too_many = True
        else:
            self.connections[conn.id] = conn
        return conn

    def forget(self, conn: Connection) -> None:
        with self.slots_lock:
            self._forget(conn)

    def _forget(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)
        for slot in list(self.slots.values()):
            if slot.active == conn.id:
                slot.active = None
                if slot.hold > 0 and not slot.temporary:
                    slot.held_until, slot.held_pid = self.clock() + slot.hold, conn.pid
                else:
                    slot.inactive_since = self.wall_clock()
            if slot.temporary and slot.owner == conn.id:
                del self.slots[slot.name]

    # -- slots -----------------------------------------------------------------------------
    def slot_user(self, slot: SlotState, conn_id: int | None = None) -> int | None:
        """The pid the slot is active for, unless free or used by connection *conn_id*
        (0 when held by no connection of this server)."""
        if slot.held_until is not None:
            if self.clock() < slot.held_until:
                return slot.held_pid
            slot.held_until = None
            slot.inactive_since = self.wall_clock()
        if slot.active is None or slot.active == conn_id:
            return None
        other = self.connections.get(slot.active)
        return other.pid if other is not None else 0

    def check_slot_free(self, slot: SlotState, conn_id: int | None = None) -> None:
        """55006 when another backend uses the slot (slot.c ReplicationSlotAcquire)."""
        pid = self.slot_user(slot, conn_id)
        if pid is not None:
            raise ServerError("55006", f'replication slot "{slot.name}" is active for PID {pid}')

    def check_slot_valid(self, slot: SlotState) -> None:
        """55000 when the slot was invalidated, in the persona major's words."""
        if slot.invalidated is not None:
            message, detail = self.persona.table.invalid_slot_error(slot.name, slot.invalidated)
            raise ServerError("55000", message, detail=detail)

    def slot_fault(self, fault: Fault, conn: Connection | None) -> None:
        """A slot fault acts: on the slot it names, else on the one *conn* streams from.
        ``invalidate_slot`` and ``drop_slot`` end the connection using the slot as the
        server does (slot.c InvalidatePossiblyObsoleteSlot signals it, an administrator's
        pg_terminate_backend before pg_drop_replication_slot: FATAL 57P01); ``hold_slot``
        resets *conn*, its slot staying active for ``seconds`` (at once: held that long by
        another backend)."""
        slot = self.slots.get(fault.slot) if fault.slot is not None else None
        if slot is None and conn is not None:
            slot = next((sl for sl in self.slots.values() if sl.active == conn.id), None)
        if slot is None:
            return
        if fault.action == "hold_slot":
            # once: held from now for `seconds` by the connection's pid (or, over the control
            # plane, by a backend that is not one of ours)
            slot.held_until = self.clock() + (fault.seconds or 0.0)
            slot.held_pid = conn.pid if conn is not None else self.next_pid()
            if conn is not None:
                conn.close(reset=True)
            return
        if fault.action == "invalidate_slot":
            cause = fault.reason or "wal_removed"
            slot.invalidated = cause
            if cause == "wal_removed":
                slot.restart_lsn = 0
        user = self.connections.get(slot.active) if slot.active is not None else None
        if user is not None:
            user.fatal(ServerError("57P01", "terminating connection due to administrator command"))
        if fault.action == "drop_slot":
            self.slots.pop(slot.name, None)
        else:
            slot.active = None
            slot.inactive_since = self.wall_clock()

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

    # -- the WAL clock ---------------------------------------------------------------------
    def wal_position(self) -> int:
        """The position IDENTIFY_SYSTEM and pg_current_wal_lsn() report now."""
        return self.wal_lsn

    def slot_position(self) -> int:
        """A new slot's consistent point, a running-xacts record at the current position
        (snapbuild.c), so at or after every position reported so far: before the history
        until it happened (the slot receives the scenario), past it since (the slot
        receives none of it) — or, with ``server.history: per_slot``, before the history
        always, the server's position going back for it."""
        start = self.scenario.server.start_lsn
        if not self.happened:
            self.wal_lsn = max(self.wal_lsn, min(self.wal_lsn + _RUNNING_XACTS, start))
        elif self.scenario.server.history == "per_slot":
            return min(self.wal_lsn, start)
        else:
            self.wal_lsn += _RUNNING_XACTS
        return self.wal_lsn

    def reads_after_history(self, snapshot: bool | None) -> bool:
        """Whether a read of the scenario's tables sees what the history left: *snapshot*
        when the transaction has a slot's snapshot (SNAPSHOT 'use'), else the present —
        after the history once it happened, unless every slot receives it anew
        (``per_slot``), where the tables stay as table sync copies them."""
        if snapshot is not None:
            return snapshot
        return self.happened and self.scenario.server.history == "once"

    def rows_as_of(self, table: Table, after_history: bool) -> list[dict[str, Any]]:
        """The rows of *table* (a leaf) in a snapshot taken before the history (the scenario's
        initial rows) or after it (what its transactions left)."""
        if after_history:
            return self.history.tables.final(table.qualified_name)
        return [_Tables._complete(table, dict(r)) for r in table.rows]

    def happen(self, end: int | None = None) -> None:
        """A client decodes: the scenario's history happens (once); the clock moves to its
        end (*end*: a recorded stream's own)."""
        if not self.happened:
            self.happened = True
        self.wal_lsn = max(self.wal_lsn, self.history.end_lsn, end or 0)

    # -- SQL ---------------------------------------------------------------------------------
    @property
    def sql(self) -> SqlEngine:
        """The SQL engine over the catalogs (opened on first use)."""
        if self._sql is None:
            self._sql = SqlEngine(self)
        return self._sql

    def next_oid(self) -> int:
        self._oid += 1000
        return self._oid

    def set_publications(self, publications: list[Publication], *, renamed: dict[str, str] | None = None) -> None:
        """Publication DDL: the scenario's publications change, and with them the catalog
        and what the next stream publishes (plans are rendered anew)."""
        oids = {}
        for pub in publications:
            old = next((o for o, n in (renamed or {}).items() if n == pub.name), pub.name)
            oids[pub.name] = self.publication_oids.get(old) or self.next_oid()
        self.publication_oids = oids
        self.scenario = replace(self.scenario, publications=tuple(publications))
        self.history = History(self.scenario, self.history.events, self.history.end_lsn, self.history.tables)
        self._plans.clear()
        self._frames.clear()

    def publication_state(self) -> tuple[tuple[Publication, ...], dict[str, int]]:
        """The publications and their OIDs, for :meth:`restore_publications`."""
        return self.scenario.publications, dict(self.publication_oids)

    def restore_publications(self, state: tuple[tuple[Publication, ...], dict[str, int]]) -> None:
        """A transaction's publication DDL undone (its ROLLBACK, or an error in it)."""
        publications, oids = state
        self.set_publications(list(publications))
        self.publication_oids = dict(oids)

    # -- plans -----------------------------------------------------------------------------
    def plan(self, options: StreamOptions, start: int) -> Plan:
        if self.scenario.raw is None:
            # Every start at or before the history's first position gets the same plan
            # (a slot created before the history began, or after it with ``per_slot``).
            start = max(start, self.scenario.server.start_lsn)
        key = (options, start)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 64:
                self._plans.clear()
                self._frames.clear()
            plan = render(self.history, self.persona, options, start, lazy=True)
            self._plans[key] = plan
        return plan

    def add_fault(self, fault: Fault, *, connection: int | None = None, now: float | None = None) -> int:
        """Add a fault while the server runs; return its id. It acts on the running logical
        streams it selects (only connection *connection* when given), counting from now,
        and, unless *connection* is given, on the connections that authenticate or start
        streaming from now on."""
        if connection is not None and connection not in self.connections:
            raise KeyError(connection)
        check_slot_fault(fault, self.persona.major)
        if fault.at_once and fault.slot not in self.slots:
            raise ValueError(f"expected a slot of the server ({', '.join(self.slots) or 'none'}), found {fault.slot!r}")
        index = self.faults.add(fault, pinned=connection is not None)
        now = self.clock() if now is None else now
        if fault.at_once:
            if self.faults.fire(index):
                self.slot_fault(fault, None)
            return index
        for conn in list(self.connections.values()):
            if connection is not None and conn.id != connection:
                continue
            if connection is None:
                if conn.stream is None:
                    continue  # offered when it starts streaming (FaultBook.for_connection)
                slot = conn.stream.slot.name
                if fault.connection is not None or not fault.selects(0, conn.params) or (
                        fault.slot is not None and fault.slot != slot):
                    continue
            conn.attach_fault(index, now)
        return index

    def remove_fault(self, index: int) -> None:
        """Remove a fault (by the id :meth:`add_fault` returned, or a scenario fault's index)."""
        self.faults.remove(index)
        for conn in self.connections.values():
            conn.detach_fault(index)

    def status(self) -> list[ConnectionStatus]:
        """Every open connection's state, by id."""
        return [c.status() for c in sorted(self.connections.values(), key=lambda c: c.id)]


# ------------------------------------------------------------------------------------------
# One connection
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectionStatus:
    """What a connection is doing: its phase, who it is, its slot and the positions: the
    highest ``sent`` (walEnd of what the server sent), what the client reported (``write``,
    ``flush``, ``apply``) and the slot's ``confirmed`` flush position."""

    id: int
    peer: str
    phase: str
    user: str
    database: str | None
    application_name: str | None
    replication: str
    slot: str | None
    sent_lsn: int | None
    write_lsn: int
    flush_lsn: int
    apply_lsn: int
    confirmed_lsn: int | None
    messages_sent: int
    bytes_sent: int
    faults: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if name.endswith("_lsn") and value is not None:
                value = format_lsn(value)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

_FATAL_RULES = frozenset({"unknown-message-tag", "length-out-of-range", "truncated", "unsupported-protocol-version",
                          "unknown-request-code", "unexpected-data"})


class Connection(_Startup, _Commands, _Extended, _Streaming):
    """One client connection's conversation (sans-IO)."""

    def __init__(self, server: ServerState, conn_id: int, peer: str, port: int | None = None) -> None:
        self.server = server
        self.id = conn_id
        self.peer = peer
        #: The client's TCP port (None: not over TCP) and when it connected (wall clock,
        #: Unix seconds): pg_stat_replication's client_port and backend_start.
        self.port = port
        self.backend_start = server.wall_clock()
        limits = server.limits
        # Lengths here count the 4-byte length field itself, PostgreSQL's limits do not
        # (pqcomm.c pq_getmessage, backend_startup.c ProcessStartupPacket).
        self.reader = FrontendReader(
            max_message_length=max(limits.max_auth_message_length, limits.max_startup_packet_length) + 4,
            max_startup_length=limits.max_startup_packet_length + 4)
        #: Past max_connections: refused with 53300 once the startup packet is read.
        self.too_many = False
        #: When the startup and authentication must be done by (the shell's clock; set at
        #: the first next_action).
        self.auth_deadline: float | None = None
        self.out: list[bytes] = []
        self.phase = "startup"  # startup | auth | ready | streaming | closing | closed
        self.params: dict[str, str] = {}
        self.user = ""
        self.database: str | None = None
        self.replication = "false"  # false | database | physical
        self.auth: Authenticator | None = None
        self.pid = server.next_pid()
        #: The negotiated frontend/backend protocol version (3.0, or 3.2 with an 18 persona).
        self.protocol_version = PROTOCOL_3_0
        self.secret = server.random_bytes(4)
        self.tx = "I"
        #: The publications (and their OIDs) before this transaction's first publication DDL:
        #: what an error or ROLLBACK restores; None while it has written nothing. A
        #: transaction here is an explicit block, or the implicit one of a simple Query's
        #: statements or of the extended protocol's messages up to Sync (postgres.c).
        self.tx_undo: tuple[Any, ...] | None = None
        #: A slot made in this transaction with SNAPSHOT 'use' (USE_SNAPSHOT): whether its
        #: snapshot was taken after the history happened; None without one (the transaction's
        #: reads see the server's present).
        self.snapshot_after_history: bool | None = None
        self.stream: _Stream | None = None
        #: The running stream (a :class:`~pgwire_spec.walsender.stream.Stream`: logical,
        #: physical WAL or BASE_BACKUP) while the phase is ``streaming``.
        self.delegate: Stream | None = None
        self.close_action: Close | None = None
        self.eof = False
        self.cancel_requested = False
        #: The slot a DROP_REPLICATION_SLOT … WAIT waits for.
        self.drop_waiting: str | None = None
        self.bytes_sent = 0
        self.messages_sent = 0
        #: Positions the client reported ('r'): write, flush, apply.
        self.positions = (0, 0, 0)
        self.pending_faults = []
        #: The extended query protocol's prepared statements and portals by name ("" the
        #: unnamed ones), and whether an error skips messages until Sync.
        self.statements: dict[str, _PreparedStatement] = {}
        self.portals: dict[str, _Portal] = {}
        self.skip_till_sync = False
        #: A statement's answer to be computed off the loop (not yet handed to the shell);
        #: whether the shell is computing one; its result once handed back (in a tuple).
        self.compute_due: Compute | None = None
        self.computing = False
        self.computed_result: tuple[object] | None = None
        #: An extended-protocol message held while a worker answers another connection's
        #: statement (it may run SQL; see ServerState.computing).
        self.held: Any = None
        self._record(event="connected")

    def status(self) -> ConnectionStatus:
        st = self.stream
        slot = st.slot if st is not None else None
        return ConnectionStatus(
            self.id, self.peer, self.phase, self.user, self.database, self.params.get("application_name"),
            self.replication, slot.name if slot else None, st.wal_end if st is not None else None,
            *self.positions, slot.confirmed_flush if slot else None, self.messages_sent, self.bytes_sent,
            tuple(st.faults) if st is not None else ())

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

    def computed(self, result: object) -> None:
        """What the :class:`Compute` action's work returned: the connection goes on with it
        at the next ``next_action``."""
        self.computing = False
        self.computed_result = (result,)

    def wants_input(self) -> bool:
        """Should the shell read more from the client? Only while little is buffered or the
        next message is still incomplete: a client that sends faster than the connection
        consumes then meets TCP backpressure instead of filling the server's memory."""
        return not self.eof and (self.reader.buffered < INPUT_HIGH_WATER or self.reader.needs_more())

    def next_action(self, now: float) -> Action:
        if self.phase == "closed":
            return Close()
        if self.phase in ("startup", "auth") and self.close_action is None:
            if self.auth_deadline is None:
                self.auth_deadline = now + self.server.limits.authentication_timeout
            elif now >= self.auth_deadline:
                self._silent_close("57014", "canceling authentication due to timeout")
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
        if self.drop_waiting is not None and self._retry_drop():
            if self.eof:
                return self._gone()
            return Wait(now + DROP_WAIT_POLL)  # nothing tells this connection; look again soon
        if self.computing:
            return Wait(None)  # the shell hands the result to computed() first
        if self.computed_result is not None:
            (result,), self.computed_result = self.computed_result, None
            self._computed(result, now)
        if self.held is not None:
            if self.server.computing:
                if self.eof:
                    return self._gone()
                return Wait(now + DROP_WAIT_POLL)  # nothing tells this connection; look again soon
            held, self.held = self.held, None
            self._act_extended(held, now)
        self._handle_input(now)
        if self.out:
            return self._flush()
        if self.close_action is not None:
            return self.next_action(now)
        if self.eof and self.phase != "closed":
            return self._gone()
        if self.compute_due is not None:
            return self._hand_out(self.compute_due)
        if self.phase == "streaming" and self.delegate is not None:
            return self.delegate.produce(now)
        if self.phase in ("startup", "auth"):
            return Wait(self.auth_deadline)
        if self.drop_waiting is not None or self.held is not None:
            return Wait(now + DROP_WAIT_POLL)
        return Wait(None)

    def _hand_out(self, due: Compute) -> Compute:
        self.compute_due = None
        self.computing = True
        server, conn_id = self.server, self.id
        server.computing.add(conn_id)

        def work(cancelled: Callable[[], bool]) -> object:
            try:
                return due.work(cancelled)
            finally:
                server.computing.discard(conn_id)

        return Compute(work, due.timeout)

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
        while (self.close_action is None and self.phase not in ("closing", "closed") and self.compute_due is None
               and self.held is None):
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

    def _silent_close(self, sqlstate: str, message: str, *, level: str = "FATAL") -> None:
        """End the connection as PostgreSQL does when it reports to its log only (COMMERROR,
        or FATAL while authenticating): the transcript says why, the client gets nothing."""
        self._record(event=f"{level} {sqlstate + ' ' if sqlstate else ''}{message} (not sent: the server closes "
                           f"the connection)")
        self.out = []
        self.close_action = Close()
        self.phase = "closing"

    def _bad_input(self, err: DecodeError) -> None:
        self._record("F", event=f"malformed input: {err}")
        if err.rule == "length-out-of-range":
            # Announced longer than allowed: closed at once, the body never read.
            self._silent_close("08P01", "invalid length of startup packet" if self.reader.in_startup
                               else "invalid message length")
            return
        if err.rule == "unsupported-protocol-version":
            # backend_startup.c ProcessStartupPacket: a major other than 3.
            asked = err.found.split("(")[-1].rstrip(")") if err.found else "?"
            newest = self.server.persona.table.protocol_minor
            self.fatal(ServerError("0A000", f"unsupported frontend protocol {asked}: server supports 3.0 to 3.{newest}"))
            return
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
        if self.skip_till_sync:
            return  # after an extended-protocol error every message up to Sync is ignored (postgres.c)
        # A simple Query destroys the unnamed prepared statement and portal (docs:
        # "Extended Query").
        self.statements.pop("", None)
        self.portals.pop("", None)
        self._query(msg.sql, now)

    def _act_extended(self, msg: Any, now: float) -> None:
        if self.server.computing:
            self.held = msg
            return
        self._extended(msg, now)

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
