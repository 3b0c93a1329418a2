"""The frame encoder equals the grammar's encoding, edge values included."""

from __future__ import annotations

from construct import Int32ub
from hypothesis import example, given
from hypothesis import strategies as st

from pgwire_spec.replication import frames, grammar

LSN = st.integers(0, 2**64 - 1)
TS = st.integers(-(2**63), 2**63 - 1)
DATA = st.binary(max_size=64)


def _copy(payload: bytes) -> bytes:
    return b"d" + Int32ub.build(4 + len(payload)) + payload


@given(LSN, LSN, TS, DATA)
@example(2**64 - 1, 2**64 - 1, -1, b"")
@example(0, 2**64 - 1, -(2**63), b"x")
@example(1, 2, 2**63 - 1, b"\x00" * 3)
def test_xlog_data(start: int, end: int, ts: int, data: bytes) -> None:
    want = _copy(grammar.XLogData.build({"data_start": start, "wal_end": end, "send_time": ts, "data": data}))
    assert frames.xlog_data(start, end, ts, data) == want
    assert frames.xlog_head(start, end, len(data)) + frames.send_time(ts) + data == want
    assert len(frames.xlog_head(start, end, len(data))) == frames.XLOG_HEAD_SIZE
    assert len(want) - len(data) == frames.XLOG_FRAME_OVERHEAD


@given(st.lists(st.tuples(LSN, st.integers(0, 2**32 - 30))))
def test_xlog_heads(frames_: list[tuple[int, int]]) -> None:
    lsns, lens = [f[0] for f in frames_], [f[1] for f in frames_]
    assert frames.xlog_heads(lsns, lens) == [frames.xlog_head(lsn, lsn, n) for lsn, n in frames_]


@given(LSN, TS, st.booleans())
@example(2**64 - 1, -1, True)
@example(0, 2**63 - 1, False)
def test_keepalive(end: int, ts: int, reply: bool) -> None:
    want = _copy(grammar.PrimaryKeepalive.build({"wal_end": end, "send_time": ts, "reply_requested": reply}))
    assert frames.keepalive(end, ts, reply) == want


@given(st.integers(-(2**63), 2**63 - 1))
@example(0)
@example(2**63 - 1)
def test_backup_progress(done: int) -> None:
    assert frames.backup_progress(done) == grammar.BackupProgress.build({"done": done})
    assert grammar.BackupProgress.parse(frames.backup_progress(done)).done == done


@given(DATA)
def test_copy_data(payload: bytes) -> None:
    assert frames.copy_data(payload) == _copy(payload)
