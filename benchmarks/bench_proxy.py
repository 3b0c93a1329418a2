"""The replication proxy's overhead on pg_recvlogical's throughput: the same rows streamed
from a real PostgreSQL directly and through ``pgwire-spec proxy``, side by side in one run.

    python benchmarks/bench_proxy.py [--major 16] [--transactions 2000] [--rows 100] [--repeat 5] [--short]

Workload: ``transactions`` transactions of ``rows`` inserts each into
``items (id int8 primary key, payload text, n int4)`` (a 40-byte payload), pgoutput protocol
1. One slot per run is created before the rows are inserted, so every run streams exactly
the same changes from 0/0 to the end position (``pg_recvlogical --start -E``; time from
starting pg_recvlogical to its exit; output to /dev/null). Runs alternate: direct, through
socat (a bare TCP relay in C, when installed: what any extra hop costs on this machine,
the floor of every proxy), through the proxy forwarding only (``--no-validate``: framing, fault bookkeeping), through the proxy
(strict validation of every message, nothing kept), through the proxy with
``--record`` (every message spooled to a file, written as a session fixture at the end). The
proxy forwards a running stream first and checks it after, in slices while the stream leaves
it idle: so each proxied run is followed by a wait until the proxy is done with it (its
CPU time stops growing, and for ``--record`` the fixture is written), and the proxy's CPU
seconds for the run (its fixture writer's included) are reported beside the client's
wall time. Medians are reported, with
messages/s and the proxy's overhead against direct (goal: at most 10%).
The server: PostgreSQL ``--major`` from the npm provider (16 by default), or Debian's 15
with ``--major 15`` when installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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


def fill(dsn: str, slots: list[str], n_tx: int, rows: int) -> str:
    """The workload on the server at *dsn*: table items, publication pub, *slots* created
    first (each streams every row from the start), then the rows; the end position."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP PUBLICATION IF EXISTS pub")
        conn.execute("DROP TABLE IF EXISTS items")
        conn.execute("CREATE TABLE items (id int8 PRIMARY KEY, payload text, n int4)")
        conn.execute("CREATE PUBLICATION pub FOR TABLE items")
        for s in slots:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (s,))
        for t in range(n_tx):
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany("INSERT INTO items VALUES (%s, %s, %s)",
                                [(t * rows + i, f"row {t * rows + i} {PAD}", i) for i in range(rows)])
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        return str(row[0])


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process *pid* and its ended children (the recorder's
    fixture writers): proc(5), fields 14 to 17 of /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> bool:
    """Whether process *pid* has a child alive (proc(5): /proc/PID/task/TID/children)."""
    try:
        return any(p.read_text().strip() for p in Path(f"/proc/{pid}/task").glob("*/children"))
    except OSError:
        return False


def settle(pid: int, done: Any = None, timeout: float = 120) -> None:
    """Wait until process *pid* stops using CPU (and *done()* holds): it finished its
    deferred checks and its recording."""
    deadline = time.monotonic() + timeout
    last = -1.0
    quiet = 0
    while time.monotonic() < deadline:
        now = cpu_seconds(pid)
        # done, and then no CPU for two samples (a fixture writer has exited and been reaped)
        quiet = quiet + 1 if now == last and (done is None or done()) and not _children(pid) else 0
        if quiet >= 2:
            return
        last = now
        time.sleep(0.2)
    raise SystemExit(f"the proxy (pid {pid}) was still busy {timeout:.0f} s after its client ended")


def start_socat(host: str, port: int) -> tuple[subprocess.Popen[str], int] | None:
    """socat relaying a free loopback port to the server, or None when socat is missing."""
    from pgwire_spec.servers._base import free_port

    socat = shutil.which("socat")
    if socat is None:
        return None
    for _ in range(5):
        listen = free_port()
        proc = subprocess.Popen([socat, f"TCP-LISTEN:{listen},bind=127.0.0.1,fork,reuseaddr,nodelay",
                                 f"TCP:{host}:{port},nodelay"], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            if f":{listen:04X} " in Path("/proc/net/tcp").read_text():
                return proc, listen
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    raise SystemExit("socat did not start listening")


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
    # one slot per run and mode
    slots_needed = str(max(20, 5 * args.repeat + 4))
    prov = provider(kind, args.major, settings={"max_replication_slots": slots_needed, "max_wal_senders": "20"})
    prov.start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    modes = ["direct", "socat", "proxy --no-validate", "proxy", "proxy --record"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    try:
        server = prov.server
        assert server is not None
        dsn = server.dsn
        n_tx, rows = args.transactions, args.rows
        messages = n_tx * (rows + 2) + 1
        slots = [f"bench_{m}_{i}" for i in range(args.repeat) for m in range(len(modes))]
        endpos = fill(dsn, slots, n_tx, rows)
        relay = start_socat(server.host, server.port)
        if relay is None:
            modes.remove("socat")
            print("socat not installed: no bare-relay row", file=sys.stderr)
        plain, ndsn = start_proxy(dsn, tmp, "--no-validate")
        proxy, pdsn = start_proxy(dsn, tmp)
        recorder, rdsn = start_proxy(dsn, tmp, "--record", str(tmp / "rec"))
        try:
            targets = {"direct": dsn, "proxy --no-validate": ndsn, "proxy": pdsn, "proxy --record": rdsn}
            if relay is not None:
                targets["socat"] = dsn.replace(f"port={server.port}", f"port={relay[1]}")
            procs = {"proxy --no-validate": plain, "proxy": proxy, "proxy --record": recorder}
            for i in range(args.repeat):
                for m, mode in enumerate(modes):
                    p = procs.get(mode)
                    before = cpu_seconds(p.pid) if p is not None else 0.0
                    times[mode].append(recvlogical(binary, targets[mode], f"bench_{m}_{i}", endpos))
                    if p is not None:
                        written = (lambda n=i + 1: len(list((tmp / "rec").glob("*.json.gz"))) >= n) \
                            if mode == "proxy --record" else None
                        settle(p.pid, written)
                        cpu[mode].append(cpu_seconds(p.pid) - before)
        finally:
            if relay is not None:
                stop(relay[0])
            stop(plain)
            stop(proxy)
            stop(recorder)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for s in slots:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (s,))
    finally:
        prov.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the recordings (tens of MB per run)

    med = {m: statistics.median(v) for m, v in times.items()}
    print(f"PostgreSQL {args.major} -> pg_recvlogical (/dev/null): {n_tx} transactions x {rows} rows = "
          f"{messages} pgoutput messages, {args.repeat} run(s) each, medians")
    print(f"{'path':<20} {'seconds':>9} {'messages/s':>12} {'overhead':>9} {'proxy CPU s':>12}")
    out: dict[str, Any] = {"major": args.major, "transactions": n_tx, "rows": rows, "repeat": args.repeat,
                           "end": format_lsn(int(endpos.split('/')[0], 16) << 32 | int(endpos.split('/')[1], 16))}
    for mode in modes:
        overhead = med[mode] / med["direct"] - 1
        used = f"{statistics.median(cpu[mode]):>12.3f}" if cpu[mode] else f"{'':>12}"
        print(f"{mode:<20} {med[mode]:>9.3f} {messages / med[mode]:>12,.0f} {overhead:>+9.1%} {used}")
        out[mode] = {"seconds": med[mode], "runs": times[mode], "overhead": overhead, "proxy_cpu": cpu[mode]}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
