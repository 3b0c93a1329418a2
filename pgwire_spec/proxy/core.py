"""The proxy's sans-IO core: one :class:`ProxySession` per client connection, reading both
directions of a replication conversation, checking them, recording them and applying
faults. No sockets, no clock of its own.

The shell (:mod:`.server`) hands it what each side sent and writes what it returns::

    out = session.from_client(data, now)    # [Forward("server", bytes) | Forward("client", b"N") | Close]
    out = session.from_server(data, now)    # [Forward("client", bytes) | Pause(seconds) | Close]
    out = session.tick(now)                 # time-triggered faults; session.deadline() says when
    session.defer(data, now)                # the shell forwarded it already (passthrough): read later
    out = session.catch_up(limit)           # read what was deferred (all of it, or a slice)

Everything is forwarded byte for byte, message by message, except what a fault changes.
The client's SSLRequest/GSSENCRequest is answered 'N' here (the proxy talks plain text to
its client; TLS to the upstream is the shell's). Once START_REPLICATION … LOGICAL runs, the
server's XLogData go through the strict reference decoder with the options the client
asked for, and the client's standby status updates are checked (positions never go
backwards; a keepalive that asks for a reply is answered within ``reply_timeout``); each
problem is a :class:`Violation` naming the message index and the rule.

While a stream runs and no fault can act, the shell forwards the server's bytes first and
the core reads them later (:meth:`ProxySession.defer`, :meth:`ProxySession.catch_up`):
checking and recording stay off the forwarding path. Whatever needs the core's view (the
client's next message, a fault added, an observer) catches up first, so the order of
messages and their indexes are the arrival order, and each deferred chunk keeps its time.
The conversation is recorded on a :class:`~.spool.Spool` (a file the shell opens), a run of
the stream at a time.
"""

from __future__ import annotations

import io
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..errors import CommandSyntaxError, DecodeError
from ..lsn import format_lsn
from ..pgoutput.decoder import PgOutputDecoder
from ..replication import frames
from ..replication.commands import StartReplication, parse_command
from ..replication.messages import StandbyStatusUpdate, decode_copy_data
from ..walsender.faults import Fault, FaultBook, modify_payload
from ..wire import (
    AuthenticationSASL,
    AuthenticationSASLContinue,
    CopyBothResponse,
    CopyData,
    CopyDone,
    ErrorResponse,
    FrontendReader,
    GSSENCRequest,
    ParameterStatus,
    Query,
    ReadyForQuery,
    SSLRequest,
    StartupMessage,
    decode_message,
    encode_message,
)
from ..wire.reader import NeedData
from .spool import Spool

__all__ = ["ProxySession", "ProxyState", "Forward", "Pause", "Close", "Violation", "PROXY_ACTIONS"]

#: The fault actions the proxy plays on a real stream (the fake walsender's vocabulary, less
#: ``shutdown``: a real server's COPY cannot be ended on its behalf).
PROXY_ACTIONS = ("disconnect", "reset", "stall", "delay", "corrupt", "truncate", "duplicate", "error", "keepalive",
                 "refuse_auth", "crash")


_MODIFIERS = ("corrupt", "truncate", "duplicate")
_I32 = struct.Struct("!I")
_I64 = struct.Struct("!Q")
_XLOG_HEAD = struct.Struct("!QQq")  # dataStart, walEnd, sendTime
#: PostgreSQL's longest message (PQ_LARGE_MESSAGE_LIMIT, pqcomm.h): a longer length is garbage.
_MAX_MESSAGE = 0x3FFFFFFF


@dataclass(frozen=True, slots=True)
class Forward:
    to: str  # "client" | "server"
    data: bytes


@dataclass(frozen=True, slots=True)
class Pause:
    """Send nothing more to the client for *seconds* (None: for ever)."""

    seconds: float | None


@dataclass(frozen=True, slots=True)
class Close:
    reset: bool = False
    #: every connection of the proxy (fault ``crash``)
    everyone: bool = False


@dataclass(frozen=True, slots=True)
class Violation:
    """A protocol rule one side broke: the session message ``index`` (both directions,
    as in the recorded session), the side (``B`` server, ``F`` client), the ``rule`` and
    what was wrong."""

    connection: int
    index: int
    direction: str
    rule: str
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"connection": self.connection, "index": self.index, "direction": self.direction, "rule": self.rule,
                "message": self.message}

    def __str__(self) -> str:
        side = "server" if self.direction == "B" else "client"
        return f"connection {self.connection}, message #{self.index} ({side}): {self.rule}: {self.message}"


