"""WAL as a walsender sends it: segments, pages, records, and where XLogData messages end.

Sans-IO. The layouts are PostgreSQL's on-disk WAL (``access/xlog_internal.h``,
``access/xlogrecord.h``), in the server's byte order (little-endian on every platform the
Debian and npm builds run on). Nothing here invents WAL: a :class:`WalStore` holds bytes a
real server sent, and :func:`split_xlogdata` cuts them where a walsender would.

The docs' "Streaming Replication Protocol" (XLogData): "A single WAL record is never split
across two XLogData messages. When a WAL record crosses a WAL page boundary, and is
therefore already split using continuation records, it can be split at the page boundary."
walsender.c (XLogSendPhysical) does it this way: send from the last sent position up to the
flush position, at most MAX_SEND_SIZE (16 pages) at a time; a message that stops short of
the flush position stops on a page boundary.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import PgWireError
from ..lsn import format_lsn

__all__ = [
    "XLOG_BLCKSZ",
    "MAX_SEND_SIZE",
    "WalError",
    "PageHeader",
    "WalRecord",
    "WalStore",
    "segment_name",
    "parse_segment_name",
    "segment_start",
    "page_header",
    "iter_records",
    "split_xlogdata",
    "crc32c",
]

#: The WAL page size of every build here (``wal_block_size``; pg_config --with-wal-blocksize).
XLOG_BLCKSZ = 8192
#: walsender.c: "Maximum data payload in a WAL data message", XLOG_BLCKSZ * 16.
MAX_SEND_SIZE = XLOG_BLCKSZ * 16

# xlog_internal.h: XLogPageHeaderData {uint16 xlp_magic; uint16 xlp_info; TimeLineID
# xlp_tli; XLogRecPtr xlp_pageaddr; uint32 xlp_rem_len;}, MAXALIGNed to 24 bytes.
_SHORT_HEADER = struct.Struct("<HHIQI")
SIZE_OF_SHORT_HEADER = 24
# XLogLongPageHeaderData: the short header, then uint64 xlp_sysid; uint32 xlp_seg_size;
# uint32 xlp_xlog_blcksz (the first page of every segment).
_LONG_TAIL = struct.Struct("<QII")
SIZE_OF_LONG_HEADER = 40
XLP_FIRST_IS_CONTRECORD = 0x0001
XLP_LONG_HEADER = 0x0002
# xlogrecord.h: XLogRecord {uint32 xl_tot_len; TransactionId xl_xid; XLogRecPtr xl_prev;
# uint8 xl_info; RmgrId xl_rmid; 2 bytes padding; pg_crc32c xl_crc;}
_RECORD = struct.Struct("<IIQBBxxI")
SIZE_OF_RECORD = 24
_MAXALIGN = 8
RM_XLOG_ID = 0
XLOG_SWITCH = 0x40


class WalError(PgWireError, ValueError):
    """WAL bytes or positions that do not fit: a position outside the recorded WAL, a
    page header that is not one, a segment name that is not one."""


def _maxalign(n: int) -> int:
    return (n + _MAXALIGN - 1) & ~(_MAXALIGN - 1)


def segment_start(lsn: int, segment_size: int) -> int:
    """The first position of the segment holding *lsn*."""
    return lsn - lsn % segment_size


def segment_name(timeline: int, lsn: int, segment_size: int) -> str:
    """The file name of the segment holding *lsn* on *timeline* (XLogFileName):
    ``000000010000000000000003``."""
    segno = lsn // segment_size
    per_id = 0x100000000 // segment_size
    return f"{timeline:08X}{segno // per_id:08X}{segno % per_id:08X}"


def parse_segment_name(name: str, segment_size: int) -> tuple[int, int]:
    """``000000010000000000000003`` -> (timeline, start position of the segment)."""
    base = name.removesuffix(".partial")
    if len(base) != 24 or any(c not in "0123456789ABCDEF" for c in base):
        raise WalError(f"expected a WAL segment name of 24 hex digits, found {name!r}")
    per_id = 0x100000000 // segment_size
    tli, hi, lo = int(base[:8], 16), int(base[8:16], 16), int(base[16:], 16)
    return tli, (hi * per_id + lo) * segment_size


@dataclass(frozen=True, slots=True)
class PageHeader:
    """One WAL page header; the long form (``sysid`` …) begins each segment."""

    magic: int
    info: int
    timeline: int
    page_address: int
    remaining_length: int
    system_id: int | None = None
    segment_size: int | None = None
    block_size: int | None = None

    @property
    def size(self) -> int:
        return SIZE_OF_LONG_HEADER if self.info & XLP_LONG_HEADER else SIZE_OF_SHORT_HEADER

    @property
    def continues_record(self) -> bool:
        """XLP_FIRST_IS_CONTRECORD: the page starts with the rest of a record."""
        return bool(self.info & XLP_FIRST_IS_CONTRECORD)


def page_header(data: bytes, offset: int = 0, *, lsn: int | None = None) -> PageHeader:
    """The page header at *offset* of *data* (a page start); *lsn*, when given, must be the
    page's address (xlp_pageaddr), as the server's reader checks."""
    if len(data) - offset < SIZE_OF_SHORT_HEADER:
        raise WalError(f"expected a WAL page header ({SIZE_OF_SHORT_HEADER} bytes), found {len(data) - offset}")
    magic, info, tli, addr, rem = _SHORT_HEADER.unpack_from(data, offset)
    if lsn is not None and addr != lsn:
        raise WalError(f"expected the page at {format_lsn(lsn)} to say so in xlp_pageaddr, "
                       f"found {format_lsn(addr)}")
    if info & XLP_LONG_HEADER:
        if len(data) - offset < SIZE_OF_LONG_HEADER:
            raise WalError(f"expected a long WAL page header ({SIZE_OF_LONG_HEADER} bytes), "
                           f"found {len(data) - offset}")
        sysid, seg, blck = _LONG_TAIL.unpack_from(data, offset + SIZE_OF_SHORT_HEADER)
        return PageHeader(magic, info, tli, addr, rem, sysid, seg, blck)
    return PageHeader(magic, info, tli, addr, rem)


@dataclass(frozen=True, slots=True)
class WalRecord:
    """One WAL record: where it starts, where the next one may start (MAXALIGNed end),
    and its header fields."""

    lsn: int
    end: int
    total_length: int
    xid: int
    prev: int
    info: int
    rmid: int
    crc: int
    crc_ok: bool | None = None

    @property
    def is_switch(self) -> bool:
        """XLOG_SWITCH: the rest of the segment is unused."""
        return self.rmid == RM_XLOG_ID and self.info & 0xF0 == XLOG_SWITCH


def iter_records(data: bytes, start: int, segment_size: int, *, block_size: int = XLOG_BLCKSZ,
                 check_crc: bool = False) -> Iterator[WalRecord]:
    """The whole records in *data* (WAL from position *start*, a page start or a record
    start), in order. Stops at the end of the data (a record not wholly in it is not
    yielded) or at an empty record slot (xl_tot_len 0: the end of written WAL)."""
    end_of_data = start + len(data)
    pos: int | None = start
    if start % block_size == 0:
        hdr = page_header(data, 0, lsn=start)
        pos = start + hdr.size
        if hdr.continues_record:
            # the rest of a record that began before: skip it (page headers included)
            pos = _skip(data, start, pos, hdr.remaining_length, segment_size, block_size)
            pos = None if pos is None else _maxalign(pos)
    while pos is not None and pos + 4 <= end_of_data:
        if pos % block_size == 0:
            pos += page_header(data, pos - start, lsn=pos).size
            continue
        (total,) = struct.unpack_from("<I", data, pos - start)
        if total == 0:
            return
        if total < SIZE_OF_RECORD:
            raise WalError(f"expected a WAL record of at least {SIZE_OF_RECORD} bytes at {format_lsn(pos)}, "
                           f"found xl_tot_len {total}")
        body = _gather(data, start, pos, total, segment_size, block_size)
        if body is None:
            return
        record_bytes, after = body
        _, xid, prev, info, rmid, crc = _RECORD.unpack_from(record_bytes, 0)
        ok = None
        if check_crc:
            ok = crc32c(record_bytes[SIZE_OF_RECORD:] + record_bytes[:20]) == crc
        rec = WalRecord(pos, _maxalign(after), total, xid, prev, info, rmid, crc, ok)
        yield rec
        if rec.is_switch:
            pos = segment_start(pos, segment_size) + segment_size
        else:
            pos = rec.end


def _skip(data: bytes, base: int, pos: int, count: int, segment_size: int, block_size: int) -> int | None:
    """The position *count* payload bytes after *pos*, skipping page headers."""
    got = _gather(data, base, pos, count, segment_size, block_size, keep=False)
    return None if got is None else got[1]


def _gather(data: bytes, base: int, pos: int, count: int, segment_size: int, block_size: int,
            keep: bool = True) -> tuple[bytes, int] | None:
    """*count* bytes of record payload from *pos* on (page headers left out), and the
    position after them; None when the data ends first."""
    parts: list[bytes] = []
    end_of_data = base + len(data)
    while count > 0:
        if pos % block_size == 0:
            if pos + SIZE_OF_SHORT_HEADER > end_of_data:
                return None
            pos += page_header(data, pos - base, lsn=pos).size
        room = block_size - pos % block_size
        take = min(room, count)
        if pos + take > end_of_data:
            return None
        if keep:
            parts.append(data[pos - base:pos - base + take])
        pos += take
        count -= take
    return b"".join(parts), pos


# -- CRC-32C (Castagnoli), as pg_crc32c.h computes it ---------------------------------------

def _tables() -> tuple[list[int], ...]:
    """The slicing-by-8 tables of CRC-32C (reflected polynomial 0x82F63B78)."""
    first = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        first.append(c)
    tables = [first]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[i] >> 8) ^ first[prev[i] & 0xFF] for i in range(256)])
    return tuple(tables)


_CRC_TABLES = _tables()
_QWORDS = struct.Struct("<Q")

try:  # Google's CRC-32C in C (SSE4.2 / ARMv8 CRC instructions where the CPU has them)
    import google_crc32c

    # its own fallback is a byte-at-a-time Python loop, slower than the one below
    _fast_crc32c = google_crc32c.extend if google_crc32c.implementation == "c" else None
except ImportError:  # pragma: no cover - depends on the environment
    _fast_crc32c = None


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C of *data* (continuing *crc*, the value of an earlier call): what WAL records
    and backup manifests carry. ``google-crc32c``'s C code when it is there (a base
    dependency on CPython: ~20x the pure Python on a recording's WAL); else
    :func:`_crc32c_python`."""
    if _fast_crc32c is None:
        return _crc32c_python(data, crc)
    # it takes bytes, not a bytearray or memoryview
    return int(_fast_crc32c(crc, data if type(data) is bytes else bytes(data)))


