"""The physical-stream fixture format: recorded WAL, timelines and conversations.

One file per recording (``fixtures/physical/pg15-timeline-switch.json.gz``)::

    {"format": "pgwire-spec/physical-stream", "formatVersion": 1,
     "server": {"version": "15.20 (Debian 15.20-0+deb12u1)", "major": 15, "provider": "system …"},
     "workload": "physical-v1", "capturedOn": "2026-11-22",
     "systemId": "7575…", "walSegmentSize": 1048576, "walBlockSize": 8192,
     "timelines": [{"timeline": 1, "switchpoint": "0/2123F48", "next": 2},
                   {"timeline": 2, "historyFile": "00000002.history", "history": "1\\t0/2123F48\\t…\\n"}],
     "wal": [{"timeline": 1, "start": "0/1000000", "end": "0/2123F48", "chunks": ["<hex of 8192 bytes>", …]}, …],
     "conversations": [{"name": "primary", "messages": [
        {"index": 0, "dir": "F", "hex": "0000004c…", "expected": {"type": "StartupMessage", …}},
        {"index": 40, "dir": "B", "timeline": 1, "length": 131072,
         "expected": {"type": "CopyData", "tag": "d"},
         "copy": {"type": "XLogData", "tag": "w", "data_start": "0/1000000", "wal_end": "0/1031C28", "send_time": …}},
        …]}]}

The WAL of each timeline is stored once, in chunks of 8192 bytes (hex). An XLogData message
has no ``hex``: its bytes are the CopyData frame around ``length`` bytes of its timeline's
WAL from ``data_start``. Every other message has its exact bytes in ``hex`` and its JSON
form in ``expected`` (the wire message; CopyData's payload decoded in ``copy``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CommandSyntaxError, DecodeError
from ..jsonform import to_json
from ..lsn import format_lsn, parse_lsn
from ..replication import commands as rc
from ..replication import frames
from ..replication.messages import XLogData, decode_copy_data, encode_copy_data
from ..wire import (
    BackendReader,
    CopyData,
    DataRow,
    FrontendReader,
    Query,
    RowDescription,
    WireMessage,
    encode_message,
)
from .backup import BackupFile, RecordedBackup
from .history import History, TimelineEntry, history_file_name, parse_history
from .wal import XLOG_BLCKSZ, WalError, WalStore

if TYPE_CHECKING:
    from ..capture.session import Exchange

# The fixture file helpers live in pgwire_spec.capture, whose package brings psycopg along:
# imported where files are read or written, so serving a recording stays free of I/O
# modules (STYLE.md point 1).


def _fixture() -> Any:
    from ..capture import fixture

    return fixture

__all__ = [
    "PHYSICAL_FORMAT",
    "PHYSICAL_FORMAT_VERSION",
    "RecordedMessage",
    "Conversation",
    "PhysicalRecording",
    "conversation_from",
    "read_recording",
    "write_recording",
    "render_recording",
    "parse_recording",
    "verify_recording",
]

PHYSICAL_FORMAT = "pgwire-spec/physical-stream"
PHYSICAL_FORMAT_VERSION = 1
_CHUNK = XLOG_BLCKSZ

#: What the notes of a recording say about the tricky parts.
NOTES: dict[str, str] = {
    "xlogdata-page-boundary": "XLogData ending on a WAL page boundary, short of walEnd: the walsender sends at "
                              "most 16 pages (MAX_SEND_SIZE) per message and rounds a cut down to a page "
                              "boundary, the only place a record may be split.",
    "end-of-timeline": "On a historic timeline the server sends CopyDone at the switch point; after the "
                       "client's CopyDone it sends a result set (next_tli int8, next_tli_startpos text) and "
                       "CommandComplete START_STREAMING, then START_REPLICATION.",
    "timeline-end-no-copy": "START_REPLICATION at the very end of an old timeline: no CopyBothResponse, the "
                            "next-timeline result set at once.",
    "error-after-copy-both": "A start position ahead of the server's flush position is refused after "
                             "CopyBothResponse.",
}


@dataclass(frozen=True, slots=True)
class RecordedMessage:
    """One message of a conversation. XLogData: ``timeline`` and ``length`` instead of
    ``hex`` (the bytes are in the recording's WAL)."""

    index: int
    direction: str
    expected: dict[str, Any]
    hex: str | None = None
    copy: dict[str, Any] | None = None
    timeline: int | None = None
    length: int | None = None
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "dir": self.direction}
        if self.hex is not None:
            d["hex"] = self.hex
        else:
            d["timeline"] = self.timeline
            d["length"] = self.length
        d["expected"] = self.expected
        if self.copy is not None:
            d["copy"] = self.copy
        if self.flags:
            d["flags"] = list(self.flags)
        return d


