"""Hand-built pgoutput vectors: bytes assembled with struct.pack straight from the docs'
layouts (not with our encoder), each with the message object it must decode to and the
decoding context it needs. Shared by the vector, truncation and CLI tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgwire_spec import (
    UNCHANGED,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Prepare,
    Relation,
    RelationColumn,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamPrepare,
    StreamStart,
    StreamStop,
    Truncate,
    Type,
    Update,
)
from tests._bytes import i32, i64, s, u8, u16, u32, u64  # noqa: F401


def t(v: str) -> bytes:
    raw = v.encode()
    return b"t" + i32(len(raw)) + raw


def bval(v: bytes) -> bytes:
    return b"b" + i32(len(v)) + v


@dataclass(frozen=True)
class Vector:
    name: str
    data: bytes
    message: Any
    protocol_version: int = 1
    streaming: str = "off"
    in_stream: bool = False


LSN = 0x16B3748
TS = 785_000_000_123_456  # 2024-11-15 ...
XID = 742

VECTORS: list[Vector] = [
    Vector("begin", b"B" + u64(LSN) + i64(TS) + u32(XID), Begin(LSN, TS, XID)),
    Vector(
        "message-transactional",
        b"M" + u8(1) + u64(LSN) + s("audit") + i32(5) + b"hello",
        LogicalMessage(None, 1, LSN, "audit", b"hello"),
    ),
    Vector(
        "message-non-transactional-empty",
        b"M" + u8(0) + u64(LSN) + s("") + i32(0),
        LogicalMessage(None, 0, LSN, "", b""),
    ),
    Vector(
        "message-streamed",
        b"M" + u32(XID) + u8(1) + u64(LSN) + s("p") + i32(2) + b"\x00\xff",
        LogicalMessage(XID, 1, LSN, "p", b"\x00\xff"),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector(
        "commit",
        b"C" + u8(0) + u64(LSN) + u64(LSN + 48) + i64(TS),
        Commit(0, LSN, LSN + 48, TS),
    ),
    Vector("origin", b"O" + u64(LSN - 100) + s("node_a"), Origin(LSN - 100, "node_a")),
    Vector(
        "relation",
        b"R" + u32(16384) + s("public") + s("accounts") + b"d" + u16(3)
        + u8(1) + s("id") + u32(23) + i32(-1)
        + u8(0) + s("name") + u32(25) + i32(-1)
        + u8(0) + s("amount") + u32(1700) + i32(655366),
        Relation(None, 16384, "public", "accounts", "d", (
            RelationColumn(1, "id", 23, -1),
            RelationColumn(0, "name", 25, -1),
            RelationColumn(0, "amount", 1700, 655366),
        )),
    ),
    Vector(
        "relation-pg-catalog-no-columns-streamed",
        b"R" + u32(XID) + u32(16390) + s("") + s("t") + b"n" + u16(0),
        Relation(XID, 16390, "", "t", "n", ()),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector("type", b"Y" + u32(16400) + s("public") + s("mood"), Type(None, 16400, "public", "mood")),
    Vector(
        "type-streamed",
        # a domain over text: the domain's OID, its base type's namespace ('' = pg_catalog) and name
        b"Y" + u32(XID) + u32(16401) + s("") + s("text"),
        Type(XID, 16401, "", "text"),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector(
        "insert",
        b"I" + u32(16384) + b"N" + u16(3) + t("1") + t("alice") + b"n",
        Insert(None, 16384, ("1", "alice", None)),
    ),
    Vector(
        "insert-non-ascii-binary-streamed",
        b"I" + u32(XID) + u32(16384) + b"N" + u16(3) + bval(b"\x00\x00\x00\x01") + t("Zoë 北京") + b"n",
        Insert(XID, 16384, (b"\x00\x00\x00\x01", "Zoë 北京", None)),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector(
        "update-new-only-unchanged-toast",
        b"U" + u32(16384) + b"N" + u16(3) + t("1") + t("bob") + b"u",
        Update(None, 16384, None, None, ("1", "bob", UNCHANGED)),
    ),
    Vector(
        "update-key",
        b"U" + u32(16384) + b"K" + u16(3) + t("1") + b"n" + b"n" + b"N" + u16(3) + t("2") + t("bob") + t("3"),
        Update(None, 16384, "K", ("1", None, None), ("2", "bob", "3")),
    ),
    Vector(
        "update-old-full",
        b"U" + u32(16384) + b"O" + u16(2) + t("1") + t("a") + b"N" + u16(2) + t("1") + t("b"),
        Update(None, 16384, "O", ("1", "a"), ("1", "b")),
    ),
    Vector(
        "delete-key",
        b"D" + u32(16384) + b"K" + u16(3) + t("1") + b"n" + b"n",
        Delete(None, 16384, "K", ("1", None, None)),
    ),
    Vector(
        "delete-old-streamed",
        b"D" + u32(XID) + u32(16384) + b"O" + u16(1) + t("1"),
        Delete(XID, 16384, "O", ("1",)),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector(
        "truncate-cascade-restart",
        b"T" + u32(2) + u8(3) + u32(16384) + u32(16390),
        Truncate(None, 3, (16384, 16390)),
    ),
    Vector(
        "truncate-streamed",
        b"T" + u32(XID) + u32(1) + u8(0) + u32(16384),
        Truncate(XID, 0, (16384,)),
        protocol_version=2, streaming="on", in_stream=True,
    ),
    Vector("stream-start-first", b"S" + u32(XID) + u8(1), StreamStart(XID, True), protocol_version=2, streaming="on"),
    Vector("stream-start-next", b"S" + u32(XID) + u8(0), StreamStart(XID, False), protocol_version=2, streaming="on"),
    Vector("stream-stop", b"E", StreamStop(), protocol_version=2, streaming="on", in_stream=True),
    Vector(
        "stream-commit",
        b"c" + u32(XID) + u8(0) + u64(LSN) + u64(LSN + 48) + i64(TS),
        StreamCommit(XID, 0, LSN, LSN + 48, TS),
        protocol_version=2, streaming="on",
    ),
    Vector(
        "stream-abort-subxact",
        b"A" + u32(XID) + u32(XID + 1),
        StreamAbort(XID, XID + 1),
        protocol_version=2, streaming="on",
    ),
    # Erratum E-STREAM-ABORT-TAIL: protocol 4 with streaming=on has no tail.
    Vector(
        "stream-abort-proto4-streaming-on",
        b"A" + u32(XID) + u32(XID),
        StreamAbort(XID, XID),
        protocol_version=4, streaming="on",
    ),
    Vector(
        "stream-abort-parallel-tail",
        b"A" + u32(XID) + u32(XID + 2) + u64(LSN) + i64(TS),
        StreamAbort(XID, XID + 2, LSN, TS),
        protocol_version=4, streaming="parallel",
    ),
    Vector(
        "begin-prepare",
        b"b" + u64(LSN) + u64(LSN + 40) + i64(TS) + u32(XID) + s("gid-1"),
        BeginPrepare(LSN, LSN + 40, TS, XID, "gid-1"),
        protocol_version=3,
    ),
    Vector(
        "prepare",
        b"P" + u8(0) + u64(LSN) + u64(LSN + 40) + i64(TS) + u32(XID) + s("gid-1"),
        Prepare(0, LSN, LSN + 40, TS, XID, "gid-1"),
        protocol_version=3,
    ),
    Vector(
        "commit-prepared",
        b"K" + u8(0) + u64(LSN + 80) + u64(LSN + 120) + i64(TS + 5) + u32(XID) + s("gid-1"),
        CommitPrepared(0, LSN + 80, LSN + 120, TS + 5, XID, "gid-1"),
        protocol_version=3,
    ),
    Vector(
        "rollback-prepared",
        b"r" + u8(0) + u64(LSN + 40) + u64(LSN + 200) + i64(TS) + i64(TS + 9) + u32(XID) + s("gid-2"),
        RollbackPrepared(0, LSN + 40, LSN + 200, TS, TS + 9, XID, "gid-2"),
        protocol_version=3,
    ),
    Vector(
        "stream-prepare",
        b"p" + u8(0) + u64(LSN) + u64(LSN + 40) + i64(TS) + u32(XID) + s("gid-3"),
        StreamPrepare(0, LSN, LSN + 40, TS, XID, "gid-3"),
        protocol_version=3, streaming="on",
    ),
]
