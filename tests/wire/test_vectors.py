"""Every v3 message, both directions, on hand-built bytes; every truncation point fails cleanly."""

from __future__ import annotations

import json

import pytest

import pgwire_spec
from pgwire_spec import DecodeError, EncodeError, from_json, to_json
from pgwire_spec.wire import (
    AuthenticationMD5Password,
    CommandComplete,
    DataRow,
    ErrorResponse,
    NoticeResponse,
    PasswordMessage,
    Query,
    ReadyForQuery,
    SASLInitialResponse,
    SSLResponse,
    StartupMessage,
    decode_message,
    encode_message,
)
from pgwire_spec.wire.messages import MESSAGE_TYPES
from tests.wire.vectors import VECTORS, Vector, i32, s, tagged, untagged

IDS = [v.name for v in VECTORS]
_SINGLE_BYTE = {"SSLResponse", "GSSENCResponse"}  # read by BackendReader only: tests/wire/test_reader.py


def _decode(v: Vector, data: bytes):
    return decode_message(data, v.sender, password=v.password)


def _reframe(v: Vector, body: bytes) -> bytes:
    return untagged(body) if v.message.tag is None else tagged(v.message.tag, body)


def test_every_message_type_has_a_vector() -> None:
    assert {type(v.message).__name__ for v in VECTORS} == set(MESSAGE_TYPES) - _SINGLE_BYTE


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_decode(v: Vector) -> None:
    assert _decode(v, v.data) == v.message


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_encode(v: Vector) -> None:
    assert encode_message(v.message) == v.data
    assert pgwire_spec.encode(v.message) == v.data


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_both_directions(v: Vector) -> None:
    assert _decode(v, encode_message(v.message)) == v.message
    assert encode_message(_decode(v, v.data)) == v.data


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_json_round_trip(v: Vector) -> None:
    text = json.dumps(to_json(v.message))
    assert from_json(json.loads(text)) == v.message


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_every_truncation_point_is_a_decode_error(v: Vector) -> None:
    """The stream ends inside the message: 'truncated', at the end of what was there."""
    for cut in range(len(v.data)):
        with pytest.raises(DecodeError) as info:
            _decode(v, v.data[:cut])
        err = info.value
        assert err.rule == "truncated", (cut, err)
        assert err.offset == cut, (cut, err)


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_every_truncation_of_the_contents_is_a_decode_error(v: Vector) -> None:
    """The length agrees with shortened contents: a precise error inside the contents, or,
    for contents that end with "the rest of the message", a shorter valid message."""
    for cut in range(len(v.body)):
        data = _reframe(v, v.body[:cut])
        try:
            got = _decode(v, data)
        except DecodeError as err:
            assert err.rule in {"truncated", "string-unterminated", "length-out-of-range"}, (cut, err)
            assert err.offset is not None and err.offset <= v.header + cut, (cut, err)
            continue
        assert v.open_ended and type(got) is type(v.message) and got != v.message, (cut, got)


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_a_trailing_byte_is_a_decode_error(v: Vector) -> None:
    with pytest.raises(DecodeError) as info:
        _decode(v, v.data + b"\x00")
    assert info.value.rule == "trailing-bytes"
    assert info.value.offset == len(v.data)
    if not v.open_ended:
        with pytest.raises(DecodeError) as info:
            _decode(v, _reframe(v, v.body + b"\x00"))
        assert info.value.rule == "trailing-bytes"
        assert info.value.offset == len(v.data)


def test_error_names_rule_field_offset_tag_and_what_was_found() -> None:
    with pytest.raises(DecodeError) as info:
        decode_message(tagged("Z", b"X"))
    err = info.value
    assert (err.rule, err.field, err.offset, err.tag) == ("unexpected-byte", "ReadyForQuery.status", 5, "Z")
    assert "one of ITE" in str(err) and "'X'" in str(err)


def test_nested_field_path() -> None:
    body = b"\x00\x01" + s("a") + b"\x00\x00"  # a FieldDescription cut after table_oid's 2nd byte
    with pytest.raises(DecodeError) as info:
        decode_message(tagged("T", body))
    assert info.value.rule == "truncated"
    assert info.value.field == "RowDescription.fields[0].table_oid"
    assert info.value.offset == 5 + 4


