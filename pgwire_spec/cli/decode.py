"""``pgwire-spec decode``: payloads in, one JSON object per message out.

The input's framing (``--format``) and the protocol layer of what it carries (``--layer``)
are given, never guessed from a payload's first byte: 'r' is a pgoutput Rollback Prepared
and a standby status update alike.

``--format``
    ``hex``: one payload per line in hex; ``jsonl``: one JSON object with a ``hex`` field
    per line (fixture cases); ``raw``: a binary v3 byte stream as a server sends it, read by
    :class:`pgwire_spec.wire.BackendReader` (the payloads are its CopyData messages).
``--layer``
    ``pgoutput``: each payload is a pgoutput message (the default for hex and jsonl);
    ``copydata``: each payload is a streaming replication CopyData payload (XLogData,
    keepalive, status update, hot standby feedback), an XLogData's WAL data decoded as
    pgoutput (the default for raw); ``wire``: each v3 message of a raw stream as itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import DecodeError
from ..jsonform import to_json
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import FAMILY as REPLICATION
from ..replication.messages import XLogData
from ..wire import BackendReader, CopyData
from ._io import add_input, open_input

LAYERS = ("pgoutput", "copydata", "wire")
_CHUNK = 1 << 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p)
    p.add_argument(
        "--format",
        choices=("hex", "jsonl", "raw"),
        default="hex",
        help="hex: one payload per line in hex; jsonl: objects with a 'hex' field (fixture "
        "cases); raw: a binary v3 byte stream from a server, its CopyData messages the "
        "payloads (default: hex)",
    )
    p.add_argument(
        "--layer",
        choices=LAYERS,
        default=None,
        help="what each payload is: pgoutput messages (default for hex and jsonl); copydata: "
        "replication payloads (XLogData, keepalives, ...) whose XLogData carry pgoutput "
        "(default for raw); wire: the v3 messages of a raw stream themselves",
    )
    p.add_argument("--protocol-version", type=int, default=1, choices=(1, 2, 3, 4),
                   help="pgoutput proto_version the stream was negotiated with (default: 1)")
    p.add_argument("--streaming", choices=("off", "on", "parallel"), default="off",
                   help="the streaming option: 'on' adds streamed blocks (protocol >= 2), 'parallel' also "
                   "Stream Abort's LSN and time (protocol 4) (default: off)")
    p.add_argument("--two-phase", action="store_true",
                   help="two_phase was on: Begin Prepare, Prepare, Commit/Rollback Prepared (protocol >= 3)")
    p.add_argument("--binary", action="store_true", help="binary was on: tuple values may be 'b' (binary)")
    p.add_argument("--messages", action="store_true", help="messages was on: logical decoding messages 'M'")
    p.add_argument(
        "--lenient", action="store_true",
        help="report sequence violations as warnings on stderr instead of failing",
    )


def _v3_messages(stream: Any) -> Iterator[Any]:
    """The messages of a v3 byte stream from a server (the sans-IO reader frames them)."""
    reader = BackendReader()
    while True:
        chunk = stream.read(_CHUNK)
        reader.feed(chunk)
        yield from reader
        if not chunk:
            reader.next_event()  # raises if the stream ended inside a message
            return


def _lines(fmt: str, stream: Any) -> Iterator[bytes]:
    for lineno, raw_line in enumerate(stream, 1):
        line = raw_line.strip()
        if not line or line.startswith(b"#"):
            continue
        if fmt == "jsonl":
            try:
                obj = json.loads(line)
                yield bytes.fromhex(obj["hex"])
            except (ValueError, KeyError, TypeError) as exc:
                raise DecodeError("invalid-input", expected="a JSON object with a 'hex' field",
                                  found=f"line {lineno}: {exc}") from None
        else:
            try:
                yield bytes.fromhex(line.decode("ascii"))
            except ValueError:
                raise DecodeError("invalid-input", expected="a line of hex digits",
                                  found=f"line {lineno}: {line[:40]!r}") from None


def _payloads(fmt: str, stream: Any) -> Iterator[bytes]:
    if fmt == "raw":
        for message in _v3_messages(stream):
            if isinstance(message, CopyData):
                yield message.data
        return
    yield from _lines(fmt, stream)


def _objects(args: argparse.Namespace, layer: str, stream: Any, decoder: PgOutputDecoder) -> Iterator[Any]:
    if layer == "wire":
        for message in _v3_messages(stream):
            yield to_json(message)
        return
    for payload in _payloads(args.format, stream):
        if layer == "pgoutput":
            yield to_json(decoder.decode(payload))
            continue
        wrapper = REPLICATION.decode(payload)
        obj = to_json(wrapper)
        if isinstance(wrapper, XLogData):
            del obj["data"]
            obj["message"] = to_json(decoder.decode(wrapper.data))
        yield obj


def run(args: argparse.Namespace) -> int:
    layer = args.layer or ("copydata" if args.format == "raw" else "pgoutput")
    if layer == "wire" and args.format != "raw":
        print("pgwire-spec decode: error: --layer wire reads a raw v3 stream (--format raw)", file=sys.stderr)
        return 2
    decoder = PgOutputDecoder(
        protocol_version=args.protocol_version,
        streaming=args.streaming,
        two_phase=args.two_phase,
        binary=args.binary,
        messages=args.messages,
        strict=not args.lenient,
    )
    out = sys.stdout
    with open_input(args.input) as stream:
        try:
            for obj in _objects(args, layer, stream, decoder):
                out.write(json.dumps(obj) + "\n")
            if layer != "wire":
                decoder.finish()
        except DecodeError as err:
            out.flush()
            if err.index is None:
                err.with_index(decoder.index)  # the payload the input failed to give
            print(f"pgwire-spec decode: error: {err}", file=sys.stderr)
            print(json.dumps({"error": err.as_dict()}), file=sys.stderr)
            return 1
    for warning in decoder.warnings:
        print(f"pgwire-spec decode: warning: {warning}", file=sys.stderr)
    return 0
