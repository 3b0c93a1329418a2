"""The proxy in front of the fake walsender (a server that speaks SCRAM-SHA-256 and refuses
TLS): authentication passes through untouched, sslmode is honoured, an unreachable upstream
is one clear FATAL for the client, and bandwidth shaping slows the stream down."""

from __future__ import annotations

import asyncio
import select
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pgwire_spec.proxy import ProxyError, ReplicationProxy
from pgwire_spec.proxy.server import parse_upstream
from pgwire_spec.walsender import SyncFakeWalsender
from tests.walsender.scenarios import ACCOUNTS, items

pytestmark = pytest.mark.clients


@contextmanager
def proxied(upstream: str, **kwargs: Any) -> Iterator[ReplicationProxy]:
    """A ReplicationProxy on its own event loop thread (the fake's helper runs it)."""
    loop = asyncio.new_event_loop()
    proxy = ReplicationProxy(upstream, **kwargs)
    import threading

    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(proxy.start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(proxy.stop())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    ready.wait(10)
    try:
        yield proxy
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(30)
        loop.close()


def _stream(dsn: str, slot: str, n: int, timeout: float = 20) -> list[Any]:
    extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")
    conn = extras.LogicalReplicationConnection(dsn)
    try:
        cur = conn.cursor()
        cur.create_replication_slot(slot, output_plugin="pgoutput")
        cur.start_replication(slot_name=slot, decode=False, options={"proto_version": "1", "publication_names": "pub"})
        got: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            msg = cur.read_message()
            if msg is None:
                select.select([cur], [], [], 0.2)
                continue
            got.append(msg.payload)
        return got
    finally:
        conn.close()


def test_scram_passes_through_and_the_stream_is_the_servers() -> None:
    with SyncFakeWalsender(ACCOUNTS) as fake, proxied(fake.dsn + " sslmode=prefer") as proxy:
        assert "password=s3cret" in proxy.dsn and "sslmode" not in proxy.dsn
        got = _stream(proxy.dsn, "s", 6)
        sent = [e.payload.data for e in fake.transcript.stream()]
        assert got == sent and len(got) == 6
        # the fake asked for SCRAM-SHA-256 and the client answered it through the proxy
        names = [type(e.message).__name__ for e in fake.transcript.entries if e.message is not None]
        assert "SASLInitialResponse" in names and "SASLResponse" in names
        assert proxy.violations == []


def test_sslmode_require_against_a_server_without_tls_is_one_clear_fatal() -> None:
    psycopg = pytest.importorskip("psycopg")
    with SyncFakeWalsender(ACCOUNTS) as fake, proxied(fake.dsn + " sslmode=require") as proxy:
        with pytest.raises(psycopg.OperationalError, match="refused TLS"):
            psycopg.connect(proxy.dsn, connect_timeout=10)
    with proxied("host=127.0.0.1 port=1 user=x") as proxy:
        with pytest.raises(psycopg.OperationalError, match="cannot reach the upstream server"):
            psycopg.connect(proxy.dsn, connect_timeout=10)
    for bad, words in [("host=a port=1,2", "one host and port"), ("sslmode=sometimes", "sslmode among"),
                       ("not a dsn", "libpq connection string")]:
        with pytest.raises(ProxyError, match=words):
            parse_upstream(bad)


def test_bandwidth_shaping_slows_the_stream() -> None:
    data = items(16, small=200, big=2, initial=0, rollback_in_big=False)
    # the same stream twice, on a new slot each time (a real server would send the second
    # slot nothing: it was made after the transactions)
    data["server"] = {**data.get("server", {}), "history": "per_slot"}
    with SyncFakeWalsender(data) as fake:
        n = 200 * 3 + 1
        t0 = time.monotonic()
        with proxied(fake.dsn) as proxy:
            _stream(proxy.dsn, "a", n)
        fast = time.monotonic() - t0
        size = sum(len(e.payload.data) + 30 for e in fake.transcript.stream(1))  # framed XLogData of that stream
        t0 = time.monotonic()
        with proxied(fake.dsn, bandwidth=size) as proxy:  # about one second's worth
            got = _stream(proxy.dsn, "b", n)
        slow = time.monotonic() - t0
    assert len(got) == n
    assert slow > 0.7 and slow > fast + 0.5, (fast, slow)


def test_latency_delays_each_message_without_slowing_the_stream() -> None:
    data = items(16, small=300, big=2, initial=0, rollback_in_big=False)
    n = 300 * 3 + 1
    with SyncFakeWalsender(data) as fake, proxied(fake.dsn, latency=0.6) as proxy:
        extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")
        conn = extras.LogicalReplicationConnection(proxy.dsn)
        try:
            cur = conn.cursor()
            t0 = time.monotonic()
            cur.create_replication_slot("l", output_plugin="pgoutput")
            created = time.monotonic() - t0  # a round trip: the answer came 0.6 s late
            t0 = time.monotonic()
            cur.start_replication(slot_name="l", decode=False,
                                  options={"proto_version": "1", "publication_names": "pub"})
            got = 0
            while got < n and time.monotonic() - t0 < 20:
                if cur.read_message() is None:
                    select.select([cur], [], [], 0.05)
                else:
                    got += 1
            streamed = time.monotonic() - t0
        finally:
            conn.close()
    assert got == n
    assert created >= 0.6
    # the whole stream arrives in about one latency, not one latency per chunk
    assert 0.6 <= streamed < 3.0, streamed


def test_ended_connections_are_forgotten_past_the_last_few(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running proxy keeps the transcript of the last KEEP_ENDED connections that
    ended; older ones are forgotten (their spools closed) and read as 'no longer kept'."""
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2-binary is in the test extra")
    from pgwire_spec.control.proxy import ProxyTarget
    from pgwire_spec.proxy import server

    monkeypatch.setattr(server, "KEEP_ENDED", 2)
    with SyncFakeWalsender(ACCOUNTS) as fake, proxied(fake.dsn) as proxy:
        for _ in range(4):
            psycopg2.connect(proxy.dsn).close()
        deadline = time.monotonic() + 10
        while len(proxy._ended) < 2 or proxy.state.sessions:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sorted(proxy._sessions) == [3, 4]
        entries, total = ProxyTarget(proxy).transcript_page(0, 1000)
    assert len(entries) == total > 0
    assert {e["connection"] for e in entries if e.get("event") == "no longer kept"} == {1, 2}
    assert {e["connection"] for e in entries if "message" in e} == {3, 4}
