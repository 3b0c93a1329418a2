"""The reference decoder behind the adapter contract: the control of every run.

In process through :func:`decode_case`, or :func:`decode_case_kept` (what ``conform
--decoder reference`` and the suite's builder use: each distinct case decoded once, which
only this decoder may be); out of process with
``python -m pgwire_spec.conformance.adapters.reference`` (the contract's own test: every
case decoded).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ... import __version__ as VERSION
from ...errors import DecodeError
from ...jsonform import to_json
from ...pgoutput.decoder import PgOutputDecoder

__all__ = ["decode_case", "decode_case_kept", "decoder_for", "VERSION", "OPTIONS", "PROFILE"]

#: Everything: every protocol version and option, and the sequence rules (stream level).
PROFILE = {"protocol_versions": [1, 2, 3, 4], "streaming": "parallel", "two_phase": True, "binary": True,
           "messages": True, "origin": True, "level": "stream"}

#: The context keys that are decoder options.
OPTIONS = ("protocol_version", "streaming", "two_phase", "binary", "messages")


#: One strict decoder per (thread, context), reset for each case.
_DECODERS: dict[tuple[Any, ...], PgOutputDecoder] = {}


def _options_of(context: Mapping[str, Any]) -> tuple[Any, ...]:
    """The context's decoder options (:data:`OPTIONS`), None where absent: what a decoder's
    behaviour depends on."""
    return tuple(map(context.get, OPTIONS))


def decoder_for(context: Mapping[str, Any]) -> PgOutputDecoder:
    """A strict decoder for *context* with a new decoder's state: one per context and thread,
    reset for each case (building its tables is most of the cost of a short case)."""
    key = (threading.get_ident(), *_options_of(context))
    decoder = _DECODERS.get(key)
    if decoder is None:
        decoder = PgOutputDecoder(strict=True, **{k: context[k] for k in OPTIONS if k in context})
        if len(_DECODERS) < 256:
            _DECODERS[key] = decoder
    else:
        decoder.reset()
    return decoder


def decode_case(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    """Decode a case with ``PgOutputDecoder(strict=True)``; rejections name their rule."""
    return _decode(decoder_for(context), payloads, None)


def _decode(decoder: PgOutputDecoder, payloads: Sequence[bytes],
            forms: dict[tuple[bool, bytes], dict[str, Any]] | None) -> list[dict[str, Any]]:
    """:func:`decode_case` with *decoder*; *forms*: the JSON forms of the payloads this
    decoder's options decoded before, by (inside a streamed block, payload)."""
    out: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            if forms is None:
                out.append({"message": to_json(decoder.decode(payload))})
                continue
            # every case goes through the decoder (its checks and state); the message it
            # returns is a function of the payload, whether it sits in a streamed block and
            # the decoder's options (PgOutputDecoder.decode), and so is its JSON form
            key = (decoder.in_stream, payload)
            msg = decoder.decode(payload)
            form = forms.get(key)
            if form is None:
                form = forms[key] = to_json(msg)
            out.append({"message": form})
        except DecodeError as err:
            out.append({"error": {"message": str(err), "rule": err.rule}})
            return out
    try:
        decoder.finish()
    except DecodeError as err:
        out.append({"error": {"message": str(err), "rule": err.rule}})
    return out


#: The answers of :func:`decode_case_kept` by (context options, payloads); emptied when full.
_KEPT: dict[tuple[Any, ...], tuple[dict[str, Any], ...]] = {}
#: The JSON forms of the payloads decoded for them, by context options (see :func:`_decode`).
_FORMS: dict[tuple[Any, ...], dict[tuple[bool, bytes], dict[str, Any]]] = {}
#: At most this many answers kept (a corpus holds ~40k distinct (context, payloads) cases).
KEPT_MAX = 1 << 17


def decode_case_kept(context: Mapping[str, Any], payloads: Sequence[bytes]) -> tuple[dict[str, Any], ...]:
    """:func:`decode_case`, each distinct (context options, payloads) decoded once.

    Only because this decoder is a pure function of the decoding context's options and the
    payloads: each case starts from a new decoder's state (:func:`decoder_for`), and an
    answer holds nothing but the messages' JSON forms and the rejection's text and rule.
    The conformance corpus holds each such case ~2.5 times (103k fixture cases, 40k
    distinct), and the suite's builder and the ``reference`` adapter ask for the same
    answers; a new case still goes through the decoder, payload by payload, and only the
    JSON form of a message it decoded before in the same place is reused (:func:`_decode`).
    The answer is shared: callers must not change it. A decoder under test is never
    memoised (every adapter but this one sees every case, in order)."""
    # unpacked by name: an option added to OPTIONS makes this fail, not key answers without it
    version, streaming, two_phase, binary, messages = key = _options_of(context)
    # 1 == True: only options of the types context_of gives them make a key
    if not (type(version) is int and type(streaming) is str and type(two_phase) is bool
            and type(binary) is bool and type(messages) is bool):
        return tuple(decode_case(context, payloads))
    key += tuple(payloads)
    answer = _KEPT.get(key)
    if answer is None:
        if len(_KEPT) >= KEPT_MAX:
            _KEPT.clear()
            _FORMS.clear()
        forms = _FORMS.setdefault(key[:len(OPTIONS)], {})
        answer = _KEPT[key] = tuple(_decode(decoder_for(context), payloads, forms))
    return answer


if __name__ == "__main__":
    from ..adapter import serve

    sys.exit(serve(decode_case, name="reference", version=VERSION, profile=PROFILE))
