"""``pgwire-spec conform``: run the conformance suite against a decoder."""

from __future__ import annotations

import argparse
import gc
import sys

_SOURCES = ("fixture", "builtin", "generated", "malformed")
#: The sources collect_cases puts last (the streams drawn with hypothesis among them).
_DRAWN = ("generated", "malformed")


def add_arguments(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--decoder", metavar="NAME",
                       help="reference, pypgoutput, pg-logical-replication, or module:function "
                            "(an in-process Python entry point)")
    which.add_argument("--adapter-cmd", metavar="CMD",
                       help="command of a subprocess adapter speaking the JSON-lines contract")
    which.add_argument("--client", metavar="CMD",
                       help="a replication client streamed the cases by the fake walsender: pg-logical-replication, "
                            "a pg_recvlogical program, or a command printing JSON lines (--client-kind jsonl) with "
                            "placeholders {dsn} {host} {port} {user} {password} {dbname} {slot} {publication} "
                            "{proto_version} {options}")
    p.add_argument("--client-kind", choices=("pgrecvlogical", "jsonl"),
                   help="how --client reports: pgrecvlogical (its output file's bytes) or jsonl (one JSON line per "
                        "decoded message); default: pgrecvlogical for a program named pg_recvlogical, else jsonl")
    p.add_argument("--client-shape", metavar="NAME|FILE",
                   help="how a jsonl client's 'native' lines map to the JSON form: a shipped shape "
                        "(pg-logical-replication) or a JSON file (spec/adapter-contract.md); default: the one its "
                        "hello line names")
    p.add_argument("--report", metavar="DIR", help="write junit.xml, index.json and report.html here")
    p.add_argument("--strict", action="store_true", help="also run the SHOULD cases (and count them)")
    p.add_argument("--claim", metavar="PROFILE",
                   help="judge the decoder on this capability profile instead of the one it declares: 'all', or "
                        "words like 'protocol=1,2 streaming=off two-phase=no binary=no messages=yes origin=yes "
                        "level=message' (left out: not claimed); the exit status says whether it conforms")
    p.add_argument("--discover", action="store_true",
                   help="also run the cases outside the claimed profile, show per capability what the decoder "
                        "passes there, and propose the largest profile it conforms to")
    p.add_argument("--fixtures", metavar="DIR",
                   help="golden fixtures directory (default: the golden corpus: $PGWIRE_SPEC_FIXTURES, the "
                   "checkout's fixtures/, or the copy installed with the package; named on stderr)")
    p.add_argument("--sources", default=",".join(_SOURCES),
                   help=f"comma-separated case sources (default: {','.join(_SOURCES)})")
    p.add_argument("--only", metavar="PREFIX", action="append", default=[],
                   help="run only cases whose id starts with PREFIX (repeatable)")
    p.add_argument("--per-context", type=int, default=20, metavar="N",
                   help="generated and malformed streams drawn per context (default: 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated cases (default: 0)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="per-case timeout; with --client, per client run (plus 5 ms per message; default: 10)")
    p.add_argument("--no-cache", action="store_true",
                   help="draw the generated and malformed streams again instead of reading them from the cache "
                        "($PGWIRE_SPEC_CACHE or ~/.cache/pgwire-spec; keyed by seed, versions and sources)")
    p.add_argument("--list", action="store_true", help="list the cases (id, level, description) and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="show every failure")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    finally:  # the cases frozen out of the collector's view (below) are let go
        gc.unfreeze()
        gc.enable()


def _run(args: argparse.Namespace) -> int:
    from ..conformance import (
        Profile,
        ProfileError,
        collect_cases,
        open_client,
        open_command,
        open_decoder,
        print_summary,
        run_cases,
        write_reports,
    )
    from ..conformance.adapters.pg_logical_replication import cache_dir

    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    bad = [s for s in sources if s not in _SOURCES]
    if bad:
        print(f"pgwire-spec conform: error: unknown source {bad[0]!r} (expected {', '.join(_SOURCES)})",
              file=sys.stderr)
        return 2
    claim = None
    if args.claim is not None:
        try:
            claim = Profile.parse(args.claim)
        except ProfileError as exc:
            print(f"pgwire-spec conform: error: {exc}", file=sys.stderr)
            return 2
    # the decoder first: a wrong name or command fails before the cases are built
    for flag, given in (("--client-kind", args.client_kind), ("--client-shape", args.client_shape)):
        if given and not args.client:
            print(f"pgwire-spec conform: error: {flag} goes with --client", file=sys.stderr)
            return 2
    adapter = None
    if not args.list:
        if args.client:
            adapter = open_client(args.client, args.client_kind, args.timeout, shape=args.client_shape)
        elif args.decoder:
            adapter = open_decoder(args.decoder, args.timeout)
        else:
            adapter = open_command(args.adapter_cmd, args.timeout)
    # ~100k cases of small dicts and tuples that live to the end: the cyclic collector would
    # walk them again and again while they are made (a quarter of the run); it is paused
    # while they are built, and they are frozen out of its view for the run itself. The
    # streams hypothesis draws (collect_cases puts them last, whichever call makes them)
    # are drawn with the collector on and the cases before them frozen: each example
    # leaves reference cycles of the engine's behind (~500k objects in all), which would
    # otherwise wait for the collection at exit (~0.5 s).
    cache = None if args.no_cache else cache_dir() / "conform"
    gc.disable()
    try:
        cases = collect_cases(fixtures=args.fixtures, sources=[s for s in sources if s not in _DRAWN])
        gc.freeze()
        gc.enable()
        cases += collect_cases(sources=[s for s in sources if s in _DRAWN], per_context=args.per_context,
                               seed=args.seed, cache=cache)
    except BaseException:
        if adapter is not None:
            adapter.close()
        raise
    finally:
        gc.freeze()
        gc.enable()
    if "fixture" in sources:
        from .. import __version__
        from .._resources import ResourceError, data_source

        try:
            where = str(args.fixtures) if args.fixtures else str(data_source("fixtures"))
        except ResourceError as exc:
            where = f"none ({exc})"
        count = sum(c.source == "fixture" for c in cases)
        print(f"corpus: {where} of pgwire-spec {__version__}: {count:,} fixture cases", file=sys.stderr)
    if args.only:
        cases = [c for c in cases if any(c.id.startswith(p) for p in args.only)]
    if adapter is None:
        for c in cases:
            print(f"{c.id}\t{c.level}\t{c.description}")
        return 0
    tty = sys.stderr.isatty()

    def progress(n: int, total: int, verdict: object) -> None:
        if tty and (n % 50 == 0 or n == total):
            print(f"\r  {n}/{total} cases", end="" if n < total else "\n", file=sys.stderr, flush=True)

    with adapter:
        result = run_cases(adapter, cases, strict=args.strict, profile=claim, run_all=args.discover,
                           progress=progress)
    print_summary(result, sys.stdout, verbose=args.verbose)
    if args.client:
        from ..conformance.adapters.wire import WireAdapter

        if isinstance(adapter, WireAdapter):
            print(f"client: {adapter.sessions:,} sessions (client starts) for {len(cases):,} cases", file=sys.stderr)
            if adapter.shape is not None:
                print(f"compared through the shape {adapter.shape.name} (a field not reported is not compared):\n  "
                      + adapter.shape.compared().replace("\n", "\n  "), file=sys.stderr)
    if args.report:
        paths = write_reports(result, args.report)
        print(f"reports: {paths['html']} {paths['junit']} {paths['index']}", file=sys.stderr)
    return 0 if result.ok else 1
