"""A proxied replication connection as a walsender session fixture (the corpus format of
``fixtures/sessions/``, :mod:`pgwire_spec.capture.session_fixture`), so a real workload
becomes a regression fixture: ``verify-fixtures`` checks it, ``conform`` runs it, ``serve``
replays it (the scenario written beside it). The messages come from the session's spool and
are written one at a time: memory stays bounded whatever the session's length."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import gzip
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..capture.flags import NOTES, Flagger
from ..capture.session_fixture import (
    SESSION_TAIL,
    SessionFile,
    SessionMessage,
    _copy_json,
    _wire_flags,
    _wire_json,
    render_session_head,
    render_session_message,
)
from ..errors import DecodeError
from ..jsonform import to_json
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import XLogData, decode_copy_data
from ..wire import BackendReader, CopyBothResponse, CopyData, CopyDone, FrontendReader, WireMessage
from .core import ProxySession, decoder_context
from .spool import Spool

__all__ = ["session_fixture", "write_session", "write_session_apart"]


def _header(session: ProxySession) -> SessionFile | None:
    """The fixture's fields but its messages (its first logical stream's options give the
    decoding context); None when the connection never streamed or nothing was recorded."""
    if not session.streams or session.spool is None:
        return None
    slot, options = session.streams[0]
    context = decoder_context(options)
    version = session.server_params.get("server_version", "0")
    try:
        major = int(version.split(".")[0].split(" ")[0])
    except ValueError:
        major = 0
    return SessionFile(
        server_version=version, major=major, provider="proxy", workload="recorded by pgwire-spec proxy",
        captured_on=_dt.date.today().isoformat(), option_set=f"proxy-{session.id}",
        options={k: ("" if v is None else v) for k, v in options.items()}, context=context, slot=slot,
        messages=(), captured=0,
    )


def _messages(spool: Spool, sf: SessionFile) -> Iterator[SessionMessage]:
    front, back = FrontendReader(), BackendReader()
    decoder = PgOutputDecoder(**sf.context, strict=False)
    flagger = Flagger(sf.context)
    prev: WireMessage | None = None
    server_done = False
    streaming = False
    for index, direction, _time, data in spool.read():
        reader = front if direction == "F" else back
        reader.feed(data)
        msg = reader.next_event()
        assert isinstance(msg, WireMessage)
        rep: Any = None
        pg = None
        if isinstance(msg, CopyData) and streaming:
            try:
                rep = decode_copy_data(msg.data)
            except DecodeError:
                rep = None
        flags = _wire_flags(direction, msg, rep, prev, server_done)
        if direction == "B" and isinstance(msg, CopyBothResponse):
            streaming = True
        if direction == "B" and isinstance(msg, CopyDone):
            server_done = True
        if isinstance(rep, XLogData) and direction == "B":
            in_stream = decoder.in_stream
            try:
                message = decoder.decode(rep.data)
            except DecodeError:
                message = None
            if message is not None:
                flags += flagger.flags(message, in_stream, rep.data)
                pg = {"in_stream": in_stream, "expected": to_json(message)}
        yield SessionMessage(
            id=f"pg{sf.major}/{sf.option_set}/{index}", index=index, direction=direction, hex=data.hex(),
            expected=_wire_json(msg), copy=_copy_json(rep) if rep is not None else None, pgoutput=pg,
            flags=tuple(dict.fromkeys(flags)),
        )
        prev = msg


def _noted(sf: SessionFile, used: set[str], count: int) -> SessionFile:
    return dataclasses.replace(sf, captured=count, notes={f: NOTES[f] for f in sorted(used) if f in NOTES})


def session_fixture(session: ProxySession) -> SessionFile | None:
    """The fixture of *session*'s conversation, in memory (:func:`write_session` writes a
    long one without holding it); None when it never streamed."""
    sf = _header(session)
    if sf is None:
        return None
    assert session.spool is not None
    msgs = tuple(_messages(session.spool, sf))
    return dataclasses.replace(_noted(sf, {f for m in msgs for f in m.flags}, len(msgs)), messages=msgs)


def write_session(session: ProxySession, folder: Path) -> Path | None:
    """Write *session*'s fixture to *folder* as ``pgMAJOR-session-proxy-N.json.gz`` and a
    scenario replaying it beside it (``replay-proxy-N.yaml``: ``pgwire-spec serve`` it);
    the fixture's path, or None when the connection never streamed. The messages are
    rendered to a scratch file first (the file's head counts them and names their flags),
    and the fixture appears whole (renamed into place)."""
    sf = _header(session)
    if sf is None:
        return None
    assert session.spool is not None
    return _write(sf, session.spool, folder)


async def write_session_apart(session: ProxySession, folder: Path) -> Path | None:
    """:func:`write_session` in a child process at a lower CPU priority (nice 10): a long
    session's fixture takes seconds of CPU to render, which would otherwise hold this
    process's interpreter (the other connections' forwarding) and compete with the
    server and clients. The child reads the spool through its own descriptor
    (``/proc/self/fd``: a fresh file offset); where there is no such thing, a thread."""
    sf = _header(session)
    if sf is None:
        return None
    spool = session.spool
    assert spool is not None
    if not Path("/proc/self/fd").is_dir():
        return await asyncio.to_thread(_write, sf, spool, folder)
    spool.file.flush()
    fd = spool.file.fileno()
    head = {k: v for k, v in dataclasses.asdict(sf).items() if k not in ("messages", "path")}
    job = json.dumps({"header": head, "fd": fd, "size": spool.size, "count": spool.count, "folder": str(folder)})
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pgwire_spec.proxy.record", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, pass_fds=(fd,), env=env)
    out, err = await proc.communicate(job.encode())
    if proc.returncode != 0:
        raise OSError(f"writing {sf.option_set}'s fixture failed: {err.decode(errors='replace').strip()[-500:]}")
    return Path(out.decode().strip())


def _child() -> int:
    """``python -m pgwire_spec.proxy.record`` (see :func:`write_session_apart`): the job as
    JSON on stdin, the fixture's path on stdout."""
    job = json.load(sys.stdin)
    os.nice(10)
    with open(f"/proc/self/fd/{int(job['fd'])}", "rb") as file:
        spool = Spool(file)
        spool.size, spool.count = int(job["size"]), int(job["count"])
        print(_write(SessionFile(**job["header"], messages=()), spool, Path(job["folder"])))
    return 0


def _write(sf: SessionFile, spool: Spool, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pg{sf.major}-session-{sf.option_set}.json.gz"
    used: set[str] = set()
    count = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=folder) as lines:
        for m in _messages(spool, sf):
            lines.write((",\n" if count else "") + render_session_message(m))
            used.update(m.flags)
            count += 1
        lines.seek(0)
        part = folder / f".{path.name}.part"
        try:
            with open(part, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                gz.write(render_session_head(_noted(sf, used, count), count).encode())
                while chunk := lines.read(1 << 20):
                    gz.write(chunk.encode())
                gz.write((("\n" if count else "") + SESSION_TAIL).encode())
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    (folder / f"replay-{sf.option_set}.yaml").write_text(
        "# What the server sent through pgwire-spec proxy, served byte for byte: pgwire-spec serve THIS_FILE\n"
        f"# (slot {sf.slot}; START_REPLICATION with the options of the recording)\n"
        f"replay: {{session: {path.name}}}   # relative to this file\n"
        "auth: {method: trust}\n")
    return path


if __name__ == "__main__":
    raise SystemExit(_child())
