"""Every message, both directions, on hand-built bytes; every truncation point fails cleanly."""

from __future__ import annotations

import pytest

from pgwire_spec import DecodeError, decode_message, encode, from_json, to_json
from pgwire_spec.pgoutput.messages import MESSAGE_TYPES
from tests.pgoutput.vectors import VECTORS, Vector

IDS = [v.name for v in VECTORS]


def _decode(v: Vector, data: bytes):
    return decode_message(data, protocol_version=v.protocol_version, streaming=v.streaming, in_stream=v.in_stream)


def test_every_message_type_has_a_vector() -> None:
    assert {type(v.message).__name__ for v in VECTORS} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_decode(v: Vector) -> None:
    assert _decode(v, v.data) == v.message


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_encode(v: Vector) -> None:
    assert encode(v.message) == v.data


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_json_round_trip(v: Vector) -> None:
    assert from_json(to_json(v.message)) == v.message


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_every_truncation_point_is_a_decode_error(v: Vector) -> None:
    for cut in range(len(v.data)):
        with pytest.raises(DecodeError) as info:
            _decode(v, v.data[:cut])
        err = info.value
        assert err.rule in {"truncated", "string-unterminated", "length-out-of-range"}, (cut, err)
        assert err.offset is not None and 0 <= err.offset <= cut, (cut, err)
        assert err.field, (cut, err)


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_a_trailing_byte_is_a_decode_error(v: Vector) -> None:
    with pytest.raises(DecodeError) as info:
        _decode(v, v.data + b"\x00")
    assert info.value.rule == "trailing-bytes"
    assert info.value.offset == len(v.data)


def test_error_names_field_offset_and_tag() -> None:
    bad = b"I" + (16384).to_bytes(4, "big") + b"N" + (2).to_bytes(2, "big") + b"t" + (9).to_bytes(4, "big") + b"ab"
    with pytest.raises(DecodeError) as info:
        decode_message(bad)
    err = info.value
    assert (err.rule, err.field, err.offset, err.tag) == ("length-out-of-range", "Insert.new_tuple[0].length", 9, "I")
    assert "expected a length from 0 to 2, found 9" in str(err)


@pytest.mark.parametrize(
    "data, rule, field",
    [
        (b"", "truncated", "tag"),
        (b"Z", "unknown-message-tag", "tag"),
        (b"I\x00\x00\x40\x00N\x00\x01x", "unknown-tuple-kind", "Insert.new_tuple[0].kind"),
        (b"I\x00\x00\x40\x00X\x00\x00", "unexpected-byte", "Insert.new_tag"),
        (b"I\x00\x00\x40\x00N\x00\x01t\xff\xff\xff\xff", "length-out-of-range", "Insert.new_tuple[0].length"),
        (b"O" + b"\x00" * 8 + b"name", "string-unterminated", "Origin.name"),
        (b"D\x00\x00\x40\x00N\x00\x00", "unexpected-byte", "Delete.old_kind"),
        (b"S\x00\x00\x00\x01\x02", "invalid-value", "StreamStart.first_segment"),
        # both K and O: after the K tuple the decoder wants 'N'
        (b"U\x00\x00\x40\x00K\x00\x00O\x00\x00N\x00\x00", "unexpected-byte", "Update.new_tag"),
    ],
)
def test_malformed_inputs(data: bytes, rule: str, field: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_message(data, protocol_version=2, streaming="on")
    assert (info.value.rule, info.value.field) == (rule, field)


def test_absurd_counts_do_not_allocate() -> None:
    # 65535 columns announced, none present: fails on the first missing byte.
    with pytest.raises(DecodeError) as info:
        decode_message(b"I\x00\x00\x40\x00N\xff\xff")
    assert info.value.rule == "truncated"
    with pytest.raises(DecodeError):
        decode_message(b"T\xff\xff\xff\xff\x00")