@dataclass(slots=True)
class _Stream:
    """A running START_REPLICATION … LOGICAL."""

    slot: str
    options: dict[str, str | None]
    decoder: PgOutputDecoder | None
    started: float
    sent: int = 0  # XLogData forwarded (faults count these)
    wal_end: int = 0
    faults: list[int] = field(default_factory=list)
    due: dict[int, int | None] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    since: dict[int, float] = field(default_factory=dict)
    paused: bool = False


def _bool_option(value: str | None) -> bool:
    return value is None or value.lower() in ("on", "true", "1", "yes")


def decoder_context(options: dict[str, str | None]) -> dict[str, Any]:
    """The reference decoder's options for a START_REPLICATION's plugin options."""
    streaming = (options.get("streaming") or "off").lower()
    streaming = {"true": "on", "1": "on", "false": "off", "0": "off"}.get(streaming, streaming)
    return {
        "protocol_version": int(options.get("proto_version") or 1),
        "streaming": streaming if streaming in ("off", "on", "parallel") else "on",
        "two_phase": "two_phase" in options and _bool_option(options["two_phase"]),
        "binary": "binary" in options and _bool_option(options["binary"]),
        "messages": "messages" in options and _bool_option(options["messages"]),
    }


class ProxyState:
    """What the sessions of one proxy share: faults, violations, the count of connections."""

    def __init__(self, faults: list[Fault] | tuple[Fault, ...] = (), *, reply_timeout: float = 10.0,
                 record: bool = True, validate: bool = True,
                 spool_file: Callable[[int], BinaryIO] | None = None) -> None:
        for f in faults:
            check_proxy_fault(f)
        self.faults = FaultBook(list(faults))
        self.reply_timeout = reply_timeout
        self.record = record
        self.validate = validate
        #: opens the file a connection's recording goes to (default: in memory)
        self.spool_file: Callable[[int], BinaryIO] = spool_file or (lambda _id: io.BytesIO())
        self.sessions: dict[int, ProxySession] = {}
        #: the last connections that ended
        self.finished: deque[ProxySession] = deque(maxlen=64)
        self.violations: list[Violation] = []
        self.count = 0
        #: the highest flush position any client confirmed, per slot
        self.confirmed: dict[str, int] = {}

    def connect(self, peer: str = "127.0.0.1") -> ProxySession:
        self.count += 1
        s = ProxySession(self, self.count, peer)
        self.sessions[s.id] = s
        return s

    def forget(self, session: ProxySession) -> None:
        if self.sessions.pop(session.id, None) is not None:
            self.finished.append(session)

    def catch_up(self) -> None:
        """Every session reads what it deferred (what an observer sees is up to date)."""
        for s in self.sessions.values():
            s.catch_up()

    def add_fault(self, fault: Fault, *, connection: int | None = None, now: float) -> int:
        check_proxy_fault(fault)
        self.catch_up()  # a fault counts from the messages after it, not from a stale view
        if connection is not None and connection not in self.sessions:
            raise KeyError(connection)
        index = self.faults.add(fault, pinned=connection is not None)
        for s in self.sessions.values():
            if connection is not None and s.id != connection:
                continue
            if connection is None:
                if s.stream is None or fault.connection is not None or not fault.selects(0, s.params) or (
                        fault.slot is not None and fault.slot != s.stream.slot):
                    continue
            s.attach_fault(index, now)
        return index

    def remove_fault(self, index: int) -> None:
        self.faults.remove(index)
        for s in self.sessions.values():
            if s.stream is not None and index in s.stream.faults:
                s.stream.faults.remove(index)


def check_proxy_fault(f: Fault) -> None:
    if f.action not in PROXY_ACTIONS:
        raise ValueError(f"expected a fault action the proxy plays ({', '.join(PROXY_ACTIONS)}), found {f.action!r}")


