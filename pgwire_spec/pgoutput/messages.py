"""pgoutput messages as frozen, slotted dataclasses.

Field names follow the docs' descriptions (``final_lsn``, ``commit_time``, ``xid``). Each
message keeps everything needed to re-encode it byte for byte: the streamed ``xid`` prefix
(``None`` outside a streamed block), the "currently unused" flags bytes, Stream Abort's
optional tail. LSNs are ints (see :func:`pgwire_spec.lsn.format_lsn`); timestamps are
microseconds since 2000-01-01 UTC (see :func:`pgwire_spec.lsn.timestamp_to_datetime`).

Tuple values: ``str`` for text ('t'), ``bytes`` for binary ('b'), ``None`` for NULL ('n')
and :data:`UNCHANGED` for an unchanged TOASTed value ('u').
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import ClassVar

from .._primitives import UNCHANGED, Unchanged
from ..lsn import timestamp_to_datetime

__all__ = [
    "UNCHANGED",
    "Unchanged",
    "ColumnValue",
    "TupleData",
    "PgOutputMessage",
    "Begin",
    "LogicalMessage",
    "Commit",
    "Origin",
    "RelationColumn",
    "Relation",
    "Type",
    "Insert",
    "Update",
    "Delete",
    "Truncate",
    "StreamStart",
    "StreamStop",
    "StreamCommit",
    "StreamAbort",
    "BeginPrepare",
    "Prepare",
    "CommitPrepared",
    "RollbackPrepared",
    "StreamPrepare",
    "MESSAGE_TYPES",
    "tuple_kinds",
]

ColumnValue = str | bytes | None | Unchanged
TupleData = tuple[ColumnValue, ...]


def tuple_kinds(values: TupleData) -> str:
    """The TupleData kind letters of a tuple: ``('a', None, b'x') -> 'tnb'``."""
    return "".join(
        "n" if v is None else "u" if v is UNCHANGED else "t" if isinstance(v, str) else "b"
        for v in values
    )


class PgOutputMessage:
    """Base of every pgoutput message. ``tag`` is the message's Byte1 identifier."""

    __slots__ = ()
    tag: ClassVar[str]




@dataclass(frozen=True, slots=True)
class Begin(PgOutputMessage):
    tag: ClassVar[str] = "B"
    final_lsn: int
    commit_time: int
    xid: int

    @property
    def commit_datetime(self) -> _dt.datetime:
        return timestamp_to_datetime(self.commit_time)


@dataclass(frozen=True, slots=True)
class LogicalMessage(PgOutputMessage):
    """'M': a message written by ``pg_logical_emit_message`` (only with messages = true)."""

    tag: ClassVar[str] = "M"
    xid: int | None
    flags: int
    lsn: int
    prefix: str
    content: bytes

    @property
    def transactional(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Commit(PgOutputMessage):
    tag: ClassVar[str] = "C"
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int

    @property
    def commit_datetime(self) -> _dt.datetime:
        return timestamp_to_datetime(self.commit_time)


@dataclass(frozen=True, slots=True)
class Origin(PgOutputMessage):
    tag: ClassVar[str] = "O"
    origin_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    """One column of a Relation message."""

    flags: int
    name: str
    type_oid: int
    type_modifier: int

    @property
    def is_key(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Relation(PgOutputMessage):
    tag: ClassVar[str] = "R"
    xid: int | None
    relation_id: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True, slots=True)
class Type(PgOutputMessage):
    tag: ClassVar[str] = "Y"
    xid: int | None
    type_oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert(PgOutputMessage):
    tag: ClassVar[str] = "I"
    xid: int | None
    relation_id: int
    new_tuple: TupleData


@dataclass(frozen=True, slots=True)
class Update(PgOutputMessage):
    """``old_kind`` is ``'K'`` (key changed), ``'O'`` (REPLICA IDENTITY FULL) or None."""

    tag: ClassVar[str] = "U"
    xid: int | None
    relation_id: int
    old_kind: str | None
    old_tuple: TupleData | None
    new_tuple: TupleData


@dataclass(frozen=True, slots=True)
class Delete(PgOutputMessage):
    """``old_kind`` is ``'K'`` (key columns, others 'n') or ``'O'`` (FULL)."""

    tag: ClassVar[str] = "D"
    xid: int | None
    relation_id: int
    old_kind: str
    old_tuple: TupleData


@dataclass(frozen=True, slots=True)
class Truncate(PgOutputMessage):
    tag: ClassVar[str] = "T"
    xid: int | None
    options: int
    relation_ids: tuple[int, ...]

    @property
    def cascade(self) -> bool:
        return bool(self.options & 1)

    @property
    def restart_identity(self) -> bool:
        return bool(self.options & 2)


@dataclass(frozen=True, slots=True)
class StreamStart(PgOutputMessage):
    tag: ClassVar[str] = "S"
    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop(PgOutputMessage):
    tag: ClassVar[str] = "E"


@dataclass(frozen=True, slots=True)
class StreamCommit(PgOutputMessage):
    tag: ClassVar[str] = "c"
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int


@dataclass(frozen=True, slots=True)
class StreamAbort(PgOutputMessage):
    """``abort_lsn``/``abort_time`` are present only with streaming = parallel."""

    tag: ClassVar[str] = "A"
    xid: int
    subtransaction_xid: int
    abort_lsn: int | None = None
    abort_time: int | None = None

    @property
    def aborts_whole_transaction(self) -> bool:
        return self.subtransaction_xid == self.xid


@dataclass(frozen=True, slots=True)
class BeginPrepare(PgOutputMessage):
    tag: ClassVar[str] = "b"
    prepare_lsn: int
    end_lsn: int
    prepare_time: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class Prepare(PgOutputMessage):
    tag: ClassVar[str] = "P"
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_time: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class CommitPrepared(PgOutputMessage):
    tag: ClassVar[str] = "K"
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class RollbackPrepared(PgOutputMessage):
    tag: ClassVar[str] = "r"
    flags: int
    prepare_end_lsn: int
    rollback_end_lsn: int
    prepare_time: int
    rollback_time: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class StreamPrepare(PgOutputMessage):
    tag: ClassVar[str] = "p"
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_time: int
    xid: int
    gid: str


#: Message classes by name, in the docs' order (the names of ``grammar.LAYOUTS``).
MESSAGE_TYPES: dict[str, type[PgOutputMessage]] = {
    cls.__name__: cls
    for cls in (
        Begin,
        LogicalMessage,
        Commit,
        Origin,
        Relation,
        Type,
        Insert,
        Update,
        Delete,
        Truncate,
        StreamStart,
        StreamStop,
        StreamCommit,
        StreamAbort,
        BeginPrepare,
        Prepare,
        CommitPrepared,
        RollbackPrepared,
        StreamPrepare,
    )
}
