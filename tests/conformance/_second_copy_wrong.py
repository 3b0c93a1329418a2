"""A decoder under test that answers as the reference does, except the second time it is
given the same case (context and payloads): then every message comes out with one field
too many. Run as a script it is a subprocess adapter (``serve``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pgwire_spec.conformance import serve
from pgwire_spec.conformance.adapters.reference import decode_case

_SEEN: dict[tuple[Any, ...], int] = {}


def case_key(context: Mapping[str, Any], payloads: Sequence[bytes]) -> tuple[Any, ...]:
    return (*sorted(context.items()), *payloads)


def second_copy_wrong(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    key = case_key(context, payloads)
    _SEEN[key] = _SEEN.get(key, 0) + 1
    out = decode_case(context, payloads)
    if _SEEN[key] == 2:
        out = [{"message": {**r["message"], "planted": True}} if "message" in r else r for r in out]
    return out


if __name__ == "__main__":
    sys.exit(serve(second_copy_wrong, name="second-copy-wrong", version="0"))
