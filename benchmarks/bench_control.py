"""The control plane's latency to apply a fault: while pg_recvlogical streams at full speed, a
fault is added over HTTP (``ControlClient.add_fault``), against ``pgwire-spec serve`` and
against ``pgwire-spec proxy`` in front of a real PostgreSQL, side by side in one run.

    python benchmarks/bench_control.py [--repeat 7] [--transactions 10000] [--rows 10] [--short]

Goal (issue 14): the fault acts on the next message after the call. Per try, a fresh slot
and a fresh pg_recvlogical (``-f -``: its output, each pgoutput payload and a newline, read
by this script from a pipe as it comes, every chunk stamped with its arrival time). Once
the client has received a part of the stream (``--at``, a quarter by default), one fault, ``after_messages: 0``:

- ``disconnect``: the connection closed cleanly; it took effect when pg_recvlogical's
  output ends (the process exits);
- ``delay`` (``seconds: 0.5``): the stream pauses, then goes on; it took effect where the
  output has its first gap of at least half the delay.

Measured: the HTTP call's round trip; **the messages pg_recvlogical wrote after the call
returned and before the fault took effect** (the output cut at message boundaries by
decoding each payload with the reference decoder: exact counts, whatever the throughput),
with the bytes they took (what was already on its way, in the socket buffers, when the
call was served arrives all the same); and
the time from the call's return to the cut (disconnect: pg_recvlogical's output closed;
delay: the last bytes before the gap). Medians and the range over ``--repeat`` tries.

- **serve**: a scenario of ``transactions`` x ``rows`` inserts (persona 15), a new slot per
  try (``pg_recvlogical --create-slot``).
- **proxy**: ``pgwire-spec proxy`` (strict validation, the default) in front of Debian's
  PostgreSQL 15 (``--major 15``, or the npm provider's other majors), the same rows
  inserted once after one slot per try was created.
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
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_proxy import fill, stop  # noqa: E402
from bench_walsender import scenario  # noqa: E402

from pgwire_spec.control import ControlClient  # noqa: E402
from pgwire_spec.errors import DecodeError  # noqa: E402
from pgwire_spec.pgoutput.decoder import decode_message  # noqa: E402
from pgwire_spec.servers import provider  # noqa: E402
from pgwire_spec.servers.system import find_system_bin_dir  # noqa: E402

FAULTS = {
    "disconnect": {"action": "disconnect", "after_messages": 0},
    "delay": {"action": "delay", "after_messages": 0, "seconds": 0.5},
}


def start(args: list[str], folder: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``pgwire-spec ARGS --control 127.0.0.1:0``; its ready file (dsn, control URL)."""
    ready = folder / f"ready-{len(list(folder.glob('ready-*')))}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "pgwire_spec", *args, "--quiet", "--control", "127.0.0.1:0",
                             "--ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=folder)
    deadline = time.monotonic() + 120
    while not ready.exists() or not ready.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"pgwire-spec {args[0]} did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    time.sleep(0.05)  # the file is written whole, then renamed or closed: read it once more
    return proc, json.loads(ready.read_text())


