"""pgoutput: the logical replication message formats, as construct layouts.

The single source of every pgoutput layout. One definition per message, in the order of
the PostgreSQL docs' "Logical Replication Message Formats" chapter, with the docs' words
above it and our errata (``spec/errata.yaml``) where servers differ from the docs.

Context parameters, passed to ``parse``/``build`` as keywords:

``in_stream``
    True between Stream Start and Stream Stop: R Y I U D T M then carry a TransactionId
    prefix (protocol >= 2). Outside a streamed block they never do (erratum E-XID-PREFIX).
``abort_tail``
    True when the client asked for ``streaming = parallel``: only then does Stream Abort
    carry the abort LSN and timestamp (erratum E-STREAM-ABORT-TAIL).

Field names here are the field names of the message dataclasses in
:mod:`pgwire_spec.pgoutput.messages`; fields named ``tag``/``*_tag`` are constants.
"""

from __future__ import annotations

from typing import Any

from construct import (
    Adapter,
    Const,
    Error,
    If,
    Optional,
    Pass,
    PrefixedArray,
    Rebuild,
    Struct,
    Switch,
    len_,
    this,
)

from .._primitives import (
    ENCODING,
    ERRORS,
    Bool8,
    Byten32,
    Char,
    CharIn,
    Int8,
    Int32,
    Oid,
    String,
    TimestampTz,
    TransactionId,
    TupleValues,
    UInt16,
    UInt32,
    XLogRecPtr,
)

# Streamed transactions: "Xid of the transaction (only present for streamed transactions).
# This field is available since protocol version 2."
StreamXid = If(this._params.in_stream, TransactionId)


# =========================================================================================
# TupleData (the message part shared by Insert, Update and Delete)
# =========================================================================================