@dataclass(frozen=True, slots=True)
class Conversation:
    """One replication connection, both directions, in the order the messages went."""

    name: str
    messages: tuple[RecordedMessage, ...]
    #: Raw XLogData payloads of the capture (not stored: the WAL is), by message index.
    wal: dict[int, bytes] = field(default_factory=dict, compare=False, repr=False)


def _wire_json(msg: WireMessage) -> dict[str, Any]:
    return to_json(msg, omit="data" if isinstance(msg, CopyData) else None)  # given decoded in "copy"


def _copy_json(payload: Any) -> dict[str, Any]:
    return to_json(payload, omit="data" if isinstance(payload, XLogData) else None)  # in the recording's WAL


def _stream_timeline(sql: str, current: int | None) -> int | None:
    try:
        cmd = rc.parse_command(sql)
    except CommandSyntaxError:
        return current
    if isinstance(cmd, rc.StartReplication) and cmd.kind == "physical":
        return cmd.timeline
    return current


def conversation_from(name: str, transcript: Sequence[Exchange]) -> Conversation:
    """A :class:`Conversation` from a recorded client transcript."""
    out: list[RecordedMessage] = []
    wal: dict[int, bytes] = {}
    timeline: int | None = None
    for index, ex in enumerate(transcript):
        if isinstance(ex.message, Query):
            timeline = _stream_timeline(ex.message.sql, timeline)
        if isinstance(ex.copy, XLogData) and ex.direction == "B":
            if timeline is None:
                raise _fixture().FixtureError(f"{name}: message {index}: XLogData on a stream with no TIMELINE")
            out.append(RecordedMessage(index, "B", _wire_json(ex.message), None, _copy_json(ex.copy), timeline,
                                       len(ex.copy.data)))
            wal[index] = ex.copy.data
            continue
        out.append(RecordedMessage(index, ex.direction, _wire_json(ex.message), ex.data.hex(),
                                   _copy_json(ex.copy) if ex.copy is not None else None))
    return Conversation(name, tuple(out), wal)


@dataclass(frozen=True, slots=True)
class PhysicalRecording:
    """A recorded physical replication: the server, its WAL per timeline, its timeline
    history and the conversations that fetched them."""

    server_version: str
    major: int
    provider: str
    workload: str
    captured_on: str
    system_id: str
    segment_size: int
    history: History
    store: WalStore = field(compare=False)
    conversations: tuple[Conversation, ...]
    block_size: int = XLOG_BLCKSZ
    notes: dict[str, str] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    #: Base backups the server sent during the capture (a full one; on 17+ an incremental
    #: one after it): what BASE_BACKUP serves when the scenario names no directory.
    backups: tuple[RecordedBackup, ...] = field(default=(), compare=False)

    def backup(self, name: str) -> RecordedBackup | None:
        """The recorded backup called *name* (``full``, ``incremental``)."""
        return next((b for b in self.backups if b.name == name), None)

    # -- what a server serving it needs ----------------------------------------------------
    @property
    def timeline(self) -> int:
        """The current (newest) timeline."""
        return self.history.current

    @property
    def flush_lsn(self) -> int:
        """The end of the newest timeline's WAL: what IDENTIFY_SYSTEM reports."""
        return self.store.range(self.timeline)[1]

    def flush_points(self, timeline: int) -> list[int]:
        """The walEnd values the recorded XLogData of *timeline* carried, in order (the
        flush positions a live walsender saw; replaying them reproduces its cuts)."""
        out: list[int] = []
        for conv in self.conversations:
            for m in conv.messages:
                if m.timeline == timeline and m.copy is not None:
                    end = parse_lsn(m.copy["wal_end"])
                    if not out or end > out[-1]:
                        out.append(end)
        return out

    def xlogdata(self, timeline: int | None = None) -> list[tuple[int, int, int]]:
        """Recorded XLogData as (dataStart, end, walEnd), in order."""
        out = []
        for conv in self.conversations:
            for m in conv.messages:
                if m.length is not None and m.copy is not None and (timeline is None or m.timeline == timeline):
                    start = parse_lsn(m.copy["data_start"])
                    out.append((start, start + m.length, parse_lsn(m.copy["wal_end"])))
        return out

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def build(cls, *, server_version: str, major: int, provider: str, workload: str, captured_on: str,
              system_id: str, segment_size: int, conversations: tuple[Conversation, ...],
              backups: tuple[RecordedBackup, ...] = ()) -> PhysicalRecording:
        """A recording from captured conversations: the WAL of every XLogData, the
        history from the newest TIMELINE_HISTORY answer."""
        store = WalStore(segment_size)
        history_content: tuple[int, bytes] | None = None
        for conv in conversations:
            for m in conv.messages:
                if m.length is not None and m.timeline is not None and m.copy is not None:
                    store.add(m.timeline, parse_lsn(m.copy["data_start"]), conv.wal[m.index])
            rows = _history_rows(conv)
            for tli, content in rows:
                if history_content is None or tli > history_content[0]:
                    history_content = (tli, content)
        if history_content is None:
            history = History(max(store.timelines or [1]))
        else:
            history = History(history_content[0], parse_history(history_content[1], timeline=history_content[0]))
        return cls(server_version, major, provider, workload, captured_on, system_id, segment_size, history,
                   store, conversations, notes=dict(NOTES), backups=backups)


