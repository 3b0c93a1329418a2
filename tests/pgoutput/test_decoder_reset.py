"""``PgOutputDecoder.reset()`` gives the decoder a new decoder's state: every attribute a
fresh decoder has (but its tables) equal after a stream was left half-way, and the same
answers to the next stream."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.errors import DecodeError

_TABLES = {"_table", "_fast", "_checks", "_here", "_window"}


def _state(decoder: PgOutputDecoder) -> dict[str, Any]:
    return {k: v for k, v in vars(decoder).items() if k not in _TABLES}


def _answers(decoder: PgOutputDecoder, payloads: Any) -> list[Any]:
    out: list[Any] = []
    for p in payloads:
        try:
            out.append(decoder.decode(p))
        except DecodeError as err:
            out.append(err.rule)
            break
    try:
        decoder.finish()
    except DecodeError as err:
        out.append(err.rule)
    return out


@pytest.mark.parametrize("stream", builtin_streams(), ids=lambda s: s.name)
def test_reset_is_a_new_decoder(stream: Any) -> None:
    used = PgOutputDecoder(**stream.options)
    for p in stream.payloads[: len(stream.payloads) // 2 + 1]:  # stop inside a transaction
        used.decode(p)
    assert _state(used) != _state(PgOutputDecoder(**stream.options))
    used.reset()
    assert _state(used) == _state(PgOutputDecoder(**stream.options))
    assert _answers(used, stream.payloads) == _answers(PgOutputDecoder(**stream.options), stream.payloads)
    # and a stream cut short the same way twice
    used.reset()
    cut = stream.payloads[1:]
    assert _answers(used, cut) == _answers(PgOutputDecoder(**stream.options), cut)


def test_a_strict_rejection_leaves_no_reference_cycle() -> None:
    # A rejection raised from a local of the raising frame would hold that frame through
    # its traceback (and through it every caller's frame and their locals) until the
    # cyclic collector ran: conform's ~100k cases, built with the collector paused, stayed
    # alive to the end of the process. A rejection is freed when the caller drops it.
    stream = builtin_streams()[0]
    commit = next(p for p in stream.payloads if p[:1] == b"C")
    decoder = PgOutputDecoder(strict=True, **stream.options)
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            decoder.reset()
            with pytest.raises(DecodeError, match="unexpected"):
                decoder.decode(commit)  # a Commit without its Begin
        assert gc.collect() == 0
    finally:
        gc.enable()
