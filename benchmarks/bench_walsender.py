"""Streaming speed of the fake walsender against a real PostgreSQL 15 walsender, side by side
in one run, both measured through the same client: pg_recvlogical.

    python benchmarks/bench_walsender.py [--transactions 2000] [--rows 100] [--repeat 5] [--json out.json]

Workload: ``transactions`` transactions of ``rows`` inserts each into
``items (id int8 primary key, payload text, n int4)`` with a 50-byte payload, pgoutput
protocol 1, publication ``pub`` (inserts only). Per run, each server streams exactly those
rows to ``pg_recvlogical --start -E <end LSN>``: the time is from starting pg_recvlogical
to its exit at the end position (connection, authentication, START_REPLICATION, the whole
stream, CopyDone both ways).

- **real**: PostgreSQL 15 (Debian's postgresql-15, via ``pgwire_spec.servers``, trust auth):
  for each run a new slot is created, the rows are inserted (not timed), then streamed.
- **fake**: a :class:`~pgwire_spec.walsender.FakeWalsender` serving the same rows as a
  scenario (trust auth, persona 15), running in its own process and session, as the real
  server's processes do (``pgwire-spec serve``);
  the slot's position is reset between runs with a fresh slot (the scenario's ``server.history:
  per_slot``, so each new slot receives the rows again). Later runs stream the plan
  it keeps from the first (warm). Before the runs, a raw client measures the time from
  START_REPLICATION to the first XLogData on a cold plan.
- **cold**: ``repeat`` rounds of a fresh ``pgwire-spec serve`` (the scenario loaded, not
  timed) whose first stream is timed — it renders and frames the scenario while streaming
  it —, each beside the real server's run in the same round (a new slot, the rows
  inserted, then streamed: its first START_REPLICATION on that slot). Medians of each.

Two sinks for pg_recvlogical's output: ``/dev/null`` (the client's own writes cost almost
nothing, so the servers' speed shows) and a file (``-F 0``: no fsync; the client's two
write() calls per message then bound both servers). Runs alternate real/fake; medians are
reported, with messages/s (pgoutput messages: Begin, Relation, Insert, Commit) and MB/s
(pgoutput payload bytes as pg_recvlogical wrote them, newlines included).
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


def scenario(transactions: int, rows: int) -> dict[str, Any]:
    return {
        # a fresh slot per run on one long-running serve, each receiving the whole workload,
        # as each real run inserts the rows after making its slot
        "server": {"version": "15.4", "history": "per_slot"},
        "publications": {"pub": {"tables": ["public.items"], "publish": "insert"}},
        "tables": {"public.items": {"columns": [
            {"name": "id", "type": "int8", "key": True}, {"name": "payload", "type": "text"},
            {"name": "n", "type": "int4"}]}},
        "keepalive": {"interval": 10},
        "transactions": [
            {"changes": [{"insert": "public.items",
                          "new": {"id": t * rows + i, "payload": f"row {t * rows + i} {PAD}", "n": i}}
                         for i in range(rows)]}
            for t in range(transactions)
        ],
    }


def recvlogical(binary: str, host: str, port: int, slot: str, endpos: str, sink: str) -> float:
    if sink != "/dev/null" and os.path.exists(sink):
        os.remove(sink)  # pg_recvlogical appends
    t0 = time.perf_counter()
    subprocess.run(
        [binary, "-h", host, "-p", str(port), "-U", "postgres", "-d", "postgres", "-S", slot, "--no-loop",
         "--start", "-o", "proto_version=1", "-o", "publication_names=pub", "-E", endpos, "-F", "0", "-f", sink],
        check=True, capture_output=True, timeout=600,
    )
    return time.perf_counter() - t0


def create_slot(binary: str, host: str, port: int, slot: str) -> None:
    subprocess.run([binary, "-h", host, "-p", str(port), "-U", "postgres", "-d", "postgres", "-S", slot,
                    "--create-slot", "-P", "pgoutput"], check=True, capture_output=True, timeout=60)


def real_run(c: Any, host: str, port: int, binary: str, slot: str, n_tx: int, rows: int, sink: str) -> float:
    """A new slot, the rows inserted (not timed), then streamed to pg_recvlogical (timed)."""
    c.execute("TRUNCATE items")  # not published (publish = 'insert')
    c.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")
    c.execute(f"CALL fill(0, {n_tx}, {rows})")
    end = str(c.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    dt = recvlogical(binary, host, port, slot, end, sink)
    c.execute(f"SELECT pg_drop_replication_slot('{slot}')")
    return dt


def start_fake(scenario: Path) -> subprocess.Popen[str]:
    # In a session of its own, as the real server runs: where the kernel groups a session's
    # processes for CPU (autogroup), a serve left in the benchmark's session would share one
    # share with pg_recvlogical and whatever else runs there.
    return subprocess.Popen([sys.executable, "-m", "pgwire_spec", "serve", str(scenario), "--quiet"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


def fake_port_of(serve: subprocess.Popen[str]) -> int:
    """The port of a started ``serve`` (its first line: listening on HOST:PORT …)."""
    line = serve.stdout.readline() if serve.stdout else ""
    return int(line.split()[2].rsplit(":", 1)[1])


def stop_fake(serve: subprocess.Popen[str]) -> None:
    if serve.poll() is None:
        serve.terminate()
        serve.wait(30)


def first_xlogdata_latency(port: int, slot: str) -> float:
    """Seconds from sending START_REPLICATION (a new option set: proto_version 2, so the
    plan is cold) to receiving the first XLogData, on a raw socket."""
    import socket

    from pgwire_spec.replication.messages import XLogData, decode_copy_data
    from pgwire_spec.wire import BackendReader, CopyData, Query, ReadyForQuery, StartupMessage, encode_message

    sock = socket.create_connection(("127.0.0.1", port))
    backend = BackendReader()

    def until(pred: Any) -> None:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise RuntimeError("the fake closed the connection")
            backend.feed(data)
            for msg in backend:
                if pred(msg):
                    return

    try:
        sock.sendall(encode_message(StartupMessage(parameters=(
            ("user", "postgres"), ("database", "postgres"), ("replication", "database")))))
        until(lambda m: isinstance(m, ReadyForQuery))
        sock.sendall(encode_message(Query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput")))
        until(lambda m: isinstance(m, ReadyForQuery))
        t0 = time.perf_counter()
        sock.sendall(encode_message(Query(
            f"START_REPLICATION SLOT {slot} LOGICAL 0/0 (proto_version '2', publication_names 'pub')")))
        until(lambda m: isinstance(m, CopyData) and isinstance(decode_copy_data(m.data), XLogData))
        return time.perf_counter() - t0
    finally:
        sock.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = ap.parse_args()
    if args.short:
        args.transactions, args.rows, args.repeat = 50, 10, 1

    import psycopg

    bin_dir = find_system_bin_dir(15)
    binary = str(bin_dir / "pg_recvlogical")
    n_tx, rows = args.transactions, args.rows
    messages = n_tx * (rows + 2) + 1  # B, I…, C per transaction; one Relation
    tmp = Path(tempfile.mkdtemp(prefix="bench-walsender-"))
    results: dict[str, dict[str, list[float]]] = {
        "real": {"/dev/null": [], "file": []}, "fake": {"/dev/null": [], "file": []}}
    sizes: dict[str, int] = {}
    scen_path = tmp / "bench.json"
    scen_path.write_text(json.dumps(scenario(n_tx, rows)))

    from pgwire_spec.walsender import Scenario
    from pgwire_spec.walsender._history import compile_history

    fake_end = compile_history(Scenario.from_file(scen_path)).end_lsn
    cold: dict[str, list[float]] = {"real": [], "fake": []}
    loads: list[float] = []
    serve = start_fake(scen_path)
    try:
        fake_port = fake_port_of(serve)
        first = first_xlogdata_latency(fake_port, "latency")
        with provider("system", 15) as pg, psycopg.connect(pg.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE items (id int8 PRIMARY KEY, payload text, n int4)")
            c.execute("CREATE PUBLICATION pub FOR TABLE items WITH (publish = 'insert')")
            c.execute("""CREATE PROCEDURE fill(base int8, ntx int, per int) LANGUAGE plpgsql AS $$
                BEGIN FOR t IN 0..ntx-1 LOOP
                  INSERT INTO items SELECT base + t*per + i, 'row ' || (t*per+i) || ' ' || repeat('x', 40), i
                    FROM generate_series(0, per-1) i;
                  COMMIT;
                END LOOP; END $$""")
            run = 0
            for rep in range(args.repeat + 1):  # the first round warms both up, not counted
                for sink_name in ("/dev/null", "file"):
                    sink = "/dev/null" if sink_name == "/dev/null" else str(tmp / "out.bin")
                    # real
                    dt = real_run(c, pg.host, pg.port, binary, f"r{run}", n_tx, rows, sink)
                    if sink_name == "file":
                        sizes["real"] = os.path.getsize(sink)
                    if rep:
                        results["real"][sink_name].append(dt)
                    # fake
                    fslot = f"f{run}"
                    create_slot(binary, "127.0.0.1", fake_port, fslot)
                    dt = recvlogical(binary, "127.0.0.1", fake_port, fslot, format_lsn(fake_end), sink)
                    if sink_name == "file":
                        sizes["fake"] = os.path.getsize(sink)
                    if rep:
                        results["fake"][sink_name].append(dt)
                    run += 1
            loads.append(os.getloadavg()[0])
            stop_fake(serve)
            for rep in range(args.repeat):
                cold["real"].append(real_run(c, pg.host, pg.port, binary, f"cold{rep}", n_tx, rows, "/dev/null"))
                serve = start_fake(scen_path)
                port = fake_port_of(serve)
                create_slot(binary, "127.0.0.1", port, "cold")
                cold["fake"].append(recvlogical(binary, "127.0.0.1", port, "cold", format_lsn(fake_end), "/dev/null"))
                stop_fake(serve)
                loads.append(os.getloadavg()[0])
    finally:
        stop_fake(serve)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"pg_recvlogical streaming {messages:,} pgoutput messages ({n_tx:,} transactions x {rows} inserts), "
          f"medians of {args.repeat} runs, {os.cpu_count()} CPUs")
    print(f"bytes written by pg_recvlogical: real {sizes.get('real', 0):,}, fake {sizes.get('fake', 0):,}")
    out: dict[str, Any] = {"messages": messages, "transactions": n_tx, "rows": rows, "repeat": args.repeat,
                           "bytes": sizes, "cold_runs": cold, "first_xlogdata_seconds": first,
                           "runs": results, "load_averages": loads}
    for sink_name in ("/dev/null", "file"):
        print(f"\nsink {sink_name}:")
        med = {}
        for who in ("real", "fake"):
            m = statistics.median(results[who][sink_name])
            med[who] = m
            mb = sizes.get(who, 0) / m / 1e6
            print(f"  {who:4}  {m:7.3f} s   {messages / m:>11,.0f} msg/s   {mb:7.1f} MB/s")
        ratio = med["real"] / med["fake"]
        print(f"  fake / real: {ratio:.2f}x")
        out[f"ratio {sink_name}"] = ratio
    real, fake = statistics.median(cold["real"]), statistics.median(cold["fake"])
    print(f"\ncold, /dev/null (a fresh serve's first stream: renders and frames while streaming; beside the "
          f"real server's run in the same round):\n  real  {real:7.3f} s\n  fake  {fake:7.3f} s\n"
          f"  fake / real: {real / fake:.2f}x")
    out["ratio cold /dev/null"] = real / fake
    print(f"load average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f}")
    print(f"fake, first XLogData after START_REPLICATION on a cold plan: {first * 1000:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
