"""Physical streaming replication: recorded WAL served as a real walsender serves it.

Record a real server's physical streams across a timeline switch
(:func:`record_physical`, ``pgwire-spec capture --physical``), keep them in the fixtures'
format (:func:`read_recording`, :func:`write_recording`), and let the fake walsender serve
them: START_REPLICATION … PHYSICAL from any recorded position with the server's XLogData
cuts, the end-of-timeline handshake, TIMELINE_HISTORY, physical slots, and BASE_BACKUP of a
directory in the shape of the advertised version.
"""

from __future__ import annotations

from .history import History, HistoryError, TimelineEntry, history_file_name, parse_history, render_history
from .recording import (
    PHYSICAL_FORMAT,
    Conversation,
    PhysicalRecording,
    RecordedMessage,
    parse_recording,
    read_recording,
    verify_recording,
    write_recording,
)
from .wal import WalError, WalRecord, WalStore, crc32c, iter_records, segment_name, split_xlogdata

__all__ = [
    "PHYSICAL_FORMAT",
    "PhysicalRecording",
    "Conversation",
    "RecordedMessage",
    "read_recording",
    "parse_recording",
    "write_recording",
    "verify_recording",
    "record_physical",
    "PhysicalSource",
    "load_physical",
    "physical_server",
    "History",
    "HistoryError",
    "TimelineEntry",
    "history_file_name",
    "parse_history",
    "render_history",
    "WalStore",
    "WalRecord",
    "WalError",
    "iter_records",
    "split_xlogdata",
    "segment_name",
    "crc32c",
]


def __getattr__(name: str) -> object:
    # record_physical needs psycopg and real servers; the serving side needs the walsender
    # core: imported on first use.
    if name == "record_physical":
        from .capture import record_physical

        return record_physical
    if name in ("PhysicalSource", "physical_server"):
        from . import serve

        return getattr(serve, name)
    if name == "load_physical":
        from .scenario import load_physical

        return load_physical
    raise AttributeError(f"module 'pgwire_spec.physical' has no attribute {name!r}")
