"""The asyncio shell: loopback by default, hundreds of concurrent streams, backpressure
for a slow consumer, malformed input on one connection while others go on."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from pgwire_spec.replication.messages import XLogData, decode_copy_data
from pgwire_spec.walsender import FakeWalsender, Scenario, SyncFakeWalsender
from pgwire_spec.walsender._history import compile_history
from pgwire_spec.walsender.core import CHUNK
from pgwire_spec.walsender.server import HIGH_WATER
from pgwire_spec.wire import (
    BackendReader,
    CommandComplete,
    CopyData,
    CopyDone,
    ErrorResponse,
    Query,
    ReadyForQuery,
    StartupMessage,
    Terminate,
    encode_message,
)

from .scenarios import items


def _hello(slot: str, user: str = "replicator", *, create: bool = True) -> bytes:
    return b"".join(encode_message(m) for m in (
        StartupMessage(parameters=(("user", user), ("database", "postgres"), ("replication", "database"))),
        *([Query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'nothing')")] if create else []),
        Query(f"START_REPLICATION SLOT {slot} LOGICAL 0/0 (proto_version '1', publication_names 'pub')"),
    ))


async def _create_slots(host: str, port: int, slots: list[str]) -> None:
    """Make the slots over one connection before any client streams: on a real server a
    slot made after the transactions committed receives none of them (snapbuild.c)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(encode_message(StartupMessage(parameters=(
        ("user", "replicator"), ("database", "postgres"), ("replication", "database")))))
    writer.write(b"".join(encode_message(Query(f"CREATE_REPLICATION_SLOT {s} LOGICAL pgoutput (SNAPSHOT 'nothing')"))
                          for s in slots))
    backend = BackendReader()
    ready = 0
    try:
        while ready < len(slots) + 1:  # one after authentication, one per slot
            data = await reader.read(1 << 16)
            if not data:
                raise AssertionError("closed while creating the slots")
            backend.feed(data)
            for msg in backend:
                if isinstance(msg, ErrorResponse):
                    raise AssertionError(f"{msg.code} {msg.message}")
                ready += isinstance(msg, ReadyForQuery)
        writer.write(encode_message(Terminate()))
    finally:
        writer.close()


