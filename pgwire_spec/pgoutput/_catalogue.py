"""pgoutput's part of the protocol catalogue: every layout of ``grammar`` lowered, plus the
few facts the grammar cannot hold (the docs' section, the first server major, the options
that make a server send the message, the errata, the values of "currently unused" flags).

Everything else is derived here once and read by the decoder, the strategies, the
conformance cases and ``spec/``: which message needs which protocol version and option
(:data:`NEEDS`), which carry the streamed xid (:data:`STREAMED_XID`, from the grammar's
``in_stream`` condition), which messages a server sends in a context (:func:`tags_sent`).
"""

from __future__ import annotations

from typing import Final

from .. import _ir
from .._catalogue import Entry, Facts, lower_layer
from . import grammar, messages

__all__ = [
    "ENTRIES",
    "BY_TAG",
    "FACTS",
    "NEEDS",
    "STREAMED_XID",
    "FLAGS_ZERO",
    "OPTION_PROTOCOL",
    "PARALLEL_PROTOCOL",
    "TUPLE_KINDS",
    "tags_sent",
]

#: The protocol_version each option needs (docs: "Logical Streaming Replication
#: Parameters"; pgoutput.c refuses a lower one).
OPTION_PROTOCOL: Final = {"messages": 1, "streaming": 2, "two_phase": 3}
#: streaming = parallel needs protocol_version 4.
PARALLEL_PROTOCOL: Final = 4
#: The protocol_version that a field's condition implies: the xid prefix exists only in a
#: streamed block (streaming), Stream Abort's tail only with streaming = parallel.
CONDITION_PROTOCOL: Final = {"in_stream": OPTION_PROTOCOL["streaming"], "abort_tail": PARALLEL_PROTOCOL}

_ZERO = {"flags": (0,)}  # Int8(0) flags, "currently unused"

#: Per message, what the grammar cannot say. Docs: "Logical Replication Message Formats".
FACTS: Final[dict[str, Facts]] = {
    "Begin": Facts("Begin", role="begin"),
    "LogicalMessage": Facts("Message", since=14, options=("messages",), values={"flags": (0, 1)}, role="message"),
    "Commit": Facts("Commit", values=_ZERO, role="commit"),
    "Origin": Facts("Origin", role="change"),
    "Relation": Facts("Relation", values={"columns.flags": (0, 1)}, role="change"),
    "Type": Facts("Type", role="change"),
    "Insert": Facts("Insert", role="change"),
    "Update": Facts("Update", role="change"),
    "Delete": Facts("Delete", role="change"),
    "Truncate": Facts("Truncate", since=11, values={"options": (0, 1, 2, 3)}, role="change"),
    "StreamStart": Facts("Stream Start", since=14, options=("streaming",), role="stream_start"),
    "StreamStop": Facts("Stream Stop", since=14, options=("streaming",), role="stream_stop"),
    "StreamCommit": Facts("Stream Commit", since=14, options=("streaming",), values=_ZERO, role="between_blocks"),
    "StreamAbort": Facts("Stream Abort", since=14, options=("streaming",),
                         errata=("E-STREAM-ABORT-TAIL", "E-PG18-STRAY-STREAM-ABORT"), role="between_blocks"),
    "BeginPrepare": Facts("Begin Prepare", since=15, options=("two_phase",), role="begin_prepare"),
    "Prepare": Facts("Prepare", since=15, options=("two_phase",), values=_ZERO, role="prepare"),
    "CommitPrepared": Facts("Commit Prepared", since=15, options=("two_phase",), values=_ZERO,
                            role="between_blocks"),
    "RollbackPrepared": Facts("Rollback Prepared", since=15, options=("two_phase",), values=_ZERO,
                              role="between_blocks"),
    "StreamPrepare": Facts("Stream Prepare", since=15, options=("two_phase", "streaming"), values=_ZERO,
                           role="between_blocks"),
}

#: TupleData's column kinds (docs: "TupleData"): meaning, value, first server major.
TUPLE_KINDS: Final = (
    ("n", "NULL", "none", 10),
    ("u", "unchanged TOASTed value, not sent", "none", 10),
    ("t", "text formatted value", "Byten32", 10),
    ("b", "binary formatted value (binary = true)", "Byten32", 14),
)


def _protocol(layout: _ir.Layout, facts: Facts) -> int:
    return max((OPTION_PROTOCOL[o] for o in facts.options), default=1)


#: Every pgoutput message, in the grammar's (the docs') order.
ENTRIES: Final[dict[str, Entry]] = lower_layer(
    "pgoutput", grammar.LAYOUTS, messages.MESSAGE_TYPES, FACTS, protocol=_protocol
)
BY_TAG: Final[dict[str, Entry]] = {e.tag: e for e in ENTRIES.values() if e.tag is not None}

#: Messages a server sends only when asked: tag -> (protocol_version, options).
NEEDS: Final[dict[str, tuple[int, tuple[str, ...]]]] = {
    e.tag: (e.protocol, e.options)  # type: ignore[misc]
    for e in BY_TAG.values() if e.options
}

#: Tags of the messages that carry the streamed xid inside a streamed block.
STREAMED_XID: Final[frozenset[str]] = frozenset(t for t, e in BY_TAG.items() if e.streamed_xid)

#: Message classes whose flags byte is Int8(0), "currently unused".
FLAGS_ZERO: Final[frozenset[type]] = frozenset(
    e.cls for e in ENTRIES.values() if e.facts.values.get("flags") == (0,)
)


def _enabled(option: str, streaming: str, two_phase: bool, messages: bool) -> bool:
    value = {"streaming": streaming != "off", "two_phase": two_phase, "messages": messages}[option]
    return bool(value)


def tags_sent(protocol_version: int, streaming: str, two_phase: bool, messages: bool) -> frozenset[str]:
    """The tags a server may send under these START_REPLICATION options (``streaming`` as
    ``"off"``/``"on"``/``"parallel"``)."""
    return frozenset(
        tag for tag, e in BY_TAG.items()
        if protocol_version >= (e.protocol or 1)
        and all(_enabled(o, streaming, two_phase, messages) for o in e.options)
    )
