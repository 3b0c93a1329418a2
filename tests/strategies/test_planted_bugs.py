"""The strategies find real decoder bugs and shrink them to small counterexamples.

Two toy decoders, each the reference decoder with one bug other decoders shipped
(spec/errata.yaml, E-KEY-FULL-WIDTH and E-STREAM-ABORT-TAIL): one reads an unchanged TOAST
value ('u') as NULL (electric #1482),
one decides Stream Abort's tail by the protocol version instead of streaming = parallel
(Npgsql). hypothesis.find searches the valid streams for one the toy gets wrong and
shrinks it; the counterexample is a handful of messages that show the bug. Seen here:

    Begin(final_lsn=134217792, commit_time=700000000001000, xid=3)
    Relation(xid=None, relation_id=16385, namespace='public', name='0', replica_identity='f',
             columns=(RelationColumn(flags=1, name='_', type_oid=25, type_modifier=-1),))
    Update(xid=None, relation_id=16385, old_kind='O', old_tuple=(None,), new_tuple=(UNCHANGED,))
    Commit(flags=0, commit_lsn=134217792, end_lsn=134217856, commit_time=700000000001000)

    ProtocolContext(protocol_version=4, streaming='on')
    StreamStart(xid=3, first_segment=True)
    Relation(xid=3, relation_id=16384, namespace='public', name='0', replica_identity='f', columns=())
    Insert(xid=3, relation_id=16384, new_tuple=())
    StreamStop()
    StreamAbort(xid=3, subtransaction_xid=3, abort_lsn=None, abort_time=None)
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, settings

from pgwire_spec import UNCHANGED, DecodeError, PgOutputDecoder
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.strategies import ProtocolContext, Stream, streams

pytestmark = pytest.mark.slow  # a search and a shrink: 5-20 s each

SEARCH = settings(max_examples=2000, derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class UnchangedAsNull(PgOutputDecoder):
    """Bug: 'u' (unchanged TOAST, "not sent") decoded as NULL, so the row loses its value."""

    def decode(self, payload: bytes) -> m.PgOutputMessage:
        msg = super().decode(payload)
        if isinstance(msg, m.Update):
            new = tuple(None if v is UNCHANGED else v for v in msg.new_tuple)
            return m.Update(msg.xid, msg.relation_id, msg.old_kind, msg.old_tuple, new)
        return msg


class TailByProtocolVersion(PgOutputDecoder):
    """Bug: Stream Abort's abort LSN and time read whenever protocol_version >= 4."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._abort_tail = self.protocol_version >= 4


def _wrong(decoder_class: type[PgOutputDecoder], stream: Stream) -> bool:
    decoder = decoder_class(**stream.options)
    try:
        return [decoder.decode(p) for p in stream.payloads] != list(stream.messages)
    except DecodeError:
        return True


def test_unchanged_read_as_null_is_found_and_shrunk() -> None:
    example = find(streams(context=ProtocolContext(1), max_steps=3, max_changes=3), lambda s: _wrong(UnchangedAsNull, s), settings=SEARCH)
    assert not _wrong(PgOutputDecoder, example)
    kinds = [type(msg).__name__ for msg in example.messages]
    # Small: a transaction with the Update that has a 'u' value. (The minimum is Begin,
    # Relation, Update, Commit; how close hypothesis's shrinker gets varies by version.)
    assert kinds[0] == "Begin" and kinds[-1] == "Commit" and len(kinds) <= 6, kinds
    updates = [msg for msg in example.messages if isinstance(msg, m.Update) and UNCHANGED in msg.new_tuple]
    assert updates, kinds


def test_stream_abort_tail_by_protocol_version_is_found_and_shrunk() -> None:
    example = find(streams(context=ProtocolContext(4, "on"), max_steps=3, max_changes=3), lambda s: _wrong(TailByProtocolVersion, s),
                   settings=SEARCH)
    assert not _wrong(PgOutputDecoder, example)
    kinds = [type(msg).__name__ for msg in example.messages]
    # Small: one streamed block and its abort (the minimum is Stream Start, a change and the
    # Relation it needs, Stream Stop, Stream Abort; how close the shrinker gets varies).
    assert kinds[0] == "StreamStart" and "StreamAbort" in kinds, kinds
    assert len(kinds) <= 7, kinds