async def _stream_to_end(host: str, port: int, slot: str, end: int, *, create: bool = True) -> int:
    """A minimal replication client: stream until the position *end*, then CopyDone and
    Terminate; returns how many XLogData it got. Without *create* the slot exists."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(_hello(slot, create=create))
    backend = BackendReader()
    count = 0
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                raise AssertionError(f"{slot}: closed after {count} messages")
            backend.feed(data)
            for msg in backend:
                if isinstance(msg, ErrorResponse):
                    raise AssertionError(f"{slot}: {msg.code} {msg.message}")
                if isinstance(msg, CopyData):
                    p = decode_copy_data(msg.data)
                    if isinstance(p, XLogData):
                        count += 1
                        if p.data_start == end:
                            writer.write(encode_message(CopyDone()))
                elif isinstance(msg, CommandComplete) and msg.command_tag == "START_REPLICATION":
                    writer.write(encode_message(Terminate()))
                    await writer.drain()
                    return count
    finally:
        writer.close()


def test_binds_loopback_by_default() -> None:
    with SyncFakeWalsender(items(16, small=1, big=1, auth="trust")) as fake:
        assert fake.host == "127.0.0.1"
        assert "host=127.0.0.1" in fake.dsn


def test_two_hundred_concurrent_replication_connections_each_stream_to_the_end() -> None:
    scenario = Scenario.from_dict(items(16, small=100, big=300, auth="trust", rollback_in_big=False))
    end = compile_history(scenario).end_lsn
    n = 200

    async def main() -> list[int]:
        async with FakeWalsender(scenario, record=False) as fake:
            await asyncio.wait_for(_create_slots(fake.host, fake.port, [f"s{i}" for i in range(n)]), 120)
            return await asyncio.wait_for(asyncio.gather(
                *[_stream_to_end(fake.host, fake.port, f"s{i}", end, create=False) for i in range(n)]), 120)

    counts = asyncio.run(main())
    # every connection got the whole stream: B, I, C per small transaction, … up to the end
    assert len(counts) == n and len(set(counts)) == 1 and counts[0] > 100 * 3 + 300


def test_a_slow_consumer_does_not_grow_the_servers_buffers() -> None:
    # 20,000 rows of 1 kB: about 20 MB of stream, well beyond what the kernel buffers hold
    scenario = Scenario.from_dict({
        "auth": {"method": "trust"}, "publications": {"pub": ["t"]},
        "tables": {"t": {"columns": [{"name": "id", "type": "int4", "key": True}, {"name": "v", "type": "text"}]}},
        "transactions": [{"changes": [{"insert": "t", "new": {"id": t * 100 + i, "v": f"{i:04d}" * 250}}
                                      for i in range(100)]} for t in range(200)],
    })
    end = compile_history(scenario).end_lsn
    with SyncFakeWalsender(scenario, record=False) as fake:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 14)
        s.connect((fake.host, fake.port))
        s.sendall(_hello("slow", "postgres"))

        def snapshot() -> tuple[int, int, int]:
            conn = next(iter(fake.server.state.connections.values()))
            writer = fake.server._writers[conn.id]
            assert conn.stream is not None
            # Begin, 100 Inserts, Commit per transaction and one Relation: the whole plan,
            # of which only a little past what was sent is rendered
            return conn.stream.sent, writer.transport.get_write_buffer_size(), 200 * 102 + 1

        # the client reads nothing: production must come to a halt
        seen = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.3)
            seen.append(fake.call(snapshot))
            if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]:
                break
        sent, buffered, total = seen[-1]
        assert seen[-1] == seen[-2] == seen[-3], seen
        assert sent < total * 0.6  # what the kernel's socket buffers hold, and no more
        assert buffered <= HIGH_WATER + CHUNK + 4096
        # now read everything: the whole stream arrives
        backend = BackendReader()
        count = 0
        s.settimeout(30)
        done = False
        while not done:
            backend.feed(s.recv(1 << 16))
            for msg in backend:
                if isinstance(msg, CopyData):
                    p = decode_copy_data(msg.data)
                    if isinstance(p, XLogData):
                        count += 1
                        done = done or p.data_start == end
        s.close()
    assert count == total


def test_malformed_input_on_one_connection_while_another_streams() -> None:
    scenario = Scenario.from_dict(items(16, small=50, big=2000, auth="trust", rollback_in_big=False))
    end = compile_history(scenario).end_lsn

    async def garbage(host: str, port: int) -> list[Any]:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(encode_message(StartupMessage(parameters=(("user", "replicator"), ("database", "postgres")))))
        writer.write(b"\x7fnot a message at all")
        data = await reader.read()
        backend = BackendReader()
        backend.feed(data)
        backend.feed(b"")
        return [m for m in backend]

    async def main() -> tuple[int, list[Any], int]:
        async with FakeWalsender(scenario) as fake:
            await asyncio.wait_for(_create_slots(fake.host, fake.port, ["good", "after"]), 60)
            streaming = asyncio.create_task(_stream_to_end(fake.host, fake.port, "good", end, create=False))
            bad = await garbage(fake.host, fake.port)
            count = await asyncio.wait_for(streaming, 60)
            again = await _stream_to_end(fake.host, fake.port, "after", end, create=False)
            return count, bad, again

    count, bad, again = asyncio.run(main())
    errors = [m for m in bad if isinstance(m, ErrorResponse)]
    assert errors and errors[0].code == "08P01" and errors[0].severity == "FATAL"
    assert count == again > 50


@pytest.mark.parametrize("record", [True, False])
def test_transcript_records_both_directions_or_nothing(record: bool) -> None:
    scenario = Scenario.from_dict(items(16, small=3, big=3, auth="trust", rollback_in_big=False))
    end = compile_history(scenario).end_lsn

    async def main() -> Any:
        async with FakeWalsender(scenario, record=record) as fake:
            await _stream_to_end(fake.host, fake.port, "t", end)
            await asyncio.sleep(0.05)
            return fake.transcript if record else fake.state.transcript

    tr = asyncio.run(main())
    if not record:
        assert tr is None
        return
    assert tr.queries()[0].startswith("CREATE_REPLICATION_SLOT t")
    stream = tr.stream(1)
    assert stream and all(e.pgoutput is not None for e in stream)
    assert [e.pgoutput.tag for e in stream][:3] == ["B", "R", "I"]
    assert any(type(e.message).__name__ == "CopyDone" for e in tr.frontend(1))
    assert tr.events(1)[0] == "connected" and tr.events(1)[-1] == "closed"
    text = tr.text()
    assert "[1] F Query \"CREATE_REPLICATION_SLOT t" in text and "CopyData w start=" in text
    assert tr.jsonl().count("\n") == len(tr) - 1
    # indexable like its entries (the README's transcript[0])
    assert tr[0] is tr.entries[0] and tr[-2:] == tr.entries[-2:] and tr[0].event == "connected"
