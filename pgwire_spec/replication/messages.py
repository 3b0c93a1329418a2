"""Streaming replication CopyData payloads as frozen, slotted dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .._codegen import Family
from . import grammar

__all__ = [
    "ReplicationMessage",
    "XLogData",
    "PrimaryKeepalive",
    "StandbyStatusUpdate",
    "HotStandbyFeedback",
    "MESSAGE_TYPES",
    "decode_copy_data",
    "encode_copy_data",
]


class ReplicationMessage:
    """Base of the CopyData payloads of streaming replication."""

    __slots__ = ()
    tag: ClassVar[str]




@dataclass(frozen=True, slots=True)
class XLogData(ReplicationMessage):
    """'w' (server): a piece of WAL, or for a logical slot one output plugin message."""

    tag: ClassVar[str] = "w"
    data_start: int
    wal_end: int
    send_time: int
    data: bytes


@dataclass(frozen=True, slots=True)
class PrimaryKeepalive(ReplicationMessage):
    """'k' (server)."""

    tag: ClassVar[str] = "k"
    wal_end: int
    send_time: int
    reply_requested: bool


@dataclass(frozen=True, slots=True)
class StandbyStatusUpdate(ReplicationMessage):
    """'r' (client): written, flushed and applied positions."""

    tag: ClassVar[str] = "r"
    write_lsn: int
    flush_lsn: int
    apply_lsn: int
    send_time: int
    reply_requested: bool


@dataclass(frozen=True, slots=True)
class HotStandbyFeedback(ReplicationMessage):
    """'h' (client)."""

    tag: ClassVar[str] = "h"
    send_time: int
    xmin: int
    xmin_epoch: int
    catalog_xmin: int
    catalog_xmin_epoch: int


MESSAGE_TYPES: dict[str, type[ReplicationMessage]] = {
    c.__name__: c for c in (XLogData, PrimaryKeepalive, StandbyStatusUpdate, HotStandbyFeedback)
}

FAMILY = Family("replication message", grammar.LAYOUTS, dict(MESSAGE_TYPES))


def decode_copy_data(payload: bytes) -> ReplicationMessage:
    """Decode the payload of one CopyData of a replication stream ('w', 'k', 'r' or 'h')."""
    return FAMILY.decode(bytes(payload))  # type: ignore[no-any-return]


def encode_copy_data(message: Any) -> bytes:
    """Encode a replication payload (the bytes inside CopyData)."""
    return FAMILY.encode(message)