class Output:
    """pg_recvlogical's stdout, read by a thread: the bytes, and (arrival time, bytes so far)
    per chunk."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.data = bytearray()
        self.marks: list[tuple[float, int]] = []
        #: newlines so far: about the messages (a payload may hold one too)
        self.lines = 0
        self.ended: float | None = None
        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            chunk = os.read(self._fd, 1 << 16)
            now = time.monotonic()
            if not chunk:
                self.ended = now
                return
            self.data += chunk
            self.lines += chunk.count(b"\n")
            self.marks.append((now, len(self.data)))

    def size_at(self, t: float) -> int:
        return max((n for at, n in self.marks if at <= t), default=0)

    def gap(self, after: float, seconds: float) -> tuple[float, int] | None:
        """The first pause of at least *seconds* in the output after time *after* (the
        quiet after the last bytes too: the pause may come after everything in flight):
        when the last bytes before it came, and how many bytes there were then."""
        prev = None
        for at, n in [*self.marks, (time.monotonic(), -1)]:
            if prev is not None and prev[0] >= after and at - prev[0] >= seconds:
                return prev
            prev = (at, n)
        return None

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def boundaries(data: bytes | bytearray, upto: int) -> list[int]:
    """Where each message ends in pg_recvlogical's output (payload, newline), up to byte
    *upto*: a newline inside a payload is told apart by the reference decoder (the
    message before it does not decode)."""
    ends = []
    pos = 0
    view = bytes(data[:upto])
    while pos < upto:
        nl = view.find(b"\n", pos)
        while nl != -1:
            try:
                decode_message(view[pos:nl])
                break
            except DecodeError:
                nl = view.find(b"\n", nl + 1)
        if nl == -1:
            break  # a message cut short (pg_recvlogical writes whole ones)
        pos = nl + 1
        ends.append(pos)
    return ends


def one_try(binary: str, dsn: str, slot: str, ctl: ControlClient, fault: str, lead: int) -> dict[str, float]:
    proc = subprocess.Popen([binary, "-d", dsn, "-S", slot, "--no-loop", "--start", "-o", "proto_version=1",
                             "-o", "publication_names=pub", "-F", "0", "-f", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Output(proc)
    try:
        deadline = time.monotonic() + 60
        while out.lines < lead and time.monotonic() < deadline and out.ended is None:
            time.sleep(0.001)
        if out.lines < lead:
            raise SystemExit(f"pg_recvlogical -S {slot} streamed {out.lines} of the {lead} messages expected first: "
                             f"{proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else ''}")
        # this client's connection (the previous try's may not be gone yet: a fault for every
        # connection would fire on the first one it meets)
        ids = [c["id"] for c in ctl.connections() if c["slot"] == slot]
        if len(ids) != 1:
            raise SystemExit(f"expected one connection on slot {slot}, found {len(ids)}")
        t0 = time.monotonic()
        ctl.add_fault(FAULTS[fault], connection=ids[0])
        t1 = time.monotonic()
        before = out.size_at(t1)
        if fault == "disconnect":
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"pg_recvlogical still streaming 60 s after the disconnect fault: "
                                 f"{ctl.faults()} {ctl.connections()}") from None
            out.join(10)
            assert out.ended is not None
            cut_at, cut_size = out.ended, len(out.data)
        else:
            seconds = FAULTS[fault]["seconds"] / 2
            deadline = time.monotonic() + 30
            found = None
            while found is None and time.monotonic() < deadline:
                time.sleep(0.05)
                found = out.gap(t0, seconds)
            if found is None:
                raise SystemExit(f"no pause of {seconds} s in pg_recvlogical's output within 30 s of the delay fault")
            cut_at, cut_size = found
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
        out.join(10)
    ends = boundaries(out.data, cut_size)
    after = sum(1 for e in ends if e > before)
    return {"rtt_ms": (t1 - t0) * 1e3, "messages_after": after, "kb_after": max(0, cut_size - before) / 1024, "cut_ms": (cut_at - t1) * 1e3,
            "before": sum(1 for e in ends if e <= before)}


def create_slot(binary: str, dsn: str, slot: str) -> None:
    subprocess.run([binary, "-d", dsn, "-S", slot, "--create-slot", "-P", "pgoutput"], check=True,
                   capture_output=True, timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--major", type=int, default=15, help="the proxy's upstream PostgreSQL (15: Debian's)")
    ap.add_argument("--transactions", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--at", type=float, default=0.25, help="the part of the stream received before the fault is added")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = ap.parse_args()
    if args.short:
        args.transactions, args.rows, args.repeat = 2000, 10, 1
    lead = int(args.at * args.transactions * (args.rows + 2))


    binary = str(find_system_bin_dir(15) / "pg_recvlogical")
    tmp = Path(tempfile.mkdtemp(prefix="bench-control-"))
    results: dict[str, dict[str, list[dict[str, float]]]] = {t: {f: [] for f in FAULTS} for t in ("serve", "proxy")}
    procs: list[subprocess.Popen[str]] = []
    kind = "system" if args.major == 15 else "npm"
    slots = [f"lat_{f}_{i}" for i in range(args.repeat) for f in FAULTS]
    prov = provider(kind, args.major, settings={"max_replication_slots": str(len(slots) + 4),
                                                  "max_wal_senders": "20"})
    try:
        (tmp / "scenario.json").write_text(json.dumps(scenario(args.transactions, args.rows)))
        serve, serve_ready = start(["serve", str(tmp / "scenario.json")], tmp)
        procs.append(serve)
        prov.start()
        server = prov.server
        assert server is not None
        fill(server.dsn, slots, args.transactions, args.rows)
        proxy, proxy_ready = start(["proxy", "--upstream", server.dsn], tmp)
        procs.append(proxy)
        targets = {"serve": serve_ready, "proxy": proxy_ready}
        for i in range(args.repeat):
            for target, ready in targets.items():
                ctl = ControlClient(ready["control"])
                for fault in FAULTS:
                    slot = f"lat_{fault}_{i}"
                    if target == "serve":
                        create_slot(binary, ready["dsn"], slot)
                    results[target][fault].append(one_try(binary, ready["dsn"], slot, ctl, fault, lead))
    finally:
        for p in procs:
            stop(p)
        prov.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"A fault added over HTTP (after_messages: 0) while pg_recvlogical streams "
          f"({args.transactions} transactions x {args.rows} rows), {args.repeat} tries each: median [min-max]")
    print(f"{'target':<7} {'fault':<11} {'call ms':>20} {'messages after the call':>24} {'(KB)':>20} "
          f"{'cut ms after the call':>24}")

    def cell(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"

    for target, by_fault in results.items():
        for fault, tries in by_fault.items():
            print(f"{target:<7} {fault:<11} {cell([t['rtt_ms'] for t in tries], '.1f'):>20} "
                  f"{cell([t['messages_after'] for t in tries], '.0f'):>24} "
                  f"{cell([t['kb_after'] for t in tries], '.0f'):>20} "
                  f"{cell([t['cut_ms'] for t in tries], '.1f'):>24}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
