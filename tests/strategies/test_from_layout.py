"""Messages drawn from their catalogue entry alone (a message kind without a hand-written
draw): they encode, and decode back equal, in the context they were drawn for."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pgwire_spec import decode_message, encode
from pgwire_spec._strategies._messages import _context_for, from_layout
from pgwire_spec.pgoutput import _catalogue
from pgwire_spec.pgoutput import messages as m

# Kinds whose every field is a plain value: the layout says enough to draw them.
_PLAIN = [e.cls for e in _catalogue.ENTRIES.values()
          if all(f.type not in ("TupleData", "Array") and not f.optional and f.when != "old_kind"
                 for f in e.fields)]


def test_plain_kinds_are_most_of_them() -> None:
    assert {m.Begin, m.Commit, m.StreamAbort, m.RollbackPrepared, m.LogicalMessage} <= set(_PLAIN)


@pytest.mark.parametrize("cls", _PLAIN, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_drawn_from_layout_round_trips(cls: type[m.PgOutputMessage], data: st.DataObject) -> None:
    ctx = data.draw(_context_for(cls))
    inside = cls.tag in _catalogue.STREAMED_XID and ctx.streaming != "off" and data.draw(st.booleans())
    xid = data.draw(st.integers(3, 2**32 - 1)) if inside else None
    msg = data.draw(st.composite(lambda draw: from_layout(draw, cls, ctx, xid))())
    payload = encode(msg)
    assert decode_message(payload, protocol_version=ctx.protocol_version, streaming=ctx.streaming,
                          in_stream=inside) == msg
    for name, documented in _catalogue.FACTS[cls.__name__].values.items():
        if "." not in name:
            assert getattr(msg, name) in documented


@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_a_layout_with_tuples_needs_its_own_draw(data: st.DataObject) -> None:
    ctx = data.draw(_context_for(m.Insert))
    with pytest.raises(InvalidArgument, match="Insert.new_tuple"):
        from_layout(data.draw, m.Insert, ctx, None)