class ProxySession:
    """One client connection through the proxy (sans-IO)."""

    def __init__(self, state: ProxyState, conn_id: int, peer: str) -> None:
        self.state = state
        self.id = conn_id
        self.peer = peer
        self.phase = "startup"  # startup | auth | ready | streaming | closed
        self.params: dict[str, str] = {}
        self.server_params: dict[str, str] = {}
        self.user = ""
        self.database: str | None = None
        self.replication = "false"
        self._front = FrontendReader()
        self._fbuf = bytearray()
        self._bbuf = bytearray()
        #: how many bytes at the head of _bbuf the client already has (see passthrough)
        self._ahead = 0
        self._opaque = False  # a side sent what cannot be framed: bytes pass through unread
        #: the recorded conversation (None: not recording)
        self.spool: Spool | None = Spool(state.spool_file(conn_id)) if state.record else None
        #: the chunks forwarded but not read yet, in arrival order (see defer): a server
        #: chunk by its size (its bytes wait in _bbuf), a client chunk by its bytes; each
        #: with its arrival time
        self._deferred: deque[tuple[int | bytes, float]] = deque()
        self._deferred_bytes = 0  # of the server's, at the end of _bbuf
        self._deferred_client = 0
        self.index = 0  # messages seen, both directions
        self.stream: _Stream | None = None
        self.streams: list[tuple[str, dict[str, str | None]]] = []
        self.positions = (0, 0, 0)
        self.messages_to_client = 0
        self.bytes_to_client = 0
        self.pending_faults: list[int] = []
        self.violations: list[Violation] = []
        #: (index, time) of the keepalives asking for a reply not yet answered
        self._asked: list[tuple[int, float]] = []
        self._pending_start: tuple[str, dict[str, str | None]] | None = None
        #: (message index, event, time): the faults that fired ("fault:disconnect" …)
        self.events: list[tuple[int, str, float]] = []

    # -- bookkeeping -----------------------------------------------------------------------
    def _violate(self, index: int, direction: str, rule: str, message: str) -> None:
        v = Violation(self.id, index, direction, rule, message)
        self.violations.append(v)
        self.state.violations.append(v)

    def _record(self, direction: str, data: bytes, now: float) -> int:
        index = self.index
        self.index += 1
        if self.spool is not None:
            self.spool.add(direction, data, now)
        return index

    @staticmethod
    def _frames(reader: FrontendReader, buf: bytearray, data: bytes) -> list[tuple[Any, bytes]]:
        """The whole messages *data* completes, each with its exact bytes."""
        buf += data
        reader.feed(data)
        out = []
        start = reader.offset
        taken = 0
        while True:
            ev = reader.next_event()
            if isinstance(ev, NeedData) or not hasattr(ev, "tag"):
                break
            end = reader.offset
            n = end - start
            out.append((ev, bytes(buf[taken:taken + n])))
            taken += n
            start = end
        if taken:
            del buf[:taken]
        return out

    def _unrecord(self) -> None:
        """The message just counted never reaches the client: not in the recording either."""
        self.index -= 1

    # -- client to server ------------------------------------------------------------------
    def from_client(self, data: bytes, now: float) -> list[Forward | Close | Pause]:
        if data and self._deferred and self.passthrough():
            # the server's messages before these are not read yet: forwarded now, read in
            # turn after them (the keepalive a reply answers is known before the reply)
            self._deferred.append((data, now))
            self._deferred_client += len(data)
            return [Forward("server", data)]
        early = self.catch_up()
        return early + self._from_client(data, now)

    def _from_client(self, data: bytes, now: float) -> list[Forward | Close | Pause]:
        if self._opaque or not data:
            return [Forward("server", data)] if data else []
        try:
            msgs = self._frames(self._front, self._fbuf, data)
        except DecodeError as err:
            self._violate(self.index, "F", err.rule, f"the client sent what cannot be read: {err}")
            self._opaque = True
            rest = bytes(self._fbuf)
            self._fbuf.clear()
            return [Forward("server", rest)]
        out: list[Forward | Close | Pause] = []
        for msg, raw in msgs:
            if isinstance(msg, (SSLRequest, GSSENCRequest)):
                out.append(Forward("client", b"N"))  # plain text to the client; TLS upstream is the shell's
                continue
            index = self._record("F", raw, now)
            if isinstance(msg, StartupMessage):
                self.params = dict(msg.parameters)
                self.user = self.params.get("user", "")
                self.database = self.params.get("database", self.user)
                self.replication = self.params.get("replication", "false")
                self.phase = "auth"
                refused = self._refuse_auth()
                if refused is not None:
                    return out + refused
            elif isinstance(msg, Query):
                self._query(msg.sql)
            elif isinstance(msg, CopyData) and self.stream is not None:
                self._status_update(index, msg.data, now)
            out.append(Forward("server", raw))
        return out

    def _refuse_auth(self) -> list[Forward | Close | Pause] | None:
        for i in self.state.faults.for_connection(self.params, "auth"):
            if self.state.faults.fire(i):
                err = ErrorResponse((("S", "FATAL"), ("V", "FATAL"), ("C", "28P01"),
                                     ("M", f'password authentication failed for user "{self.user}"')))
                data = encode_message(err)
                self._record("B", data, 0.0)
                return [Forward("client", data), Close()]
        return None

    def _query(self, sql: str) -> None:
        if "START_REPLICATION" not in sql.upper():
            return
        try:
            cmd = parse_command(sql)
        except (CommandSyntaxError, DecodeError, ValueError):
            return
        if isinstance(cmd, StartReplication) and cmd.kind == "logical" and cmd.slot_name is not None:
            self._pending_start = (cmd.slot_name, dict(cmd.options_dict()))

    def _status_update(self, index: int, data: bytes, now: float) -> None:
        try:
            rep = decode_copy_data(data)
        except DecodeError as err:
            self._violate(index, "F", err.rule, f"a standby message that cannot be read: {err}")
            return
        if not isinstance(rep, StandbyStatusUpdate):
            return
        old = self.positions
        new = (rep.write_lsn, rep.flush_lsn, rep.apply_lsn)
        for name, a, b in zip(("write", "flush", "apply"), old, new):
            # 0 (InvalidXLogRecPtr) means "not known" (pg_recvlogical before its first fsync)
            if b and a and b < a:
                self._violate(index, "F", "status-position-backwards",
                              f"expected {name} position >= {format_lsn(a)}, found {format_lsn(b)}")
        self.positions = tuple(max(a, b) for a, b in zip(old, new))  # type: ignore[assignment]
        st = self.stream
        if st is not None and rep.flush_lsn:
            prev = self.state.confirmed.get(st.slot, 0)
            self.state.confirmed[st.slot] = max(prev, rep.flush_lsn)
        for ka_index, t in self._asked:
            if now - t > self.state.reply_timeout:
                self._violate(index, "F", "keepalive-reply-late",
                              f"expected a reply to keepalive #{ka_index} within {self.state.reply_timeout:g} s, "
                              f"found one after {now - t:.1f} s")
        self._asked.clear()

    # -- server to client ------------------------------------------------------------------
    def passthrough(self) -> bool:
        """Whether the shell may hand the server's next bytes to the client before this
        core reads them (:meth:`defer`): a stream runs and no fault can act on it."""
        st = self.stream
        if st is None or st.faults or self.pending_faults or self._ahead != len(self._bbuf):
            return False
        book = self.state.faults
        return all(i in book.removed or (f.times is not None and book.fired[i] >= f.times)
                   for i, f in enumerate(book.faults))

    def defer(self, data: bytes, now: float) -> None:
        """The shell handed *data* from the server to the client already (it may when
        :meth:`passthrough` says so); read it later, with its arrival time *now*."""
        self.bytes_to_client += len(data)
        if self._opaque or not data:
            return
        self._bbuf += data
        self._ahead = len(self._bbuf)
        self._deferred.append((len(data), now))
        self._deferred_bytes += len(data)

    def backlog(self) -> int:
        """Bytes deferred and not read yet (both directions)."""
        return self._deferred_bytes + self._deferred_client

    def catch_up(self, limit: int | None = None) -> list[Forward | Close | Pause]:
        """Read the deferred chunks in order, each at its arrival time: all of them, or
        chunks until at least *limit* bytes were read. Check and record them; what they
        hold was forwarded already, so nothing is returned but what a stream's end may
        release (in practice nothing)."""
        out: list[Forward | Close | Pause] = []
        read = 0
        while self._deferred and (limit is None or read < limit):
            chunk, when = self._deferred.popleft()
            if isinstance(chunk, bytes):
                self._deferred_client -= len(chunk)
                read += len(chunk)
                # forwarded already: what else reading it yields (nothing while a stream runs)
                out += [a for a in self._from_client(chunk, when) if not (isinstance(a, Forward) and a.to == "server")]
                continue
            self._deferred_bytes -= chunk
            read += chunk
            if self._opaque:
                continue
            out += self._drain(when, len(self._bbuf) - self._deferred_bytes)
        if self._opaque and not self._deferred:
            self._bbuf.clear()
            self._ahead = 0
        return out

    def from_server(self, data: bytes, now: float, *, forwarded: bool = False) -> list[Forward | Close | Pause]:
        """Frame what the server sent (every backend message is typed: tag, length), check
        and record each message, forward them (unless the shell already did: *forwarded*),
        after what was deferred."""
        out = self.catch_up()
        if forwarded:
            self.bytes_to_client += len(data)
        if self._opaque or not data:
            return out + ([Forward("client", data)] if data and not forwarded else [])
        self._bbuf += data
        if forwarded:
            self._ahead = len(self._bbuf)
        acts = self._drain(now, len(self._bbuf))
        if not forwarded:
            for f in acts:
                if isinstance(f, Forward):
                    self.bytes_to_client += len(f.data)
        return out + acts

    def _drain(self, now: float, n: int) -> list[Forward | Close | Pause]:
        """Read the whole messages in the first *n* bytes of the server's buffer. A
        replication stream's CopyData are read in place (no message objects) and recorded a
        run at a time: this is the proxy's hot path."""
        buf = self._bbuf
        pos = 0
        # bytes up to here are handed out (forwarded, or replaced by a fault's output); the
        # shell may have forwarded the head of the buffer already (passthrough)
        done = self._ahead
        out: list[Forward | Close | Pause] = []
        spool = self.spool
        run = -1  # where the run of stream messages not recorded yet starts
        count = 0
        while n - pos >= 5:
            (length,) = _I32.unpack_from(buf, pos + 1)
            end = pos + 1 + length
            if length < 4 or length > _MAX_MESSAGE:
                self._violate(self.index, "B", "length-out-of-range",
                              f"expected a message length from 4 to {_MAX_MESSAGE}, found {length}")
                self._opaque = True
                pos = n
                break
            if end > n:
                break
            self.messages_to_client += 1
            st = self.stream
            if st is not None and buf[pos] == 0x64:  # CopyData of the stream
                index = self.index
                self.index += 1
                if st.faults and done <= pos:
                    if run >= 0 and spool is not None:
                        spool.add("B", buf[run:pos], now, count)
                        run = -1
                    if pos > done:
                        out.append(Forward("client", bytes(buf[done:pos])))
                    raw = bytes(buf[pos:end])
                    acts = self._server_copy(st, index, raw, now)
                    done = end
                    out.extend(acts)
                    if spool is not None and self.index > index:  # not withheld by a fault before it
                        spool.add("B", raw, now)
                    if any(isinstance(a, Close) for a in acts):
                        del buf[:]
                        self._ahead = 0
                        self._deferred.clear()
                        self._deferred_bytes = self._deferred_client = 0
                        return out
                else:
                    if run < 0:
                        run, count = pos, 0
                    count += 1
                    self._check_copy(st, index, buf, pos, end, now)
                pos = end
                continue
            if run >= 0 and spool is not None:
                spool.add("B", buf[run:pos], now, count)
            run = -1
            frame = bytes(buf[pos:end])
            try:
                msg = decode_message(frame, "backend")
            except DecodeError as err:
                self._violate(self.index, "B", err.rule, f"the server sent what cannot be read: {err}")
                msg = None
            if isinstance(msg, AuthenticationSASL) and done <= pos and any(m.endswith("-PLUS") for m in msg.mechanisms):
                # A server reached over TLS offers SCRAM-SHA-256-PLUS (channel binding to its
                # TLS session). The client talks plain text to the proxy and cannot bind to
                # that session; libpq refuses a -PLUS offer over a non-SSL connection
                # (fe-auth.c, pg_SASL_init). The offer the client sees lists the others: it
                # answers with gs2 flag 'n', which the server accepts (auth-scram.c,
                # read_client_first_message).
                msg = AuthenticationSASL(tuple(m for m in msg.mechanisms if not m.endswith("-PLUS")))
                if pos > done:
                    out.append(Forward("client", bytes(buf[done:pos])))
                frame = encode_message(msg)
                out.append(Forward("client", frame))
                done = end
            self._record("B", frame, now)
            if isinstance(msg, CopyBothResponse) and self._pending_start is not None:
                self._start_stream(now)
            elif isinstance(msg, CopyDone) or (st is not None and isinstance(msg, ErrorResponse)):
                self._end_stream()
            elif isinstance(msg, ParameterStatus):
                self.server_params[msg.name] = msg.value
            elif isinstance(msg, AuthenticationSASL):
                self._front.expect_password("sasl-initial")  # how the client's next 'p' reads
            elif isinstance(msg, AuthenticationSASLContinue):
                self._front.expect_password("sasl-response")
            elif isinstance(msg, ReadyForQuery) and self.stream is None:
                self.phase = "ready"
                self._pending_start = None
            pos = end
        if run >= 0 and spool is not None:
            spool.add("B", buf[run:pos], now, count)
        if pos > done:
            out.append(Forward("client", bytes(buf[done:pos])))
            done = pos
        if pos:
            del buf[:pos]
        self._ahead = done - pos  # what is left in the buffer and was forwarded already
        return out

    def _start_stream(self, now: float) -> None:
        assert self._pending_start is not None
        slot, options = self._pending_start
        self._pending_start = None
        decoder = None
        if self.state.validate:
            try:
                decoder = PgOutputDecoder(**decoder_context(options), strict=True)
            except (ValueError, TypeError) as exc:
                self._violate(self.index, "F", "unknown-options", f"cannot follow the stream: {exc}")
        self.stream = _Stream(slot, options, decoder, now)
        self.streams.append((slot, options))
        self.phase = "streaming"
        pending, self.pending_faults = self.pending_faults, []
        for i in self.state.faults.for_connection(self.params, "stream", slot) + pending:
            if i not in self.state.faults.removed:
                self.attach_fault(i, now)

    def _end_stream(self) -> None:
        self.stream = None
        self.phase = "ready"

    def _check_copy(self, st: _Stream, index: int, buf: bytearray | bytes, pos: int, end: int,
                    now: float) -> int | None:
        """Check a CopyData of the stream (``buf[pos:end]``, the whole framed message) in
        place; for an XLogData, the offset of its pgoutput payload in *buf*."""
        kind = buf[pos + 5] if end > pos + 5 else -1
        if kind == 0x77 and end - pos >= 30:  # 'w' XLogData: start, end, time, payload
            st.sent += 1
            (wal_end,) = _I64.unpack_from(buf, pos + 14)
            if wal_end > st.wal_end:
                st.wal_end = wal_end
            decoder = st.decoder
            if decoder is not None:
                try:
                    decoder.decode(bytes(buf[pos + 30:end]))
                except DecodeError as err:
                    # the decoder's state is left as before the message: it goes on
                    self._violate(index, "B", err.rule, str(err))
            return pos + 30
        if kind == 0x6B and end - pos == 23:  # 'k' keepalive: walEnd, time, replyRequested
            (wal_end,) = _I64.unpack_from(buf, pos + 6)
            if wal_end > st.wal_end:
                st.wal_end = wal_end
            if buf[pos + 22]:
                self._asked.append((index, now))
            return None
        try:
            decode_copy_data(bytes(buf[pos + 5:end]))
        except DecodeError as err:
            self._violate(index, "B", err.rule, f"a replication message that cannot be read: {err}")
        return None

    # -- faults ----------------------------------------------------------------------------
    def attach_fault(self, index: int, now: float) -> None:
        st = self.stream
        if st is None:
            self.pending_faults.append(index)
            return
        if index in st.faults:
            return
        f = self.state.faults.faults[index]
        st.faults.append(index)
        st.since[index] = now
        if f.after_messages is not None:
            # kind: counted as they come; else a position among the XLogData from now
            st.due[index] = None if f.kind is not None and f.after_messages > 0 else st.sent + f.after_messages
            st.counts[index] = 0

    def _due(self, st: _Stream, now: float, *, modifiers: bool = True) -> list[Fault]:
        out = []
        book = self.state.faults
        for i in list(st.faults):
            f = book.faults[i]
            if not modifiers and f.action in _MODIFIERS:
                continue  # they change a message: kept for the next one
            at = st.due.get(i)
            due = (at is not None and st.sent >= at) or (
                f.after_seconds is not None and now - st.since.get(i, st.started) >= f.after_seconds)
            if f.after_messages is None and f.after_seconds is None:
                due = True
            if due:
                st.faults.remove(i)
                if book.fire(i):
                    out.append(f)
        return out

    def _server_copy(self, st: _Stream, index: int, raw: bytes, now: float) -> list[Forward | Close | Pause]:
        """A CopyData from the server while faults are armed: apply those due before it,
        forward it (changed or not), count it."""
        out: list[Forward | Close | Pause] = []
        modifiers: list[str] = []
        if raw[5:6] == b"w":
            for f in self._due(st, now):
                acts = self._apply(f, st, now)
                if acts is None:
                    modifiers.append(f.action)
                else:
                    out.extend(acts)
                    if any(isinstance(a, Close) for a in acts):
                        self._unrecord()  # the client never gets it: the recording is what passed
                        return out
        at = self._check_copy(st, index, raw, 0, len(raw), now)
        data = raw
        copies = 1
        if at is not None and modifiers:
            payload, copies = modify_payload(self.state.faults, raw[at:], modifiers)
            start, wal_end, send_time = _XLOG_HEAD.unpack_from(raw, 6)
            data = frames.xlog_data(start, wal_end, send_time, payload)
        out.extend(Forward("client", data) for _ in range(copies))
        if at is not None:
            tag = raw[at:at + 1]
            for i in st.faults:
                f = self.state.faults.faults[i]
                if f.kind is not None and st.due.get(i) is None and f.tag is not None and tag == f.tag.encode():
                    st.counts[i] += 1
                    if st.counts[i] >= (f.after_messages or 0):
                        st.due[i] = st.sent  # right after this message
            out.extend(self._tick(now))
        return out

    def _apply(self, f: Fault, st: _Stream, now: float) -> list[Forward | Close | Pause] | None:
        """A fault's effect before the next message; None for a modifier of that message."""
        a = f.action
        self._record_event(f"fault:{a}", now)
        if a in ("disconnect", "reset"):
            return [Close(reset=a == "reset")]
        if a == "crash":
            return [Close(reset=True, everyone=True)]
        if a == "stall":
            return [Pause(f.seconds)]
        if a == "delay":
            return [Pause(f.seconds or 0.0)]
        if a == "keepalive":
            return [Forward("client", frames.keepalive(st.wal_end, 0, True))]
        if a == "error":
            err = ErrorResponse((("S", f.severity), ("V", f.severity), ("C", f.sqlstate), ("M", f.message)))
            return [Forward("client", encode_message(err)), Close()]
        return None

    def _record_event(self, event: str, now: float) -> None:
        self.events.append((self.index, event, now))

    def tick(self, now: float) -> list[Forward | Close | Pause]:
        """The faults due now that need no message to act on (a disconnect right after the
        N-th Commit, one added at run time, one by time); the modifiers wait for the next
        XLogData."""
        return self.catch_up() + self._tick(now)

    def _tick(self, now: float) -> list[Forward | Close | Pause]:
        out: list[Forward | Close | Pause] = []
        st = self.stream
        if st is not None and st.faults:
            for f in self._due(st, now, modifiers=False):
                acts = self._apply(f, st, now)
                if acts is not None:
                    out.extend(acts)
        return out

    def deadline(self) -> float | None:
        st = self.stream
        if st is None:
            return None
        times = [st.since.get(i, st.started) + self.state.faults.faults[i].after_seconds  # type: ignore[operator]
                 for i in st.faults if self.state.faults.faults[i].after_seconds is not None]
        return min(times) if times else None

    def finish(self, now: float) -> None:
        """The connection ended: keepalives still unanswered past the timeout are violations."""
        self.catch_up()
        for ka_index, t in self._asked:
            if now - t > self.state.reply_timeout:
                self._violate(ka_index, "F", "keepalive-reply-late",
                              f"expected a reply to keepalive #{ka_index} within {self.state.reply_timeout:g} s, "
                              "found none before the connection ended")
        self._asked.clear()
        self.phase = "closed"

    def status(self) -> dict[str, Any]:
        st = self.stream
        slot = st.slot if st is not None else (self.streams[-1][0] if self.streams else None)
        confirmed = self.state.confirmed.get(slot) if slot else None
        return {
            "id": self.id, "peer": self.peer, "phase": self.phase, "user": self.user, "database": self.database,
            "application_name": self.params.get("application_name"), "replication": self.replication,
            "slot": slot, "sent_lsn": format_lsn(st.wal_end) if st is not None else None,
            "write_lsn": format_lsn(self.positions[0]), "flush_lsn": format_lsn(self.positions[1]),
            "apply_lsn": format_lsn(self.positions[2]),
            "confirmed_lsn": format_lsn(confirmed) if confirmed is not None else None,
            "messages_sent": self.messages_to_client, "bytes_sent": self.bytes_to_client,
            "faults": list(st.faults) if st is not None else [],
            "unread_bytes": self.backlog(),
        }
