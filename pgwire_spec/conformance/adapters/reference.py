"""The reference decoder behind the adapter contract: the control of every run.

In process through :func:`decode_case`; out of process with
``python -m pgwire_spec.conformance.adapters.reference`` (the contract's own test).
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

__all__ = ["decode_case", "decoder_for", "VERSION", "OPTIONS", "PROFILE"]

#: Everything: every protocol version and option, and the sequence rules (stream level).
PROFILE = {"protocol_versions": [1, 2, 3, 4], "streaming": "parallel", "two_phase": True, "binary": True,
           "messages": True, "origin": True, "level": "stream"}

#: The context keys that are decoder options.
OPTIONS = ("protocol_version", "streaming", "two_phase", "binary", "messages")


#: One strict decoder per (thread, context), reset for each case.
_DECODERS: dict[tuple[Any, ...], PgOutputDecoder] = {}


def decoder_for(context: Mapping[str, Any]) -> PgOutputDecoder:
    """A strict decoder for *context* with a new decoder's state: one per context and thread,
    reset for each case (building its tables is most of the cost of a short case)."""
    get = context.get
    key = (threading.get_ident(), get("protocol_version"), get("streaming"), get("two_phase"), get("binary"),
           get("messages"))
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
    decoder = decoder_for(context)
    out: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            out.append({"message": to_json(decoder.decode(payload))})
        except DecodeError as err:
            out.append({"error": {"message": str(err), "rule": err.rule}})
            return out
    try:
        decoder.finish()
    except DecodeError as err:
        out.append({"error": {"message": str(err), "rule": err.rule}})
    return out


if __name__ == "__main__":
    from ..adapter import serve

    sys.exit(serve(decode_case, name="reference", version=VERSION, profile=PROFILE))
