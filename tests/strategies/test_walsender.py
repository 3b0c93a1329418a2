"""Walsender framing: XLogData and keepalives as a walsender sends them, read back through
the v3 reader (whole and byte by byte) and the walsender checker; client messages."""

from __future__ import annotations

from hypothesis import given

from pgwire_spec import DecodeError
from pgwire_spec._strategies._walcheck import WalsenderChecker
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
    encode_copy_data,
)
from pgwire_spec.strategies import (
    MalformedStream,
    WalsenderStream,
    hot_standby_feedback,
    malformed_streams,
    status_updates,
    walsender_streams,
)
from pgwire_spec.wire import BackendReader, CopyData, encode_message
from tests.strategies._common import fast


def _wire(payloads: tuple[bytes, ...]) -> bytes:
    return b"".join(encode_message(CopyData(p)) for p in payloads)


def _read(data: bytes, chunk: int | None) -> list[bytes]:
    """CopyData payloads out of a backend byte stream, fed whole or *chunk* bytes at a time."""
    reader = BackendReader()
    out: list[bytes] = []
    pieces = [data] if chunk is None else [data[i:i + chunk] for i in range(0, len(data), chunk)]
    for piece in pieces:
        reader.feed(piece)
        out += [msg.data for msg in reader if isinstance(msg, CopyData)]
    return out


def _check(options: dict[str, object], payloads: list[bytes]) -> tuple[list[object], tuple[str, int] | None]:
    checker = WalsenderChecker(**options)
    out: list[object] = []
    try:
        for p in payloads:
            out.append(checker.feed(p))
        checker.finish()
    except DecodeError as err:
        assert err.index is not None
        return out, (err.rule, err.index)
    return out, None


@fast(150)
@given(walsender_streams())
def test_walsender_streams_pass_the_checker_and_carry_the_stream(ws: WalsenderStream) -> None:
    checker = WalsenderChecker(**ws.options)
    for payload in ws.payloads:
        checker.feed(payload)
    checker.finish()
    assert checker.warnings == []
    assert checker.messages == list(ws.stream.messages)
    assert [x for x in ws.messages if isinstance(x, XLogData)] == [
        XLogData(lsn, lsn, x.send_time, p)
        for lsn, p, x in zip(ws.stream.write_lsns, ws.stream.payloads,
                             [x for x in ws.messages if isinstance(x, XLogData)])
    ]


@fast(150)
@given(walsender_streams())
def test_framing_on_its_own(ws: WalsenderStream) -> None:
    keepalive = 0
    clock = None
    for payload, msg in zip(ws.payloads, ws.messages):
        assert decode_copy_data(payload) == msg
        assert encode_copy_data(msg) == payload
        if isinstance(msg, PrimaryKeepalive):
            assert msg.wal_end >= keepalive
            keepalive = msg.wal_end
        else:
            assert isinstance(msg, XLogData) and msg.data_start == msg.wal_end
            assert clock is None or msg.send_time >= clock
            clock = msg.send_time


@fast(100)
@given(walsender_streams())
def test_a_stream_read_whole_or_byte_by_byte_gives_the_same_result(ws: WalsenderStream) -> None:
    data = _wire(ws.payloads)
    whole = _read(data, None)
    assert whole == list(ws.payloads)
    assert _read(data, 1) == whole
    assert _check(ws.options, whole) == _check(ws.options, _read(data, 1))


@fast(150)
@given(malformed_streams(framing="walsender"))
def test_a_malformed_stream_read_whole_or_byte_by_byte_fails_the_same_way(case: MalformedStream) -> None:
    data = _wire(case.payloads)
    whole = _read(data, None)
    bytewise = _read(data, 1)
    assert whole == bytewise == list(case.payloads)
    result = _check(case.options, whole)
    assert result == _check(case.options, bytewise)
    assert result[1] == (case.expected_rule, case.index)


@fast(100)
@given(status_updates())
def test_status_updates(msg: StandbyStatusUpdate) -> None:
    assert msg.flush_lsn <= msg.write_lsn
    assert msg.apply_lsn == 0 or msg.flush_lsn <= msg.apply_lsn <= msg.write_lsn
    assert decode_copy_data(encode_copy_data(msg)) == msg


@fast(100)
@given(hot_standby_feedback())
def test_hot_standby_feedback(msg: HotStandbyFeedback) -> None:
    assert msg.xmin == 0 or msg.xmin >= 3
    assert msg.xmin or not msg.xmin_epoch
    assert decode_copy_data(encode_copy_data(msg)) == msg


def test_the_checker_catches_a_relation_written_at_a_non_zero_lsn() -> None:
    rel = m.Relation(None, 16384, "public", "t", "d", (m.RelationColumn(1, "id", 23, -1),))
    frames = [
        XLogData(100, 100, 1, b"B" + (200).to_bytes(8, "big") + (1).to_bytes(8, "big") + (7).to_bytes(4, "big")),
        XLogData(100, 100, 2, _payload(rel)),
    ]
    out, err = _check({}, [encode_copy_data(f) for f in frames])
    assert err == ("walsender-zero-lsn", 1)


def _payload(msg: m.PgOutputMessage) -> bytes:
    from pgwire_spec import encode

    return encode(msg)
