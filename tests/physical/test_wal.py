"""WAL: segment names, page headers, records and their CRCs, and the walsender's cuts,
checked on the WAL a real PostgreSQL 15 sent (fixtures/physical/)."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.lsn import parse_lsn
from pgwire_spec.physical import wal
from pgwire_spec.physical.wal import (
    MAX_SEND_SIZE,
    XLOG_BLCKSZ,
    WalError,
    WalStore,
    crc32c,
    iter_records,
    page_header,
    parse_segment_name,
    segment_name,
    split_xlogdata,
)

from .harness import RECORDING

SEG = RECORDING.segment_size


def test_segment_names_as_xlogfilename_writes_them() -> None:
    assert segment_name(1, 0x700000, 1 << 20) == "000000010000000000000007"
    assert segment_name(2, 0x80F8A8, 1 << 20) == "000000020000000000000008"
    # 16 MB segments: 256 per xlogid
    assert segment_name(3, 0x1_0300_0000, 16 << 20) == "000000030000000100000003"
    assert parse_segment_name("000000020000000000000008.partial", 1 << 20) == (2, 0x800000)
    with pytest.raises(WalError, match="24 hex digits"):
        parse_segment_name("00000002.history", 1 << 20)


def test_crc32c_check_value_and_continuation() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283


def test_every_recorded_segment_starts_with_a_long_header_naming_it() -> None:
    for tli in RECORDING.store.timelines:
        first, last = RECORDING.store.range(tli)
        seg = first
        while seg < last:
            hdr = page_header(RECORDING.store.read(tli, seg, seg + 40), lsn=seg)
            assert hdr.segment_size == SEG and hdr.block_size == XLOG_BLCKSZ
            assert str(hdr.system_id) == RECORDING.system_id
            seg += SEG


def test_every_record_checks_out_and_the_timelines_meet_at_the_switch_point() -> None:
    switch, following = RECORDING.history.switchpoint(1)
    assert following == 2
    ends = {}
    for tli in RECORDING.store.timelines:
        records = list(RECORDING.store.records(tli, check_crc=True))
        assert len(records) > 100
        assert all(r.crc_ok for r in records)
        ends[tli] = records
    # Timeline 1 ends exactly at the switch point; timeline 2 has a record starting there.
    assert ends[1][-1].end == switch == RECORDING.store.range(1)[1]
    assert switch in {r.lsn for r in ends[2]}
    # The workload's pg_switch_wal(): an XLOG_SWITCH record, the next one a segment later.
    assert any(r.is_switch for r in ends[1])


def test_a_flipped_byte_fails_the_record_crc() -> None:
    first, last = RECORDING.store.range(2)
    data = bytearray(RECORDING.store.read(2, first, last))
    rec = list(iter_records(bytes(data), first, SEG))[5]
    data[rec.lsn - first + 30] ^= 0x01
    bad = [r for r in iter_records(bytes(data), first, SEG, check_crc=True) if not r.crc_ok]
    assert [r.lsn for r in bad] == [rec.lsn]


def test_a_page_address_that_lies_is_refused() -> None:
    data = RECORDING.store.read(2, 0x800000, 0x800000 + 8192)
    with pytest.raises(WalError, match="xlp_pageaddr"):
        page_header(data, lsn=0x900000)


@pytest.mark.parametrize("conversation", [c.name for c in RECORDING.conversations])
def test_the_recorded_cuts_are_what_the_walsender_rule_gives(conversation: str) -> None:
    """Replaying the flush positions a live walsender saw (each XLogData's walEnd) through
    split_xlogdata gives back exactly the recorded XLogData boundaries."""
    conv = next(c for c in RECORDING.conversations if c.name == conversation)
    streams: list[list[tuple[int, int, int]]] = []
    current = None
    for m in conv.messages:
        if m.expected.get("type") == "Query":
            current = [] if m.expected["sql"].startswith("START_REPLICATION") else None
            if current is not None:
                streams.append(current)
        if m.length is not None and m.copy is not None and current is not None:
            start = parse_lsn(m.copy["data_start"])
            current.append((start, start + m.length, parse_lsn(m.copy["wal_end"])))
    streams = [s for s in streams if s]
    assert streams
    for cuts in streams:
        flushes = list(dict.fromkeys(w for _, _, w in cuts))
        # the last message may end short of its walEnd only if the stream was stopped then
        replay = split_xlogdata(cuts[0][0], flushes)
        assert replay[:len(cuts)] == cuts


def test_cuts_are_bounded_and_end_on_a_page_or_the_flush_position() -> None:
    cuts = split_xlogdata(0x700123, [0x7A0000, 0x80F8A8])
    assert cuts[0][0] == 0x700123 and cuts[-1][1] == 0x80F8A8
    for (s, e, w), nxt in zip(cuts, cuts[1:] + [None]):
        assert 0 < e - s <= MAX_SEND_SIZE
        assert e == w or e % XLOG_BLCKSZ == 0
        if nxt is not None:
            assert nxt[0] == e
    assert split_xlogdata(0x800000, [0x800000]) == []


def test_the_store_refuses_gaps_and_disagreeing_overlaps() -> None:
    store = WalStore(1 << 20)
    store.add(1, 0x100000, b"a" * 100)
    store.add(1, 0x100000 + 50, b"a" * 100)  # overlapping, same bytes
    assert store.range(1) == (0x100000, 0x100000 + 150)
    with pytest.raises(WalError, match="continue at"):
        store.add(1, 0x100000 + 200, b"b")
    with pytest.raises(WalError, match="same bytes"):
        store.add(1, 0x100000 + 10, b"b")
    with pytest.raises(WalError, match="timeline 3"):
        store.range(3)
    with pytest.raises(WalError, match="power of two"):
        WalStore(3 << 20)


def test_a_segment_as_a_file_holds_it_zero_padded() -> None:
    seg = RECORDING.store.segment(2, 0x80F8A8)
    first, last = RECORDING.store.range(2)
    assert len(seg) == SEG
    assert seg[: last - first] == RECORDING.store.read(2, first, last)
    assert seg[last - first:] == bytes(SEG - (last - first))
    with pytest.raises(WalError, match="from its start"):
        RECORDING.store.segment(2, 0x700000)


def _crc_bitwise(data: bytes) -> int:
    """CRC-32C one bit at a time, straight from its definition."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


@pytest.mark.parametrize("crc", [crc32c, wal._crc32c_python], ids=["crc32c", "pure-python"])
def test_crc32c_agrees_with_the_bitwise_definition_at_every_length(crc: Any) -> None:
    data = bytes((i * 37 + 11) & 0xFF for i in range(70))
    for n in range(len(data)):
        assert crc(data[:n]) == _crc_bitwise(data[:n]), n
        assert crc(data[n:], crc(data[:n])) == _crc_bitwise(data)
    # any bytes-like value, as the WAL store hands them over
    assert crc(bytearray(data)) == crc(memoryview(data)) == _crc_bitwise(data)


def test_reading_from_any_page_finds_the_same_records_after_it() -> None:
    """Starting mid-stream at a page that begins with the rest of a record
    (XLP_FIRST_IS_CONTRECORD) skips that rest and finds the records the whole read has."""
    first, last = RECORDING.store.range(1)
    data = RECORDING.store.read(1, first, last)
    whole = [r.lsn for r in iter_records(data, first, SEG)]
    continued = 0
    for page in range(first, last - XLOG_BLCKSZ, 3 * XLOG_BLCKSZ):
        if data[page - first:page - first + 24] == bytes(24):
            continue  # after the XLOG_SWITCH: the rest of the segment is unused
        hdr = page_header(data, page - first, lsn=page)
        continued += hdr.continues_record
        got = [r.lsn for r in iter_records(data[page - first:], page, SEG)]
        assert got == [p for p in whole if p >= page], format(page, "X")
    assert continued >= 3