def _crc32c_python(data: bytes, crc: int = 0) -> int:
    """:func:`crc32c` in pure Python, eight bytes a step (a few MB/s)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _CRC_TABLES
    c = crc ^ 0xFFFFFFFF
    n = len(data) - len(data) % 8
    for (q,) in _QWORDS.iter_unpack(memoryview(data)[:n]):
        one = (q & 0xFFFFFFFF) ^ c
        two = q >> 32
        c = (t7[one & 0xFF] ^ t6[(one >> 8) & 0xFF] ^ t5[(one >> 16) & 0xFF] ^ t4[one >> 24]
             ^ t3[two & 0xFF] ^ t2[(two >> 8) & 0xFF] ^ t1[(two >> 16) & 0xFF] ^ t0[two >> 24])
    for b in data[n:]:
        c = t0[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# -- the WAL a fake server holds --------------------------------------------------------------


class WalStore:
    """Recorded WAL, one contiguous range per timeline: ``add(timeline, start, data)``,
    ``read(timeline, start, end)``."""

    def __init__(self, segment_size: int, block_size: int = XLOG_BLCKSZ) -> None:
        if segment_size & (segment_size - 1) or not 1 << 20 <= segment_size <= 1 << 30:
            raise WalError(f"expected a WAL segment size that is a power of two from 1 MB to 1 GB, "
                           f"found {segment_size}")
        self.segment_size = segment_size
        self.block_size = block_size
        self._ranges: dict[int, tuple[int, bytearray]] = {}

    def add(self, timeline: int, start: int, data: bytes) -> None:
        """Add WAL sent for [start, start + len(data)) on *timeline*; it must continue or
        overlap (with equal bytes) the range already held."""
        have = self._ranges.get(timeline)
        if have is None:
            self._ranges[timeline] = (start, bytearray(data))
            return
        first, buf = have
        end = first + len(buf)
        if start > end or start < first:
            raise WalError(f"expected WAL on timeline {timeline} to continue at {format_lsn(end)}, "
                           f"found WAL from {format_lsn(start)}")
        overlap = min(end - start, len(data))
        if buf[start - first:start - first + overlap] != data[:overlap]:
            raise WalError(f"expected the WAL sent twice on timeline {timeline} from {format_lsn(start)} "
                           "to be the same bytes, found different ones")
        buf += data[overlap:]

    @property
    def timelines(self) -> list[int]:
        return sorted(self._ranges)

    def range(self, timeline: int) -> tuple[int, int]:
        """(first position, end position) held for *timeline*."""
        try:
            first, buf = self._ranges[timeline]
        except KeyError:
            raise WalError(f"expected WAL of timeline {timeline}, found none recorded "
                           f"(timelines: {', '.join(map(str, self.timelines)) or 'none'})") from None
        return first, first + len(buf)

    def holds(self, timeline: int, start: int, end: int) -> bool:
        if timeline not in self._ranges:
            return False
        first, last = self.range(timeline)
        return first <= start <= end <= last

    def read(self, timeline: int, start: int, end: int) -> bytes:
        first, last = self.range(timeline)
        if not first <= start <= end <= last:
            raise WalError(f"expected a range inside the WAL of timeline {timeline} "
                           f"({format_lsn(first)} to {format_lsn(last)}), found {format_lsn(start)} to "
                           f"{format_lsn(end)}")
        buf = self._ranges[timeline][1]
        return bytes(buf[start - first:end - first])

    def segment(self, timeline: int, lsn: int) -> bytes:
        """The whole segment holding *lsn* as a file holds it: recorded bytes, and zeros
        past the end of the recording (an unwritten segment tail)."""
        first, last = self.range(timeline)
        seg = segment_start(lsn, self.segment_size)
        if seg < first:
            raise WalError(f"expected segment {segment_name(timeline, lsn, self.segment_size)} to be "
                           f"recorded from its start, found WAL from {format_lsn(first)} only")
        end = min(seg + self.segment_size, last)
        if end <= seg:
            raise WalError(f"expected WAL of segment {segment_name(timeline, lsn, self.segment_size)}, "
                           f"found the recording ends at {format_lsn(last)}")
        data = self.read(timeline, seg, end)
        return data + bytes(self.segment_size - len(data))

    def records(self, timeline: int, *, check_crc: bool = False) -> Iterator[WalRecord]:
        first, last = self.range(timeline)
        return iter_records(self.read(timeline, first, last), first, self.segment_size,
                            block_size=self.block_size, check_crc=check_crc)


def split_xlogdata(start: int, flush_points: Sequence[int], *, max_send: int = MAX_SEND_SIZE,
                   block_size: int = XLOG_BLCKSZ) -> list[tuple[int, int, int]]:
    """Where a walsender cuts the WAL from *start* into XLogData messages, as
    (dataStart, end, walEnd) triples.

    *flush_points* are the successive flush positions the walsender sees (its SendRqstPtr,
    sent as walEnd): one position for a server whose WAL is all written (or a historic
    timeline, whose end is the switch point), or the recorded walEnd values to replay a
    live stream's cuts. Each message ends at the flush position when it is at most
    *max_send* bytes away, else *max_send* bytes on, rounded down to a page boundary
    (walsender.c, XLogSendPhysical).
    """
    out: list[tuple[int, int, int]] = []
    sent = start
    for flush in flush_points:
        while sent < flush:
            end = sent + max_send
            if flush <= end:
                end = flush
            else:
                end -= end % block_size
            out.append((sent, end, flush))
            sent = end
    return out
