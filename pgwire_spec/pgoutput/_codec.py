"""The generated pgoutput codec: one decoder and encoder per layout of ``grammar``."""

from __future__ import annotations

import struct
from typing import Any

from .._codegen import Codec, Fail, explain_failure, generate
from ..errors import DecodeError, EncodeError
from . import grammar, messages

_NESTED = {id(grammar.RelationColumn): messages.RelationColumn}

#: Codec by message name (the names of grammar.LAYOUTS and messages.MESSAGE_TYPES).
CODECS: dict[str, Codec] = {
    name: generate(name, layout, messages.MESSAGE_TYPES[name], _NESTED)
    for name, layout in grammar.LAYOUTS.items()
}
#: Codec by tag byte value.
BY_TAG: dict[int, Codec] = {ord(c.cls.tag): c for c in CODECS.values()}  # type: ignore[attr-defined]
_ENCODERS = {c.cls: c.encode for c in CODECS.values()}
_DECODERS = {tag: c.decode for tag, c in BY_TAG.items()}
_ERRORS = (Fail, struct.error, IndexError, ValueError, TypeError)

KNOWN_TAGS = "".join(sorted(chr(t) for t in BY_TAG))


def decode_payload(data: bytes, in_stream: bool, abort_tail: bool) -> messages.PgOutputMessage:
    """Decode one pgoutput message; any failure becomes a precise DecodeError."""
    try:
        return _DECODERS[data[0]](data, in_stream, abort_tail)  # type: ignore[no-any-return]
    except KeyError:
        raise DecodeError(
            "unknown-message-tag",
            expected=f"a pgoutput message tag ({' '.join(KNOWN_TAGS)})",
            found=f"0x{data[0]:02x} ({chr(data[0])!r})",
            offset=0,
            field="tag",
            tag=chr(data[0]),
        ) from None
    except IndexError:
        if not data:
            raise DecodeError(
                "truncated", expected="a message tag", found="an empty payload", offset=0,
                field="tag",
            ) from None
        raise _explain(data, in_stream, abort_tail) from None
    except _ERRORS as exc:
        raise _explain(data, in_stream, abort_tail, exc) from None


def _explain(
    data: bytes, in_stream: bool, abort_tail: bool, exc: BaseException | None = None
) -> DecodeError:
    return explain_failure(BY_TAG[data[0]], data, in_stream, abort_tail, exc or IndexError())


def encode(message: Any) -> bytes:
    """Encode a pgoutput message object to its payload bytes."""
    try:
        fn = _ENCODERS[type(message)]
    except KeyError:
        raise EncodeError(f"not a pgoutput message: {type(message).__name__}") from None
    try:
        return fn(message)  # type: ignore[no-any-return]
    except EncodeError:
        raise
    except (struct.error, TypeError, AttributeError, UnicodeError, OverflowError) as exc:
        raise EncodeError(f"cannot encode {type(message).__name__}: {_field_hint(message, exc)}") from None


def _field_hint(message: Any, exc: BaseException) -> str:
    """Name the field whose value does not fit its wire type."""
    layout = grammar.LAYOUTS[type(message).__name__]
    for sub in layout.subcons:
        name = sub.name
        if name is None or not hasattr(message, name):
            continue
        value = getattr(message, name)
        if value is None:
            continue
        try:
            target = sub.subcon
            if hasattr(target, "thensubcon"):
                target = target.thensubcon
            if hasattr(target, "fmtstr"):
                struct.pack(target.fmtstr, value)
        except (struct.error, TypeError) as bad:
            return f"field {name}={value!r} does not fit {target.fmtstr[1:]!r} ({bad})"
    return str(exc)
