"""``pgwire-spec encode``: JSON lines (the JSON form of messages) in, hex lines out."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import DecodeError, EncodeError  # noqa: F401
from ..jsonform import from_json
from ._io import add_input, open_input


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p)


def run(args: argparse.Namespace) -> int:
    from .. import encode

    with open_input(args.input) as stream:
        for lineno, raw in enumerate(stream, 1):
            line = raw.strip()
            if not line:
                continue
            try:
                message = from_json(json.loads(line))
                sys.stdout.write(encode(message).hex() + "\n")
            except (ValueError, DecodeError, EncodeError, TypeError) as exc:
                sys.stdout.flush()
                print(f"pgwire-spec encode: error: line {lineno}: {exc}", file=sys.stderr)
                return 1
    return 0
