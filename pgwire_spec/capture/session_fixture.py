"""Walsender session fixtures: whole conversations, both directions, in the fixtures' style.

One file per recorded session. Each message is one framed v3 message with its direction
(``F`` client, ``B`` server), its hex bytes and its JSON form; a CopyData also has its
replication payload (``copy``: XLogData, keepalive, standby status update) and, for an
XLogData, the pgoutput message inside (``pgoutput``: ``in_stream`` and ``expected``). Bulk
rows of large transactions are elided as in the pgoutput fixtures.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, EncodeError
from ..jsonform import to_json
from ..pgoutput._codec import FAMILY as PGOUTPUT
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import (
    PrimaryKeepalive,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
    encode_copy_data,
)
from ..wire import (
    NEED_DATA,
    BackendReader,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    FrontendReader,
    StartupMessage,
    WireMessage,
    encode_message,
)
from .elide import dml_shape, elide
from .fixture import _dumps, _need, _need_direction, _need_header
from .flags import NOTES, Flagger
from .options import OptionSet
from .verify import Mismatch, json_diff

if TYPE_CHECKING:  # the recording client (psycopg, sockets): verifying a session needs none of it
    from .session import ReplicationClient

__all__ = [
    "SESSION_FORMAT",
    "SessionMessage",
    "SessionFile",
    "build_session",
    "render_session",
    "render_session_head",
    "render_session_message",
    "SESSION_TAIL",
    "parse_session",
    "verify_session",
]

SESSION_FORMAT = "pgwire-spec/walsender-session"
SESSION_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionMessage:
    id: str
    index: int
    direction: str
    hex: str
    expected: dict[str, Any]
    copy: dict[str, Any] | None = None
    pgoutput: dict[str, Any] | None = None
    flags: tuple[str, ...] = ()
    elided_after: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "index": self.index, "dir": self.direction, "hex": self.hex,
                             "expected": self.expected}
        if self.copy is not None:
            d["copy"] = self.copy
        if self.pgoutput is not None:
            d["pgoutput"] = self.pgoutput
        if self.flags:
            d["flags"] = list(self.flags)
        if self.elided_after:
            d["elided_after"] = self.elided_after
        return d


@dataclass(frozen=True, slots=True)
class SessionFile:
    server_version: str
    major: int
    provider: str
    workload: str
    captured_on: str
    option_set: str
    options: dict[str, str]
    context: dict[str, Any]
    slot: str
    messages: tuple[SessionMessage, ...]
    captured: int
    notes: dict[str, str] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)


def _wire_json(msg: WireMessage) -> dict[str, Any]:
    return to_json(msg, omit="data" if isinstance(msg, CopyData) else None)  # given decoded in "copy"


def _copy_json(rep: Any) -> dict[str, Any]:
    return to_json(rep, omit="data" if isinstance(rep, XLogData) else None)  # given decoded in "pgoutput"


def _wire_flags(direction: str, msg: WireMessage, rep: Any, prev: WireMessage | None,
                server_done: bool) -> list[str]:
    out: list[str] = []
    if server_done and direction == "B" and isinstance(msg, CopyData):
        out.append("copydata-after-copydone")
    if isinstance(msg, StartupMessage):
        out.append("startup-replication-database")
    elif isinstance(msg, CopyBothResponse):
        out.append("copy-both-response")
    elif isinstance(msg, CopyDone):
        out.append("copy-done-client" if direction == "F" else "copy-done-server")
    elif isinstance(msg, CommandComplete) and isinstance(prev, CopyDone):
        out.append("copy-done-command-complete")
    if isinstance(rep, XLogData) and rep.data_start == 0 and rep.wal_end == 0:
        out.append("xlogdata-zero-position")
    elif isinstance(rep, PrimaryKeepalive) and rep.reply_requested:
        out.append("keepalive-reply-requested")
    elif isinstance(rep, StandbyStatusUpdate):
        out.append("standby-status-update")
    return out


def build_session(client: ReplicationClient, *, major: int, server_version: str, provider: str,
                  opts: OptionSet, workload: str, slot: str) -> SessionFile:
    """The fixture of one recorded conversation."""
    name = f"session-{opts.name}"
    flagger = Flagger(opts.context())
    msgs: list[SessionMessage] = []
    shapes: list[tuple[Any, ...] | None] = []
    prev: WireMessage | None = None
    server_done = False
    for index, ex in enumerate(client.transcript):
        flags = _wire_flags(ex.direction, ex.message, ex.copy, prev, server_done)
        if ex.direction == "B" and isinstance(ex.message, CopyDone):
            server_done = True
        pg = None
        shape = None
        if ex.pgoutput is not None and isinstance(ex.copy, XLogData):
            flags += flagger.flags(ex.pgoutput, ex.in_stream, ex.copy.data)
            pg = {"in_stream": ex.in_stream, "expected": to_json(ex.pgoutput)}
            shape = dml_shape(ex.pgoutput, ex.in_stream)
        msgs.append(SessionMessage(
            id=f"pg{major}/{name}/{index}", index=index, direction=ex.direction, hex=ex.data.hex(),
            expected=_wire_json(ex.message), copy=_copy_json(ex.copy) if ex.copy is not None else None,
            pgoutput=pg, flags=tuple(dict.fromkeys(flags)),
        ))
        shapes.append(shape)
        prev = ex.message
    kept = elide(msgs, shapes)
    used = sorted({f for m in kept for f in m.flags})
    return SessionFile(
        server_version=server_version, major=major, provider=provider, workload=workload,
        captured_on=_dt.date.today().isoformat(), option_set=name, options=opts.pgoutput_options(),
        context=opts.context(), slot=slot, messages=tuple(kept), captured=len(msgs),
        notes={f: NOTES[f] for f in used if f in NOTES},
    )


def render_session(sf: SessionFile) -> str:
    body = ",\n".join(map(render_session_message, sf.messages))
    return render_session_head(sf, len(sf.messages)) + (body + "\n" if body else "") + SESSION_TAIL


def render_session_head(sf: SessionFile, count: int) -> str:
    """A session file's text up to its first message (of *count*), so that a long session
    can be written a message at a time: head, messages joined by ``",\\n"``, tail."""
    head = {
        "format": SESSION_FORMAT, "formatVersion": SESSION_FORMAT_VERSION,
        "server": {"version": sf.server_version, "major": sf.major, "provider": sf.provider},
        "workload": sf.workload, "capturedOn": sf.captured_on, "name": sf.option_set,
        "options": sf.options, "context": sf.context, "slot": sf.slot, "captured": sf.captured,
        "numberOfMessages": count, "notes": sf.notes,
    }
    return "\n".join(["{"] + [f"  {_dumps(k)}: {_dumps(v)}," for k, v in head.items()] + ['  "messages": [']) + "\n"


def render_session_message(m: SessionMessage) -> str:
    return "    " + _dumps(m.to_dict())


#: What ends a session file's text after its messages.
SESSION_TAIL = "  ]\n}\n"


def parse_session(doc: Any, path: Path) -> SessionFile:
    where = str(path)
    server = _need_header(doc, where, SESSION_FORMAT_VERSION)
    msgs = []
    for i, m in enumerate(_need(doc, "messages", list, where)):
        mw = f"{where}: messages[{i}]"
        direction = _need_direction(m, mw)
        msgs.append(SessionMessage(
            id=_need(m, "id", str, mw), index=_need(m, "index", int, mw), direction=direction,
            hex=_need(m, "hex", str, mw), expected=_need(m, "expected", dict, mw), copy=m.get("copy"),
            pgoutput=m.get("pgoutput"), flags=tuple(m.get("flags", ())), elided_after=int(m.get("elided_after", 0)),
        ))
    return SessionFile(
        server_version=_need(server, "version", str, where + ".server"),
        major=_need(server, "major", int, where + ".server"), provider=str(server.get("provider", "")),
        workload=_need(doc, "workload", str, where), captured_on=str(doc.get("capturedOn", "")),
        option_set=_need(doc, "name", str, where), options=_need(doc, "options", dict, where),
        context=_need(doc, "context", dict, where), slot=str(doc.get("slot", "")), messages=tuple(msgs),
        captured=int(doc.get("captured", len(msgs))), notes=dict(doc.get("notes", {})), path=path,
    )


def _first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def verify_session(sf: SessionFile) -> tuple[int, list[Mismatch]]:
    """Every message reads back from its bytes (in order, per direction), re-encodes
    identically and equals its JSON; CopyData payloads and pgoutput messages likewise."""
    file = str(sf.path or "")
    out: list[Mismatch] = []
    readers: dict[str, FrontendReader | BackendReader] = {"F": FrontendReader(), "B": BackendReader()}
    decoder = PgOutputDecoder(**{k: sf.context[k] for k in ("protocol_version", "streaming", "two_phase",
                                                             "binary", "messages")}, strict=False)
    seen = 0
    for m in sf.messages:
        try:
            data = bytes.fromhex(m.hex)
        except ValueError as exc:
            out.append(Mismatch(m.id, "format", f"hex is not hex digits: {exc}", file=file))
            continue
        reader = readers[m.direction]
        start = reader.offset
        try:
            reader.feed(data)
            msg = reader.next_event()
        except DecodeError as err:
            off = None if err.offset is None else err.offset - start
            out.append(Mismatch(m.id, "decode", f"{err.rule}: expected {err.expected}, found {err.found}",
                                off, err.field, file))
            readers[m.direction] = FrontendReader() if m.direction == "F" else BackendReader()
            continue
        if msg is NEED_DATA or not isinstance(msg, WireMessage) or reader.buffered:
            out.append(Mismatch(m.id, "decode", f"expected exactly one message in the bytes, found {msg!r} "
                                f"with {reader.buffered} byte(s) left", file=file))
            continue
        enc = encode_message(msg)
        if enc != data:
            out.append(Mismatch(m.id, "encode", "re-encoded bytes differ", _first_diff(enc, data),
                                type(msg).__name__, file))
        got = _wire_json(msg)
        if got != m.expected:
            d = json_diff(got, m.expected)
            out.append(Mismatch(m.id, "json", f"decoded {d[1]!r}, expected {d[2]!r}" if d else "JSON differs",
                                None, f"{type(msg).__name__}.{d[0]}" if d else None, file))
        if not isinstance(msg, CopyData):
            continue
        try:
            rep = decode_copy_data(msg.data)
        except DecodeError as err:
            out.append(Mismatch(m.id, "decode", f"{err.rule}: expected {err.expected}, found {err.found}",
                                None if err.offset is None else 5 + err.offset, f"CopyData.data.{err.field}", file))
            continue
        if encode_copy_data(rep) != msg.data:
            out.append(Mismatch(m.id, "encode", "re-encoded replication payload differs", None,
                                f"CopyData.data.{type(rep).__name__}", file))
        if _copy_json(rep) != m.copy:
            d = json_diff(_copy_json(rep), m.copy or {})
            out.append(Mismatch(m.id, "json", f"decoded {d[1]!r}, expected {d[2]!r}" if d else "copy differs",
                                None, f"{type(rep).__name__}.{d[0]}" if d else None, file))
        if not isinstance(rep, XLogData) or m.direction != "B":
            continue
        pg_exp = m.pgoutput or {}
        if decoder.in_stream != pg_exp.get("in_stream"):
            out.append(Mismatch(m.id, "context", f"recorded in_stream={pg_exp.get('in_stream')}, replay says "
                                f"{decoder.in_stream}", file=file))
        base = 5 + 25  # CopyData frame + XLogData header
        try:
            pg = decoder.decode(rep.data)
        except DecodeError as err:
            out.append(Mismatch(m.id, "decode", f"{err.rule}: expected {err.expected}, found {err.found}",
                                None if err.offset is None else base + err.offset, err.field, file))
            continue
        for w in decoder.warnings[seen:]:
            if w.rule != "stray-stream-abort":
                out.append(Mismatch(m.id, "sequence", str(w), None, w.field, file))
        seen = len(decoder.warnings)
        try:
            again = PGOUTPUT.encode(pg)
        except EncodeError as exc:
            out.append(Mismatch(m.id, "encode", str(exc), file=file))
            continue
        if again != rep.data:
            out.append(Mismatch(m.id, "encode", "re-encoded pgoutput payload differs",
                                base + _first_diff(again, rep.data), type(pg).__name__, file))
        if to_json(pg) != pg_exp.get("expected"):
            d = json_diff(to_json(pg), pg_exp.get("expected") or {})
            out.append(Mismatch(m.id, "json", f"decoded {d[1]!r}, expected {d[2]!r}" if d else "pgoutput differs",
                                None, f"{type(pg).__name__}.{d[0]}" if d else None, file))
    return len(sf.messages), out
