"""A deliberately limited decoder: protocol 1, text values only, a stateless decoder of one
payload (message level), with its profile as an attribute; and the same decoder with one
planted message-level bug. Run as a script it is a subprocess adapter (``serve``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pgwire_spec import decode_message
from pgwire_spec.conformance import Skip, serve
from pgwire_spec.errors import DecodeError
from pgwire_spec.jsonform import to_json

PROFILE = {"protocol_versions": [1], "streaming": "off", "binary": False, "messages": False,
           "origin": False, "two_phase": False, "level": "message"}


def limited(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    """Each payload on its own with ``decode_message``: no sequence state."""
    if context.get("protocol_version") != 1 or context.get("binary"):
        raise Skip("only protocol 1 with text values")
    out: list[dict[str, Any]] = []
    for p in payloads:
        try:
            out.append({"message": to_json(decode_message(p, protocol_version=1))})
        except DecodeError as err:
            out.append({"error": {"message": str(err), "rule": err.rule}})
            break
    return out


def planted(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    """The plant: a Commit's bytes after its 26 are ignored (a message-level bug)."""
    return limited(context, [p[:26] if p[:1] == b"C" else p for p in payloads])


limited.profile = PROFILE  # type: ignore[attr-defined]
planted.profile = PROFILE  # type: ignore[attr-defined]

if __name__ == "__main__":
    sys.exit(serve(limited, name="limited", version="1"))
