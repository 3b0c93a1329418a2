"""``pgwire-spec verify-fixtures``: check fixture files, and optionally their drift from a
live server.

Every case must decode under its recorded context, re-encode byte-identical and equal its
expected JSON; a mismatch prints the case id, the byte offset and the field path (exit 1).
With ``--drift`` the built-in workload is captured again on live servers and compared with
the stored files after normalising LSNs, xids, OIDs and timestamps.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import __version__
from .._resources import data_source
from ..capture.fixture import FixtureError, find_fixture_files, read_fixture
from ..capture.verify import verify_paths
from ..servers import PROVIDERS, parse_majors, provider


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*",
                   help="fixture files or directories (default: the golden corpus: $PGWIRE_SPEC_FIXTURES, "
                   "the checkout's fixtures/, or the installed package's copy)")
    p.add_argument("--no-sequence", action="store_true",
                   help="check cases one by one only, not each group replayed as a stream")
    p.add_argument("--max-errors", type=int, default=50, help="mismatches to print (default: 50)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--spark", action="store_true",
                   help="verify as a Spark job, one task per option set (pgwire_spec.fuzz.spark)")
    p.add_argument("--master", default="local[*]", help="with --spark: the Spark master (default: local[*])")
    p.add_argument("--stats", action="store_true",
                   help="print a Markdown table of cases per major and message kind, then verify")
    p.add_argument("--drift", action="store_true",
                   help="re-capture the built-in workload live and compare with the stored files")
    p.add_argument("--providers", default="npm", help=f"with --drift: providers among {', '.join(PROVIDERS)}")
    p.add_argument("--majors", help="with --drift: majors to re-capture (default: every major stored)")
    p.add_argument("--bin-dir", help="with --drift and provider system: the server's bin dir")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    if not args.paths:
        source = data_source("fixtures")
        args.paths = [str(source.path)]
        if not args.quiet:
            print(f"corpus: {source} of pgwire-spec {__version__}", file=sys.stderr, flush=True)
    if args.drift:
        return _drift(args)
    if args.stats:
        from ..capture.stats import corpus_table

        print(corpus_table(args.paths))
    if args.spark:
        import functools

        from ..capture.verify import verify_group
        from ..fuzz.spark import verify_fixtures_spark

        report = verify_fixtures_spark(
            args.paths, master=args.master, verify=functools.partial(verify_group, sequence=not args.no_sequence),
            say=(lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True)),
        )
    else:
        if getattr(args, "own_process", False):
            _reuse_freed_memory()
        report = verify_paths(args.paths, sequence=not args.no_sequence)
    if args.json:
        print(json.dumps({
            "ok": report.ok, "files": report.files, "groups": report.groups, "cases": report.cases,
            "seconds": round(report.seconds, 4),
            "mismatches": [{"case": m.case_id, "check": m.check, "offset": m.offset, "field": m.field,
                            "detail": m.detail, "file": m.file} for m in report.mismatches],
        }))
        return 0 if report.ok else 1
    for m in report.mismatches[: args.max_errors]:
        print(str(m))
    if len(report.mismatches) > args.max_errors:
        print(f"... and {len(report.mismatches) - args.max_errors} more")
    summary = (f"{report.cases:,} cases in {report.files} files ({report.groups} option sets) "
               f"verified in {report.seconds:.2f} s ({report.rate:,.0f} cases/s)")
    if report.ok:
        print(f"{summary}: all match")
        return 0
    bad = len({m.case_id for m in report.mismatches})
    print(f"{summary}: {len(report.mismatches)} mismatch(es) in {bad} case(s)")
    return 1


def _reuse_freed_memory() -> None:
    """With glibc: blocks of any size below 1 GiB taken from the heap, and what is freed kept
    there for the next file (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD; what the
    MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ variables set). By default each file's
    tens of MB (its text, its hex, its bytes) are mapped afresh and unmapped after it, every
    page faulted in again: ~24k of a run's ~58k page faults, half its system time. The
    command owns this process, which ends after the run; elsewhere nothing changes."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
    except (ValueError, OSError, AttributeError):  # not glibc, or no confstr
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD (malloc.h); refused (0) where it is above the heap's limit
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD


def _drift(args: argparse.Namespace) -> int:
    # Capturing needs psycopg and the servers' providers: imported for --drift only, so that
    # a plain verification starts without them.
    from ..capture import builtin_workload, compare, run_capture
    from ..capture.options import option_sets

    stored = {}
    for path in find_fixture_files(args.paths):
        try:
            fx = read_fixture(path)
        except FixtureError:
            continue  # other formats (sessions) are not drift-checked
        if fx.workload.startswith("builtin"):
            stored[fx.major] = fx
    majors = parse_majors(args.majors) if args.majors else sorted(stored)
    missing = [m for m in majors if m not in stored]
    if missing or not majors:
        raise FixtureError(f"expected stored built-in fixtures for majors {majors or '(any)'} in "
                           f"{', '.join(map(str, args.paths))}, found none for {missing or 'any major'}")

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[drift] {msg}", file=sys.stderr, flush=True)

    failed = 0
    for name in [n.strip() for n in args.providers.split(",") if n.strip()]:
        for major in majors:
            prov = provider(name, major, bin_dir=args.bin_dir)
            # Capture again exactly the option sets the stored file holds: the default ones,
            # or those of --all-combinations.
            names = {n for g in stored[major].groups for n in (g.name, *g.equivalent)}
            exhaustive = not names <= {o.name for o in option_sets(major, "pgws_all")}
            live = run_capture(prov, builtin_workload(), progress=say, exhaustive=exhaustive,
                               only=sorted(names))
            drifts = compare(stored[major], live)
            if stored[major].workload != live.workload:
                print(f"note: pg{major}: stored workload {stored[major].workload}, live {live.workload}; "
                      f"regenerate with: pgwire-spec capture --providers {name} --majors {major} "
                      f"--out {Path(str(stored[major].path)).parent}")
            for d in drifts[: args.max_errors]:
                print(str(d))
            status = "no drift" if not drifts else f"{len(drifts)} difference(s)"
            print(f"pg{major} ({prov.describe()}, PostgreSQL {live.server_version}): {len(live.cases)} cases "
                  f"compared with {stored[major].path}: {status}")
            failed += bool(drifts)
    return 1 if failed else 0
