"""``pgwire-spec serve SCENARIO``: run a fake walsender until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario file (YAML or JSON), or the name of a shipped example "
                   "scenario (e.g. accounts; a wrong name lists them)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one, printed at start)")
    p.add_argument("--transcript", metavar="FILE",
                   help="write the transcript of every message (JSON lines) to FILE, older entries as the "
                   "server runs (memory stays bounded), the rest at exit")
    p.add_argument("--transcript-limit", type=int, default=10_000, metavar="N",
                   help="with --transcript: records kept in memory before they are written (default 10000)")
    p.add_argument("--quiet", action="store_true", help="print only the address line")
    p.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                   help="a folder the scenario's replay files may also come from (repeatable; by default only "
                   "the scenario's own folder and the shipped corpus)")
    p.add_argument("--history", metavar="MODE",
                   help="which slots receive the scenario's transactions: once (default, as a real server: a slot "
                   "created after a client streamed them receives none) or per_slot (every new slot receives them "
                   "all, e.g. a fresh slot per test; no real server does this); overrides the scenario's "
                   "server.history")
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
    limits.add_argument("--wal-sender-timeout", metavar="SECONDS",
                        help="close a streaming client silent this long, asking for a reply at half of it, "
                        "e.g. 60s (default 0: off)")
    limits.add_argument("--max-sql-length", type=int, metavar="CHARS",
                        help="longest plain SQL statement answered; longer: 0A000 (default 1048576)")
    limits.add_argument("--sql-timeout", metavar="SECONDS",
                        help="time to answer one long statement (over 64 Ki characters, answered off the event "
                        "loop); then 57014 (default 60)")
    add_control_arguments(p)


def add_control_arguments(p: argparse.ArgumentParser) -> None:
    """--control, --control-token and --ready-file (serve and proxy)."""
    p.add_argument("--control", metavar="HOST:PORT",
                   help="open the control plane (HTTP/JSON, spec/control.openapi.yaml) on HOST:PORT, e.g. "
                        "127.0.0.1:0 for a free port; its URL is on the first line and in --ready-file")
    p.add_argument("--control-token", metavar="TOKEN", default=os.environ.get("PGWIRE_SPEC_CONTROL_TOKEN"),
                   help="require 'Authorization: Bearer TOKEN' on the control plane (needed when it is not on a "
                        "loopback address; default $PGWIRE_SPEC_CONTROL_TOKEN)")
    p.add_argument("--ready-file", metavar="FILE",
                   help="once listening, write {host, port, dsn, control, pid} as JSON to FILE (atomically)")


def parse_control(value: str | None) -> tuple[str, int] | None:
    """'HOST:PORT' (or '[v6]:PORT', or just PORT for loopback) -> (host, port)."""
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--control: expected HOST:PORT with a port from 0 to 65535, found {value!r}")
    return host, int(port)


def ready_line(host: str, port: int, dsn: str, control: str | None) -> str:
    """The first line serve and proxy print: where clients and the control plane connect."""
    line = f"listening on {host}:{port}"
    if control is not None:
        line += f"  control: {control}"
    return line + f"  dsn: {dsn}"


def write_ready_file(path: str, info: dict[str, object]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f)
        f.write("\n")
    os.replace(tmp, path)


async def run_until_stopped(service: Any, target: Any, args: argparse.Namespace, banner: Callable[[], str]) -> None:
    """What serve and proxy share once *service* (a started FakeWalsender or
    ReplicationProxy) listens: the control plane over *target* when --control is given,
    SIGINT/SIGTERM/SIGHUP as a stop, the ready line and --ready-file, *banner* on stderr;
    then wait for a stop (a signal or the control plane's) and stop both."""
    from .. import __version__
    from ..control.server import ControlServer

    stop = asyncio.Event()
    control = None
    control_at = parse_control(args.control)
    if control_at is not None:
        try:
            control = await ControlServer(target, host=control_at[0], port=control_at[1],
                                          token=args.control_token, on_stop=stop.set, version=__version__).start()
        except BaseException:
            await service.stop()
            raise
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            pass
    print(ready_line(service.host, service.port, service.dsn, control.url if control else None), flush=True)
    if args.ready_file:
        write_ready_file(args.ready_file, {"host": service.host, "port": service.port, "dsn": service.dsn,
                                           "control": control.url if control else None, "pid": os.getpid()})
    if not args.quiet:
        print(banner(), file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        if control is not None:
            await control.stop()
        await service.stop()


def run(args: argparse.Namespace) -> int:
    from .._resources import scenario_path
    from ..walsender import load_scenario

    path = scenario_path(args.scenario)
    scenario = load_scenario(str(path), allow_paths=args.allow_path)
    if str(path) != args.scenario and not args.quiet:
        print(f"scenario {args.scenario}: {path}", file=sys.stderr, flush=True)
    if args.transcript_limit < 1:
        raise ValueError(f"--transcript-limit: expected a number of records >= 1, found {args.transcript_limit}")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"expected a port from 0 to 65535, found {args.port}")
    args.limits = _limits(scenario, args)
    if args.history is not None:
        import dataclasses

        from ..walsender.scenario import HISTORY_MODES

        if args.history not in HISTORY_MODES:
            raise ValueError(f"--history: expected {' or '.join(HISTORY_MODES)}, found {args.history!r}")
        scenario = dataclasses.replace(scenario, server=dataclasses.replace(  # type: ignore[arg-type]
            scenario.server, history=args.history))
    parse_control(args.control)
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

    control_at = parse_control(args.control)
    server = FakeWalsender(scenario, host=args.host, port=args.port,  # type: ignore[arg-type]
                           record=bool(args.transcript) or control_at is not None, limits=args.limits,
                           transcript_file=args.transcript or None,
                           transcript_limit=args.transcript_limit if args.transcript else None)
    await server.start()
    # The scenario and its compiled history live as long as the process: out of the cyclic
    # collector's view, which would otherwise walk every row of them each time it runs a
    # full collection (while a stream renders, a few times per stream). Whatever leaves it
    # is still freed by its reference count.
    gc.freeze()
    from ..control.fake import FakeTarget

    sc = server.scenario
    # stopping the server also writes the transcript's last records
    await run_until_stopped(server, FakeTarget(server), args, lambda: (
        f"PostgreSQL {sc.server.version} persona, database {sc.server.database}, auth {sc.auth.method}, "
        f"publications {', '.join(p.name for p in sc.publications) or 'none'}; Ctrl-C to stop"))
    if not args.quiet:
        print(f"stopped after {server.state.count} connection(s)", file=sys.stderr)
    return 0
