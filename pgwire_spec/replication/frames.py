"""The one frame encoder of the streaming replication protocol.

CopyData ('d', Int32 length) around the payloads of ``grammar.py``: XLogData, Primary
keepalive and BASE_BACKUP's progress report. Packed with precompiled ``struct`` formats
for speed; ``tests/replication/test_frames.py`` checks every function equal to the
grammar's encoding (sendTime is a signed TimestampTz, LSNs unsigned 64-bit).
"""

from __future__ import annotations

import struct
from itertools import repeat
from operator import add as _add

__all__ = [
    "copy_data",
    "xlog_data",
    "xlog_head",
    "xlog_heads",
    "send_time",
    "keepalive",
    "backup_progress",
    "XLOG_HEAD_SIZE",
    "XLOG_FRAME_OVERHEAD",
]

# CopyData 'd', Int32 length (itself included), then the payload.
_COPY = struct.Struct("!cI")
# CopyData header + XLogData 'w', dataStart, walEnd (a frame up to its sendTime).
_XLOG_HEAD = struct.Struct("!cIcQQ")
# ... + sendTime: a TimestampTz, signed (grammar.XLogData.send_time).
_XLOG = struct.Struct("!cIcQQq")
_TS = struct.Struct("!q")
_KEEPALIVE = struct.Struct("!cIcQq?")
_PROGRESS = struct.Struct("!cq")

#: Bytes of a framed XLogData before its sendTime.
XLOG_HEAD_SIZE = _XLOG_HEAD.size
#: Bytes a framed XLogData adds to its WAL data (CopyData 5 + XLogData header 25).
XLOG_FRAME_OVERHEAD = _XLOG.size


def copy_data(payload: bytes) -> bytes:
    """CopyData ('d') carrying *payload*."""
    return _COPY.pack(b"d", 4 + len(payload)) + payload


def xlog_data(data_start: int, wal_end: int, send_time_us: int, data: bytes) -> bytes:
    """A framed XLogData: CopyData + 'w' + dataStart + walEnd + sendTime + data."""
    return _XLOG.pack(b"d", 29 + len(data), b"w", data_start, wal_end, send_time_us) + data


def xlog_head(data_start: int, wal_end: int, data_len: int) -> bytes:
    """A framed XLogData up to (not including) its sendTime, for *data_len* bytes of data:
    ``xlog_head(...) + send_time(t) + data == xlog_data(...)``."""
    return _XLOG_HEAD.pack(b"d", 29 + data_len, b"w", data_start, wal_end)


def xlog_heads(lsns: list[int], data_lens: list[int]) -> list[bytes]:
    """``[xlog_head(lsn, lsn, n) for lsn, n in zip(lsns, data_lens)]`` (dataStart = walEnd, as
    a logical stream's XLogData carry them), packed in one C-level pass: a plan's frames
    are cut this way by the thousand."""
    return list(map(_XLOG_HEAD.pack, repeat(b"d"), map(_add, data_lens, repeat(29)), repeat(b"w"), lsns, lsns))


def send_time(send_time_us: int) -> bytes:
    """A sendTime field (TimestampTz, signed big-endian Int64)."""
    return _TS.pack(send_time_us)


def keepalive(wal_end: int, send_time_us: int, reply_requested: bool) -> bytes:
    """A framed Primary keepalive ('k')."""
    return _KEEPALIVE.pack(b"d", 22, b"k", wal_end, send_time_us, reply_requested)


def backup_progress(done: int) -> bytes:
    """BASE_BACKUP's progress report payload ('p', Int64 bytes done), unframed: it travels
    as a ``wire.CopyData`` message of the backup's CopyOutResponse."""
    return _PROGRESS.pack(b"p", done)
