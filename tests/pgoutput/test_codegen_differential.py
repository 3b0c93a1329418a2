"""The generated Python codec (pgwire_spec/_codegen.py) against construct's own interpreted
parse and build of the same layouts (pgwire_spec/pgoutput/grammar.py), on messages from
pgwire_spec.strategies: single messages of every type in every context, and whole streams
(with the in_stream and abort_tail each message is read with)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from construct import Container, ListContainer
from hypothesis import given

from pgwire_spec._codegen import generate
from pgwire_spec.pgoutput import _codec, grammar
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.strategies import Stream, pgoutput_messages, streams
from tests.strategies._common import PREFIXED, fast


def _plain(x: Any) -> Any:
    """Message objects and construct containers in one comparable form."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, Container):
        return {k: _plain(v) for k, v in x.items()
                if not k.startswith("_") and k != "tag" and not k.endswith("_tag") and k != "relation_count"}
    if isinstance(x, (list, tuple, ListContainer)):
        return tuple(_plain(v) for v in x)
    return x


def _context(msg: m.PgOutputMessage) -> tuple[bool, bool]:
    in_stream = isinstance(msg, PREFIXED) and msg.xid is not None
    abort_tail = isinstance(msg, m.StreamAbort) and msg.abort_lsn is not None
    return in_stream, abort_tail


def check(msg: m.PgOutputMessage, in_stream: bool, abort_tail: bool) -> None:
    name = type(msg).__name__
    layout = grammar.LAYOUTS[name]
    codec = _codec.CODECS[name]
    data = codec.encode(msg)
    # construct reads what the generated encoder wrote, and writes the same bytes
    assert _plain(layout.parse(data, in_stream=in_stream, abort_tail=abort_tail)) == _plain(msg)
    assert layout.build(_plain(msg), in_stream=in_stream, abort_tail=abort_tail) == data
    # the generated decoder reads the same message as construct
    assert codec.decode(data, in_stream, abort_tail) == msg


@pytest.mark.parametrize("cls", list(m.MESSAGE_TYPES.values()), ids=lambda c: c.__name__)
def test_every_layout_against_construct(cls: type[m.PgOutputMessage]) -> None:
    @fast(60)
    @given(pgoutput_messages(cls))
    def run(msg: m.PgOutputMessage) -> None:
        check(msg, *_context(msg))

    run()


@fast(60)
@given(streams())
def test_streams_against_construct(stream: Stream) -> None:
    tail = stream.context.abort_tail
    for msg, inside in zip(stream.messages, stream.in_stream):
        check(msg, inside and isinstance(msg, PREFIXED), tail)


def test_the_made_instances_are_of_the_public_class_and_frozen() -> None:
    """The generated decoders fill a private twin of each class and turn it into the class:
    what comes out is the class itself, equal to one built by its constructor, and frozen."""
    begin = _codec.PY_DECODERS[ord("B")](b"B" + bytes(range(20)), False, False)
    assert type(begin) is m.Begin
    assert begin == m.Begin(begin.final_lsn, begin.commit_time, begin.xid)
    with pytest.raises(dataclasses.FrozenInstanceError):
        begin.xid = 1  # type: ignore[misc]


def test_a_class_without_slots_is_made_through_setattr() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        final_lsn: int
        commit_time: int
        xid: int

    codec = generate("Begin", grammar.LAYOUTS["Begin"], Plain)
    assert "_osa(" in codec.source
    assert codec.decode(_codec.encode(m.Begin(1, 2, 3)), False, False) == Plain(1, 2, 3)
