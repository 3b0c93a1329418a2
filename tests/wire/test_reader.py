"""FrontendReader and BackendReader: a real conversation's bytes, whole, byte by byte and in
random chunks; phases; framing bounds; errors and where they leave the reader."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec import DecodeError, XLogData, decode_copy_data
from pgwire_spec.wire import (
    CLOSED,
    NEED_DATA,
    BackendReader,
    CancelRequest,
    CopyData,
    FrontendReader,
    GSSENCRequest,
    GSSENCResponse,
    PasswordMessage,
    Query,
    ReadyForQuery,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    SSLResponse,
    StartupMessage,
    Terminate,
    encode_message,
)
from pgwire_spec.wire import decode_message as decode_wire
from tests.wire.conversation import (
    BACKEND_BYTES,
    BACKEND_MESSAGES,
    FRONTEND_BYTES,
    FRONTEND_MESSAGES,
    SCRAM_BACKEND,
    SCRAM_FRONTEND,
)
from tests.wire.vectors import i32, s, tagged, untagged

Reader = FrontendReader | BackendReader
Event = tuple[str, object]


def _backend() -> BackendReader:
    reader = BackendReader()
    reader.expect_ssl_answer()  # the conversation starts with SSLRequest
    return reader


def _drain(reader: Reader, out: list[Event], react: Callable[[Reader, object], None] | None = None) -> bool:
    """Take every event; record messages and errors; False once the stream is over."""
    while True:
        try:
            event = reader.next_event()
        except DecodeError as err:
            out.append(("error", (err.rule, err.offset, err.tag, err.index)))
            if reader._error is err:  # a framing error: the stream is over
                return False
            continue
        if event is NEED_DATA:
            return True
        if event is CLOSED:
            out.append(("closed", None))
            return False
        out.append(("message", event))
        if react is not None:
            react(reader, event)


def _run(reader: Reader, chunks: list[bytes], react: Callable[[Reader, object], None] | None = None) -> list[Event]:
    out: list[Event] = []
    for chunk in chunks:
        reader.feed(chunk)
        if not _drain(reader, out, react):
            return out
    reader.feed(b"")
    _drain(reader, out, react)
    return out


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def _messages(events: list[Event]) -> list[object]:
    return [e for kind, e in events if kind == "message"]


# -- the conversation ------------------------------------------------------------------------


def test_server_reads_the_client_side_whole_and_byte_by_byte() -> None:
    whole = _run(FrontendReader(), [FRONTEND_BYTES])
    assert _messages(whole) == FRONTEND_MESSAGES
    assert whole[-1] == ("closed", None)
    assert _run(FrontendReader(), _bytewise(FRONTEND_BYTES)) == whole


def test_client_reads_the_server_side_whole_and_byte_by_byte() -> None:
    whole = _run(_backend(), [BACKEND_BYTES])
    assert _messages(whole) == BACKEND_MESSAGES
    assert _run(_backend(), _bytewise(BACKEND_BYTES)) == whole


def test_copy_data_carries_replication_and_pgoutput_messages() -> None:
    from pgwire_spec import decode_message as decode_pgoutput

    tags = []
    for m in BACKEND_MESSAGES:
        if isinstance(m, CopyData):
            payload = decode_copy_data(m.data)
            if isinstance(payload, XLogData):
                tags.append(decode_pgoutput(payload.data).tag)
    assert tags == ["B", "R", "I", "I", "C"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_chunking_gives_the_same_events(data: st.DataObject) -> None:
    for make, stream in ((FrontendReader, FRONTEND_BYTES), (_backend, BACKEND_BYTES)):
        cuts = sorted(data.draw(st.sets(st.integers(1, len(stream) - 1), max_size=40)))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
        assert _run(make(), chunks) == _run(make(), [stream])


def _scram_server(reader: Reader, message: object) -> None:
    # What a server does: announce which 'p' comes next, from its authentication state.
    assert isinstance(reader, FrontendReader)
    if isinstance(message, StartupMessage):
        reader.expect_password("sasl-initial")
    elif isinstance(message, SASLInitialResponse):
        reader.expect_password("sasl-response")


def test_scram_password_messages_by_context() -> None:
    stream = b"".join(encode_message(m) for m in SCRAM_FRONTEND)
    whole = _run(FrontendReader(), [stream], _scram_server)
    assert _messages(whole) == SCRAM_FRONTEND
    assert _run(FrontendReader(), _bytewise(stream), _scram_server) == whole
    backend = b"".join(encode_message(m) for m in SCRAM_BACKEND)
    assert _messages(_run(BackendReader(), [backend])) == SCRAM_BACKEND


def test_password_kind_applies_to_the_next_p_only() -> None:
    reader = FrontendReader()
    reader.feed(encode_message(StartupMessage(parameters=(("user", "u"),))))
    assert isinstance(reader.next_event(), StartupMessage)
    reader.expect_password("sasl-response")
    reader.feed(encode_message(SASLResponse(b"abc")) + encode_message(PasswordMessage(b"secret")))
    assert reader.next_event() == SASLResponse(b"abc")
    assert reader.next_event() == PasswordMessage(b"secret")
    with pytest.raises(ValueError, match="sasl-initial"):
        reader.expect_password("scram")  # type: ignore[arg-type]


# -- phases ----------------------------------------------------------------------------------


def test_startup_phase_ssl_then_gssenc_then_startup() -> None:
    reader = FrontendReader()
    assert reader.in_startup
    reader.feed(encode_message(SSLRequest()) + encode_message(GSSENCRequest()))
    assert list(reader) == [SSLRequest(), GSSENCRequest()]
    assert reader.in_startup
    reader.feed(encode_message(StartupMessage()) + encode_message(Query("SELECT 1")))
    assert list(reader) == [StartupMessage(), Query("SELECT 1")]
    assert not reader.in_startup


def test_nothing_may_follow_a_cancel_request() -> None:
    reader = FrontendReader()
    reader.feed(encode_message(CancelRequest(7, b"abcd")) + b"Q")
    assert reader.next_event() == CancelRequest(7, b"abcd")
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert (info.value.rule, info.value.offset) == ("unexpected-data", 16)


def test_nothing_may_follow_terminate_but_the_end() -> None:
    reader = FrontendReader()
    reader.feed(encode_message(StartupMessage()) + encode_message(Terminate()))
    assert list(reader) == [StartupMessage(), Terminate()]
    assert reader.next_event() is NEED_DATA
    reader.feed(b"")
    assert reader.next_event() is CLOSED
    assert reader.next_event() is CLOSED


@pytest.mark.parametrize(
    "code, rule",
    [(196608 - 65536, "unsupported-protocol-version"), (80877105, "unknown-request-code"),
     (4 << 16, "unsupported-protocol-version")],
)
def test_startup_codes_that_are_not_v3(code: int, rule: str) -> None:
    reader = FrontendReader()
    reader.feed(untagged(i32(code) + b"\x00"))
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert (info.value.rule, info.value.offset) == (rule, 4)


def test_startup_packet_bounded_like_the_postmaster() -> None:
    reader = FrontendReader()
    reader.feed(i32(10001))
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert info.value.rule == "length-out-of-range" and "8 to 10000" in info.value.expected


def test_ssl_answer_then_messages() -> None:
    reader = BackendReader()
    reader.expect_ssl_answer()
    reader.feed(b"N" + encode_message(ReadyForQuery("I")))
    assert list(reader) == [SSLResponse(False), ReadyForQuery("I")]
    reader = BackendReader()
    reader.expect_gssenc_answer()
    reader.feed(b"G")
    assert reader.next_event() == GSSENCResponse(True)


def test_an_old_server_answers_ssl_request_with_an_error() -> None:
    reader = BackendReader()
    reader.expect_ssl_answer()
    reader.feed(tagged("E", s("SFATAL") + s("C08P01") + s("Munsupported frontend protocol") + b"\x00"))
    assert reader.next_event().code == "08P01"  # type: ignore[union-attr]


def test_a_bad_ssl_answer() -> None:
    reader = BackendReader()
    reader.expect_ssl_answer()
    reader.feed(b"R")
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert info.value.rule == "unexpected-byte" and "'S' or 'N'" in info.value.expected


# -- framing bounds and errors ----------------------------------------------------------------


def test_absurd_length_fails_before_the_body_arrives() -> None:
    reader = BackendReader()
    reader.feed(b"D" + i32(0x7FFFFFF0))  # only the header: the 2 GiB body never comes
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    err = info.value
    assert (err.rule, err.offset, err.field, err.tag) == ("length-out-of-range", 1, "length", "D")
    assert err.found == str(0x7FFFFFF0)


def test_max_message_length_is_configurable() -> None:
    big = encode_message(CopyData(b"x" * 100))
    reader = BackendReader(max_message_length=104)
    reader.feed(big)
    assert reader.next_event() == CopyData(b"x" * 100)
    reader = BackendReader(max_message_length=103)
    reader.feed(big[:5])
    with pytest.raises(DecodeError, match="length-out-of-range"):
        reader.next_event()
    with pytest.raises(ValueError, match="max_message_length"):
        BackendReader(max_message_length=3)


def test_length_below_four() -> None:
    reader = FrontendReader()
    reader.feed(encode_message(StartupMessage()) + b"Q" + i32(3))
    reader.next_event()
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert info.value.rule == "length-out-of-range" and info.value.index == 1


def test_unknown_tag_is_reported_at_once_and_sticks() -> None:
    reader = BackendReader()
    reader.feed(encode_message(ReadyForQuery("I")) + b"A")  # NotificationResponse: not modelled
    assert reader.next_event() == ReadyForQuery("I")
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    err = info.value
    assert (err.rule, err.offset, err.tag, err.index) == ("unknown-message-tag", 6, "A", 1)
    assert "Z" in err.expected and "0x41" in err.found
    reader.feed(b"more bytes are dropped")
    assert reader.buffered == 0
    with pytest.raises(DecodeError) as again:
        reader.next_event()
    assert again.value is err


def test_a_bad_message_body_is_skipped_and_reading_goes_on() -> None:
    reader = BackendReader()
    reader.feed(tagged("Z", b"X") + encode_message(ReadyForQuery("T")))
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert (info.value.rule, info.value.offset, info.value.index) == ("unexpected-byte", 5, 0)
    assert reader.next_event() == ReadyForQuery("T")


def test_end_of_stream_inside_a_message() -> None:
    reader = BackendReader()
    reader.feed(encode_message(ReadyForQuery("I"))[:3])
    assert reader.next_event() is NEED_DATA
    assert reader.buffered == 3
    reader.feed(b"")
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert (info.value.rule, info.value.offset) == ("truncated", 3)
    with pytest.raises(ValueError, match="after the end"):
        reader.feed(b"x")


def test_buffered_and_offsets_across_compaction() -> None:
    one = encode_message(CopyData(b"y" * 1000))
    reader = BackendReader()
    reader.feed(one * 200 + one[:10])
    assert reader.buffered == len(one) * 200 + 10
    assert sum(1 for _ in reader) == 200
    assert reader.buffered == 10 and reader.offset == len(one) * 200
    reader.feed(one[10:] + tagged("Z", b"?"))
    assert reader.next_event() == CopyData(b"y" * 1000)
    with pytest.raises(DecodeError) as info:
        reader.next_event()
    assert info.value.offset == len(one) * 201 + 5 and info.value.index == 201


def test_the_reader_module_is_sans_io() -> None:
    import pgwire_spec.wire  # noqa: F401

    for name in ("pgwire_spec.wire.reader", "pgwire_spec.wire._codec", "pgwire_spec.wire.grammar"):
        module = sys.modules[name]
        assert not {"socket", "asyncio", "selectors"} & set(vars(module)), name


def test_decode_message_wants_exactly_one_message() -> None:
    with pytest.raises(DecodeError) as info:
        decode_wire(encode_message(ReadyForQuery("I")) * 2)
    assert (info.value.rule, info.value.offset) == ("trailing-bytes", 6)
