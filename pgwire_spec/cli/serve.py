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
    limits = p.add_argument_group("limits (override the scenario's server: section)")
    limits.add_argument("--max-connections", type=int, metavar="N",
                        help="connections served at once; one more is refused with 53300 (default 1000)")
    limits.add_argument("--authentication-timeout", metavar="SECONDS",
                        help="time to send the startup packet and authenticate, e.g. 60, 5s, 500ms (default 60)")
    limits.add_argument("--max-startup-packet-length", type=int, metavar="BYTES",
                        help="longest startup packet (default 10000)")
    limits.add_argument("--max-auth-message-length", type=int, metavar="BYTES",
                        help="longest password/SASL message (default 65535)")
    limits.add_argument("--max-message-length", type=int, metavar="BYTES",
                        help="longest message after authentication (default 1073741823)")


def run(args: argparse.Namespace) -> int:
    from .._resources import scenario_path
    from ..walsender import load_scenario

    path = scenario_path(args.scenario)
    scenario = load_scenario(str(path))
    if str(path) != args.scenario and not args.quiet:
        print(f"scenario {args.scenario}: {path}", file=sys.stderr, flush=True)
    if not 0 <= args.port <= 65535:
        raise ValueError(f"expected a port from 0 to 65535, found {args.port}")
    args.limits = _limits(scenario, args)
    return asyncio.run(_serve(scenario, args))


def _limits(scenario: object, args: argparse.Namespace) -> object:
    """The scenario's limits with the command line's overrides (each checked as in a scenario)."""
    import dataclasses

    from ..walsender.scenario import LIMIT_RANGES, limit_value

    given = {name: limit_value(f"--{name.replace('_', '-')}", name, value)
             for name in LIMIT_RANGES if (value := getattr(args, name, None)) is not None}
    return dataclasses.replace(scenario.server.limits, **given)  # type: ignore[attr-defined]


async def _serve(scenario: object, args: argparse.Namespace) -> int:
    from ..walsender import FakeWalsender

    server = FakeWalsender(scenario, host=args.host, port=args.port,  # type: ignore[arg-type]
                           record=bool(args.transcript), limits=args.limits)
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
