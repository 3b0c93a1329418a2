"""Hypothesis strategies for PostgreSQL logical replication.

Property tests and fuzz campaigns for your own pgoutput decoder, replication client or CDC
pipeline. Everything drawn is something a real server (PostgreSQL 10-18) could send, or
exactly one documented step away from it.

Messages
--------
One pgoutput message valid on its own in a protocol context (drawn, or given)::

    from hypothesis import given, strategies as st
    from pgwire_spec import Insert, decode_message, encode
    from pgwire_spec.strategies import ProtocolContext, pgoutput_messages

    @given(pgoutput_messages(Insert, context=ProtocolContext(protocol_version=2, binary=True)))
    def test_insert_round_trip(msg):
        data = encode(msg)
        assert decode_message(data, protocol_version=2, in_stream=msg.xid is not None) == msg

    @given(st.from_type(Insert))   # every message class is registered with hypothesis
    def test_any_insert(msg): ...

Column values, in text form (what the type's output function prints: DateStyle ISO,
TimeZone UTC, bytea hex, shortest floats) or binary form (the bytes of its send
function), for the common built-in types (``COLUMN_TYPES``)::

    column_values("numeric", binary=True)      # b'\\x00\\x02\\x00\\x00\\x00\\x00\\x00\\x02...'
    column_values("timestamptz")               # '2024-02-29 12:00:00.5+00'
    column_values("_text", null=False)         # '{a,"b c",NULL}'

Streams
-------
A whole stream as a server sends it after ``START_REPLICATION``::

    from pgwire_spec import PgOutputDecoder
    from pgwire_spec.strategies import streams

    @given(streams(protocol_version=4, streaming="parallel"))
    def test_my_decoder(stream):
        mine = MyDecoder(**stream.options)             # protocol_version, streaming, ...
        assert [mine.decode(p) for p in stream.payloads] == list(stream.messages)

``stream.options`` are the keyword arguments of :class:`~pgwire_spec.PgOutputDecoder`;
``stream.messages`` the message objects, ``stream.payloads`` their bytes,
``stream.in_stream`` whether each sits in a streamed block, ``stream.write_lsns`` the LSN a
walsender puts in its XLogData header. Every context argument left as ``None`` is drawn.
The stream is valid as a whole: Relation (and Type, for column types with OID >= 10000)
before a table's first change and again after a schema change; tuple arity equal to the
relation's; updates and deletes shaped by the replica identity ('K' full width with NULL
for non-key columns, 'O' only under FULL, neither when the key did not change);
``Begin.final_lsn == Commit.commit_lsn`` and LSNs that never go down; streamed blocks of
several interleaved xids with ``first_segment`` set exactly on each xid's first block,
changes of subtransactions carrying their own xid, subtransaction aborts (subxid != xid)
and whole aborts, the Stream Abort tail exactly with ``streaming="parallel"``; two-phase
flows (Begin Prepare/Prepare, later Commit or Rollback Prepared, Stream Prepare) with
GIDs; Origin after Begin or after a first Stream Start (origin LSN 0), never with
``origin="none"``; non-transactional logical messages between transactions; repeated
Relation messages; empty transactions.

Walsender framing and client messages::

    walsender_streams(streaming="on")   # .payloads: CopyData payloads ('w' XLogData, 'k')
    status_updates()                    # StandbyStatusUpdate 'r'
    hot_standby_feedback()              # HotStandbyFeedback 'h'
    replication_commands(server_major=16)
    # 'START_REPLICATION SLOT "sub" LOGICAL 0/1A2B3C (proto_version \\'4\\', ...)'

XLogData carries dataStart = walEnd = the message's write LSN, 0 for Relation and Type and
for a Begin / Begin Prepare / Stream Start that an Origin follows (erratum E-ZERO-LSN);
keepalive walEnds never go down.

Malformed streams
-----------------
One typed violation applied to a valid stream; the expected outcome is derived from the
construction and catalogued in ``spec/rules.yaml`` (the oracle)::

    from pgwire_spec import DecodeError
    from pgwire_spec.strategies import malformed_streams

    @given(malformed_streams())
    def test_my_decoder_rejects(case):
        mine = MyDecoder(**case.options, strict=True)
        for p in case.payloads[:case.index]:
            mine.decode(p)                          # the prefix is valid
        with pytest.raises(MyError) as err:
            for p in case.payloads[case.index:]:
                mine.decode(p)
            mine.finish()                           # index == len(payloads): cut short
        assert map_rule(err.value) in case.acceptable_rules

``case.expected_rule`` is the rule the reference decoder raises; ``case.acceptable_rules``
the rules a third-party decoder may report instead (e.g. a cut inside a String may be
reported as ``truncated``); ``case.tolerant`` what a non-strict decoder does (``raise``,
``warn`` or ``accept``); ``case.violation`` names the violation (``VIOLATIONS``:
truncation at or inside any field, lengths past the end or negative, unknown message tags
and tuple kinds, Strings without NUL, trailing bytes, 'K' and 'O' together, an xid prefix
missing inside or present outside a streamed block, the Stream Abort tail against the
streaming option, column counts off by one, a change before its Relation, Stream Stop
without Stream Start, Commit without Begin, non-zero flags, LSN and GID mismatches,
wrong first-segment flags, messages and binary values not negotiated, a stream cut inside
a transaction …). Pick some with ``malformed_streams(violations=[...])``.
``malformed_streams(framing="walsender")`` frames the payloads as CopyData and adds the
walsender rules (LSNs going backwards, the zero-LSN rule).

Contexts
--------
``contexts(protocol_version=…, streaming=…, two_phase=…, binary=…, messages=…,
origin=…)`` draws the option sets servers accept (streaming needs protocol 2,
``parallel`` 4, two_phase 3); a :class:`ProtocolContext` knows the message tags
(``.tags``) and tuple kinds (``.tuple_kinds``) a server may send in it. Every strategy
above takes the same arguments, or a whole ``context=``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis import strategies as st

    from ._strategies._commands import replication_commands
    from ._strategies._context import ProtocolContext, contexts
    from ._strategies._malformed import VIOLATIONS, MalformedStream, malformed_streams
    from ._strategies._messages import pgoutput_messages
    from ._strategies._streams import Stream, streams
    from ._strategies._walsender import (
        WalsenderStream,
        hot_standby_feedback,
        keepalives,
        status_updates,
        walsender_streams,
    )
    from .pgoutput.messages import ColumnValue

# The hook comes first, before anything imports hypothesis: importing hypothesis runs its
# entry points, which load this module, maybe while it is still being imported.
def _hypothesis_setup_hook() -> None:
    """Register every message dataclass of this package with hypothesis, so that
    ``st.from_type(Insert)`` (and ``st.builds`` of annotated fields) draws valid ones.

    Called through this package's ``hypothesis`` entry point when hypothesis is imported;
    the strategies themselves are built on first use.
    """
    from hypothesis import strategies as st

    from .pgoutput import messages as m
    from .replication import commands as c
    from .replication import messages as r

    def lazy(module: str, fn: str, *args: Any, **kwargs: Any) -> st.SearchStrategy[Any]:
        def make() -> st.SearchStrategy[Any]:
            mod = importlib.import_module(f"._strategies.{module}", __package__)
            return getattr(mod, fn)(*args, **kwargs)  # type: ignore[no-any-return]

        return st.deferred(make)

    register = st.register_type_strategy
    for cls in m.MESSAGE_TYPES.values():
        register(cls, lazy("_messages", "pgoutput_messages", cls))
    register(m.PgOutputMessage, lazy("_messages", "pgoutput_messages"))
    register(m.RelationColumn, lazy("_messages", "relation_columns"))
    register(m.Unchanged, st.just(m.UNCHANGED))
    register(r.XLogData, lazy("_walsender", "xlogdata"))
    register(r.PrimaryKeepalive, lazy("_walsender", "keepalives"))
    register(r.StandbyStatusUpdate, lazy("_walsender", "status_updates"))
    register(r.HotStandbyFeedback, lazy("_walsender", "hot_standby_feedback"))
    register(r.ReplicationMessage, lazy("_walsender", "replication_messages"))
    for cmd in (c.IdentifySystem, c.Show, c.TimelineHistory, c.CreateReplicationSlot,
                c.DropReplicationSlot, c.ReadReplicationSlot, c.AlterReplicationSlot, c.StartReplication):
        register(cmd, lazy("_commands", "commands_of", cmd))


__all__ = [
    "ProtocolContext",
    "contexts",
    "COLUMN_TYPES",
    "column_values",
    "pgoutput_messages",
    "Stream",
    "streams",
    "WalsenderStream",
    "walsender_streams",
    "status_updates",
    "hot_standby_feedback",
    "keepalives",
    "replication_commands",
    "MalformedStream",
    "malformed_streams",
    "VIOLATIONS",
]

# The implementation is imported on first use: hypothesis imports this module (for the
# setup hook) whenever it is imported itself, and should not pay for what it never uses.
_LAZY = {
    "ProtocolContext": "_context",
    "contexts": "_context",
    "pgoutput_messages": "_messages",
    "Stream": "_streams",
    "streams": "_streams",
    "WalsenderStream": "_walsender",
    "walsender_streams": "_walsender",
    "status_updates": "_walsender",
    "hot_standby_feedback": "_walsender",
    "keepalives": "_walsender",
    "replication_commands": "_commands",
    "MalformedStream": "_malformed",
    "malformed_streams": "_malformed",
    "VIOLATIONS": "_malformed",
}


def __getattr__(name: str) -> Any:
    if name == "COLUMN_TYPES":
        from ._strategies._types import TYPES_BY_NAME

        value: Any = {n: t.oid for n, t in TYPES_BY_NAME.items()}
    elif name in _LAZY:
        value = getattr(importlib.import_module(f"._strategies.{_LAZY[name]}", __package__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


#: (documented here, computed on first use) The built-in column types of
#: :func:`column_values` by name (``_int4`` is ``int4[]``), with their type OIDs.
COLUMN_TYPES: dict[str, int]


def column_values(
    type: str | int, *, binary: bool = False, null: bool = True, unchanged: bool = False
) -> st.SearchStrategy[ColumnValue]:
    """Values of a column of a built-in type (a name of ``COLUMN_TYPES`` or a type OID) as a
    TupleData carries them: ``str`` text, ``bytes`` binary (with *binary*), ``None`` NULL
    (with *null*), ``UNCHANGED`` unchanged TOAST (with *unchanged*, toastable types only)."""
    from hypothesis.errors import InvalidArgument

    from ._strategies._messages import column_values as values
    from ._strategies._types import TYPES_BY_NAME, TYPES_BY_OID

    t = TYPES_BY_NAME.get(type) if isinstance(type, str) else TYPES_BY_OID.get(type)
    if t is None:
        raise InvalidArgument(f"unknown column type {type!r}; known: {', '.join(TYPES_BY_NAME)}")
    return values(t, binary=binary, null=null, unchanged=unchanged)