def _history_rows(conv: Conversation) -> list[tuple[int, bytes]]:
    """(timeline, content) of every successful TIMELINE_HISTORY answer."""
    out = []
    readers = {"B": BackendReader()}
    last_row: RowDescription | None = None
    for m in conv.messages:
        if m.direction != "B" or m.hex is None:
            continue
        msg = _decode_one(readers, "B", bytes.fromhex(m.hex))
        if isinstance(msg, RowDescription):
            last_row = msg
        elif isinstance(msg, DataRow) and last_row is not None and [f.name for f in last_row.fields] == \
                ["filename", "content"]:
            name = bytes(msg.values[0] or b"").decode()
            out.append((int(name.split(".")[0], 16), bytes(msg.values[1] or b"")))
    return out


def _decode_one(readers: dict[str, Any], direction: str, data: bytes) -> WireMessage:
    reader = readers[direction]
    reader.feed(data)
    msg = reader.next_event()
    if not isinstance(msg, WireMessage) or reader.buffered:
        raise DecodeError("trailing-bytes", expected="exactly one message", found=f"{msg!r}, {reader.buffered} left")
    return msg


# -- the file ---------------------------------------------------------------------------------


def render_recording(rec: PhysicalRecording) -> str:
    """The file text: header lines, WAL chunks one per line, one message per line."""
    _dumps = _fixture()._dumps
    timelines = []
    for tli in rec.history.timelines:
        entry: dict[str, Any] = {"timeline": tli}
        switch, following = rec.history.switchpoint(tli)
        if switch is not None:
            entry["switchpoint"] = format_lsn(switch)
            entry["next"] = following
        if tli > 1:
            entry["historyFile"] = history_file_name(tli)
            entry["history"] = rec.history.file(tli).decode()
        timelines.append(entry)
    head = {
        "format": PHYSICAL_FORMAT, "formatVersion": PHYSICAL_FORMAT_VERSION,
        "server": {"version": rec.server_version, "major": rec.major, "provider": rec.provider},
        "workload": rec.workload, "capturedOn": rec.captured_on, "systemId": rec.system_id,
        "walSegmentSize": rec.segment_size, "walBlockSize": rec.block_size, "timelines": timelines,
        "notes": rec.notes,
    }
    lines = ["{"] + [f"  {_dumps(k)}: {_dumps(v)}," for k, v in head.items()] + ['  "wal": [']
    tlis = rec.store.timelines
    for ti, tli in enumerate(tlis):
        first, last = rec.store.range(tli)
        data = rec.store.read(tli, first, last)
        lines.append(f'    {{"timeline": {tli}, "start": "{format_lsn(first)}", "end": "{format_lsn(last)}", "chunks": [')
        chunks = [data[i:i + _CHUNK].hex() for i in range(0, len(data), _CHUNK)]
        for ci, c in enumerate(chunks):
            lines.append(f'      "{c}"' + ("," if ci < len(chunks) - 1 else ""))
        lines.append("    ]}" + ("," if ti < len(tlis) - 1 else ""))
    lines.append("  ],")
    lines.append('  "conversations": [')
    for ci, conv in enumerate(rec.conversations):
        lines.append(f'    {{"name": {_dumps(conv.name)}, "messages": [')
        for mi, m in enumerate(conv.messages):
            lines.append("      " + _dumps(m.to_dict()) + ("," if mi < len(conv.messages) - 1 else ""))
        lines.append("    ]}" + ("," if ci < len(rec.conversations) - 1 else ""))
    lines.append("  ]" + ("," if rec.backups else ""))
    if rec.backups:
        lines.append('  "backups": [')
        for bi, b in enumerate(rec.backups):
            lines.append("    " + _dumps(_backup_head(b))[:-1] + ', "files": [')
            for fi, f in enumerate(b.files):
                member: dict[str, Any] = {"path": f.path, "mode": f.mode, "mtime": f.mtime}
                if f.content is None:
                    member["dir"] = True
                else:
                    member["hex"] = f.content.hex()
                lines.append("      " + _dumps(member) + ("," if fi < len(b.files) - 1 else ""))
            lines.append("    ]}" + ("," if bi < len(rec.backups) - 1 else ""))
        lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _backup_head(b: RecordedBackup) -> dict[str, Any]:
    return {"name": b.name, "command": b.command, "timeline": b.timeline, "start": format_lsn(b.start_lsn),
            "end": format_lsn(b.end_lsn), "label": b.label.decode(),
            "manifest": b.manifest.decode() if b.manifest is not None else None}


