"""``pgwire-spec conform-client``: grade a replication client's behaviour against the fake
walsender's catalogue of client cases."""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--client-cmd", metavar="CMD",
                   help="the client's command line; {dsn} {slot} {host} {port} {user} {password} are filled in "
                        "per case (the slot exists unless the case is about a missing one). Optional applied "
                        "hook: one JSON line per applied transaction on stdout, {\"applied\": \"0/16B3748\", \"changes\": N} "
                        "(changes: the row changes applied, optional)")
    p.add_argument("--name", help="the client's name in the reports (default: the command's program)")
    p.add_argument("--slot", default="conform", help="the slot name given as {slot} (default: conform)")
    p.add_argument("--only", metavar="CASE", action="append", default=[], help="run only this case (repeatable)")
    p.add_argument("--report", metavar="DIR", help="write junit.xml, index.json and report.html here")
    p.add_argument("--list", action="store_true", help="list the cases (id, window, what is checked) and exit")


def run(args: argparse.Namespace) -> int:
    from ..clientconf import CASES, Grade, case, print_grades, run_client, write_reports

    if args.list:
        for c in CASES:
            print(f"{c.id}\t{c.window:g}s\t{c.title}")
        return 0
    if not args.client_cmd:
        print("pgwire-spec conform-client: error: expected --client-cmd (or --list)", file=sys.stderr)
        return 2
    try:
        cases = [case(x) for x in args.only] if args.only else list(CASES)
    except KeyError as exc:
        print(f"pgwire-spec conform-client: error: {exc.args[0]}", file=sys.stderr)
        return 2

    def progress(g: Grade) -> None:
        print(f"  {g.case}: {g.status}", file=sys.stderr, flush=True)

    result = run_client(args.client_cmd, name=args.name, cases=cases, slot=args.slot, progress=progress)
    print_grades(result, sys.stdout)
    if args.report:
        paths = write_reports([result], args.report)
        print(f"reports: {paths['junit']} {paths['index']} {paths['html']}", file=sys.stderr)
    return 0 if result.ok else 1
