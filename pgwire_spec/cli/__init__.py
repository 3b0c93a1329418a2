"""The ``pgwire-spec`` command line: a thin shell over the library.

Each subcommand lives in its own module of this package with ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. A user's mistake (bad input, a missing
file, a server that refuses) ends in one clear line on stderr and exit status 1 or 2, never
a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..errors import PgWireError

#: Subcommand name -> module of this package.
COMMANDS: dict[str, str] = {
    "decode": "decode",
    "encode": "encode",
    "capture": "capture",
    "verify-fixtures": "verify_fixtures",
    "conform": "conform",
    "fuzz": "fuzz",
    "serve": "serve",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with *only*, just that subcommand's module is imported (so ``decode``
    never pays for importing Spark, and each command starts fast)."""
    parser = argparse.ArgumentParser(
        prog="pgwire-spec",
        description="PostgreSQL logical replication, byte for byte: decode, encode, capture, "
        "verify, serve, conform, fuzz.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        module = importlib.import_module(f"{__name__}.{module_name}")
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(words)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (PgWireError, OSError, ValueError) as exc:
        print(f"pgwire-spec {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