def _parse_backup(b: Any, where: str) -> RecordedBackup:
    FixtureError, _need = _fixture().FixtureError, _fixture()._need
    files = []
    for i, f in enumerate(_need(b, "files", list, where)):
        fw = f"{where}.files[{i}]"
        path, mode, mtime = _need(f, "path", str, fw), _need(f, "mode", int, fw), _need(f, "mtime", int, fw)
        if f.get("dir"):
            files.append(BackupFile(path, mtime, None, mode))
            continue
        try:
            content = bytes.fromhex(_need(f, "hex", str, fw))
        except ValueError:
            raise FixtureError(f"{fw}.hex: expected hex digits") from None
        files.append(BackupFile(path, mtime, content, mode))
    manifest = b.get("manifest")
    if manifest is not None and not isinstance(manifest, str):
        raise FixtureError(f"{where}.manifest: expected the manifest's text or null, found {type(manifest).__name__}")
    return RecordedBackup(
        _need(b, "name", str, where), _need(b, "command", str, where), _need(b, "timeline", int, where),
        _lsn(_need(b, "start", str, where), where + ".start"), _lsn(_need(b, "end", str, where), where + ".end"),
        _need(b, "label", str, where).encode(), tuple(files), manifest.encode() if manifest is not None else None)


def write_recording(rec: PhysicalRecording, path: str | Path) -> Path:
    """Write *rec* (gzip when the name ends in ``.gz``)."""
    return _fixture().write_text(render_recording(rec), Path(path))  # type: ignore[no-any-return]


def read_recording(path: str | Path) -> PhysicalRecording:
    """Read and check the structure of a recording file (``.json`` or ``.json.gz``)."""
    p = Path(path)
    return parse_recording(_fixture().load_document(p), p)


def _lsn(value: Any, where: str) -> int:
    FixtureError = _fixture().FixtureError
    if not isinstance(value, str):
        raise FixtureError(f"{where}: expected an LSN like '0/1000000', found {value!r}")
    try:
        return parse_lsn(value)
    except ValueError:
        raise FixtureError(f"{where}: expected an LSN like '0/1000000', found {value!r}") from None


