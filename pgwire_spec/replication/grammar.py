"""Streaming replication protocol: the CopyData payloads, as construct layouts.

From the docs' "Streaming Replication Protocol" section (START_REPLICATION): the messages
the server sends inside CopyBoth (XLogData, Primary keepalive) and those the client sends
(Standby status update, Hot standby feedback). Errata in ``spec/errata.yaml``.
"""

from __future__ import annotations

from construct import Const, Int64sb, Struct

from .._primitives import Bool8, RestBytes, TimestampTz, TransactionId, UInt32, XLogRecPtr

# XLogData (B): Byte1('w'); Int64 the starting point of the WAL data in this message;
# Int64 the current end of WAL on the server; Int64 the server's system clock at the time
# of transmission (µs since 2000-01-01); Byten a section of the WAL data stream. For a
# logical slot the data is one output plugin message, and writes that are not the last of
# their change carry dataStart = walEnd = 0 (erratum E-ZERO-LSN).
XLogData = Struct(
    "tag" / Const(b"w"),
    "data_start" / XLogRecPtr,
    "wal_end" / XLogRecPtr,
    "send_time" / TimestampTz,
    "data" / RestBytes,
)

# Primary keepalive message (B): Byte1('k'); Int64 the current end of WAL on the server;
# Int64 the server's system clock; Byte1 1 means the client should reply as soon as
# possible, to avoid a timeout disconnect, 0 otherwise.
PrimaryKeepalive = Struct(
    "tag" / Const(b"k"),
    "wal_end" / XLogRecPtr,
    "send_time" / TimestampTz,
    "reply_requested" / Bool8,
)

# Standby status update (F): Byte1('r'); Int64 the location of the last WAL byte + 1
# received and written to disk; Int64 flushed to disk; Int64 applied; Int64 the client's
# system clock; Byte1 1 to ask for an immediate reply.
StandbyStatusUpdate = Struct(
    "tag" / Const(b"r"),
    "write_lsn" / XLogRecPtr,
    "flush_lsn" / XLogRecPtr,
    "apply_lsn" / XLogRecPtr,
    "send_time" / TimestampTz,
    "reply_requested" / Bool8,
)

# Hot standby feedback message (F): Byte1('h'); Int64 the client's system clock; Int32 the
# standby's current global xmin (excluding catalog_xmin), 0 if none; Int32 the epoch of the
# global xmin; Int32 the lowest catalog_xmin of the standby's slots; Int32 its epoch.
HotStandbyFeedback = Struct(
    "tag" / Const(b"h"),
    "send_time" / TimestampTz,
    "xmin" / TransactionId,
    "xmin_epoch" / UInt32,
    "catalog_xmin" / TransactionId,
    "catalog_xmin_epoch" / UInt32,
)

# BASE_BACKUP (15+, without TARGET): inside the CopyOutResponse the server sends
# "progress report: Byte1('p'); Int64 the number of bytes of the current tablespace for
# which processing has been completed" (docs' "Streaming Replication Protocol", BASE_BACKUP;
# basebackup_copy.c bbsink_copystream_archive_contents/end_archive, sent with pq_sendint64).
BackupProgress = Struct(
    "tag" / Const(b"p"),
    "done" / Int64sb,
)

LAYOUTS: dict[str, Struct] = {
    "XLogData": XLogData,
    "PrimaryKeepalive": PrimaryKeepalive,
    "StandbyStatusUpdate": StandbyStatusUpdate,
    "HotStandbyFeedback": HotStandbyFeedback,
}

#: BASE_BACKUP's CopyData layouts (a different conversation from START_REPLICATION's, so
#: kept out of LAYOUTS, which the payload decoder routes by tag).
BACKUP_LAYOUTS: dict[str, Struct] = {
    "BackupProgress": BackupProgress,
}

