"""``pgwire-spec proxy --upstream DSN``: a replication proxy in front of a real PostgreSQL,
until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from .serve import add_control_arguments, parse_control, run_until_stopped


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--upstream", required=True, metavar="DSN",
                   help="the real server, as a libpq connection string or URI (host, port, dbname, user, "
                        "password, sslmode: TLS between the proxy and it when sslmode asks for it)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one, printed at start)")
    p.add_argument("--record", metavar="DIR",
                   help="write each streamed connection as a session fixture (pgMAJOR-session-proxy-N.json.gz) and a "
                        "scenario replaying it (replay-proxy-N.yaml) to DIR")
    p.add_argument("--faults", metavar="FILE",
                   help="faults to play (YAML/JSON list, the scenario vocabulary: action, after_messages, kind, "
                        "after_seconds, selectors)")
    p.add_argument("--reply-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="a keepalive asking for a reply must be answered within this (default 10)")
    p.add_argument("--bandwidth", type=int, metavar="BYTES_PER_SECOND",
                   help="shape the server-to-client stream to this rate")
    p.add_argument("--latency", type=float, metavar="SECONDS",
                   help="deliver what the server sends this much later")
    p.add_argument("--no-validate", action="store_true",
                   help="do not decode the server's stream (forward, record and fault only)")
    p.add_argument("--quiet", action="store_true", help="print only the address line (and violations)")
    add_control_arguments(p)


def run(args: argparse.Namespace) -> int:
    from ..proxy import ReplicationProxy
    from ..walsender.faults import parse_faults

    faults = []
    if args.faults:
        import yaml

        try:
            text = Path(args.faults).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{args.faults}: {exc.strerror or exc}") from None
        try:
            faults = parse_faults(yaml.safe_load(text), args.faults)
        except yaml.YAMLError as exc:
            raise ValueError(f"{args.faults}: expected a YAML/JSON list of faults ({exc})") from None
    if not 0 <= args.port <= 65535:
        raise ValueError(f"expected a port from 0 to 65535, found {args.port}")
    parse_control(args.control)
    proxy = ReplicationProxy(args.upstream, host=args.host, port=args.port, faults=faults, record=args.record,
                             reply_timeout=args.reply_timeout, bandwidth=args.bandwidth, latency=args.latency,
                             validate=not args.no_validate, keep=bool(args.record or args.control))
    return asyncio.run(_run(proxy, args))


async def _run(proxy: object, args: argparse.Namespace) -> int:
    from ..control.proxy import ProxyTarget
    from ..proxy import ReplicationProxy

    assert isinstance(proxy, ReplicationProxy)
    proxy._on_violation = lambda v: print(f"violation: {v}", file=sys.stderr, flush=True)  # type: ignore[method-assign]
    await proxy.start()
    up = proxy.upstream
    await run_until_stopped(proxy, ProxyTarget(proxy), args, lambda: (
        f"proxy to {up.get('host', 'localhost')}:{up.get('port', '5432')} "
        f"(sslmode {up.get('sslmode', 'prefer')}); Ctrl-C to stop"))
    if not args.quiet:
        print(f"stopped after {proxy.state.count} connection(s), {len(proxy.violations)} violation(s)"
              + (f", {len(proxy.recorded)} session(s) recorded in {args.record}" if args.record else ""),
              file=sys.stderr)
    return 0
