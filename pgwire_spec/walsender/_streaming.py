"""The connection's logical replication stream: START_REPLICATION … LOGICAL, frames from the
scenario's plan, keepalives, status updates, faults, the end of the COPY.

A mixin of :class:`~pgwire_spec.walsender.core.Connection`; it runs on its state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DecodeError
from ..pgoutput._codec import encode
from ..pgoutput.decoder import PgOutputDecoder
from ..pgoutput.messages import StreamAbort
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
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyFail,
    Terminate,
)
from ._base import CHUNK, Action, Close, Wait, _Stream
from ._render import Notice, Write
from .faults import Fault, last_fired, modify_payload
from .personas import ServerError
from .stream import apply_fault

if TYPE_CHECKING:
    from .core import Connection, ServerState


class _Streaming:
    server: ServerState
    #: Faults added for this connection before it streams (attached when it starts).
    pending_faults: list[int]

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
        self.server.check_slot_free(slot, self.id)
        self.server.check_slot_valid(slot)
        options = self.server.persona.parse_options(list(cmd.options))
        start = max(cmd.start_lsn, slot.confirmed_flush)
        plan = self.server.plan(options, start)
        self.server.happen(plan.end_lsn)
        slot.active = self.id
        slot.inactive_since = None
        self.send(CopyBothResponse(0, ()))
        self.start_stream(_LogicalStream(self))
        st = _Stream(slot, options, plan, now, wal_end=start, last_reply=now)
        pending, self.pending_faults = self.pending_faults, []
        for i in self.server.faults.for_connection(self.params, "stream", slot.name) + pending:
            if i not in self.server.faults.removed:
                self.attach_fault(i, now, st)
        st.next_keepalive = now + self.server.scenario.keepalive.interval
        if self.server.transcript is not None and self.server.scenario.raw is not None:
            st.decoder = PgOutputDecoder(**options.decoder_options(), strict=False)
        self.stream = st
        self._keepalive(start, False)
        return True

    def attach_fault(self, index: int, now: float, st: _Stream | None = None) -> bool:
        """Let fault *index* of the server's book act on this connection's running logical
        stream, counting from now (its position resolved on the stream's plan); False when
        no logical stream runs."""
        st = st if st is not None else self.stream
        if st is None:
            self.pending_faults.append(index)  # attached when a stream starts
            return False
        if index in st.faults:
            return True
        f = self.server.faults.faults[index]
        st.faults.append(index)
        st.since[index] = now
        if f.after_messages is not None:
            tag = f.tag
            if tag is None:
                st.due[index] = st.sent + f.after_messages
            elif f.after_messages == 0:
                st.due[index] = st.sent
            else:
                # resolved on the plan as it renders (_scan_kinds), always before the
                # message it fires after is sent
                st.due[index] = None
                st.scan[index] = [st.index, st.sent, 0]
                st.scan_tags[index] = (tag.encode(), f.after_messages)
                self._scan_kinds(st)
        return True

    @staticmethod
    def _scan_kinds(st: _Stream) -> None:
        """Find, in the items rendered so far, where each fault counting a message kind
        fires: right after the N-th message of its kind from where it met the stream."""
        if not st.scan:
            return
        payloads = st.plan.payloads
        for index, state in list(st.scan.items()):
            pos, sent, count = state
            f_tag, want = st.scan_tags[index]
            while pos < len(payloads):
                payload = payloads[pos]
                pos += 1
                if payload is not None:  # a Write, not a Notice
                    sent += 1
                    if payload[:1] == f_tag:
                        count += 1
                        if count >= want:
                            st.due[index] = sent
                            del st.scan[index]
                            break
            else:
                state[:] = [pos, sent, count]

    def detach_fault(self, index: int) -> None:
        if index in self.pending_faults:
            self.pending_faults.remove(index)
        st = self.stream
        if st is not None and index in st.faults:
            st.faults.remove(index)
            st.scan.pop(index, None)

    def _keepalive(self, wal_end: int, reply_requested: bool) -> None:
        now = self.server.pg_now()
        self.out.append(frames.keepalive(wal_end, now, reply_requested))
        self.messages_sent += 1
        if self.server.transcript is not None:
            self._record("B", None, PrimaryKeepalive(wal_end, now, reply_requested))

    def _stray_stream_abort(self, f: Fault) -> None:
        """PostgreSQL 18's Stream Abort of a transaction it never streamed (erratum
        E-PG18-STRAY-STREAM-ABORT): reorderbuffer.c marks the subtransactions of an aborted
        transaction it discards unstreamed as streamed (ReorderBufferTruncateTXN), and
        ReorderBufferAbort then calls stream_abort for them, whatever the client negotiated.
        pgoutput.c (pgoutput_stream_abort) writes the abort LSN and time only for streaming =
        parallel; logical.c (stream_abort_cb_wrapper) writes it at the abort record's end."""
        st = self.stream
        assert st is not None
        first = self.server.scenario.server.first_xid
        xid = f.xid if f.xid is not None else first - 2 if first >= 5 else 1 << 31
        ts = self.server.pg_now()
        lsn = st.wal_end
        tail = st.options.streaming == "parallel"
        msg = StreamAbort(xid, xid + 1, lsn if tail else None, ts if tail else None)
        payload = encode(msg)
        self.out.append(frames.xlog_data(lsn, lsn, ts, payload))
        self.messages_sent += 1
        if self.server.transcript is not None:
            self._record("B", None, XLogData(lsn, lsn, ts, payload), msg)

    def _end_stream(self, *, copy_done: bool) -> None:
        st = self.stream
        self.stream = None
        self.delegate = None
        if st is not None and st.slot.active == self.id:
            st.slot.active = None
            st.slot.inactive_since = self.server.wall_clock()
        self.phase = "ready"
        if copy_done:
            self.send(CopyDone())
            self.send(CommandComplete("COPY 0"))
            self.send(CommandComplete(self.server.persona.table.command_tag("START_REPLICATION")))
        self._ready()

    def _stream_input(self, msg: Any, now: float) -> None:
        st = self.stream
        assert st is not None
        st.last_reply, st.pinged = now, False  # walsender.c ProcessRepliesIfAny
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
                st.lag.read(self.positions, st.wal_end, now)
                st.reply_time = payload.send_time
                # A logical slot's confirmed_flush follows the flush position (walsender.c
                # ProcessStandbyReplyMessage -> LogicalConfirmReceivedLocation).
                if payload.flush_lsn and payload.flush_lsn > st.slot.confirmed_flush:
                    st.slot.confirmed_flush = payload.flush_lsn
                if payload.reply_requested:
                    self._keepalive(max(st.wal_end, self.server.wal_lsn if _at_end(st) else 0),
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
            at = st.due.get(i)
            due = (at is not None and st.sent >= at) or (
                f.after_seconds is not None and now - st.since.get(i, st.started) >= f.after_seconds)
            if f.after_messages is None and f.after_seconds is None:
                due = True  # crash with no trigger: at once
            if due:
                st.faults.remove(i)
                if faults.fire(i):
                    out.append(f)
        return out

    def _apply_fault(self, f: Fault, st: _Stream, now: float) -> str:
        """Apply a fault (walsender.stream.apply_fault, shared with the physical streams)."""
        return apply_fault(self, f, _LogicalStream(self), now)  # type: ignore[arg-type]  # a mixin of Connection

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
        plan = st.plan
        if not plan.done:
            # Render a little past what this call sends: the stream starts at once and each
            # call stays short, whatever the scenario's size (the plan is shared: a later
            # connection finds it further rendered).
            plan.grow(st.index + RENDER_AHEAD)
        if st.scan:
            self._scan_kinds(st)
        items = plan.items
        n_items = len(items)
        modifiers: list[str] = []
        if st.faults:
            for f in self._due_faults(st, now, _at_end(st)):
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
                    at = st.due.get(i)
                    if at is not None and at > st.sent:
                        limit = min(limit, st.index + (at - st.sent))
            self._frames(st, limit, now, modifiers)
            st.lag.write(st.wal_end, now)
            if self.out:
                return self._flush()
        if _at_end(st):
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
                    deadline = min(deadline, st.since.get(i, st.started) + f.after_seconds)
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
        """About CHUNK bytes of the plan's frames in one piece, with a fresh sendTime; stops
        before a Notice."""
        fr = st.plan.frames()
        i = st.index
        stop = min(limit, fr.next_notice(i))
        if stop <= i:
            return
        j = fr.span(i, stop, CHUNK)  # about CHUNK bytes of frames
        self.out.append(fr.run(i, j, frames.send_time(ts)))
        n = j - i
        st.sent += n
        self.messages_sent += n
        top = max(st.plan.lsns[i:j])
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



#: Plan items rendered ahead of the next one sent (about one CHUNK of small messages).
RENDER_AHEAD = 1024


def _at_end(st: _Stream) -> bool:
    """Every item of the plan is rendered and sent."""
    return st.plan.done and st.index >= len(st.plan.payloads)


class _LogicalStream:
    """The logical replication stream as a :class:`Stream`: the connection runs it itself
    (its plan, faults and keepalives live in ``Connection.stream``)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def input(self, msg: Any, now: float) -> None:
        self.conn._stream_input(msg, now)

    def produce(self, now: float) -> Action:
        st = self.conn.stream
        if st is None:
            return Wait(None)
        timeout = self.conn.server.limits.wal_sender_timeout
        if not timeout or st.done_sending or st.paused_forever:
            return self.conn._produce(now)
        # walsender.c WalSndCheckTimeOut / WalSndKeepaliveIfNecessary: silent for the whole
        # timeout, the client is dropped (COMMERROR: logged, not sent); silent for half of
        # it, it is asked for a reply, once.
        if now >= st.last_reply + timeout:
            self.conn._silent_close("", "terminating walsender process due to replication timeout",
                                    level="COMMERROR")
            return self.conn.next_action(now)
        if not st.pinged and now >= st.last_reply + timeout / 2:
            st.pinged = True
            self.conn._keepalive(st.wal_end, True)
            return self.conn._flush()
        action = self.conn._produce(now)
        # A stalled walsender (fault "stall") runs no loop: no timeout either.
        if isinstance(action, Wait) and not st.paused_forever:
            due = st.last_reply + (timeout if st.pinged else timeout / 2)
            return Wait(due if action.deadline is None else min(action.deadline, due))
        return action

    # -- FaultTarget -------------------------------------------------------------------------
    @property
    def paused_until(self) -> float | None:
        st = self.conn.stream
        return st.paused_until if st is not None else None

    @paused_until.setter
    def paused_until(self, value: float | None) -> None:
        if self.conn.stream is not None:
            self.conn.stream.paused_until = value

    @property
    def paused_forever(self) -> bool:
        st = self.conn.stream
        return st.paused_forever if st is not None else False

    @paused_forever.setter
    def paused_forever(self, value: bool) -> None:
        if self.conn.stream is not None:
            self.conn.stream.paused_forever = value

    def release(self) -> None:
        pass  # the slot is released when the connection is forgotten

    def fault_keepalive(self) -> None:
        st = self.conn.stream
        self.conn._keepalive(st.wal_end if st is not None else 0, True)

    def fault_shutdown(self) -> bool:
        # A server shutting down ends the COPY itself (walsender.c WalSndDone): CopyDone,
        # then nothing more until the client answers with its CopyDone.
        self.conn.send(CopyDone())
        if self.conn.stream is not None:
            self.conn.stream.done_sending = True
        return True

    def end_after_error(self) -> None:
        self.conn._end_stream(copy_done=False)

    def fault_stray_stream_abort(self, fault: Fault) -> bool:
        self.conn._stray_stream_abort(fault)
        return True
