"""``pgwire-spec decode``: payloads in (hex lines, JSON lines or raw v3 CopyData frames),
one JSON object per message out."""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import DecodeError
from ..jsonform import to_json
from ..pgoutput.decoder import PgOutputDecoder
from ..replication.messages import FAMILY as REPLICATION
from ..replication.messages import XLogData
from ._io import add_input, open_input

HELP = "decode pgoutput / replication payloads to JSON lines"

_REPLICATION_TAGS = {ord(c) for c in "wkrh"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p)
    p.add_argument(
        "--format",
        choices=("hex", "jsonl", "raw"),
        default="hex",
        help="hex: one payload per line in hex; jsonl: objects with a 'hex' field (fixture "
        "cases); raw: a binary file of v3 messages (CopyData 'd' frames). Payloads may be "
        "pgoutput messages or XLogData/keepalives wrapping them (default: hex)",
    )
    p.add_argument("--protocol-version", type=int, default=1, choices=(1, 2, 3, 4))
    p.add_argument("--streaming", choices=("off", "on", "parallel"), default="off")
    p.add_argument("--two-phase", action="store_true")
    p.add_argument("--binary", action="store_true")
    p.add_argument("--messages", action="store_true")
    p.add_argument(
        "--lenient", action="store_true",
        help="report sequence violations as warnings on stderr instead of failing",
    )


def _payloads(fmt: str, stream: Any) -> Iterator[bytes]:
    if fmt == "raw":
        data = stream.read()
        pos = 0
        while pos < len(data):
            if len(data) - pos < 5:
                raise DecodeError("truncated", expected="a v3 message header (5 bytes)",
                                  found=f"{len(data) - pos} byte(s)", offset=pos, field="frame")
            tag = data[pos]
            (length,) = struct.unpack_from(">i", data, pos + 1)
            if length < 4 or pos + 1 + length > len(data):
                raise DecodeError("length-out-of-range", expected=f"a length from 4 to {len(data) - pos - 1}",
                                  found=str(length), offset=pos + 1, field="frame.length")
            body = data[pos + 5:pos + 1 + length]
            pos += 1 + length
            if tag == ord("d"):
                yield body
        return
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


def run(args: argparse.Namespace) -> int:
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
            for payload in _payloads(args.format, stream):
                if payload and payload[0] in _REPLICATION_TAGS:
                    wrapper = REPLICATION.decode(payload)
                    obj = to_json(wrapper)
                    if isinstance(wrapper, XLogData):
                        del obj["data"]
                        obj["message"] = to_json(decoder.decode(wrapper.data))
                else:
                    obj = to_json(decoder.decode(payload))
                out.write(json.dumps(obj) + "\n")
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