def parse_recording(doc: Any, path: Path) -> PhysicalRecording:
    """A :class:`PhysicalRecording` from its JSON document; FixtureError when it is not one."""
    FixtureError, _need = _fixture().FixtureError, _fixture()._need
    where = str(path)
    server = _fixture()._need_header(doc, where, PHYSICAL_FORMAT_VERSION, PHYSICAL_FORMAT)
    seg = _need(doc, "walSegmentSize", int, where)
    block = _need(doc, "walBlockSize", int, where)
    try:
        store = WalStore(seg, block)
    except WalError as exc:
        raise FixtureError(f"{where}.walSegmentSize: {exc}") from None
    for i, w in enumerate(_need(doc, "wal", list, where)):
        ww = f"{where}: wal[{i}]"
        tli = _need(w, "timeline", int, ww)
        start = _lsn(_need(w, "start", str, ww), ww + ".start")
        end = _lsn(_need(w, "end", str, ww), ww + ".end")
        try:
            data = b"".join(bytes.fromhex(c) for c in _need(w, "chunks", list, ww))
        except (ValueError, TypeError):
            raise FixtureError(f"{ww}.chunks: expected strings of hex digits") from None
        if start + len(data) != end:
            raise FixtureError(f"{ww}: expected {end - start} bytes from {format_lsn(start)} to {format_lsn(end)}, "
                               f"found {len(data)}")
        try:
            store.add(tli, start, data)
        except WalError as exc:
            raise FixtureError(f"{ww}: {exc}") from None
    entries: list[TimelineEntry] = []
    current = 1
    for i, t in enumerate(_need(doc, "timelines", list, where)):
        tw = f"{where}: timelines[{i}]"
        tli = _need(t, "timeline", int, tw)
        current = max(current, tli)
        if "switchpoint" in t:
            entries.append(TimelineEntry(tli, _lsn(t["switchpoint"], tw + ".switchpoint")))
    reasons: dict[int, str] = {}
    for t in doc["timelines"]:
        if t.get("timeline") == current and "history" in t:
            for e in parse_history(str(t["history"]), timeline=current):
                reasons[e.timeline] = e.reason
    history = History(current, tuple(TimelineEntry(e.timeline, e.switchpoint, reasons.get(e.timeline, e.reason))
                                     for e in entries))
    conversations = []
    for ci, c in enumerate(_need(doc, "conversations", list, where)):
        cw = f"{where}: conversations[{ci}]"
        msgs = []
        for mi, m in enumerate(_need(c, "messages", list, cw)):
            mw = f"{cw}.messages[{mi}]"
            direction = _fixture()._need_direction(m, mw)
            hexdata = m.get("hex")
            if hexdata is None:
                msgs.append(RecordedMessage(_need(m, "index", int, mw), direction, _need(m, "expected", dict, mw),
                                            None, _need(m, "copy", dict, mw), _need(m, "timeline", int, mw),
                                            _need(m, "length", int, mw), tuple(m.get("flags", ()))))
            else:
                msgs.append(RecordedMessage(_need(m, "index", int, mw), direction, _need(m, "expected", dict, mw),
                                            str(hexdata), m.get("copy"), flags=tuple(m.get("flags", ()))))
        conversations.append(Conversation(_need(c, "name", str, cw), tuple(msgs)))
    return PhysicalRecording(
        server_version=_need(server, "version", str, where + ".server"),
        major=_need(server, "major", int, where + ".server"), provider=str(server.get("provider", "")),
        workload=_need(doc, "workload", str, where), captured_on=str(doc.get("capturedOn", "")),
        system_id=_need(doc, "systemId", str, where), segment_size=seg, history=history, store=store,
        conversations=tuple(conversations), block_size=block, notes=dict(doc.get("notes", {})), path=path,
        backups=tuple(_parse_backup(b, f"{where}: backups[{i}]") for i, b in enumerate(doc.get("backups") or ())),
    )


# -- verification ----------------------------------------------------------------------------

def message_bytes(rec: PhysicalRecording, m: RecordedMessage) -> bytes:
    """The exact bytes of a recorded message (XLogData rebuilt from the WAL)."""
    if m.hex is not None:
        return bytes.fromhex(m.hex)
    assert m.copy is not None and m.timeline is not None and m.length is not None
    start = parse_lsn(m.copy["data_start"])
    data = rec.store.read(m.timeline, start, start + m.length)
    return frames.xlog_data(start, parse_lsn(m.copy["wal_end"]), int(m.copy["send_time"]), data)


