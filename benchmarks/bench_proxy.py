"""The replication proxy's overhead on pg_recvlogical's throughput: the same rows streamed
from a real PostgreSQL directly and through ``pgwire-spec proxy``, side by side in one run.

    python benchmarks/bench_proxy.py [--major 16] [--transactions 2000] [--rows 100] [--repeat 5] [--short]

Workload: ``transactions`` transactions of ``rows`` inserts each into
``items (id int8 primary key, payload text, n int4)`` (a 40-byte payload), pgoutput protocol
1. One slot per run is created before the rows are inserted, so every run streams exactly
the same changes from 0/0 to the end position (``pg_recvlogical --start -E``; time from
starting pg_recvlogical to its exit; output to /dev/null). Runs alternate: direct, through
the proxy forwarding only (``--no-validate``: framing, fault bookkeeping), through the proxy
(strict validation of every message, nothing kept), through the proxy with
``--record`` (every message kept and written as a session fixture at the end). Medians are
reported, with messages/s and the proxy's overhead against direct (goal: at most 10%).
The server: PostgreSQL ``--major`` from the npm provider (16 by default), or Debian's 15
with ``--major 15`` when installed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pgwire_spec.lsn import format_lsn  # noqa: E402
from pgwire_spec.servers import provider  # noqa: E402
from pgwire_spec.servers.system import find_system_bin_dir  # noqa: E402

PAD = "x" * 40


def recvlogical(binary: str, dsn: str, slot: str, endpos: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([binary, "-d", dsn, "-S", slot, "--no-loop", "--start", "-o", "proto_version=1", "-o",
                           "publication_names=pub", "-E", endpos, "-F", "0", "-f", "/dev/null"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"pg_recvlogical -S {slot} on {dsn} failed: {proc.stderr.strip()}")
    return time.perf_counter() - t0


def start_proxy(upstream: str, folder: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "pgwire_spec", "proxy", "--upstream", upstream, "--quiet", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=folder)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "dsn: " not in line:
        proc.kill()
        raise SystemExit(f"the proxy did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split("dsn: ", 1)[1].strip()


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--major", type=int, default=16)
    ap.add_argument("--transactions", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = ap.parse_args()
    if args.short:
        args.transactions, args.rows, args.repeat = 100, 20, 1

    import psycopg

    binary = str(find_system_bin_dir(15) / "pg_recvlogical")
    kind = "system" if args.major == 15 else "npm"
    prov = provider(kind, args.major)
    prov.start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    modes = ["direct", "proxy --no-validate", "proxy", "proxy --record"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    try:
        server = prov.server
        assert server is not None
        dsn = server.dsn
        n_tx, rows = args.transactions, args.rows
        messages = n_tx * (rows + 2) + 1
        slots = [f"bench_{m}_{i}" for i in range(args.repeat) for m in range(len(modes))]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP PUBLICATION IF EXISTS pub")
            conn.execute("DROP TABLE IF EXISTS items")
            conn.execute("CREATE TABLE items (id int8 PRIMARY KEY, payload text, n int4)")
            conn.execute("CREATE PUBLICATION pub FOR TABLE items")
            for s in slots:
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (s,))
            for t in range(n_tx):
                with conn.transaction():
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)",
                                        [(t * rows + i, f"row {t * rows + i} {PAD}", i) for i in range(rows)])
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
            assert row is not None
            endpos = row[0]
        plain, ndsn = start_proxy(dsn, tmp, "--no-validate")
        proxy, pdsn = start_proxy(dsn, tmp)
        recorder, rdsn = start_proxy(dsn, tmp, "--record", str(tmp / "rec"))
        try:
            targets = {"direct": dsn, "proxy --no-validate": ndsn, "proxy": pdsn, "proxy --record": rdsn}
            for i in range(args.repeat):
                for m, mode in enumerate(modes):
                    times[mode].append(recvlogical(binary, targets[mode], f"bench_{m}_{i}", endpos))
        finally:
            stop(plain)
            stop(proxy)
            stop(recorder)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for s in slots:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (s,))
    finally:
        prov.stop()

    med = {m: statistics.median(v) for m, v in times.items()}
    print(f"PostgreSQL {args.major} -> pg_recvlogical (/dev/null): {n_tx} transactions x {rows} rows = "
          f"{messages} pgoutput messages, {args.repeat} run(s) each, medians")
    print(f"{'path':<20} {'seconds':>9} {'messages/s':>12} {'overhead':>9}")
    out: dict[str, Any] = {"major": args.major, "transactions": n_tx, "rows": rows, "repeat": args.repeat,
                           "end": format_lsn(int(endpos.split('/')[0], 16) << 32 | int(endpos.split('/')[1], 16))}
    for mode in modes:
        overhead = med[mode] / med["direct"] - 1
        print(f"{mode:<20} {med[mode]:>9.3f} {messages / med[mode]:>12,.0f} {overhead:>+9.1%}")
        out[mode] = {"seconds": med[mode], "runs": times[mode], "overhead": overhead}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
