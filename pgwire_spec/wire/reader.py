"""Sans-IO readers of a v3 byte stream (h11 style): feed bytes, take messages.

::

    reader = FrontendReader()          # what a server reads
    reader.feed(data_from_socket)
    for message in reader:             # every message the bytes so far hold
        handle(message)

``next_event()`` returns one message, :data:`NEED_DATA` when the buffered bytes do not
hold a whole message yet, or :data:`CLOSED` once ``feed(b"")`` said the stream ended and
everything before was consumed. Feeding the same bytes whole or one by one gives the same
messages and the same errors.

Errors are :class:`~pgwire_spec.errors.DecodeError` with the rule, the byte offset in the
stream (counted from the first byte fed), the message's tag and its index in the stream.
Two kinds:

* framing errors (``unknown-message-tag``, ``length-out-of-range``, ``truncated`` at the end
  of the stream, ``unsupported-protocol-version``, ``unknown-request-code``,
  ``unexpected-data`` after Terminate or CancelRequest, and any error in the startup
  phase): the stream cannot be followed any further; the reader keeps raising the same
  error and drops bytes fed after it. PostgreSQL ends the connection on these too.
* content errors (a message whose length is sound but whose contents are not: a string
  without its NUL, a bad ReadyForQuery status, an unknown authentication code): the
  message's bytes are consumed, the error is raised once, and reading goes on with the
  next message, as PostgreSQL answers such a message with an ERROR and reads on.

The length of a message is checked as soon as its 5-byte header (4 in the startup phase)
is buffered, before its body is waited for, against ``max_message_length`` (default
1 GiB), so an absurd length field never makes a reader wait for, or hold, a gigabyte.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, Literal

from ..errors import DecodeError
from . import _codec
from ._codec import BACKEND, FRONTEND, STARTUP, Choice, decode_body, select
from .messages import (
    CancelRequest,
    GSSENCResponse,
    SSLResponse,
    StartupMessage,
    Terminate,
    WireMessage,
)

__all__ = [
    "NEED_DATA",
    "CLOSED",
    "NeedData",
    "Closed",
    "FrontendReader",
    "BackendReader",
    "PasswordKind",
    "DEFAULT_MAX_MESSAGE_LENGTH",
    "MAX_STARTUP_PACKET_LENGTH",
]

#: Default bound of a message's length field: 1 GiB.
DEFAULT_MAX_MESSAGE_LENGTH: Final = 1 << 30
#: PostgreSQL's postmaster refuses startup packets longer than this (MAX_STARTUP_PACKET_LENGTH).
MAX_STARTUP_PACKET_LENGTH: Final = 10000

PasswordKind = Literal["password", "sasl-initial", "sasl-response"]
_PASSWORD_CODECS: dict[str, str] = {
    "password": "PasswordMessage",
    "sasl-initial": "SASLInitialResponse",
    "sasl-response": "SASLResponse",
}

_I32 = struct.Struct(">i")


class NeedData:
    """The type of :data:`NEED_DATA`."""

    __slots__ = ()
    _instance: NeedData | None = None

    def __new__(cls) -> NeedData:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NEED_DATA"

    def __reduce__(self) -> str:
        return "NEED_DATA"


class Closed:
    """The type of :data:`CLOSED`."""

    __slots__ = ()
    _instance: Closed | None = None

    def __new__(cls) -> Closed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CLOSED"

    def __reduce__(self) -> str:
        return "CLOSED"


#: ``next_event()``: the buffered bytes do not hold a whole message yet; feed more.
NEED_DATA: Final = NeedData()
#: ``next_event()``: the stream ended (``feed(b"")``) and every message was read.
CLOSED: Final = Closed()

_STARTUP, _MESSAGES, _ENDED = "startup", "messages", "ended"
# Compact the buffer once this many consumed bytes sit at its front.
_COMPACT_AT = 1 << 16


class _Reader:
    """What both readers share: the buffer, framing, bounds and error handling."""

    _sender = ""
    _table: dict[str | None, tuple[Choice, ...]] = {}

    def __init__(self, *, max_message_length: int = DEFAULT_MAX_MESSAGE_LENGTH) -> None:
        if not isinstance(max_message_length, int) or not 4 <= max_message_length <= _codec.MAX_LENGTH:
            raise ValueError(
                f"expected max_message_length from 4 to {_codec.MAX_LENGTH}, found {max_message_length!r}"
            )
        self.max_message_length = max_message_length
        self._buf = bytearray()
        self._pos = 0  # read position in _buf
        self._base = 0  # stream offset of _buf[0]
        self._index = 0  # messages consumed so far
        self._eof = False
        self._error: DecodeError | None = None
        self._phase = _MESSAGES
        self._known = " ".join(sorted(t for t in self._table if t is not None))

    # -- public ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Add bytes read from the peer; ``b""`` means the peer closed the stream."""
        if not data:
            self._eof = True
            return
        if self._eof:
            raise ValueError("bytes fed after the end of the stream (feed(b''))")
        if self._error is not None:
            return  # the stream cannot be followed any more: keep nothing
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet consumed by a message."""
        return len(self._buf) - self._pos

    @property
    def offset(self) -> int:
        """Stream offset of the next unread byte."""
        return self._base + self._pos

    def needs_more(self) -> bool:
        """True when the buffered bytes do not hold the whole next message (so reading
        more from the peer is the only way on); a shell that reads only then, or while
        little is buffered, bounds what a peer can make it hold (backpressure)."""
        if self._error is not None or self._phase == _ENDED:
            return False
        avail = self.buffered
        head = 4 if self._phase == _STARTUP else 5
        if avail < head:
            return True
        (length,) = _I32.unpack_from(self._buf, self._pos + head - 4)
        limit = min(self.max_startup_length, self.max_message_length) if head == 4 else self.max_message_length
        if not 4 <= length <= limit:
            return False  # next_event() fails it: nothing more is worth reading
        return bool(avail < length + head - 4)

    def next_event(self) -> WireMessage | NeedData | Closed:
        """The next message, :data:`NEED_DATA` or :data:`CLOSED`; raises DecodeError."""
        if self._error is not None:
            raise self._error
        return self._next()

    def __iter__(self) -> Iterator[WireMessage]:
        """The messages the buffered bytes hold (stops at NEED_DATA or CLOSED)."""
        while True:
            event = self.next_event()
            if isinstance(event, (NeedData, Closed)):
                return
            yield event

    # -- internals ---------------------------------------------------------------------------
    def _next(self) -> WireMessage | NeedData | Closed:
        if self._phase == _ENDED:
            return self._ended()
        if self._phase == _STARTUP:
            return self._startup()
        return self._tagged()

    def _fail(self, rule: str, *, expected: str, found: str, offset: int, field: str | None = None,
              tag: str | None = None) -> DecodeError:
        """A framing error: raised now and on every later call."""
        return self._stick(DecodeError(rule, expected=expected, found=found, offset=offset, field=field,
                                       tag=tag, index=self._index))

    def _stick(self, error: DecodeError) -> DecodeError:
        self._error = error
        self._buf = bytearray()
        self._pos = 0
        return error

    def _boundary(self) -> NeedData | Closed:
        """Nothing buffered, between two messages."""
        return CLOSED if self._eof else NEED_DATA

    def _short(self, need: int, what: str, tag: str | None) -> NeedData:
        """Fewer bytes than *need* are buffered: wait, or fail if the stream ended."""
        if not self._eof:
            return NEED_DATA
        have = self.buffered
        raise self._fail(
            "truncated", expected=f"{need} byte(s) of {what}",
            found=f"the end of the stream after {have} byte(s)", offset=self.offset + have, tag=tag,
        )

    def _consume(self, n: int) -> None:
        self._pos += n
        self._index += 1
        if self._pos == len(self._buf):
            self._base += self._pos
            self._buf = bytearray()
            self._pos = 0
        elif self._pos >= _COMPACT_AT and self._pos * 2 > len(self._buf):
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0

    def _ended(self) -> NeedData | Closed:
        if self.buffered:
            raise self._fail(
                "unexpected-data", expected="the end of the stream (after Terminate or CancelRequest)",
                found=f"{self.buffered} more byte(s)", offset=self.offset,
            )
        return CLOSED if self._eof else NEED_DATA

    max_startup_length = MAX_STARTUP_PACKET_LENGTH

    def _startup(self) -> WireMessage | NeedData | Closed:
        raise AssertionError("only a FrontendReader has a startup phase")

    def _choose(self, tag: str, group: tuple[Choice, ...], body: bytes) -> Choice | None:
        return select(group, body)

    def _context(self, tag: str) -> dict[str, str] | None:
        return None

    def _after(self, message: WireMessage) -> None:
        """Phase changes a message brings."""

    def _tagged(self) -> WireMessage | NeedData | Closed:
        buf, pos, avail = self._buf, self._pos, self.buffered
        if avail == 0:
            return self._boundary()
        tag = chr(buf[pos])
        group = self._table.get(tag)
        if group is None:
            raise self._fail(
                "unknown-message-tag", expected=f"a {self._sender} message tag ({self._known})",
                found=_codec_byte(buf[pos]), offset=self.offset, field="tag", tag=tag,
            )
        if avail < 5:
            return self._short(5, f"the '{tag}' message header", tag)
        (length,) = _I32.unpack_from(buf, pos + 1)
        if not 4 <= length <= self.max_message_length:
            raise self._fail(
                "length-out-of-range", expected=f"a length from 4 to {self.max_message_length}",
                found=str(length), offset=self.offset + 1, field="length", tag=tag,
            )
        if avail < 1 + length:
            return self._short(1 + length, f"the '{tag}' message", tag)
        start = self.offset + 5
        body = bytes(buf[pos + 5 : pos + 1 + length])
        index = self._index
        context = self._context(tag)
        self._consume(1 + length)
        choice = self._choose(tag, group, body)
        if choice is None:
            raise _no_choice(tag, group, body, start, index)
        message = decode_body(choice.codec, body, base=start, tag=tag, index=index, context=context)
        self._after(message)
        return message


def _codec_byte(k: int) -> str:
    return f"0x{k:02x} ({chr(k)!r})"


def _no_choice(tag: str | None, group: tuple[Choice, ...], body: bytes, start: int, index: int) -> DecodeError:
    """No member of a dispatch group matches the constants the contents start with."""
    width = min(len(c.prefix) for c in group)
    codes = ", ".join(f"{c.label} {c.codec.name}" for c in group)
    where = f"'{tag}'" if tag is not None else "a startup packet"
    if len(body) < width:
        return DecodeError(
            "truncated", expected=f"the code of {where} ({width} bytes)",
            found=f"{len(body)} byte(s)", offset=start + len(body), field="code", tag=tag, index=index,
        )
    (found,) = _I32.unpack_from(body, 0) if width == 4 else (body[:width].hex(),)
    return DecodeError(
        "unknown-message-code", expected=f"a code of {where}: {codes}", found=str(found),
        offset=start, field="code", tag=tag, index=index,
    )


class FrontendReader(_Reader):
    """What a server reads from a client.

    Starts in the startup phase: untagged packets (SSLRequest, GSSENCRequest,
    CancelRequest, StartupMessage; at most 10000 bytes, as the postmaster allows). After a
    StartupMessage, tagged messages. A 'p' message is read as the kind last announced with
    :meth:`expect_password` (then back to ``'password'``). After Terminate or CancelRequest
    nothing more may come.

    After answering an SSLRequest with 'S' the bytes are TLS: feed the reader what TLS
    decrypts.
    """

    _sender = "frontend"
    _table = FRONTEND

    def __init__(self, *, max_message_length: int = DEFAULT_MAX_MESSAGE_LENGTH,
                 max_startup_length: int = MAX_STARTUP_PACKET_LENGTH) -> None:
        super().__init__(max_message_length=max_message_length)
        if not isinstance(max_startup_length, int) or not 8 <= max_startup_length <= MAX_STARTUP_PACKET_LENGTH + 4:
            raise ValueError(f"expected max_startup_length from 8 to {MAX_STARTUP_PACKET_LENGTH + 4}, "
                             f"found {max_startup_length!r}")
        #: Longest startup packet read, its length field included (PostgreSQL reads a body
        #: of at most 10000 bytes after the length).
        self.max_startup_length = max_startup_length
        self._phase = _STARTUP
        self._password: PasswordKind = "password"

    @property
    def in_startup(self) -> bool:
        """True until a StartupMessage was read."""
        return self._phase == _STARTUP

    def expect_password(self, kind: PasswordKind) -> None:
        """How the next 'p' message is read: ``'password'`` (PasswordMessage, the default),
        ``'sasl-initial'`` (SASLInitialResponse) or ``'sasl-response'`` (SASLResponse)."""
        if kind not in _PASSWORD_CODECS:
            raise ValueError(f"expected one of {', '.join(_PASSWORD_CODECS)}, found {kind!r}")
        self._password = kind

    def _choose(self, tag: str, group: tuple[Choice, ...], body: bytes) -> Choice | None:
        if tag == "p":
            name = _PASSWORD_CODECS[self._password]
            self._password = "password"
            return next(c for c in group if c.codec.name == name)
        return select(group, body)

    def _context(self, tag: str) -> dict[str, str] | None:
        return {"password_kind": self._password} if tag == "p" else None

    def _after(self, message: WireMessage) -> None:
        if isinstance(message, Terminate):
            self._phase = _ENDED

    def _startup(self) -> WireMessage | NeedData | Closed:
        buf, pos, avail = self._buf, self._pos, self.buffered
        if avail < 4:
            if avail == 0:
                return self._boundary()
            return self._short(4, "a startup packet's length", None)
        (length,) = _I32.unpack_from(buf, pos)
        limit = min(self.max_startup_length, self.max_message_length)
        if not 8 <= length <= limit:
            raise self._fail(
                "length-out-of-range", expected=f"a startup packet length from 8 to {limit}",
                found=str(length), offset=self.offset, field="length",
            )
        if avail < length:
            return self._short(length, "a startup packet", None)
        start = self.offset + 4
        body = bytes(buf[pos + 4 : pos + length])
        (code,) = _I32.unpack_from(body, 0)
        index = self._index
        choice = select(STARTUP[None], body)
        assert choice is not None  # StartupMessage is the fallback
        if choice.codec.cls is StartupMessage and code >> 16 != 3:
            if code >> 16 == 1234:
                raise self._fail(
                    "unknown-request-code",
                    expected="80877102 (CancelRequest), 80877103 (SSLRequest) or 80877104 (GSSENCRequest)",
                    found=f"{code} (1234/{code & 0xFFFF})", offset=start, field="code",
                )
            raise self._fail(
                "unsupported-protocol-version", expected="protocol 3.x (196608 + minor)",
                found=f"{code} ({code >> 16}.{code & 0xFFFF})", offset=start, field="protocol_version",
            )
        self._consume(length)
        try:
            message = decode_body(choice.codec, body, base=start, tag=None, index=index)
        except DecodeError as err:
            # PostgreSQL: "invalid startup packet layout" is fatal.
            raise self._stick(err) from None
        if isinstance(message, StartupMessage):
            self._phase = _MESSAGES
        elif isinstance(message, CancelRequest):
            self._phase = _ENDED
        return message


class BackendReader(_Reader):
    """What a client reads from a server: tagged messages from the first byte.

    After sending SSLRequest (or GSSENCRequest), call :meth:`expect_ssl_answer` (or
    :meth:`expect_gssenc_answer`): the next byte is then read as the server's one-byte
    answer, an :class:`SSLResponse` (``GSSENCResponse``). A server too old for the request
    may answer with an ErrorResponse instead, which is read as such.
    """

    _sender = "backend"
    _table = BACKEND

    def __init__(self, *, max_message_length: int = DEFAULT_MAX_MESSAGE_LENGTH) -> None:
        super().__init__(max_message_length=max_message_length)
        self._answer: type[SSLResponse] | type[GSSENCResponse] | None = None

    def expect_ssl_answer(self) -> None:
        """The next byte is the answer to SSLRequest: 'S' or 'N'."""
        self._answer = SSLResponse

    def expect_gssenc_answer(self) -> None:
        """The next byte is the answer to GSSENCRequest: 'G' or 'N'."""
        self._answer = GSSENCResponse

    def _next(self) -> WireMessage | NeedData | Closed:
        if self._answer is not None:
            if self.buffered == 0:
                return self._boundary()
            cls = self._answer
            yes = "S" if cls is SSLResponse else "G"
            byte = chr(self._buf[self._pos])
            if byte in (yes, "N"):
                self._answer = None
                self._consume(1)
                return cls(byte == yes)
            if byte != "E":
                request = "SSLRequest" if cls is SSLResponse else "GSSENCRequest"
                raise self._fail(
                    "unexpected-byte", expected=f"'{yes}' or 'N' (the answer to {request}) or an ErrorResponse",
                    found=_codec_byte(ord(byte)), offset=self.offset, tag=None,
                )
            self._answer = None
        return super()._next()
