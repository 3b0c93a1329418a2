"""Garbage never escapes as another exception and never hangs a reader: random bytes and
mutated real conversations give messages or DecodeError, the same whole or byte by byte;
generated messages of every class come back equal through the readers."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec import DecodeError
from pgwire_spec.wire import (
    CLOSED,
    NEED_DATA,
    BackendReader,
    FrontendReader,
    GSSENCResponse,
    PasswordMessage,
    SASLInitialResponse,
    SASLResponse,
    SSLResponse,
    StartupMessage,
    WireMessage,
    encode_message,
)
from tests.wire.conversation import BACKEND_BYTES, FRONTEND_BYTES
from tests.wire.st_messages import any_message

Reader = FrontendReader | BackendReader


def _frontend() -> FrontendReader:
    return FrontendReader()


def _frontend_started() -> FrontendReader:
    reader = FrontendReader()
    reader.feed(encode_message(StartupMessage()))
    assert isinstance(reader.next_event(), StartupMessage)
    return reader


def _backend() -> BackendReader:
    return BackendReader()


def _backend_ssl() -> BackendReader:
    reader = BackendReader()
    reader.expect_ssl_answer()
    return reader


READERS: list[Callable[[], Reader]] = [_frontend, _frontend_started, _backend, _backend_ssl]


def _events(make: Callable[[], Reader], chunks: list[bytes]) -> list[object]:
    """Every event and error, as comparable values. Bounded: each event consumes bytes, so
    more events than bytes would mean a reader that spins."""
    reader = make()
    base = reader.offset  # bytes a reader consumed while it was set up
    total = sum(len(c) for c in chunks)
    out: list[object] = []

    def drain() -> bool:
        while True:
            assert len(out) <= total + 2, "a reader returned more events than it was fed bytes"
            try:
                event = reader.next_event()
            except DecodeError as err:
                assert err.rule and err.expected and err.found
                assert err.offset is not None and base <= err.offset <= base + total
                out.append(("error", err.rule, err.offset, err.index))
                if reader._error is err:
                    return False
                continue
            if event is NEED_DATA:
                return True
            if event is CLOSED:
                out.append("closed")
                return False
            assert isinstance(event, WireMessage)
            out.append(event)

    for chunk in chunks:
        reader.feed(chunk)
        if not drain():
            return out
    reader.feed(b"")
    drain()
    assert out and (out[-1] == "closed" or out[-1][0] == "error"), out[-1:]  # type: ignore[index]
    return out


def _check(data: bytes) -> None:
    for make in READERS:
        whole = _events(make, [data])
        assert _events(make, [data[i : i + 1] for i in range(len(data))]) == whole


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes(data: bytes) -> None:
    _check(data)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([FRONTEND_BYTES, BACKEND_BYTES]), st.data())
def test_mutated_conversations(stream: bytes, data: st.DataObject) -> None:
    buf = bytearray(stream)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(buf) - 1))
        how = data.draw(st.sampled_from(["set", "insert", "delete"]))
        if how == "set":
            buf[at] = data.draw(st.integers(0, 255))
        elif how == "insert":
            buf[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            del buf[at : at + data.draw(st.integers(1, 4))]
    # Byte-by-byte on ~1.5 kB streams is the slow part: compare whole vs a few chunkings.
    blob = bytes(buf)
    for make in READERS:
        whole = _events(make, [blob])
        cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(blob) - 1)), max_size=30)))
        chunks = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)])]
        assert _events(make, chunks) == whole


_PASSWORD_KIND = {PasswordMessage: "password", SASLInitialResponse: "sasl-initial", SASLResponse: "sasl-response"}


@settings(max_examples=400, deadline=None)
@given(any_message)
def test_every_generated_message_comes_back_through_its_reader(message: WireMessage) -> None:
    data = encode_message(message)
    reader: Reader
    if isinstance(message, (SSLResponse, GSSENCResponse)):
        reader = BackendReader()
        (reader.expect_ssl_answer if isinstance(message, SSLResponse) else reader.expect_gssenc_answer)()
    elif "F" in message.sender and message.tag is None:
        reader = FrontendReader()
    elif "F" in message.sender:
        reader = _frontend_started()
        reader.expect_password(_PASSWORD_KIND.get(type(message), "password"))  # type: ignore[arg-type]
    else:
        reader = BackendReader()
    for i in range(len(data)):
        reader.feed(data[i : i + 1])
        event = reader.next_event()
        if i < len(data) - 1:
            assert event is NEED_DATA
    assert event == message
    assert encode_message(event) == data  # type: ignore[arg-type]