def test_data_row_negative_length_other_than_minus_one() -> None:
    with pytest.raises(DecodeError) as info:
        decode_message(tagged("D", b"\x00\x01" + i32(-2)))
    assert info.value.rule == "length-out-of-range"
    assert info.value.field == "DataRow.values[0].length"


def test_unknown_authentication_code() -> None:
    with pytest.raises(DecodeError) as info:
        decode_message(tagged("R", i32(7)))  # GSSAPI: not part of a walsender conversation
    err = info.value
    assert err.rule == "unknown-message-code" and err.found == "7" and err.offset == 5
    assert "Int32(10) AuthenticationSASL" in err.expected


def test_password_kinds_read_the_same_bytes_differently() -> None:
    data = tagged("p", s("SCRAM-SHA-256") + i32(-1))
    assert decode_message(data, "frontend", password="sasl-initial") == SASLInitialResponse("SCRAM-SHA-256", None)
    assert decode_message(data, "frontend", password="sasl-response").data == data[5:]
    with pytest.raises(DecodeError) as info:
        decode_message(data, "frontend")  # as a PasswordMessage: bytes after the NUL
    assert info.value.rule == "trailing-bytes"
    assert info.value.context == {"password_kind": "password"}


def test_startup_params_and_version() -> None:
    m = StartupMessage(parameters=(("user", "u"), ("database", "d"), ("user", "v")))
    assert m.params == {"user": "v", "database": "d"}
    assert (m.major, m.minor) == (3, 0)


def test_error_response_build_and_properties() -> None:
    e = ErrorResponse.build("ERROR", "42P01", 'relation "t" does not exist', hint="create it", position="15")
    assert e.fields[:4] == (("S", "ERROR"), ("V", "ERROR"), ("C", "42P01"), ("M", 'relation "t" does not exist'))
    assert (e.severity, e.code, e.message, e.detail, e.hint) == (
        "ERROR", "42P01", 'relation "t" does not exist', None, "create it")
    assert e.get("P") == "15"
    n = NoticeResponse.build("WARNING", "01000", "skipped loading publication", fields=[("W", "ctx")])
    assert isinstance(n, NoticeResponse) and n.fields[-1] == ("W", "ctx")
    assert decode_message(encode_message(e)) == e
    with pytest.raises(ValueError, match="SQLSTATE"):
        ErrorResponse.build("ERROR", "4260", "x")
    with pytest.raises(ValueError, match="found 'colour'"):
        ErrorResponse.build("ERROR", "42601", "x", colour="red")


@pytest.mark.parametrize(
    "message, words",
    [
        (Query("a\x00b"), "NUL"),
        (PasswordMessage(b"a\x00"), "NUL"),
        (AuthenticationMD5Password(b"abc"), "4 bytes"),
        (ReadyForQuery("II"), "one-character"),
        (ErrorResponse((("S", "ERROR"), ("\x00", "x"))), "zero byte"),
        (ErrorResponse((("S",),)), "2 values"),
        (StartupMessage(parameters=(("", "x"),)), "zero byte"),
        (CommandComplete(3), "CommandComplete"),  # type: ignore[arg-type]
        (DataRow(("text",)), "DataRow"),  # type: ignore[arg-type]
        (StartupMessage(protocol_version=1 << 40), "protocol_version"),
    ],
)
def test_bad_messages_are_encode_errors(message: object, words: str) -> None:
    with pytest.raises(EncodeError, match=words):
        encode_message(message)  # type: ignore[arg-type]


def test_ssl_response_is_one_byte() -> None:
    assert encode_message(SSLResponse(False)) == b"N"
    assert pgwire_spec.encode(SSLResponse(True)) == b"S"
    assert from_json(to_json(SSLResponse(True))) == SSLResponse(True)


def test_not_a_wire_message() -> None:
    with pytest.raises(EncodeError, match="not a frontend/backend message"):
        encode_message(object())  # type: ignore[arg-type]


def test_untagged_startup_vector_is_what_pg_recvlogical_sends() -> None:
    # Sanity of the hand-built bytes themselves: length counts itself, then 3.0.
    v = VECTORS[0]
    assert int.from_bytes(v.data[:4], "big") == len(v.data)
    assert v.data[4:8] == b"\x00\x03\x00\x00"


def test_the_package_docstring_example_runs() -> None:
    import doctest

    import pgwire_spec.wire

    result = doctest.testmod(pgwire_spec.wire)
    assert result.attempted >= 3 and result.failed == 0
