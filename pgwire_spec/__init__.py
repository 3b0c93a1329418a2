"""pgwire_spec: PostgreSQL logical replication, byte for byte.

The reference decoder and encoder of pgoutput (protocol versions 1-4) and of the streaming
replication protocol, derived from one construct grammar; see the README for the rest of
the toolkit (fixtures, fake walsender, strategies, conformance, fuzzing).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import CommandSyntaxError, DecodeError, EncodeError, OptionError, PgWireError
from .lsn import datetime_to_timestamp, format_lsn, parse_lsn, timestamp_to_datetime

if TYPE_CHECKING:  # the names of the lazy table below, for type checkers and readers
    from .jsonform import from_json, to_json
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
    from .walsender.server import FakeWalsender, SyncFakeWalsender

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

#: Public name -> the module that defines it. Importing the package imports none of them
#: (``import pgwire_spec`` stays fast and free of I/O modules): each is imported on first use.
_LAZY: dict[str, str] = {
    "PgOutputDecoder": ".pgoutput.decoder",
    "decode_message": ".pgoutput.decoder",
    "decode_copy_data": ".replication.messages",
    "to_json": ".jsonform",
    "from_json": ".jsonform",
    "FakeWalsender": ".walsender.server",
    "SyncFakeWalsender": ".walsender.server",
    **{name: ".pgoutput.messages" for name in (
        "UNCHANGED", "PgOutputMessage", "Begin", "LogicalMessage", "Commit", "Origin", "Relation",
        "RelationColumn", "Type", "Insert", "Update", "Delete", "Truncate", "StreamStart", "StreamStop",
        "StreamCommit", "StreamAbort", "BeginPrepare", "Prepare", "CommitPrepared", "RollbackPrepared",
        "StreamPrepare",
    )},
    **{name: ".replication.messages" for name in (
        "ReplicationMessage", "XLogData", "PrimaryKeepalive", "StandbyStatusUpdate", "HotStandbyFeedback",
    )},
}

#: Modules whose import registers message classes with encode() and the JSON form: the v3
#: frontend/backend messages register themselves in pgwire_spec.wire.
_REGISTERING = (".pgoutput._codec", ".replication.messages", ".wire")


def _module(name: str) -> Any:
    return importlib.import_module(name, __name__)


def _registered() -> None:
    for module in _REGISTERING:
        _module(module)


def encode(message: Any) -> bytes:
    """Encode any message object of this package to its bytes, without context.

    pgoutput messages give their payload; replication messages (XLogData …) the bytes
    inside CopyData; frontend/backend messages their whole framed message.
    """
    fn = _ENCODER_OF.get(type(message))
    if fn is None:
        fn = _encoder_of(message)
    return fn(message)  # type: ignore[no-any-return]


#: The encoder of each message class encode() has seen (the import lookups run once per class).
_ENCODER_OF: dict[type, Any] = {}


def _encoder_of(message: Any) -> Any:
    _registered()
    if isinstance(message, _module(".pgoutput.messages").PgOutputMessage):
        fn = _module(".pgoutput._codec").encode
    elif isinstance(message, _module(".replication.messages").ReplicationMessage):
        fn = _module(".replication.messages").encode_copy_data
    else:
        fn = _ENCODERS.get(type(message))
        if fn is None:
            raise EncodeError(f"not a message this package encodes: {type(message).__name__}")
    _ENCODER_OF[type(message)] = fn
    return fn


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in ("to_json", "from_json"):
        _registered()  # from_json knows every message class by its name
    value = getattr(_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
