"""``pgwire-spec capture``: run a workload on real servers and write fixture files.

    pgwire-spec capture --providers npm --majors 10-18 --out fixtures/
    pgwire-spec capture --dsn "host=db user=me dbname=app" --sql my_workload.sql --out fixtures/mine/
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..capture import builtin_workload, fixture_name, run_capture, sql_workload, write_fixture
from ..servers import PROVIDERS, parse_majors, provider


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--providers",
                   help=f"comma-separated server providers among {', '.join(PROVIDERS)} (default: npm; "
                   "with --physical: system)")
    p.add_argument("--majors", help="PostgreSQL majors, e.g. 15 or 10-18 or 10,14,16-18 (default: 16; "
                   "with --physical: 15)")
    p.add_argument("--dsn", help="capture from an existing server (provider dsn; --majors is ignored)")
    p.add_argument("--bin-dir", help="provider system: the bin dir holding initdb and postgres")
    p.add_argument("--sql", action="append", type=Path, default=[],
                   help="a SQL workload file, run after the slots exist (repeatable; default: the built-in workload)")
    p.add_argument("--setup", action="append", type=Path, default=[],
                   help="a SQL file run before the slots exist (schema, publications; repeatable)")
    p.add_argument("--publication", help="an existing publication to read (default: pgws_all FOR ALL TABLES, "
                   "created and dropped by capture)")
    p.add_argument("--option-sets", help="capture only these option sets (comma-separated names, e.g. p4-parallel)")
    p.add_argument("--all-combinations", action="store_true",
                   help="every accepted combination of proto_version/streaming/two_phase/binary/messages/origin "
                   "(the cross product; default: each option alone and all together per protocol version)")
    p.add_argument("--out", type=Path, default=Path("fixtures"), help="output directory (default: fixtures/)")
    p.add_argument("--no-gzip", action="store_true", help="write plain .json instead of .json.gz")
    p.add_argument("--sessions", action="store_true",
                   help="record whole walsender sessions (replication protocol, both directions) into "
                   "OUT/sessions/ instead of capturing through the SQL interface")
    p.add_argument("--physical", action="store_true",
                   help="record physical streaming replication (START_REPLICATION PHYSICAL across a promotion, "
                   "timeline history) into OUT/physical/; default server: system, major 15")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[capture] {msg}", file=sys.stderr, flush=True)

    if args.physical:
        from ..physical.cli import capture_physical

        return capture_physical(args, say)
    args.providers = args.providers or "npm"
    args.majors = args.majors or "16"
    workload = sql_workload(args.sql, args.setup) if args.sql else builtin_workload()
    if args.setup and not args.sql:
        print("pgwire-spec capture: error: --setup needs --sql", file=sys.stderr)
        return 2
    only = [s.strip() for s in args.option_sets.split(",")] if args.option_sets else None
    if args.dsn:
        targets = [provider("dsn", dsn=args.dsn)]
    else:
        names = [n.strip() for n in args.providers.split(",") if n.strip()]
        majors = parse_majors(args.majors)
        targets = [provider(n, m, bin_dir=args.bin_dir) for n in names for m in majors]
    if args.sessions:
        if args.sql or args.setup or args.publication or only:
            print("pgwire-spec capture: error: --sessions records the built-in session workload; "
                  "--sql, --setup, --publication and --option-sets do not apply", file=sys.stderr)
            return 2
        return _sessions(targets, args, say)
    for prov in targets:
        started = time.monotonic()
        fixture = run_capture(prov, workload, progress=say, publication=args.publication, only=only,
                              exhaustive=args.all_combinations)
        name = fixture_name(fixture.major, fixture.workload)
        if args.no_gzip:
            name = name.removesuffix(".gz")
        path = write_fixture(fixture, args.out / name)
        size = path.stat().st_size
        print(f"{path}: {len(fixture.cases)} cases in {len(fixture.groups)} option sets, {size:,} bytes, "
              f"PostgreSQL {fixture.server_version} ({prov.describe()}), {time.monotonic() - started:.1f} s")
    return 0


def _sessions(targets: list[Any], args: argparse.Namespace, say: Callable[[str], None]) -> int:
    from ..capture.fixture import write_text
    from ..capture.session import capture_sessions
    from ..capture.session_fixture import render_session

    for prov in targets:
        started = time.monotonic()
        for sf in capture_sessions(prov, progress=say):
            name = f"pg{sf.major}-{sf.option_set}.json" + ("" if args.no_gzip else ".gz")
            path = write_text(render_session(sf), args.out / "sessions" / name)
            print(f"{path}: {len(sf.messages)} messages ({sf.captured} recorded), {path.stat().st_size:,} bytes, "
                  f"PostgreSQL {sf.server_version} ({prov.describe()}), {time.monotonic() - started:.1f} s")
    return 0
