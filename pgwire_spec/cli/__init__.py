"""The ``pgwire-spec`` command line: a thin shell over the library.

Each subcommand lives in its own module of this package with ``add_arguments(parser)`` and
``run(args) -> int``; its one-line help is in :data:`COMMANDS`. A user's mistake (bad input, a missing
file, a server that refuses) ends in one clear line on stderr and exit status 1 or 2, never
a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import signal
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import PgWireError

#: Subcommand -> (module of this package, one-line help). Only the chosen command's module is
#: imported, so ``pgwire-spec --help`` imports none of them.
COMMANDS: dict[str, tuple[str, str]] = {
    "decode": ("decode", "decode pgoutput / replication / v3 messages to JSON lines"),
    "encode": ("encode", "encode JSON lines (the JSON form of messages) to hex payloads"),
    "capture": ("capture", "capture pgoutput fixtures from real servers (built-in workload or your SQL)"),
    "verify-fixtures": ("verify_fixtures", "verify fixture files (decode, re-encode, expected JSON); --drift: compare with a live capture"),
    "conform": ("conform", "run the conformance suite against a pgoutput decoder (adapter contract: spec/adapter-contract.md)"),
    "conform-client": ("conform_client", "grade a replication client's behaviour (keepalives, feedback, positions, "
                                         "resume after a reset, slot errors) against the fake walsender"),
    "fuzz": ("fuzz", "fuzz the reference decoder or an adapter on Spark (mutation + generation); replay findings"),
    "serve": ("serve", "serve a scenario as a fake PostgreSQL walsender (logical replication) on loopback"),
    "proxy": ("proxy", "a replication proxy in front of a real PostgreSQL: checks both directions, records session "
                       "fixtures, plays faults; --control for the HTTP control plane"),
    "export": ("export", "write the golden corpus, spec/ (schemas, rules, errata) and the example scenarios to a folder"),
}


def _version() -> str:
    from .. import __version__
    from .._resources import ResourceError, data_source

    try:
        corpus = str(data_source("fixtures"))
    except ResourceError as exc:
        corpus = f"not found ({exc})"
    codec = "C" if importlib.util.find_spec("pgwire_spec._speedups") else "pure Python"
    return f"pgwire-spec {__version__} (codec: {codec}; corpus: {corpus})"


class _VersionAction(argparse.Action):
    """``--version``, computed only when asked (it looks the corpus up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version, codec and corpus, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(_version())
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser. Only the module of *only* (the chosen subcommand) is imported: ``decode``
    never pays for importing Spark, and ``pgwire-spec --help`` imports no command."""
    parser = argparse.ArgumentParser(
        prog="pgwire-spec",
        description="PostgreSQL logical replication, byte for byte: decode, encode, capture, "
        "verify, serve, conform, fuzz, export.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            module = importlib.import_module(f"{__name__}.{module_name}")
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stopped from outside. A KeyboardInterrupt, so that every cleanup
    written for Ctrl-C (servers, subprocess adapters, Spark sessions) runs for them too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _install_signal_handlers() -> None:
    # A shell starts a background job with SIGINT ignored; a user's `kill -INT` must still
    # stop it (and clean up), as Ctrl-C does in the foreground.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(words)
    # the process's own command line: it owns the process's signals (and a command may tune
    # the process for its run: verify-fixtures' allocator settings)
    args.own_process = argv is None
    if args.own_process:
        _install_signal_handlers()
    try:
        return int(args._run(args) or 0)
    except Terminated as exc:
        print(f"stopped by {signal.Signals(exc.signum).name}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        what = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
        print(f"pgwire-spec {args.command}: error: {what}", file=sys.stderr)
        return 1
    except (PgWireError, ValueError) as exc:
        print(f"pgwire-spec {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