class _TextValue(Adapter):  # type: ignore[misc]
    """'t': "the value of the column ... in text format" (client encoding)."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        return obj.decode(ENCODING, ERRORS)

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode(ENCODING, ERRORS)


# Int16: Number of columns. Next, one of the following submessages appears for each
# published column: Byte1('n') NULL; Byte1('u') unchanged TOASTed value (not sent);
# Byte1('t') text formatted value; Byte1('b') binary formatted value (protocol >= 2, only
# with binary = true). 't' and 'b' are followed by Int32 length and Byten value.
TupleColumn = Struct(
    "kind" / Char,
    "value"
    / Switch(
        this.kind,
        {"n": Pass, "u": Pass, "t": _TextValue(Byten32), "b": Byten32},
        default=Error,
    ),
)


TupleData = TupleValues(PrefixedArray(UInt16, TupleColumn))

# Update's optional old part: Byte1('K') key or Byte1('O') old tuple, then TupleData.
OldTupleKind = Optional(CharIn("KO"))


# =========================================================================================
# Messages, in the docs' order
# =========================================================================================

# Begin: Byte1('B'); Int64 (XLogRecPtr) the final LSN of the transaction; Int64
# (TimestampTz) commit timestamp; Int32 (TransactionId) xid of the transaction.
Begin = Struct(
    "tag" / Const(b"B"),
    "final_lsn" / XLogRecPtr,
    "commit_time" / TimestampTz,
    "xid" / TransactionId,
)

# Message: Byte1('M'); [Int32 xid, streamed only]; Int8 flags (0, or 1 if transactional);
# Int64 (XLogRecPtr) LSN of the logical decoding message; String prefix; Int32 length of
# the content; Byten content. Protocol >= 1 on servers >= 14, only with messages = true.
LogicalMessage = Struct(
    "tag" / Const(b"M"),
    "xid" / StreamXid,
    "flags" / Int8,
    "lsn" / XLogRecPtr,
    "prefix" / String,
    "content" / Byten32,
)

# Commit: Byte1('C'); Int8(0) flags, currently unused; Int64 (XLogRecPtr) LSN of the
# commit; Int64 (XLogRecPtr) end LSN of the transaction; Int64 (TimestampTz) commit time.
Commit = Struct(
    "tag" / Const(b"C"),
    "flags" / Int8,
    "commit_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "commit_time" / TimestampTz,
)

# Origin: Byte1('O'); Int64 (XLogRecPtr) LSN of the commit on the origin server; String
# name of the origin. "There can be multiple Origin messages inside a single transaction."
Origin = Struct(
    "tag" / Const(b"O"),
    "origin_lsn" / XLogRecPtr,
    "name" / String,
)

# Relation column: Int8 flags (1 = part of the key; under REPLICA IDENTITY FULL every
# column, erratum E-FULL-KEY-FLAGS); String name; Int32 (Oid) type; Int32 atttypmod
# (signed: -1 is "no modifier").
RelationColumn = Struct(
    "flags" / Int8,
    "name" / String,
    "type_oid" / Oid,
    "type_modifier" / Int32,
)

# Relation: Byte1('R'); [Int32 xid, streamed only]; Int32 (Oid) relation; String
# namespace (empty for pg_catalog); String relation name; Int8 replica identity
# (relreplident: d, n, f, i); Int16 number of columns; the columns.
Relation = Struct(
    "tag" / Const(b"R"),
    "xid" / StreamXid,
    "relation_id" / Oid,
    "namespace" / String,
    "name" / String,
    "replica_identity" / CharIn("dnfi"),
    "columns" / PrefixedArray(UInt16, RelationColumn),
)

# Type: Byte1('Y'); [Int32 xid, streamed only]; Int32 (Oid) type; String namespace (empty
# for pg_catalog); String type name. Sent only for OIDs >= 10000; for a domain the OID is
# the domain's but namespace and name are its base type's (erratum E-TYPE-DOMAIN).
Type = Struct(
    "tag" / Const(b"Y"),
    "xid" / StreamXid,
    "type_oid" / Oid,
    "namespace" / String,
    "name" / String,
)

# Insert: Byte1('I'); [Int32 xid, streamed only]; Int32 (Oid) relation; Byte1('N');
# TupleData of the new tuple.
Insert = Struct(
    "tag" / Const(b"I"),
    "xid" / StreamXid,
    "relation_id" / Oid,
    "new_tag" / Const(b"N"),
    "new_tuple" / TupleData,
)

# Update: Byte1('U'); [Int32 xid, streamed only]; Int32 (Oid) relation; optionally
# Byte1('K') (key changed) or Byte1('O') (REPLICA IDENTITY FULL) and its TupleData, "never
# both"; Byte1('N'); TupleData of the new tuple. A 'K' tuple is full width with 'n' for
# non-key columns (erratum E-KEY-FULL-WIDTH).
Update = Struct(
    "tag" / Const(b"U"),
    "xid" / StreamXid,
    "relation_id" / Oid,
    "old_kind" / OldTupleKind,
    "old_tuple" / If(this.old_kind != None, TupleData),  # noqa: E711 (construct expression)
    "new_tag" / Const(b"N"),
    "new_tuple" / TupleData,
)

# Delete: Byte1('D'); [Int32 xid, streamed only]; Int32 (Oid) relation; Byte1('K') (index
# identity) or Byte1('O') (FULL); TupleData of the old tuple or key.
Delete = Struct(
    "tag" / Const(b"D"),
    "xid" / StreamXid,
    "relation_id" / Oid,
    "old_kind" / CharIn("KO"),
    "old_tuple" / TupleData,
)

# Truncate: Byte1('T'); [Int32 xid, streamed only]; Int32 number of relations; Int8 option
# bits (1 CASCADE, 2 RESTART IDENTITY); Int32 (Oid) per relation. Servers >= 11.
Truncate = Struct(
    "tag" / Const(b"T"),
    "xid" / StreamXid,
    "relation_count" / Rebuild(UInt32, len_(this.relation_ids)),
    "options" / Int8,
    "relation_ids" / Oid[this.relation_count],
)

# Stream Start: Byte1('S'); Int32 xid; Int8 1 for the first segment of this xid, else 0.
# (Protocol >= 2, servers >= 14.)
StreamStart = Struct(
    "tag" / Const(b"S"),
    "xid" / TransactionId,
    "first_segment" / Bool8,
)

# Stream Stop: Byte1('E').
StreamStop = Struct(
    "tag" / Const(b"E"),
)

# Stream Commit: Byte1('c'); Int32 xid; Int8(0) flags; Int64 commit LSN; Int64 end LSN;
# Int64 (TimestampTz) commit time.
StreamCommit = Struct(
    "tag" / Const(b"c"),
    "xid" / TransactionId,
    "flags" / Int8,
    "commit_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "commit_time" / TimestampTz,
)

# Stream Abort: Byte1('A'); Int32 xid; Int32 subtransaction xid (== xid for the whole
# transaction); Int64 abort LSN and Int64 (TimestampTz) abort time "present only when
# streaming is set to parallel" (the 16/17 docs said "since protocol version 4": wrong,
# erratum E-STREAM-ABORT-TAIL).
StreamAbort = Struct(
    "tag" / Const(b"A"),
    "xid" / TransactionId,
    "subtransaction_xid" / TransactionId,
    "abort_lsn" / If(this._params.abort_tail, XLogRecPtr),
    "abort_time" / If(this._params.abort_tail, TimestampTz),
)

# Begin Prepare: Byte1('b'); Int64 LSN of the prepare; Int64 end LSN of the prepared
# transaction; Int64 (TimestampTz) prepare time; Int32 xid; String GID. No flags byte.
# (Protocol >= 3, servers >= 15.)
BeginPrepare = Struct(
    "tag" / Const(b"b"),
    "prepare_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "prepare_time" / TimestampTz,
    "xid" / TransactionId,
    "gid" / String,
)

# Prepare: Byte1('P'); Int8(0) flags; Int64 prepare LSN; Int64 end LSN; Int64 prepare
# time; Int32 xid; String GID.
Prepare = Struct(
    "tag" / Const(b"P"),
    "flags" / Int8,
    "prepare_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "prepare_time" / TimestampTz,
    "xid" / TransactionId,
    "gid" / String,
)

# Commit Prepared: Byte1('K'); Int8(0) flags; Int64 LSN of the commit of the prepared
# transaction; Int64 end LSN of that commit; Int64 commit time; Int32 xid; String GID.
CommitPrepared = Struct(
    "tag" / Const(b"K"),
    "flags" / Int8,
    "commit_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "commit_time" / TimestampTz,
    "xid" / TransactionId,
    "gid" / String,
)

# Rollback Prepared: Byte1('r'); Int8(0) flags; Int64 end LSN of the prepared transaction;
# Int64 end LSN of the rollback; Int64 prepare time; Int64 rollback time; Int32 xid;
# String GID.
RollbackPrepared = Struct(
    "tag" / Const(b"r"),
    "flags" / Int8,
    "prepare_end_lsn" / XLogRecPtr,
    "rollback_end_lsn" / XLogRecPtr,
    "prepare_time" / TimestampTz,
    "rollback_time" / TimestampTz,
    "xid" / TransactionId,
    "gid" / String,
)

# Stream Prepare: Byte1('p'); Int8(0) flags; Int64 prepare LSN; Int64 end LSN; Int64
# prepare time; Int32 xid; String GID.
StreamPrepare = Struct(
    "tag" / Const(b"p"),
    "flags" / Int8,
    "prepare_lsn" / XLogRecPtr,
    "end_lsn" / XLogRecPtr,
    "prepare_time" / TimestampTz,
    "xid" / TransactionId,
    "gid" / String,
)

#: Every message layout by its name, in the docs' order.
LAYOUTS: dict[str, Struct] = {
    "Begin": Begin,
    "LogicalMessage": LogicalMessage,
    "Commit": Commit,
    "Origin": Origin,
    "Relation": Relation,
    "Type": Type,
    "Insert": Insert,
    "Update": Update,
    "Delete": Delete,
    "Truncate": Truncate,
    "StreamStart": StreamStart,
    "StreamStop": StreamStop,
    "StreamCommit": StreamCommit,
    "StreamAbort": StreamAbort,
    "BeginPrepare": BeginPrepare,
    "Prepare": Prepare,
    "CommitPrepared": CommitPrepared,
    "RollbackPrepared": RollbackPrepared,
    "StreamPrepare": StreamPrepare,
}

#: Nested layouts that map to their own dataclass.
NESTED: dict[str, Struct] = {"RelationColumn": RelationColumn}
