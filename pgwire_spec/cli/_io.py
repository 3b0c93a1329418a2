"""Input helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO


def open_input(path: str | None) -> BinaryIO:
    """The file at *path*, or stdin for ``-``/None (binary)."""
    if path is None or path == "-":
        return sys.stdin.buffer
    return open(path, "rb")


def add_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", nargs="?", default="-", help="input file (default: stdin)")
