"""A transcript of every message a fake walsender exchanged, both directions, decoded.

>>> async with FakeWalsender(scenario) as server:
...     ...
>>> server.transcript.queries()                       # every Query text, in order
>>> [e.pgoutput for e in server.transcript.stream(1)]  # pgoutput messages of connection 1
>>> print(server.transcript.text())                   # the format of the reference transcripts

Entries keep the message objects (:mod:`pgwire_spec.wire` messages; for CopyData of a
replication stream also the decoded XLogData/keepalive/status update and, for XLogData,
the pgoutput message), so tests assert on fields, not on text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, overload

from ..jsonform import to_json
from ..lsn import format_lsn

__all__ = ["Transcript", "Entry"]

#: The spill file's lines indexed every this many (for paging it back).
_MARK_EVERY = 1024


@dataclass(frozen=True, slots=True)
class Entry:
    """One message: ``connection`` (1-based), ``direction`` 'F' (client) or 'B' (server),
    ``time`` (seconds since the server started), the wire ``message``, and for CopyData
    of a replication stream the decoded ``payload`` (XLogData, PrimaryKeepalive,
    StandbyStatusUpdate, HotStandbyFeedback) and ``pgoutput`` message. ``event`` names a
    non-message event ('connected', 'closed', 'reset', 'fault:<action>')."""

    connection: int
    direction: str
    time: float
    message: Any = None
    payload: Any = None
    pgoutput: Any = None
    event: str | None = None

    def describe(self) -> str:
        if self.event is not None:
            return f"[{self.connection}] {self.event}"
        msg = self.message
        name = type(msg).__name__
        p = self.payload
        if p is not None:
            tag = getattr(p, "tag", "?")
            if tag == "w":
                pg = self.pgoutput
                pname = type(pg).__name__ if pg is not None else f"{p.data[:1]!r}"
                return (f"[{self.connection}] {self.direction} CopyData w start={format_lsn(p.data_start)} "
                        f"end={format_lsn(p.wal_end)} {pname} len={len(p.data)}")
            if tag == "k":
                return (f"[{self.connection}] {self.direction} CopyData k ({format_lsn(p.wal_end)}, "
                        f"{p.send_time}, {int(p.reply_requested)})")
            if tag == "r":
                return (f"[{self.connection}] {self.direction} CopyData r ({format_lsn(p.write_lsn)}, "
                        f"{format_lsn(p.flush_lsn)}, {format_lsn(p.apply_lsn)}, {p.send_time}, "
                        f"{int(p.reply_requested)})")
            return f"[{self.connection}] {self.direction} CopyData {name}"
        if name == "Query":
            return f"[{self.connection}] {self.direction} Query {msg.sql!r}"
        if name in ("ErrorResponse", "NoticeResponse"):
            return f"[{self.connection}] {self.direction} {name} {msg.severity} {msg.code} {msg.message!r}"
        if name == "ParameterStatus":
            return f"[{self.connection}] {self.direction} ParameterStatus {msg.name}={msg.value}"
        if name == "RowDescription":
            cols = [f"{f.name}:{f.type_oid}" for f in msg.fields]
            return f"[{self.connection}] {self.direction} RowDescription {cols}"
        if name == "DataRow":
            vals = [None if v is None else v.decode("utf-8", "replace") for v in msg.values]
            return f"[{self.connection}] {self.direction} DataRow {vals}"
        if name == "CommandComplete":
            return f"[{self.connection}] {self.direction} CommandComplete {msg.command_tag!r}"
        if name == "ReadyForQuery":
            return f"[{self.connection}] {self.direction} ReadyForQuery {msg.status}"
        if name == "StartupMessage":
            return f"[{self.connection}] {self.direction} Startup {dict(msg.parameters)}"
        if name == "CopyData":
            return f"[{self.connection}] {self.direction} CopyData len={len(msg.data)}"
        return f"[{self.connection}] {self.direction} {name}"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"connection": self.connection, "direction": self.direction,
                               "time": round(self.time, 6)}
        if self.event is not None:
            out["event"] = self.event
        for key in ("message", "payload", "pgoutput"):
            value = getattr(self, key)
            if value is not None:
                try:
                    out[key] = to_json(value)
                except Exception:  # a message the JSON form does not cover
                    out[key] = {"type": type(value).__name__, "repr": repr(value)}
        return out


class _StreamRun:
    """Consecutive XLogData a connection sent in one go, kept as a reference to the plan's
    items and expanded into entries only when the transcript is read."""

    __slots__ = ("connection", "time", "items", "start", "stop", "send_time")

    def __init__(self, connection: int, time: float, items: list[Any], start: int, stop: int,
                 send_time: int) -> None:
        self.connection = connection
        self.time = time
        self.items = items
        self.start = start
        self.stop = stop
        self.send_time = send_time

    def expand(self) -> list[Entry]:
        from ..replication.messages import XLogData

        out = []
        for it in self.items[self.start:self.stop]:
            payload = getattr(it, "payload", None)
            if payload is None:
                continue  # a Notice: recorded as its own entry
            out.append(Entry(self.connection, "B", self.time, None,
                             XLogData(it.lsn, it.lsn, self.send_time, payload), it.message))
        return out


def _expand(records: list[Entry | _StreamRun]) -> list[Entry]:
    out: list[Entry] = []
    for r in records:
        if isinstance(r, _StreamRun):
            out.extend(r.expand())
        else:
            out.append(r)
    return out


class Transcript:
    """The entries of one fake server, in the order they happened.

    Unbounded by default. With ``max_records`` it keeps only the most recent records (a
    record is one entry, or one run of XLogData sent in one go, at most one CHUNK of
    them) — a ring; with ``spill_to`` as well, the records leaving the ring are appended to
    that file as JSON lines (the :meth:`jsonl` form) first, and :meth:`close` writes the
    rest: memory stays bounded, the file holds everything."""

    def __init__(self, *, max_records: int | None = None, spill_to: str | Path | None = None) -> None:
        if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)
                                        or max_records < 1):
            raise ValueError(f"expected max_records >= 1 or None, found {max_records!r}")
        if spill_to is not None and max_records is None:
            max_records = 10_000
        self.max_records = max_records
        self._raw: list[Entry | _StreamRun] = []
        self._expanded: list[Entry] = []
        self._done = 0
        #: Records dropped from memory (spilled to the file, or gone from the ring).
        self.dropped = 0
        #: Entries dropped from memory: the position of the first entry kept.
        self.first_kept = 0
        self._spill_path = Path(spill_to) if spill_to is not None else None
        self._spill: IO[str] | None = open(spill_to, "w", encoding="utf-8") if spill_to is not None else None  # noqa: SIM115
        #: The spill file's byte offset of entry i * _MARK_EVERY (its lines are ASCII JSON).
        self._marks: list[int] = [0]
        self._spilled_bytes = 0

    def add(self, entry: Entry) -> None:
        self._raw.append(entry)
        if self.max_records is not None and len(self._raw) >= 2 * self.max_records:
            self._trim()

    def add_stream(self, connection: int, time: float, items: list[Any], start: int, stop: int,
                   send_time: int) -> None:
        """Record XLogData items[start:stop] of a plan, sent at *time* with *send_time*."""
        self.add(_StreamRun(connection, time, items, start, stop, send_time))  # type: ignore[arg-type]

    def _trim(self) -> None:
        """Drop (or spill) the oldest records down to max_records (amortised: the list
        grows to twice the bound, then half of it goes at once)."""
        assert self.max_records is not None
        cut = len(self._raw) - self.max_records
        old, self._raw = self._raw[:cut], self._raw[cut:]
        entries = _expand(old)
        if self._spill is not None:
            self._write_spill(entries)
            self._spill.flush()
        self.first_kept += len(entries)
        self.dropped += cut
        # expanded entries are rebuilt from what is kept
        self._expanded = []
        self._done = 0

    def _write_spill(self, entries: list[Entry]) -> None:
        assert self._spill is not None
        at, size = self.first_kept, self._spilled_bytes
        lines = []
        for e in entries:
            if at % _MARK_EVERY == 0 and at // _MARK_EVERY == len(self._marks):
                self._marks.append(size)
            line = json.dumps(e.as_json()) + "\n"  # ASCII (ensure_ascii): a character is a byte
            lines.append(line)
            size += len(line)
            at += 1
        self._spill.write("".join(lines))
        self._spilled_bytes = size

    def close(self) -> None:
        """With ``spill_to``: write what is still in memory to the file and close it."""
        if self._spill is not None:
            self._spill.write("".join(json.dumps(e.as_json()) + "\n" for e in _expand(self._raw)))
            self._spill.close()
            self._spill = None

    def page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Entries *offset* … *offset* + *limit* - 1 counted from the first entry ever
        recorded, in their JSON form, and how many were recorded. Those no longer in memory
        are read back from the spill file; without one (a ring), each is
        ``{"event": "no longer kept"}``."""
        total = self.first_kept + len(self.entries)
        stop = min(offset + limit, total)
        out: list[dict[str, Any]] = []
        if offset < self.first_kept:
            upto = min(stop, self.first_kept)
            if self._spill_path is None:
                out = [{"event": "no longer kept"} for _ in range(offset, upto)]
            else:
                out = self._read_spill(offset, upto)
        if stop > self.first_kept:
            kept = self.entries
            out += [e.as_json() for e in kept[max(offset, self.first_kept) - self.first_kept:stop - self.first_kept]]
        return out, total

    def _read_spill(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Spilled entries [start, stop): from the nearest mark, skipping fewer than
        _MARK_EVERY lines (bounded time and memory per page)."""
        assert self._spill_path is not None
        mark = start // _MARK_EVERY
        with open(self._spill_path, "rb") as f:
            f.seek(self._marks[mark])
            for _ in range(start - mark * _MARK_EVERY):
                f.readline()
            return [json.loads(f.readline()) for _ in range(start, stop)]

    @property
    def entries(self) -> list[Entry]:
        """Every entry kept, in order (stream runs expanded on first read)."""
        raw = self._raw
        n = len(raw)
        self._expanded.extend(_expand(raw[self._done:n]))
        self._done = n
        return self._expanded

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self.entries))

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        """Entries by position, as in :attr:`entries` (``transcript[0]``, ``transcript[-3:]``)."""
        return self.entries[index]

    def connection(self, n: int) -> list[Entry]:
        return [e for e in self.entries if e.connection == n]

    def frontend(self, connection: int | None = None) -> list[Entry]:
        return [e for e in self.entries if e.direction == "F" and (connection is None or e.connection == connection)]

    def backend(self, connection: int | None = None) -> list[Entry]:
        return [e for e in self.entries if e.direction == "B" and (connection is None or e.connection == connection)]

    def queries(self, connection: int | None = None) -> list[str]:
        return [e.message.sql for e in self.frontend(connection) if type(e.message).__name__ == "Query"]

    def stream(self, connection: int | None = None) -> list[Entry]:
        """The XLogData entries (server to client), with their pgoutput messages."""
        return [e for e in self.backend(connection) if e.payload is not None and getattr(e.payload, "tag", "") == "w"]

    def pgoutput(self, connection: int | None = None) -> list[Any]:
        return [e.pgoutput for e in self.stream(connection)]

    def status_updates(self, connection: int | None = None) -> list[Any]:
        return [e.payload for e in self.frontend(connection)
                if e.payload is not None and getattr(e.payload, "tag", "") == "r"]

    def errors(self, connection: int | None = None) -> list[Any]:
        return [e.message for e in self.backend(connection) if type(e.message).__name__ == "ErrorResponse"]

    def events(self, connection: int | None = None) -> list[str]:
        return [e.event for e in self.entries if e.event is not None and (connection is None or e.connection == connection)]

    def connections(self) -> list[int]:
        return sorted({e.connection for e in self.entries})

    def text(self) -> str:
        """One line per entry, like the reference transcripts."""
        return "\n".join(e.describe() for e in self.entries)

    def jsonl(self) -> str:
        return "\n".join(json.dumps(e.as_json()) for e in self.entries)
