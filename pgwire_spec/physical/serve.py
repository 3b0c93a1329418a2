"""The fake walsender's physical side: recorded WAL, timelines, physical slots, BASE_BACKUP.

The walsender core (:mod:`pgwire_spec.walsender.core`) hands a replication command to
:func:`command` when its scenario has a ``physical`` section; what is answered here is
answered as PostgreSQL's walsender.c answers it (texts and SQLSTATEs seen on 15: see the
recorded conversations in ``fixtures/physical/``), and anything else goes back to the core.
A running START_REPLICATION … PHYSICAL or BASE_BACKUP is a *delegate* of the connection:
the core passes it the client's messages (``input``) and asks it for output (``produce``),
which comes in bounded pieces so a slow client slows the stream down.

Sans-IO: no socket, no clock of its own (``now`` comes from the shell).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError
from ..lsn import format_lsn
from ..replication import commands as rc
from ..replication import frames
from ..replication.messages import (
    HotStandbyFeedback,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
)
from ..walsender.core import CHUNK, SlotState, Wait
from ..walsender.faults import Fault, modify_payload
from ..walsender.personas import ServerError
from ..walsender.stream import apply_fault
from ..wire import (
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyFail,
    CopyInResponse,
    Terminate,
    WireMessage,
)
from .backup import (
    MAX_MANIFEST_BYTES,
    BackupFile,
    BackupSource,
    RecordedBackup,
    Throttle,
    backup_messages,
    collect_files,
    parse_backup_options,
    parse_manifest_start,
)
from .history import HistoryError, history_file_name
from .recording import PhysicalRecording
from .wal import WalError, iter_records, segment_name, split_xlogdata

if TYPE_CHECKING:
    from ..walsender.core import Action, Connection, ServerState

__all__ = ["PhysicalSource", "PhysicalServer", "command", "physical_server"]



@dataclass(frozen=True, slots=True)
class PhysicalSource:
    """A scenario's ``physical`` section: the recording served, how XLogData are cut
    (``caught-up``: as a server whose WAL is all written cuts them — 16 pages, rounded to a
    page — or ``recorded``: at the flush positions the recording saw as well), the physical
    slots that exist (name, restart_lsn), and what BASE_BACKUP serves."""

    recording: PhysicalRecording
    split: str = "caught-up"
    slots: tuple[tuple[str, int], ...] = ()
    backup: BackupSource | None = None

    def server_defaults(self) -> dict[str, Any]:
        """ServerInfo values the recording implies (the scenario's own win)."""
        return {"version": self.recording.server_version.split()[0], "system_id": self.recording.system_id,
                "timeline": self.recording.timeline}

    def command(self, conn: Connection, cmd: Any, now: float) -> bool | None:
        """The walsender's ``CommandSource`` hook (walsender.stream): answer *cmd* if it is
        physical replication's."""
        return command(conn, cmd, now)


_SERVERS: weakref.WeakKeyDictionary[Any, PhysicalServer] = weakref.WeakKeyDictionary()


def physical_server(state: ServerState) -> PhysicalServer:
    """The physical side of a fake server (made on first use)."""
    ps = _SERVERS.get(state)
    if ps is None:
        ps = _SERVERS[state] = PhysicalServer(state)
    return ps


def command(conn: Connection, cmd: Any, now: float) -> bool | None:
    """Answer *cmd* if it is physical replication's; True when a stream started, False when
    answered, None to let the core answer it."""
    return physical_server(conn.server).command(conn, cmd, now)


def _tag(conn: Connection, command: str) -> str:
    """The CommandComplete that ends a replication command: its name (13+,
    EndReplicationCommand), before ``SELECT`` (seen on 10-12)."""
    return conn.server.persona.table.command_tag(command)


def _size_text(size: int) -> str:
    """A size as SHOW prints it: ``1MB``, ``16MB``, ``1GB``."""
    if size % (1 << 30) == 0:
        return f"{size >> 30}GB"
    if size % (1 << 20) == 0:
        return f"{size >> 20}MB"
    return f"{size >> 10}kB"


class PhysicalServer:
    """What the connections of one fake server share on the physical side."""

    def __init__(self, state: ServerState) -> None:
        source = state.scenario.physical
        assert isinstance(source, PhysicalSource)
        self.state = state
        self.source = source
        self.recording = source.recording
        self.store = source.recording.store
        self.history = source.recording.history
        #: The current timeline's end: the server's flush position.
        self.flush = self.recording.flush_lsn
        #: Hot standby feedback by slot name (or ``#<connection>`` without a slot).
        self.feedback: dict[str, HotStandbyFeedback] = {}
        #: The backup an uploaded manifest describes, by connection: (timeline, start
        #: position, system identifier or None).
        self.uploads: dict[int, tuple[int, int, int | None]] = {}
        first = self.store.range(self.store.timelines[0])[0]
        for name, restart in source.slots or ():
            if name not in state.slots:
                state.slots[name] = SlotState(name, "physical", None, None, 0, restart if restart else first)

    # -- commands --------------------------------------------------------------------------
    def command(self, conn: Connection, cmd: Any, now: float) -> bool | None:
        if isinstance(cmd, rc.IdentifySystem):
            conn.result((("systemid", 25), ("timeline", self.state.persona.timeline_type), ("xlogpos", 25),
                          ("dbname", 25)),
                         [(self.recording.system_id, str(self.history.current), format_lsn(self.flush),
                           conn.database)], _tag(conn, "IDENTIFY_SYSTEM"))
            return False
        if isinstance(cmd, rc.Show) and cmd.name.lower() in ("wal_segment_size", "wal_block_size"):
            value = _size_text(self.store.segment_size) if cmd.name.lower() == "wal_segment_size" \
                else str(self.store.block_size)
            conn.result(((cmd.name.lower(), 25),), [(value,)], _tag(conn, "SHOW"))
            return False
        if isinstance(cmd, rc.TimelineHistory):
            self._timeline_history(conn, cmd.timeline)
            return False
        if isinstance(cmd, rc.CreateReplicationSlot) and cmd.kind == "physical":
            self._create_slot(conn, cmd)
            return False
        if isinstance(cmd, rc.ReadReplicationSlot):
            self._read_slot(conn, cmd)
            return False
        if isinstance(cmd, rc.StartReplication) and cmd.kind == "physical":
            return self._start(conn, cmd, now)
        if isinstance(cmd, rc.BaseBackup):
            return self._base_backup(conn, cmd, now)
        if isinstance(cmd, rc.UploadManifest):
            # walsender.c UploadManifest (17+): CopyInResponse, the client's manifest in
            # CopyData up to CopyDone, then CommandComplete UPLOAD_MANIFEST.
            conn.send(CopyInResponse(0, ()))
            conn.start_stream(ManifestUpload(self, conn, now))
            return True
        return None

    def _timeline_history(self, conn: Connection, tli: int) -> None:
        # walsender.c SendTimeLineHistory: the RowDescription goes out before the file is
        # opened, so a missing file is an error after it; content is bytea up to 13, text
        # from 14; built by hand up to 15 (typmod 0), by the tuple output from 16 (-1).
        from ..wire import FieldDescription, RowDescription

        table = self.state.persona.table
        typmod = -1 if table.replication_tuple_output else 0
        content = 17 if table.timeline_history_bytea else 25
        conn.send(RowDescription((FieldDescription("filename", 0, 0, 25, -1, typmod, 0),
                                  FieldDescription("content", 0, 0, content, -1, typmod, 0))))
        name = history_file_name(tli)
        if tli == 1 or tli not in self.history.timelines:
            raise ServerError("58P01", f'could not open file "pg_wal/{name}": No such file or directory')
        from ..wire import DataRow

        conn.send(DataRow((name.encode(), self.history.file(tli))))
        conn.send(CommandComplete(_tag(conn, "TIMELINE_HISTORY")))

    def _create_slot(self, conn: Connection, cmd: rc.CreateReplicationSlot) -> None:
        conn.check_slot_name(cmd.slot_name)
        reserve = False
        seen: set[str] = set()
        for name, value in cmd.options:
            # parseCreateReplSlotOptions: snapshot and two_phase are logical slots' options.
            if name in seen or name in ("snapshot", "two_phase") or (name == "failover" and
                                                                     name in self.state.persona.table.slot_options):
                raise ServerError("42601", "conflicting or redundant options")
            seen.add(name)
            if name == "reserve_wal":
                reserve = value is None or value is True or str(value).lower() in ("true", "on", "1")
            else:
                raise ServerError("XX000", f"unrecognized option: {name}")
        if cmd.slot_name in self.state.slots:
            raise ServerError("42710", f'replication slot "{cmd.slot_name}" already exists')
        # A physical slot that reserves WAL starts at the oldest WAL the recording holds (a
        # real primary takes its last checkpoint's redo position).
        restart = self.store.range(self.store.timelines[0])[0] if reserve else 0
        self.state.slots[cmd.slot_name] = SlotState(
            cmd.slot_name, "physical", None, None, 0, restart, False, False, cmd.temporary, None,
            conn.id if cmd.temporary else None)
        # CreateReplicationSlot: consistent_point is the slot's confirmed_flush, 0/0 for a
        # physical slot (seen on 15).
        conn.result((("slot_name", 25), ("consistent_point", 25), ("snapshot_name", 25), ("output_plugin", 25)),
                     [(cmd.slot_name, "0/0", None, None)], _tag(conn, "CREATE_REPLICATION_SLOT"))

    def _read_slot(self, conn: Connection, cmd: rc.ReadReplicationSlot) -> None:
        cols = (("slot_type", 25), ("restart_lsn", 25), ("restart_tli", 20))
        slot = self.state.slots.get(cmd.slot_name)
        if slot is None:
            conn.result(cols, [(None, None, None)], "READ_REPLICATION_SLOT")
            return
        if slot.kind == "logical":
            raise ServerError("0A000", "cannot use READ_REPLICATION_SLOT with a logical replication slot")
        if not slot.restart_lsn:
            conn.result(cols, [("physical", None, None)], "READ_REPLICATION_SLOT")
            return
        conn.result(cols, [("physical", format_lsn(slot.restart_lsn),
                             str(self.history.timeline_of(slot.restart_lsn)))], "READ_REPLICATION_SLOT")

    # -- START_REPLICATION … PHYSICAL ------------------------------------------------------------
    def _start(self, conn: Connection, cmd: rc.StartReplication, now: float) -> bool:
        slot = None
        if cmd.slot_name is not None:
            slot = self.state.slots.get(cmd.slot_name)
            if slot is None:
                raise ServerError("42704", f'replication slot "{cmd.slot_name}" does not exist')
            if slot.kind != "physical":
                raise ServerError("55000", "cannot use a logical replication slot for physical replication")
            self.state.check_slot_free(slot, conn.id)
        start = cmd.start_lsn
        current = self.history.current
        tli = cmd.timeline if cmd.timeline is not None else current
        switch: int | None = None
        following: int | None = None
        if tli != current:
            try:
                switch, following = self.history.switchpoint(tli)
            except HistoryError as exc:
                raise ServerError("XX000", str(exc)) from None
            assert switch is not None
            if switch < start:
                raise ServerError(
                    "XX000", f"requested starting point {format_lsn(start)} on timeline {tli} is not in this "
                             "server's history",
                    detail=f"This server's history forked from timeline {tli} at {format_lsn(switch)}.")
            if start == switch:
                # At the very end of an old timeline: no COPY mode at all.
                self._next_timeline(conn, following or current, switch)
                return False
        conn.send(CopyBothResponse(0, ()))
        if self.flush < start:
            raise ServerError("XX000", f"requested starting point {format_lsn(start)} is ahead of the WAL flush "
                                       f"position of this server {format_lsn(self.flush)}")
        end = switch if switch is not None else self.flush
        if start < end and not self.store.holds(tli, start, end):
            raise ServerError("58P01", f"requested WAL segment {segment_name(tli, start, self.store.segment_size)} "
                                       "has already been removed")
        if slot is not None:
            slot.active = conn.id
        if self.source.split == "recorded":
            flush_points = [p for p in self.recording.flush_points(tli) if start < p < end] + [end]
        else:
            flush_points = [end]
        stream = WalStream(self, conn, tli, start, end, switch is not None, following, slot,
                           split_xlogdata(start, flush_points, block_size=self.store.block_size), now)
        conn.start_stream(stream)
        return True

    def _next_timeline(self, conn: Connection, tli: int, switch: int) -> None:
        """The end-of-timeline result set (next_tli int8, next_tli_startpos text), then
        CommandComplete START_STREAMING and START_REPLICATION (seen on 15)."""
        conn.result((("next_tli", 20), ("next_tli_startpos", 25)), [(str(tli), format_lsn(switch))],
                     "START_STREAMING")
        conn.send(CommandComplete(_tag(conn, "START_REPLICATION")))

    # -- BASE_BACKUP -----------------------------------------------------------------------
    def _base_backup(self, conn: Connection, cmd: rc.BaseBackup, now: float) -> bool:
        table = self.state.persona.table
        incremental = self.recording.backup("incremental")
        # The fake summarizes WAL when its recording holds a real incremental backup: the
        # server it was recorded from did (summarize_wal = on).
        opts = parse_backup_options(cmd, table, summarize_wal=incremental is not None)
        if opts.incremental:
            assert incremental is not None
            return self._recorded_backup(conn, opts, self._check_upload(conn, incremental), now)
        source = self.source.backup
        if source is None:
            full = self.recording.backup("full")
            if full is None:
                raise ServerError("0A000", "BASE_BACKUP needs a directory to serve",
                                  hint="Name one in the scenario: physical: {backup: {directory: …}}, or serve "
                                       "a recording with a base backup (pgwire-spec capture --physical).")
            return self._recorded_backup(conn, opts, full, now)
        tli = source.timeline or self.history.current
        try:
            first, last = self.store.range(tli)
        except WalError as exc:
            raise ServerError("58P01", str(exc)) from None
        start = source.start_lsn
        if start is None:
            begin = self.history.begin(tli)
            start = next((r.lsn for r in iter_records(self.store.read(tli, first, last), first,
                                                      self.store.segment_size) if r.lsn >= begin), first)
        end = source.end_lsn if source.end_lsn is not None else last
        files = list(source.files) if source.files else collect_files(source.directory)
        return self._send_backup(conn, opts, files, tli, start, end, source.checkpoint_lsn or start, None, now)

    def _check_upload(self, conn: Connection, backup: RecordedBackup) -> RecordedBackup:
        """The recorded incremental backup, if the manifest this connection uploaded is the
        one of the backup it was taken against; else the server's error."""
        uploaded = self.uploads.get(conn.id)
        if uploaded is None:
            # basebackup.c SendBaseBackup
            raise ServerError("55000", "must UPLOAD_MANIFEST before performing an incremental BASE_BACKUP")
        tli, start, _sysid = uploaded
        prior = backup.incremental_from
        if prior is None or (start, tli) != prior:
            # basebackup_incremental.c PrepareForIncrementalBackup: the fake has WAL
            # summaries from the recorded prior backup's start only.
            raise ServerError("55000", f"WAL summaries are required on timeline {tli} from {format_lsn(start)} to "
                                       f"{format_lsn(backup.start_lsn)}, but no summaries for that timeline and "
                                       "LSN range exist",
                              hint="The fake walsender serves the incremental backup its recording holds, taken "
                                   f"after the backup that started at {format_lsn(prior[0]) if prior else '?'}"
                                   f" on timeline {prior[1] if prior else '?'}: upload that backup's manifest.")
        return backup

    def _recorded_backup(self, conn: Connection, opts: Any, backup: RecordedBackup, now: float) -> bool:
        return self._send_backup(conn, opts, list(backup.files), backup.timeline, backup.start_lsn, backup.end_lsn,
                                 backup.checkpoint_lsn, backup.incremental_from, now)

    def _send_backup(self, conn: Connection, opts: Any, files: list[BackupFile], tli: int, start: int, end: int,
                     checkpoint: int, incremental_from: tuple[int, int] | None, now: float) -> bool:
        table = self.state.persona.table
        messages = backup_messages(opts, major=table, files=files, store=self.store, timeline=tli, start=start,
                                   end=end, checkpoint=checkpoint, started=int(conn.server.wall_clock()),
                                   system_id=self.recording.system_id, incremental_from=incremental_from)
        conn.start_stream(BackupStream(conn, messages, Throttle(opts.max_rate, now) if opts.max_rate else None,
                                       now, typed=table.backup_copy_protocol))
        return True


def _row_description(columns: tuple[tuple[str, int], ...]) -> WireMessage:
    from ..wire import FieldDescription, RowDescription

    sizes = {20: 8, 23: 4, 26: 4}
    return RowDescription(tuple(FieldDescription(n, 0, 0, oid, sizes.get(oid, -1), -1, 0) for n, oid in columns))


class _Delegate:
    """What both streams share: faults and the end of the command."""

    conn: Connection
    sent: int
    started: float
    paused_until: float | None
    paused_forever: bool
    fault_ids: list[int]

    def _faults(self, now: float) -> list[Fault]:
        book = self.conn.server.faults
        out = []
        for i in list(self.fault_ids):
            f = book.faults[i]
            due = (f.after_messages is not None and self.sent >= f.after_messages) or (
                f.after_seconds is not None and now - self.started >= f.after_seconds) or (
                f.after_messages is None and f.after_seconds is None)
            if due:
                self.fault_ids.remove(i)
                if book.fire(i):
                    out.append(f)
        return out

    def _limit(self) -> int | None:
        """Messages that may go before the next positional fault."""
        book = self.conn.server.faults
        ahead = [n - self.sent for n in (book.faults[i].after_messages for i in self.fault_ids)
                 if n is not None and n > self.sent]
        return min(ahead) if ahead else None

    def _deadline(self, base: float | None) -> float | None:
        book = self.conn.server.faults
        times = [self.started + t for t in (book.faults[i].after_seconds for i in self.fault_ids) if t is not None]
        if base is not None:
            times.append(base)
        return min(times) if times else None

    def _apply(self, f: Fault, now: float) -> str:
        """Apply a fault (walsender.stream.apply_fault, shared with the logical stream)."""
        return apply_fault(self.conn, f, self, now)

    # -- FaultTarget -------------------------------------------------------------------------
    def release(self) -> None:
        self._release()

    def fault_keepalive(self) -> None:
        self._keepalive(True)

    def fault_shutdown(self) -> bool:
        return False  # not a fault the physical streams know

    def fault_stray_stream_abort(self, fault: Fault) -> bool:
        return False  # no pgoutput in a physical stream

    def end_after_error(self) -> None:
        self._finish()

    def _keepalive(self, reply: bool) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        """Free what the stream holds (its slot)."""

    def _finish(self) -> None:
        """Back to the command phase: ReadyForQuery."""
        self._release()
        conn = self.conn
        conn.finish_stream()

    def _before_output(self, now: float) -> Action | list[str]:
        """What every stream checks before sending: a cancel request, the faults due now
        and a pause. An Action when that decides what happens next; else the modifiers of
        the faults that apply to the next message."""
        conn = self.conn
        if conn.cancel_requested:
            conn.cancel_requested = False
            conn.send_error(ServerError("57014", "canceling statement due to user request"))
            self._finish()
            return conn.next_action(now)
        modifiers: list[str] = []
        if self.fault_ids:
            for f in self._faults(now):
                r = self._apply(f, now)
                if r == "stop":
                    return conn.next_action(now)
                if r != "go":
                    modifiers.append(r)
        paused = self._paused(now)
        if paused is not None:
            return paused
        return modifiers

    def _paused(self, now: float) -> Action | None:
        if self.paused_forever:
            return Wait(None)
        if self.paused_until is not None:
            if now < self.paused_until:
                return Wait(self.paused_until)
            self.paused_until = None
        return None


class WalStream(_Delegate):
    """A running START_REPLICATION … PHYSICAL."""

    def __init__(self, server: PhysicalServer, conn: Connection, timeline: int, start: int, end: int,
                 historic: bool, following: int | None, slot: SlotState | None,
                 cuts: list[tuple[int, int, int]], now: float) -> None:
        self.server = server
        self.conn = conn
        self.timeline = timeline
        self.start = start
        self.end = end
        self.historic = historic
        self.following = following
        self.slot = slot
        self.cuts = cuts
        self.index = 0
        self.sent = 0
        self.sent_ptr = start
        self.started = now
        self.paused_until: float | None = None
        self.paused_forever = False
        self.done_sending = False
        self.keepalive = server.state.scenario.keepalive
        self.next_keepalive = now + self.keepalive.interval
        self.fault_ids = conn.server.faults.for_connection(conn.params, "stream", slot.name if slot else None)
        #: Positions the client reported ('r') and its last hot standby feedback ('h').
        self.positions = (0, 0, 0)
        self.feedback: HotStandbyFeedback | None = None

    # -- output ----------------------------------------------------------------------------
    def produce(self, now: float) -> Action:
        conn = self.conn
        pre = self._before_output(now)
        if not isinstance(pre, list):
            return pre
        modifiers = pre
        if self.index < len(self.cuts):
            self._frames(now, modifiers)
            return conn.next_action(now)
        if self.historic and not self.done_sending:
            # End of an old timeline: the server ends its side of the COPY (XLogSendPhysical).
            self.done_sending = True
            conn.send(CopyDone())
            return conn.next_action(now)
        if not self.done_sending and now >= self.next_keepalive:
            self._keepalive(self.keepalive.reply_requested)
            self.next_keepalive = now + self.keepalive.interval
            return conn.next_action(now)
        return Wait(self._deadline(None if self.done_sending else self.next_keepalive))

    def _frames(self, now: float, modifiers: list[str]) -> None:
        conn = self.conn
        store = self.server.store
        limit = self._limit()
        stop = len(self.cuts) if limit is None else min(len(self.cuts), self.index + limit)
        size = 0
        ts = self.conn.server.pg_now()
        record = conn.server.transcript is not None
        while self.index < stop and size < CHUNK:
            start, end, wal_end = self.cuts[self.index]
            self.index += 1
            data = store.read(self.timeline, start, end)
            data, copies = modify_payload(conn.server.faults, data, modifiers)
            modifiers = []
            frame = frames.xlog_data(start, wal_end, ts, data)
            for _ in range(copies):
                conn.out.append(frame)
                conn.messages_sent += 1
                size += len(frame)
                if record:
                    conn.record("B", None, XLogData(start, wal_end, ts, data))
            self.sent += 1
            self.sent_ptr = max(self.sent_ptr, end)

    def _keepalive(self, reply: bool) -> None:
        # WalSndKeepalive: walEnd is what was sent so far (seen on 15).
        self.conn.keepalive(self.sent_ptr, reply)

    # -- input -----------------------------------------------------------------------------
    def input(self, msg: Any, now: float) -> None:
        conn = self.conn
        if isinstance(msg, CopyData):
            if msg.data[:1] not in (b"r", b"h"):
                # walsender.c ProcessRepliesIfAny/ProcessStandbyMessage: FATAL on any other type.
                conn.record("F", msg)
                self._release()
                kind = msg.data[:1].decode("latin-1") or "?"
                conn.fatal(ServerError("08P01", f'unexpected message type "{kind}"'))
                return
            try:
                payload = decode_copy_data(msg.data)
            except DecodeError as err:
                conn.record("F", msg)
                self._release()
                conn.fatal(ServerError("08P01", "invalid standby message", detail=str(err)))
                return
            conn.record("F", msg, payload)
            if isinstance(payload, StandbyStatusUpdate):
                self.positions = conn.positions = (payload.write_lsn, payload.flush_lsn, payload.apply_lsn)
                # PhysicalConfirmReceivedLocation: a physical slot's restart_lsn follows flush.
                if self.slot is not None and payload.flush_lsn:
                    self.slot.restart_lsn = payload.flush_lsn
                if payload.reply_requested and not self.done_sending:
                    self._keepalive(False)
            elif isinstance(payload, HotStandbyFeedback):
                self.feedback = payload
                key = self.slot.name if self.slot is not None else f"#{conn.id}"
                self.server.feedback[key] = payload
            else:
                self._release()
                conn.fatal(ServerError("08P01", f'unexpected message type "{payload.tag}"'))
            return
        if isinstance(msg, CopyDone):
            if not self.done_sending:
                self.done_sending = True
                conn.send(CopyDone())
            self._release()
            if self.historic:
                self.server._next_timeline(conn, self.following or self.server.history.current, self.end)
            else:
                conn.send(CommandComplete("START_STREAMING"))
                conn.send(CommandComplete(_tag(conn, "START_REPLICATION")))
            self._finish()
            return
        if isinstance(msg, CopyFail):
            conn.send_error(ServerError("57014", f"COPY from stdin failed: {msg.message}"))
            self._finish()
            return
        if isinstance(msg, Terminate):
            self._release()
            conn.close()
            return
        self._release()
        conn.fatal(ServerError("08P01", f"unexpected message type 0x{ord(msg.tag):02X} during COPY from stdin"))

    def _release(self) -> None:
        if self.slot is not None and self.slot.active == self.conn.id:
            self.slot.active = None


class BackupStream(_Delegate):
    """A running BASE_BACKUP: its messages, paced by MAX_RATE."""

    #: bbsink_copystream: a progress report after at least this many archive bytes …
    PROGRESS_BYTES = 65536
    #: … and at least this long after the last one.
    PROGRESS_SECONDS = 1.0

    def __init__(self, conn: Connection, messages: Iterator[tuple[WireMessage, int]],
                 throttle: Throttle | None, now: float, *, typed: bool = True) -> None:
        self.conn = conn
        self.messages = messages
        self.throttle = throttle
        #: 15+: CopyData typed by their first byte, with progress reports ('p').
        self.typed = typed
        self.in_archive = typed
        self.archive_done = 0
        self.reported = (0, now)
        self.done = 0
        self.sent = 0
        self.started = now
        self.paused_until: float | None = None
        self.paused_forever = False
        self.fault_ids = conn.server.faults.for_connection(conn.params, "stream", None)
        self._pending: tuple[WireMessage, int] | None = None

    def produce(self, now: float) -> Action:
        conn = self.conn
        pre = self._before_output(now)
        if not isinstance(pre, list):
            return pre
        modifiers = pre
        size = 0
        limit = self._limit()
        count = 0
        while size < CHUNK and (limit is None or count < limit):
            item = self._pending or next(self.messages, None)
            self._pending = None
            if item is None:
                self._finish()
                return conn.next_action(now)
            msg, nbytes = item
            if self.throttle is not None and nbytes:
                at = self.throttle.not_before(self.done)
                if at > now:
                    self._pending = item
                    if size:
                        break
                    return Wait(self._deadline(at))
            if modifiers and isinstance(msg, CopyData):
                msg = self._modify(msg, modifiers)
                modifiers = []
            conn.send(msg)
            size += len(getattr(msg, "data", b""))
            self.done += nbytes
            self.sent += 1
            count += 1
            if self.in_archive and isinstance(msg, CopyData):
                self._progress(msg, nbytes, now)
        return conn.next_action(now)

    def _progress(self, msg: CopyData, nbytes: int, now: float) -> None:
        """15+: during an archive, a progress report ('p', Int64 archive bytes sent) every
        64 kB at most once a second, as bbsink_copystream_archive_contents sends them."""
        kind = msg.data[:1]
        if kind in (b"m", b"p"):
            self.in_archive = kind == b"p"  # the end-of-archive report; 'm': the manifest
            return
        if kind != b"d":
            return
        self.archive_done += nbytes
        at, when = self.reported
        if self.archive_done - at >= self.PROGRESS_BYTES and now - when >= self.PROGRESS_SECONDS:
            self.reported = (self.archive_done, now)
            self.conn.send(CopyData(frames.backup_progress(self.archive_done)))

    def _modify(self, msg: CopyData, modifiers: list[str]) -> CopyData:
        data, copies = modify_payload(self.conn.server.faults, msg.data, modifiers)
        for _ in range(copies - 1):
            self.conn.send(CopyData(data))
        return CopyData(data)

    def _keepalive(self, reply: bool) -> None:
        pass  # no keepalives in COPY OUT

    def input(self, msg: Any, now: float) -> None:
        conn = self.conn
        if isinstance(msg, Terminate):
            conn.close()
        # The client may not send anything during COPY OUT but a Terminate; the real server
        # reads nothing until the command ends. Ignore the rest.


class ManifestUpload(_Delegate):
    """A running UPLOAD_MANIFEST (17+): the client's manifest arrives in CopyData; on
    CopyDone it is read and kept for the connection's next incremental BASE_BACKUP
    (walsender.c UploadManifest, HandleUploadManifestPacket)."""

    def __init__(self, server: PhysicalServer, conn: Connection, now: float) -> None:
        self.server = server
        self.conn = conn
        self.data = bytearray()
        self.sent = 0
        self.started = now
        self.paused_until: float | None = None
        self.paused_forever = False
        self.fault_ids = []

    def produce(self, now: float) -> Action:
        return Wait(None)  # the client speaks

    def _keepalive(self, reply: bool) -> None:
        pass  # no keepalives in COPY IN

    def input(self, msg: Any, now: float) -> None:
        conn = self.conn
        if isinstance(msg, Terminate):
            conn.close()
            return
        if isinstance(msg, CopyData):
            if len(self.data) + len(msg.data) > MAX_MANIFEST_BYTES:
                self._fail(ServerError("54000", f"backup manifest larger than the fake walsender reads "
                                                f"({MAX_MANIFEST_BYTES >> 20} MB)"))
                return
            self.data += msg.data
            return
        if isinstance(msg, CopyFail):
            # HandleUploadManifestPacket: the client gave up.
            self._fail(ServerError("57014", f"COPY from stdin failed: {msg.message}"))
            return
        if isinstance(msg, CopyDone):
            try:
                upload = parse_manifest_start(bytes(self.data))
                system_id = self.server.recording.system_id
                if upload[2] is not None and str(upload[2]) != system_id:
                    # basebackup_incremental.c manifest_process_system_identifier
                    raise ServerError("XX000", f"system identifier in backup manifest is {upload[2]}, but "
                                               f"database system identifier is {system_id}")
            except ServerError as err:
                self._fail(err)
                return
            self.server.uploads[conn.id] = upload
            conn.send(CommandComplete("UPLOAD_MANIFEST"))
            self._finish()
            return
        # HandleUploadManifestPacket: anything else during COPY IN.
        conn.fatal(ServerError("08P01", f"unexpected message type 0x{ord(msg.tag):02X} during COPY from stdin"))

    def _fail(self, err: ServerError) -> None:
        self.server.uploads.pop(self.conn.id, None)
        self.conn.send_error(err)
        self._finish()
