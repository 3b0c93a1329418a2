"""A payload the fast path refuses is decoded once by it, then explained once by the
tracing pass: never a second fast decode (C, then Python) before the explanation."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec import DecodeError, PgOutputDecoder, decode_message
from pgwire_spec.pgoutput import _codec


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    tag = ord("B")

    def counting(label: str, fn: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            seen.append(label)
            return fn(*args)
        return wrapper

    monkeypatch.setitem(_codec._DECODERS, tag, counting("fast", _codec._DECODERS[tag]))
    if _codec.FAMILY.decoders is not _codec._DECODERS:
        monkeypatch.setitem(_codec.FAMILY.decoders, tag, counting("python", _codec.FAMILY.decoders[tag]))
    codec = _codec.FAMILY.by_tag[tag]
    monkeypatch.setattr(codec, "explain", counting("explain", codec.explain))
    return seen


BAD = b"B\x00\x00"  # a Begin cut after 2 bytes of its final LSN


def test_decode_message(calls: list[str]) -> None:
    with pytest.raises(DecodeError) as err:
        decode_message(BAD)
    assert err.value.rule == "truncated" and err.value.field == "Begin.final_lsn"
    assert calls == ["fast", "explain"]


def test_stateful_decoder(calls: list[str]) -> None:
    with pytest.raises(DecodeError) as err:
        PgOutputDecoder().decode(BAD)
    assert err.value.rule == "truncated" and err.value.index == 0
    assert calls == ["fast", "explain"]


def test_decode_payload(calls: list[str]) -> None:
    with pytest.raises(DecodeError):
        _codec.decode_payload(BAD, False, False)
    assert calls == ["fast", "explain"]


def test_a_good_payload_is_decoded_once(calls: list[str]) -> None:
    good = b"B" + bytes(20)
    assert decode_message(good).xid == 0
    assert PgOutputDecoder().decode(good).xid == 0
    assert calls == ["fast", "fast"]
