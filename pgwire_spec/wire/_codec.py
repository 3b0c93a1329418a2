"""The generated codecs of the v3 messages, the dispatch tables derived from the grammar,
and the framing (Byte1 tag, Int32 length).

Each layout of :mod:`grammar` gets its decoder and encoder from the code generator
(:func:`pgwire_spec._codegen.generate`). ``Family`` is not used here: it dispatches on the
first byte of a payload that starts with its tag, while v3 layouts start after the tag and
several messages share one tag ('R' told apart by a leading Int32 code, 'p' by context). So
the dispatch tables below group the layouts by their class's ``tag`` and tell the members
of a group apart by the constants their layout starts with.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from construct import Struct

from .. import _ir
from .._codegen import Codec, Fail, Family, decode_traced, generate
from ..errors import DecodeError, EncodeError
from . import grammar
from .messages import (
    MESSAGE_TYPES,
    FieldDescription,
    GSSENCResponse,
    SSLResponse,
    WireMessage,
)

__all__ = [
    "CODECS",
    "Choice",
    "STARTUP",
    "FRONTEND",
    "BACKEND",
    "select",
    "decode_body",
    "encode_body",
    "encode_message",
    "frame",
]

NESTED: dict[int, type] = {id(grammar.FieldDescription): FieldDescription}

CODECS: dict[str, Codec] = {
    name: generate(name, layout, MESSAGE_TYPES[name], NESTED) for name, layout in grammar.LAYOUTS.items()
}
_BY_CLASS: dict[type, Codec] = {c.cls: c for c in CODECS.values()}

_I32 = struct.Struct(">i")
#: The largest value an Int32 length field can hold.
MAX_LENGTH = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class Choice:
    """A member of a dispatch group: the constant bytes its contents start with (empty for
    none) and, for messages, the words naming those constants (``Int32(5)``)."""

    prefix: bytes
    label: str
    codec: Codec


def _leading_consts(layout: _ir.Layout) -> tuple[bytes, str]:
    raw, labels = b"", []
    for f in layout.fields:
        if f.const is None:
            break
        if isinstance(f.const, bytes):
            raw += f.const
            labels.append(repr(f.const))
        else:
            assert f.fmt is not None
            raw += struct.pack(">" + f.fmt, f.const)
            labels.append(f"{_ir.FMT_NAMES[f.fmt]}({f.const})")
    return raw, " ".join(labels)


def _table(layouts: dict[str, Struct]) -> dict[str | None, tuple[Choice, ...]]:
    groups: dict[str | None, list[Choice]] = {}
    for name, layout in layouts.items():
        prefix, label = _leading_consts(_ir.lower(name, layout))
        groups.setdefault(MESSAGE_TYPES[name].tag, []).append(Choice(prefix, label, CODECS[name]))
    # Longest prefix first; a member without constants is the group's fallback.
    return {tag: tuple(sorted(group, key=lambda c: -len(c.prefix))) for tag, group in groups.items()}


#: Dispatch groups by tag (None: the untagged startup-phase messages).
STARTUP = _table(grammar.STARTUP_LAYOUTS)
FRONTEND = _table(grammar.FRONTEND_LAYOUTS)
BACKEND = _table(grammar.BACKEND_LAYOUTS)

# Groups whose members the bytes cannot tell apart: only 'p' (the server knows from its
# authentication state which one comes next).
CONTEXTUAL = {
    tag
    for table in (STARTUP, FRONTEND, BACKEND)
    for tag, group in table.items()
    if len({c.prefix for c in group}) != len(group)
}
assert CONTEXTUAL == {"p"}, CONTEXTUAL


def select(group: tuple[Choice, ...], body: bytes) -> Choice | None:
    """The member of *group* whose constants *body* starts with (or the fallback)."""
    for choice in group:
        if body.startswith(choice.prefix):
            return choice
    return None


def decode_body(
    codec: Codec,
    body: bytes,
    *,
    base: int,
    tag: str | None,
    index: int | None,
    context: dict[str, Any] | None = None,
) -> WireMessage:
    """Decode the contents of one message; a failure becomes a DecodeError whose offset is
    *base* (the stream offset of the contents) plus the offset inside them."""
    try:
        return codec.decode(body, False, False)  # type: ignore[no-any-return]
    except (Fail, struct.error, IndexError, ValueError, TypeError):
        pass
    # The tracing decoder: a precise error, or the message when only the fast path's
    # strict UTF-8 refused its text.
    try:
        return decode_traced(codec, body, False, False)  # type: ignore[no-any-return]
    except DecodeError as err:
        raise DecodeError(
            err.rule,
            expected=err.expected,
            found=err.found,
            offset=base + (err.offset or 0),
            field=err.field,
            tag=tag,
            index=index,
            context=context,
        ) from None


class _Hint:
    """What ``Family._field_hint`` reads: the layouts by class name."""

    layouts = grammar.LAYOUTS


def encode_body(message: Any) -> bytes:
    """The contents of a message (what follows the tag and length)."""
    codec = _BY_CLASS.get(type(message))
    if codec is None:
        raise EncodeError(f"not a frontend/backend message with contents: {type(message).__name__}")
    try:
        return codec.encode(message)
    except EncodeError as exc:
        raise EncodeError(f"cannot encode {type(message).__name__}: {exc}") from None
    except (struct.error, TypeError, AttributeError, UnicodeError, OverflowError, ValueError) as exc:
        hint = Family._field_hint(_Hint, message, exc)  # type: ignore[arg-type]
        raise EncodeError(f"cannot encode {type(message).__name__}: {hint}") from None


def frame(tag: str | None, body: bytes) -> bytes:
    """Tag (if any), Int32 length counting itself, contents."""
    length = len(body) + 4
    if length > MAX_LENGTH:
        raise EncodeError(f"a message is at most {MAX_LENGTH} bytes long, found {length}")
    head = _I32.pack(length)
    return (tag.encode("latin-1") + head if tag is not None else head) + body


def encode_message(message: WireMessage) -> bytes:
    """The whole message as it goes on the wire: tag, Int32 length, contents (no tag for
    the startup-phase messages; one byte for SSLResponse and GSSENCResponse)."""
    if isinstance(message, SSLResponse):
        return b"S" if message.accepted else b"N"
    if isinstance(message, GSSENCResponse):
        return b"G" if message.accepted else b"N"
    body = encode_body(message)
    return frame(type(message).tag, body)
