"""The generated codecs against construct's own parse and build of the same layouts (the
grammar is the single source), on the hand-built vectors and on generated messages."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from construct import Container, ListContainer
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec.wire import grammar
from pgwire_spec.wire._codec import CODECS, decode_body, encode_body
from pgwire_spec.wire.messages import MESSAGE_TYPES, WireMessage
from tests.wire.st_messages import STRATEGIES
from tests.wire.vectors import VECTORS, Vector

_LAYOUT_CLASSES = [MESSAGE_TYPES[name] for name in grammar.LAYOUTS]


def _plain(x: Any) -> Any:
    """Message objects and construct containers in one comparable form."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, Container):
        return {k: _plain(v) for k, v in x.items() if not k.startswith("_") and k != "code"}
    if isinstance(x, (list, tuple, ListContainer)):
        return tuple(_plain(v) for v in x)
    return x


def _check(message: WireMessage, body: bytes) -> None:
    layout = grammar.LAYOUTS[type(message).__name__]
    assert _plain(layout.parse(body)) == _plain(message)
    assert layout.build(_plain(message)) == body
    codec = CODECS[type(message).__name__]
    assert decode_body(codec, body, base=0, tag=type(message).tag, index=None) == message


def test_every_class_but_the_single_byte_answers_has_a_layout() -> None:
    assert set(MESSAGE_TYPES) - set(grammar.LAYOUTS) == {"SSLResponse", "GSSENCResponse"}
    for name, layout in grammar.LAYOUTS.items():
        cls = MESSAGE_TYPES[name]
        names = [sc.name for sc in layout.subcons if sc.name != "code"]
        assert names == [f.name for f in dataclasses.fields(cls)], name


@pytest.mark.parametrize("v", VECTORS, ids=[v.name for v in VECTORS])
def test_vectors_against_construct(v: Vector) -> None:
    _check(v.message, v.body)


@settings(max_examples=25, deadline=None)
@given(st.data())
@pytest.mark.parametrize("cls", _LAYOUT_CLASSES, ids=[c.__name__ for c in _LAYOUT_CLASSES])
def test_generated_messages_against_construct(cls: type, data: st.DataObject) -> None:
    message = data.draw(STRATEGIES[cls])
    _check(message, encode_body(message))


def test_layouts_read_like_the_docs() -> None:
    # Each layout carries the docs' words above it in grammar.py.
    source = open(grammar.__file__, encoding="utf-8").read()
    for name in grammar.LAYOUTS:
        head = source.split(f"\n{name} = Struct(")[0].rsplit("\n\n", 1)[-1]
        assert head.startswith("# ") and '"' in head, name
