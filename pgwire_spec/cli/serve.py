"""``pgwire-spec serve SCENARIO``: run a fake walsender until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario file (YAML or JSON), or the name of a shipped example "
                   "scenario (e.g. accounts; a wrong name lists them)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one, printed at start)")
    p.add_argument("--transcript", metavar="FILE",
                   help="write the transcript of every message (JSON lines) to FILE at exit")
    p.add_argument("--quiet", action="store_true", help="print only the address line")


def run(args: argparse.Namespace) -> int:
    from .._resources import scenario_path
    from ..walsender import load_scenario

    path = scenario_path(args.scenario)
    scenario = load_scenario(str(path))
    if str(path) != args.scenario and not args.quiet:
        print(f"scenario {args.scenario}: {path}", file=sys.stderr, flush=True)
    if not 0 <= args.port <= 65535:
        raise ValueError(f"expected a port from 0 to 65535, found {args.port}")
    return asyncio.run(_serve(scenario, args))


async def _serve(scenario: object, args: argparse.Namespace) -> int:
    from ..walsender import FakeWalsender

    server = FakeWalsender(scenario, host=args.host, port=args.port,  # type: ignore[arg-type]
                           record=bool(args.transcript))
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            pass
    sc = server.scenario
    print(f"listening on {server.host}:{server.port}  dsn: {server.dsn}", flush=True)
    if not args.quiet:
        print(f"PostgreSQL {sc.server.version} persona, database {sc.server.database}, auth {sc.auth.method}, "
              f"publications {', '.join(p.name for p in sc.publications) or 'none'}; Ctrl-C to stop",
              file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
        if args.transcript:
            with open(args.transcript, "w", encoding="utf-8") as f:
                f.write(server.transcript.jsonl() + "\n")
    if not args.quiet:
        print(f"stopped after {server.state.count} connection(s)", file=sys.stderr)
    return 0
