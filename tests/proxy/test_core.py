"""The proxy's sans-IO core on a real recorded conversation (PostgreSQL 13's session
fixture): everything forwarded byte for byte, nothing reported on a clean stream; a broken
server message, a client position going backwards and a late keepalive reply reported with
the message index and the rule; faults by kind and position; the recording is the
conversation."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from pgwire_spec.capture.session_fixture import verify_session
from pgwire_spec.corpus.load import fixtures_root
from pgwire_spec.proxy.core import Close, Forward, Pause, ProxyState
from pgwire_spec.proxy.record import session_fixture
from pgwire_spec.replication import frames
from pgwire_spec.walsender import Fault
from pgwire_spec.wire import CopyData, encode_message


def _messages() -> list[tuple[str, bytes]]:
    root = fixtures_root()
    if root is None:
        pytest.skip("the golden corpus is not available")
    doc = json.loads(gzip.decompress((root / "sessions" / "pg13-session-p1.json.gz").read_bytes()))
    return [(m["dir"], bytes.fromhex(m["hex"])) for m in doc["messages"]]


def _play(state: ProxyState, messages: list[tuple[str, bytes]], t: float = 0.0) -> tuple[Any, list[Any]]:
    s = state.connect()
    out: list[Any] = []
    for i, (d, raw) in enumerate(messages):
        now = t + i * 0.001
        acts = s.from_client(raw, now) if d == "F" else s.from_server(raw, now)
        out.extend(acts)
        if any(isinstance(a, Close) for a in acts):
            break
    return s, out


def _to(out: list[Any], side: str) -> bytes:
    return b"".join(a.data for a in out if isinstance(a, Forward) and a.to == side)


def _xlog_indexes(messages: list[tuple[str, bytes]]) -> list[int]:
    return [i for i, (d, raw) in enumerate(messages) if d == "B" and raw[:1] == b"d" and raw[5:6] == b"w"]


def test_a_clean_conversation_is_forwarded_byte_for_byte_and_recorded() -> None:
    msgs = _messages()
    state = ProxyState()
    s, out = _play(state, msgs)
    assert _to(out, "server") == b"".join(r for d, r in msgs if d == "F")
    assert _to(out, "client") == b"".join(r for d, r in msgs if d == "B")
    assert state.violations == [] and s.streams == [("pgws_session", {"proto_version": "1",
                                                                      "publication_names": "pgws_all"})]
    sf = session_fixture(s)
    assert sf is not None and [bytes.fromhex(m.hex) for m in sf.messages] == [r for _, r in msgs]
    assert verify_session(sf) == (len(msgs), [])


def test_messages_split_anywhere_are_framed_the_same() -> None:
    msgs = _messages()
    s = ProxyState().connect()
    server = b"".join(r for d, r in msgs if d == "B")
    s.from_client(msgs[0][1], 0.0)
    got = b""
    for i in range(0, len(server), 7):
        got += _to(s.from_server(server[i:i + 7], 0.0), "client")
    assert got == server and s.spool.count == 1 + sum(d == "B" for d, _ in msgs)


def test_a_broken_server_message_is_reported_with_its_index_and_rule() -> None:
    msgs = _messages()
    xi = _xlog_indexes(msgs)
    k = xi[2]  # an Insert
    raw = bytearray(msgs[k][1])
    raw[5 + 25] = ord("Q")  # its pgoutput tag
    broken = msgs[:k] + [("B", bytes(raw))] + msgs[k + 1:]
    state = ProxyState()
    _, out = _play(state, broken)
    assert _to(out, "client") == b"".join(r for d, r in broken if d == "B")  # still forwarded as is
    (v,) = state.violations
    assert (v.index, v.direction, v.rule) == (k, "B", "unknown-message-tag")


def test_client_positions_going_backwards_and_late_replies_are_reported() -> None:
    msgs = _messages()
    cut = _xlog_indexes(msgs)[5]
    head = [m for m in msgs[:cut] if m[0] == "B" or not m[1].startswith(b"d")]

    def status(lsn: int) -> bytes:
        from pgwire_spec.replication.messages import StandbyStatusUpdate, encode_copy_data

        return encode_message(CopyData(encode_copy_data(StandbyStatusUpdate(lsn, lsn, lsn, 0, False))))

    state = ProxyState(reply_timeout=2.0)
    s, _ = _play(state, head)
    n = len(head)
    s.from_client(status(0x2000), 1.0)
    s.from_client(status(0x1000), 1.1)
    ka = encode_message(CopyData(frames.keepalive(0x3000, 0, True)[5:]))
    s.from_server(ka, 2.0)
    s.from_client(status(0x3000), 5.0)
    rules = [(v.index, v.rule) for v in state.violations]
    assert rules == [(n + 1, "status-position-backwards")] * 3 + [(n + 3, "keepalive-reply-late")]
    assert "expected flush position >= 0/2000, found 0/1000" in str(state.violations[1])
    s.from_server(ka, 10.0)
    s.finish(20.0)
    assert state.violations[-1].rule == "keepalive-reply-late" and "found none" in state.violations[-1].message
    assert state.confirmed == {"pgws_session": 0x3000}


def test_faults_by_kind_position_and_modifiers() -> None:
    msgs = _messages()
    xi = _xlog_indexes(msgs)
    # a disconnect right after the 2nd Commit: nothing after it reaches the client
    state = ProxyState([Fault("disconnect", kind="Commit", after_messages=2)])
    _, out = _play(state, msgs)
    sent = _to(out, "client")
    second_commit = [i for i in xi if msgs[i][1][30:31] == b"C"][1]
    assert sent == b"".join(r for d, r in msgs[:second_commit + 1] if d == "B")
    assert isinstance(out[-1], Close) and not out[-1].reset
    # duplicate the 4th XLogData, delay before the 6th, then a reset after the 8th
    state = ProxyState([Fault("duplicate", after_messages=3), Fault("delay", after_messages=5, seconds=1.5),
                        Fault("reset", after_messages=8)])
    _, out = _play(state, msgs)
    xs = [a.data for a in out if isinstance(a, Forward) and a.to == "client" and a.data[5:6] == b"w"]
    want = [msgs[i][1] for i in xi[:8]]
    assert xs == want[:4] + [want[3]] + want[4:]
    pauses = [a for a in out if isinstance(a, Pause)]
    assert pauses == [Pause(1.5)] and isinstance(out[-1], Close) and out[-1].reset
    with pytest.raises(ValueError, match="the proxy plays"):
        ProxyState([Fault("shutdown", after_messages=1)])


def test_passthrough_and_faults_added_midway_keep_the_byte_stream_whole() -> None:
    """The shell forwards a running stream's bytes before the core reads them when no
    fault can act; split anywhere, with a fault added in the middle, the client still gets
    every message whole, once (plus the duplicate the fault asked for)."""
    from pgwire_spec.wire import BackendReader

    msgs = _messages()
    for size in (7, 64, 1000):
        state = ProxyState()
        s = state.connect()
        for d, raw in msgs[:27]:  # up to the CopyBothResponse and the first keepalive
            (s.from_client if d == "F" else s.from_server)(raw, 0.0)
        rest = b"".join(r for d, r in msgs[27:] if d == "B")
        client = b""
        passed = 0
        for i in range(0, len(rest), size):
            chunk = rest[i:i + size]
            if i >= len(rest) // 2 and not state.faults.faults:
                state.add_fault(Fault("duplicate", after_messages=0), now=0.0)
            if s.passthrough():
                passed += 1
                client += chunk
                s.from_server(chunk, 0.0, forwarded=True)
            else:
                client += _to(s.from_server(chunk, 0.0), "client")
        reader = BackendReader()
        reader.feed(client)
        got = [m for m in reader]
        assert reader.buffered == 0 and passed > 0
        assert len(got) == sum(d == "B" for d, _ in msgs[27:]) + 1, size
        assert state.faults.fired == [1] and state.violations == []


def test_deferred_reading_gives_the_same_checks_indexes_and_recording() -> None:
    """The shell forwards a running stream first and the core reads it later (defer,
    catch_up in slices): a broken message is reported with the same index and rule, a
    client's status update sent meanwhile is read in its turn, and the recording is the
    conversation in arrival order."""
    from pgwire_spec.replication.messages import StandbyStatusUpdate, encode_copy_data

    msgs = _messages()
    k = _xlog_indexes(msgs)[2]  # an Insert
    raw = bytearray(msgs[k][1])
    raw[5 + 25] = ord("Q")
    msgs = msgs[:k] + [("B", bytes(raw))] + msgs[k + 1:]
    status = encode_message(CopyData(encode_copy_data(StandbyStatusUpdate(0x10, 0x10, 0x10, 0, False))))
    head, rest = msgs[:27], b"".join(r for d, r in msgs[27:] if d == "B")
    for size in (5, 333, 4096):
        state = ProxyState()
        s = state.connect()
        for d, r in head:
            (s.from_client if d == "F" else s.from_server)(r, 0.0)
        cut = len(rest) // 2
        for i in range(0, cut, size):
            assert s.passthrough()
            s.defer(rest[i:min(i + size, cut)], 1.0)
        assert s.backlog() == cut and state.violations[:1] == []
        assert s.from_client(status, 2.0) == [Forward("server", status)]  # forwarded, read after the server's
        for i in range(cut, len(rest), size):
            s.defer(rest[i:i + size], 3.0)
        while s.backlog():
            assert s.catch_up(100) == []
        (v,) = state.violations
        assert (v.index, v.rule) == (k, "unknown-message-tag")
        assert s.spool is not None
        got = [(d, data) for _, d, _, data in s.spool.read()]
        later = [("B", r) for d, r in msgs[27:] if d == "B"]
        ends = [sum(len(r) for _, r in later[:j + 1]) for j in range(len(later))]
        before = sum(e <= cut for e in ends)  # whole before the status update arrived
        assert got == head + later[:before] + [("F", status)] + later[before:]
        times = [t for i, d, t, _ in s.spool.read() if i >= 27]
        assert times[0] == 1.0 and times[-1] == 3.0


def test_the_spool_reads_back_from_any_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from pgwire_spec.proxy import spool as spool_module

    monkeypatch.setattr(spool_module, "MARK_EVERY", 3)
    sp = spool_module.Spool(io.BytesIO())
    copies = [encode_message(CopyData(bytes([i]) * i)) for i in range(1, 20)]
    sp.add("F", b"\x00\x00\x00\x08\x04\xd2\x16\x2f", 0.5)
    for i in range(0, len(copies), 4):
        sp.add("B", b"".join(copies[i:i + 4]), float(i), len(copies[i:i + 4]))
    every = list(sp.read())
    assert [i for i, *_ in every] == list(range(20)) and [d for _, d, _, d2 in every][:2] == ["F", "B"]
    assert [x for *_, x in every[1:]] == copies
    for start in range(20):
        assert list(sp.read(start, 3)) == every[start:start + 3]


def test_a_fixture_written_by_the_child_process_is_the_one_written_here(tmp_path: Any) -> None:
    """The shell renders a recording in a child process (lower priority, its own reading
    of the spool): same bytes as in process, and the parent's spool still reads whole."""
    import asyncio
    import tempfile

    from pgwire_spec.proxy.record import write_session, write_session_apart

    msgs = _messages()
    state = ProxyState(spool_file=lambda _id: tempfile.TemporaryFile())
    s, _ = _play(state, msgs)
    here = write_session(s, tmp_path / "here")
    apart = asyncio.run(write_session_apart(s, tmp_path / "apart"))
    assert here is not None and apart is not None and here.name == apart.name
    assert here.read_bytes() == apart.read_bytes()
    assert s.spool is not None and [raw for *_, raw in s.spool.read()] == [r for _, r in msgs]


def test_a_recorded_session_keeps_no_message_in_memory() -> None:
    """Validating and recording a stream 20 times longer holds no more memory than a short
    one (the spool is a file; a run of the stream is one write)."""
    import tempfile
    import tracemalloc

    msgs = _messages()
    head = msgs[:27]
    xlog = [r for d, r in msgs[27:] if d == "B" and r[:1] == b"d" and r[5:6] == b"w"]
    xl = b"".join(xlog)
    with tempfile.TemporaryFile() as file:
        state = ProxyState(spool_file=lambda _id: file)
        s = state.connect()
        for d, r in head:
            (s.from_client if d == "F" else s.from_server)(r, 0.0)
        grown = []
        start = s.spool.count if s.spool is not None else 0
        tracemalloc.start()
        try:
            for rounds in (20, 400):
                before = tracemalloc.get_traced_memory()[0]
                for _ in range(rounds):
                    s.defer(xl, 1.0)
                    s.catch_up()
                grown.append(tracemalloc.get_traced_memory()[0] - before)
        finally:
            tracemalloc.stop()
        assert s.spool is not None and s.spool.count == start + 420 * len(xlog)
        assert state.violations == []
        assert grown[1] < 64 * 1024, grown  # 20 times the messages, a few index marks more
