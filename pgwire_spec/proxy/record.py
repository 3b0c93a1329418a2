"""A proxied replication connection as a walsender session fixture (the corpus format of
``fixtures/sessions/``, :mod:`pgwire_spec.capture.session_fixture`), so a real workload
becomes a regression fixture: ``verify-fixtures`` checks it, ``conform`` runs it, ``serve``
replays it (the scenario written beside it)."""

from __future__ import annotations

import datetime as _dt
import gzip
from pathlib import Path
from typing import Any

from ..capture.flags import NOTES, Flagger
from ..capture.session_fixture import (
    SessionFile,
    SessionMessage,
    _copy_json,
    _wire_flags,
    _wire_json,
    render_session,
)
from ..errors import DecodeError
from ..jsonform import to_json
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import XLogData, decode_copy_data
from ..wire import BackendReader, CopyBothResponse, CopyData, CopyDone, FrontendReader, WireMessage
from .core import ProxySession, decoder_context

__all__ = ["session_fixture", "write_session"]


def session_fixture(session: ProxySession) -> SessionFile | None:
    """The fixture of *session*'s conversation (its first logical stream's options give
    the decoding context); None when it never streamed."""
    if not session.streams:
        return None
    slot, options = session.streams[0]
    context = decoder_context(options)
    version = session.server_params.get("server_version", "0")
    try:
        major = int(version.split(".")[0].split(" ")[0])
    except ValueError:
        major = 0
    name = f"proxy-{session.id}"
    front, back = FrontendReader(), BackendReader()
    decoder = PgOutputDecoder(**context, strict=False)
    flagger = Flagger(context)
    msgs: list[SessionMessage] = []
    prev: WireMessage | None = None
    server_done = False
    streaming = False
    for index, ex in enumerate(session.exchanges):
        reader = front if ex.direction == "F" else back
        reader.feed(ex.data)
        msg = reader.next_event()
        assert isinstance(msg, WireMessage)
        rep: Any = None
        pg = None
        if isinstance(msg, CopyData) and streaming:
            try:
                rep = decode_copy_data(msg.data)
            except DecodeError:
                rep = None
        flags = _wire_flags(ex.direction, msg, rep, prev, server_done)
        if ex.direction == "B" and isinstance(msg, CopyBothResponse):
            streaming = True
        if ex.direction == "B" and isinstance(msg, CopyDone):
            server_done = True
        if isinstance(rep, XLogData) and ex.direction == "B":
            in_stream = decoder.in_stream
            try:
                message = decoder.decode(rep.data)
            except DecodeError:
                message = None
            if message is not None:
                flags += flagger.flags(message, in_stream, rep.data)
                pg = {"in_stream": in_stream, "expected": to_json(message)}
        msgs.append(SessionMessage(
            id=f"pg{major}/{name}/{index}", index=index, direction=ex.direction, hex=ex.data.hex(),
            expected=_wire_json(msg), copy=_copy_json(rep) if rep is not None else None, pgoutput=pg,
            flags=tuple(dict.fromkeys(flags)),
        ))
        prev = msg
    used = sorted({f for m in msgs for f in m.flags})
    return SessionFile(
        server_version=version, major=major, provider="proxy", workload="recorded by pgwire-spec proxy",
        captured_on=_dt.date.today().isoformat(), option_set=name,
        options={k: ("" if v is None else v) for k, v in options.items()}, context=context, slot=slot,
        messages=tuple(msgs), captured=len(msgs), notes={f: NOTES[f] for f in used if f in NOTES},
    )


def write_session(session: ProxySession, folder: Path) -> Path | None:
    """Write *session*'s fixture to *folder* as ``pgMAJOR-session-proxy-N.json.gz`` and a
    scenario replaying it beside it (``replay-proxy-N.yaml``: ``pgwire-spec serve`` it);
    the fixture's path, or None when the connection never streamed."""
    sf = session_fixture(session)
    if sf is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pg{sf.major}-session-{sf.option_set}.json.gz"
    path.write_bytes(gzip.compress(render_session(sf).encode(), mtime=0))
    (folder / f"replay-{sf.option_set}.yaml").write_text(
        "# What the server sent through pgwire-spec proxy, served byte for byte: pgwire-spec serve THIS_FILE\n"
        f"# (slot {sf.slot}; START_REPLICATION with the options of the recording)\n"
        f"replay: {{session: {path.name}}}   # relative to this file\n"
        "auth: {method: trust}\n")
    return path
