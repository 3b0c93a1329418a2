"""pgwire_spec: PostgreSQL logical replication, byte for byte.

The reference decoder and encoder of pgoutput (protocol versions 1-4) and of the streaming
replication protocol, derived from one construct grammar; see the README for the rest of
the toolkit (fixtures, fake walsender, strategies, conformance, fuzzing).
"""

from __future__ import annotations

from typing import Any

from .errors import CommandSyntaxError, DecodeError, EncodeError, OptionError, PgWireError
from .jsonform import from_json, to_json
from .lsn import datetime_to_timestamp, format_lsn, parse_lsn, timestamp_to_datetime
from .pgoutput import _codec as _pg_codec
from .pgoutput.decoder import PgOutputDecoder, decode_message
from .pgoutput.messages import (
    UNCHANGED,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    PgOutputMessage,
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
from .replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    ReplicationMessage,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
)

__version__ = "0.1.0"

__all__ = [
    "PgOutputDecoder",
    "FakeWalsender",
    "SyncFakeWalsender",
    "decode_message",
    "decode_copy_data",
    "encode",
    "to_json",
    "from_json",
    "PgWireError",
    "DecodeError",
    "EncodeError",
    "OptionError",
    "CommandSyntaxError",
    "format_lsn",
    "parse_lsn",
    "timestamp_to_datetime",
    "datetime_to_timestamp",
    "UNCHANGED",
    "PgOutputMessage",
    "Begin",
    "LogicalMessage",
    "Commit",
    "Origin",
    "Relation",
    "RelationColumn",
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
    "ReplicationMessage",
    "XLogData",
    "PrimaryKeepalive",
    "StandbyStatusUpdate",
    "HotStandbyFeedback",
]

_ENCODERS: dict[type, Any] = {}


def encode(message: Any) -> bytes:
    """Encode any message object of this package to its bytes, without context.

    pgoutput messages give their payload; replication messages (XLogData …) the bytes
    inside CopyData; frontend/backend messages their whole framed message.
    """
    if isinstance(message, PgOutputMessage):
        return _pg_codec.encode(message)
    if isinstance(message, ReplicationMessage):
        from .replication.messages import encode_copy_data

        return encode_copy_data(message)
    fn = _ENCODERS.get(type(message))
    if fn is None:
        raise EncodeError(f"not a message this package encodes: {type(message).__name__}")
    return fn(message)  # type: ignore[no-any-return]


# The v3 frontend/backend messages register their encoder and JSON form on import, so that
# encode() and from_json() know them without an explicit import of pgwire_spec.wire.
from . import wire as _wire  # noqa: E402,F401


def __getattr__(name: str) -> Any:
    # The fake walsender's asyncio shell is imported on first use: importing pgwire_spec
    # stays free of I/O modules (the core is sans-IO).
    if name in ("FakeWalsender", "SyncFakeWalsender"):
        from . import walsender

        return getattr(walsender, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
