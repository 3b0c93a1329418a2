"""The generated pgoutput codec: one decoder and encoder per layout of ``grammar``."""

from __future__ import annotations

from typing import Any

from .._codegen import Family
from . import grammar, messages

FAMILY = Family(
    "pgoutput message",
    grammar.LAYOUTS,
    dict(messages.MESSAGE_TYPES),
    {id(grammar.RelationColumn): messages.RelationColumn},
)
CODECS = FAMILY.codecs
_DECODERS = FAMILY.decoders


def decode_payload(
    data: bytes, in_stream: bool, abort_tail: bool, binary_ok: bool = True
) -> messages.PgOutputMessage:
    """Decode one pgoutput message; any failure becomes a precise DecodeError."""
    return FAMILY.decode(data, in_stream, abort_tail, binary_ok)  # type: ignore[no-any-return]


def encode(message: Any) -> bytes:
    """Encode a pgoutput message object to its payload bytes."""
    return FAMILY.encode(message)
