"""The server's limits under hostile clients, against a real ``pgwire-spec serve`` process
(its RSS read from /proc): an oversized pre-auth message, a never-reading status-update
flood, a client that never authenticates, one connection too many, and the limits as the
scenario and the command line set them."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pgwire_spec.replication.messages import StandbyStatusUpdate, encode_copy_data
from pgwire_spec.walsender import ScenarioError, load_scenario
from pgwire_spec.wire import (
    AuthenticationSASL,
    BackendReader,
    CopyBothResponse,
    CopyData,
    ErrorResponse,
    Query,
    ReadyForQuery,
    StartupMessage,
    encode_message,
)

SCRAM = """
server: {version: "16.4"}
auth: {method: scram-sha-256, users: {replicator: s3cret}}
"""


def _big_scenario(rows: int, width: int = 60) -> str:
    """A scenario of *rows* inserts of *width* characters each."""
    return (
        "server: {version: '16.4'}\n"
        "publications: {pub: [public.t]}\n"
        "tables: {public.t: {columns: [{name: id, type: int4, key: true}, {name: v, type: text}]}}\n"
        "transactions:\n"
        + "".join(f"  - changes: [{{insert: public.t, new: {{id: {i}, v: '{'x' * width}'}}}}]\n" for i in range(rows))
    )


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@contextmanager
def _serve(tmp_path: Path, scenario: str, *args: str) -> Iterator[tuple[int, int]]:
    """``pgwire-spec serve`` in a subprocess; yields (pid, port)."""
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario)
    proc = subprocess.Popen([sys.executable, "-m", "pgwire_spec", "serve", str(path), "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), line + (proc.stderr.read() if proc.stderr else "")
        port = int(line.split()[2].rsplit(":", 1)[1])
        yield proc.pid, port
    finally:
        proc.kill()
        proc.wait()


def _startup(user: str = "replicator", replication: str = "database") -> bytes:
    return encode_message(StartupMessage(parameters=(("user", user), ("database", "postgres"),
                                                     ("replication", replication))))


def _read_until(sock: socket.socket, backend: BackendReader, kinds: tuple[type, ...]) -> list[object]:
    out: list[object] = []
    while True:
        data = sock.recv(1 << 16)
        if not data:
            raise AssertionError(f"closed; got {out}")
        backend.feed(data)
        for msg in backend:
            out.append(msg)
            if isinstance(msg, kinds):
                return out


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return True
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def test_a_1gib_password_message_is_refused_at_its_header(tmp_path: Path) -> None:
    with _serve(tmp_path, SCRAM) as (pid, port):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(_startup())
        _read_until(sock, BackendReader(), (AuthenticationSASL,))
        before = _rss_kib(pid)
        sent = 0
        chunk = b"\0" * (1 << 20)
        sock.settimeout(5)
        try:
            sock.sendall(b"p" + struct.pack(">i", 1 << 30))
            while sent < 300 << 20:
                sock.sendall(chunk)
                sent += len(chunk)
        except (ConnectionError, TimeoutError):
            pass
        growth = _rss_kib(pid) - before
        assert _closed_within(sock, 5)
        sock.close()
    print(f"\n1 GiB pre-auth message: closed after {sent >> 20} MiB sent, server RSS growth {growth} KiB")
    assert sent < 64 << 20  # closed at the header, not after reading the body
    assert growth < 16 << 10


def test_a_status_update_flood_from_a_client_that_never_reads(tmp_path: Path) -> None:
    with _serve(tmp_path, _big_scenario(1500, 16000)) as (pid, port):
        sock = socket.create_connection(("127.0.0.1", port))
        backend = BackendReader()
        sock.sendall(_startup(user="postgres"))
        _read_until(sock, backend, (ReadyForQuery,))
        sock.sendall(encode_message(Query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput")))
        _read_until(sock, backend, (ReadyForQuery,))
        sock.sendall(encode_message(Query(
            "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')")))
        _read_until(sock, backend, (CopyBothResponse,))
        _read_until(sock, backend, (CopyData,))  # streaming: the plan is rendered and framed
        time.sleep(0.5)
        before = _rss_kib(pid)
        update = encode_message(CopyData(encode_copy_data(StandbyStatusUpdate(1, 1, 1, 0, False))))
        burst = update * ((1 << 20) // len(update))
        sent = 0
        sock.settimeout(3)  # the server stops reading: our sends block, then time out
        try:
            while sent < 400 << 20:
                sock.sendall(burst)
                sent += len(burst)
        except TimeoutError:
            pass
        growth = _rss_kib(pid) - before
        sock.close()
    # A 24 MB stream: far more than loopback's socket buffers, so the server's output
    # stays blocked while the client floods.
    print(f"\nstatus-update flood: {sent >> 20} MiB accepted before the server pushed back, "
          f"server RSS growth {growth} KiB")
    assert sent < 64 << 20
    assert growth < 64 << 10


def test_an_unauthenticated_connection_is_closed_at_the_timeout(tmp_path: Path) -> None:
    with _serve(tmp_path, SCRAM, "--authentication-timeout", "0.5") as (_, port):
        silent = socket.create_connection(("127.0.0.1", port))
        halfway = socket.create_connection(("127.0.0.1", port))
        halfway.sendall(_startup())
        _read_until(halfway, BackendReader(), (AuthenticationSASL,))
        started = time.monotonic()
        assert _closed_within(silent, 10)
        assert _closed_within(halfway, 10)
        took = time.monotonic() - started
    print(f"\nunauthenticated connections closed after {took:.2f} s (timeout 0.5 s)")
    assert took < 5


def test_connection_n_plus_1_is_refused_with_53300(tmp_path: Path) -> None:
    with _serve(tmp_path, "server: {version: '16.4', max_connections: 3}\n") as (_, port):
        held = []
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(_startup(user="postgres"))
            _read_until(s, BackendReader(), (ReadyForQuery,))
            held.append(s)
        extra = socket.create_connection(("127.0.0.1", port))
        extra.sendall(_startup(user="postgres"))
        (err,) = _read_until(extra, BackendReader(), (ErrorResponse,))
        assert isinstance(err, ErrorResponse)
        assert (err.severity, err.code, err.message) == ("FATAL", "53300", "sorry, too many clients already")
        assert _closed_within(extra, 5)
        held.pop().close()
        for _ in range(50):  # the freed place is given to the next client
            again = socket.create_connection(("127.0.0.1", port))
            again.sendall(_startup(user="postgres"))
            first = _read_until(again, BackendReader(), (ReadyForQuery, ErrorResponse))[-1]
            again.close()
            if isinstance(first, ReadyForQuery):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("a closed connection's place was never freed")
        for s in held:
            s.close()


def test_an_oversized_startup_packet_or_query_closes_without_reading_it(tmp_path: Path) -> None:
    with _serve(tmp_path, "server: {version: '16.4'}\n", "--max-message-length", "1000") as (_, port):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(struct.pack(">ii", 10005, 196608))
        assert _closed_within(s, 5)
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(_startup(user="postgres"))
        _read_until(s, BackendReader(), (ReadyForQuery,))
        s.sendall(encode_message(Query("IDENTIFY_SYSTEM")))
        _read_until(s, BackendReader(), (ReadyForQuery,))
        s.sendall(encode_message(Query("SELECT " + "1" * 2000)))
        assert _closed_within(s, 5)


def test_limits_in_the_scenario_are_checked() -> None:
    s = load_scenario("server: {max_connections: 5, authentication_timeout: 250ms, max_message_length: 4096}\n")
    assert (s.server.limits.max_connections, s.server.limits.authentication_timeout,
            s.server.limits.max_message_length) == (5, 0.25, 4096)
    assert s.server.limits.max_auth_message_length == 65535  # PostgreSQL's default kept
    for bad in ("{max_connections: 0}", "{authentication_timeout: forever}", "{max_startup_packet_length: 20000}",
                "{max_message_length: true}"):
        with pytest.raises(ScenarioError, match=r"server\.max_|server\.authentication"):
            load_scenario(f"server: {bad}\n")


def test_serve_reports_a_bad_limit_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("server: {version: '16.4'}\n")
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "serve", str(path), "--max-connections", "0"],
                          capture_output=True, text=True, timeout=30, env={**os.environ})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "pgwire-spec serve: error: --max-connections: expected an integer from 1 to 1.04858e+06, found 0"]


@pytest.mark.parametrize("query", [
    "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names '{big}')",
    "SELECT '{big}'",
    "IDENTIFY_SYSTEM; SELECT '{big}'",
], ids=["start-replication", "select", "two-statements"])
def test_a_10mb_query_does_not_stall_another_client(tmp_path: Path, query: str) -> None:
    with _serve(tmp_path, "server: {version: '16.4'}\n") as (_, port):
        other = socket.create_connection(("127.0.0.1", port))
        other_reader = BackendReader()
        other.sendall(_startup(user="postgres"))
        _read_until(other, other_reader, (ReadyForQuery,))
        heavy = socket.create_connection(("127.0.0.1", port))
        heavy.sendall(_startup(user="postgres"))
        _read_until(heavy, BackendReader(), (ReadyForQuery,))
        data = encode_message(Query(query.format(big="p" * (10 << 20))))
        heavy.sendall(data)  # the server reads it while the other client asks
        worst = 0.0
        for _ in range(40):
            t0 = time.perf_counter()
            other.sendall(encode_message(Query("IDENTIFY_SYSTEM")))
            _read_until(other, other_reader, (ReadyForQuery,))
            worst = max(worst, time.perf_counter() - t0)
        answer = _read_until(heavy, BackendReader(), (ReadyForQuery,))
        heavy.close()
        other.close()
    print(f"\n10 MB query ({query[:20]}…): another client's worst IDENTIFY_SYSTEM latency {worst * 1000:.1f} ms; "
          f"the heavy one got {[type(m).__name__ for m in answer]}")
    # The message is handled in one step (~50 ms on an idle core; 616 ms was seen at a load
    # average of 13 on 2 cores), so what is asserted is that the other client is not held
    # for the whole of the heavy one's handling, as it was before the limits work (~17 s),
    # with room for a loaded machine.
    assert worst < 5.0