def verify_recording(rec: PhysicalRecording) -> tuple[int, list[str]]:
    """Check a recording: every message reads back from its bytes in order, per direction,
    re-encodes identically and equals its JSON; every XLogData lies inside its timeline's
    WAL and ends on a record or a page boundary; every WAL record's CRC checks out; the
    history names the timelines the WAL has. Returns (messages checked, problems)."""
    problems: list[str] = []
    where = str(rec.path or "recording")
    boundaries: dict[int, set[int]] = {}
    for tli in rec.store.timelines:
        ends = set()
        for r in rec.store.records(tli, check_crc=True):
            if not r.crc_ok:
                problems.append(f"{where}: timeline {tli}: record at {format_lsn(r.lsn)} fails its CRC")
            ends.add(r.lsn)
            ends.add(r.end)
            if r.is_switch:
                ends.add(r.lsn - r.lsn % rec.segment_size + rec.segment_size)
        boundaries[tli] = ends
        if tli not in rec.history.timelines:
            problems.append(f"{where}: WAL of timeline {tli}, which the history does not name")
    count = 0
    for conv in rec.conversations:
        readers: dict[str, Any] = {"F": FrontendReader(), "B": BackendReader()}
        for m in conv.messages:
            count += 1
            mid = f"{where}: {conv.name}/{m.index}"
            try:
                data = message_bytes(rec, m)
            except (ValueError, WalError) as exc:
                problems.append(f"{mid}: {exc}")
                continue
            try:
                msg = _decode_one(readers, m.direction, data)
            except DecodeError as err:
                problems.append(f"{mid}: {err}")
                readers[m.direction] = FrontendReader() if m.direction == "F" else BackendReader()
                continue
            if encode_message(msg) != data:
                problems.append(f"{mid}: re-encoded bytes differ")
            if _wire_json(msg) != m.expected:
                problems.append(f"{mid}: decoded {_wire_json(msg)}, expected {m.expected}")
            if not isinstance(msg, CopyData) or m.copy is None:
                continue
            try:
                payload = decode_copy_data(msg.data)
            except DecodeError as err:
                problems.append(f"{mid}: CopyData: {err}")
                continue
            if encode_copy_data(payload) != msg.data or _copy_json(payload) != m.copy:
                problems.append(f"{mid}: replication payload differs from its JSON form")
            if isinstance(payload, XLogData) and m.timeline is not None:
                end = payload.data_start + len(payload.data)
                if end != payload.wal_end and end % rec.block_size and end not in boundaries.get(m.timeline, ()):
                    problems.append(f"{mid}: XLogData ends at {format_lsn(end)}, neither walEnd, a page boundary "
                                    "nor a record boundary")
    problems += _backup_problems(rec, where)
    return count, problems


def _backup_problems(rec: PhysicalRecording, where: str) -> list[str]:
    """A recorded backup lies in its timeline's recorded WAL, its backup_label names its
    start, an incremental one names a backup before it, and its manifest (13+) lists the
    recorded files with their sizes."""
    import json

    out = []
    for b in rec.backups:
        bw = f"{where}: backups/{b.name}"
        try:
            first, last = rec.store.range(b.timeline)
        except WalError:
            out.append(f"{bw}: timeline {b.timeline} has no recorded WAL")
            continue
        if not first <= b.start_lsn <= b.end_lsn <= last:
            out.append(f"{bw}: {format_lsn(b.start_lsn)}..{format_lsn(b.end_lsn)} outside the recorded WAL of "
                       f"timeline {b.timeline} ({format_lsn(first)}..{format_lsn(last)})")
        start = (b.label_field("START WAL LOCATION") or "").split(" ")[0]
        if start != format_lsn(b.start_lsn):
            out.append(f"{bw}: backup_label starts at {start or 'nothing'}, the backup at {format_lsn(b.start_lsn)}")
        prior = b.incremental_from
        if prior is not None and not any((o.start_lsn, o.timeline) == prior for o in rec.backups):
            out.append(f"{bw}: incremental from {format_lsn(prior[0])} on timeline {prior[1]}, no recorded backup "
                       "starts there")
        if b.manifest is None:
            continue
        try:
            listed = {f["Path"]: f["Size"] for f in json.loads(b.manifest)["Files"] if f["Path"] != "backup_label"}
        except (ValueError, KeyError, TypeError):
            out.append(f"{bw}: the manifest does not read as a backup manifest")
            continue
        recorded = {f.path: len(f.content) for f in b.files if f.content is not None}
        if listed != recorded:
            diff = sorted(set(listed.items()) ^ set(recorded.items()))[:3]
            out.append(f"{bw}: the manifest and the recorded files differ: {diff}")
    return out

