"""A decoder with a planted bug, behind the adapter contract (a subprocess): the reference,
except that it ignores trailing bytes after an Insert (a bug real decoders have: they never
check that a message was consumed). The fuzz tests must find it and shrink it."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pgwire_spec.conformance.adapter import serve
from pgwire_spec.conformance.adapters.reference import decode_case as reference


def decode_case(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    out = reference(context, payloads)
    for i, entry in enumerate(out):
        if "error" in entry and entry["error"].get("rule") == "trailing-bytes" and payloads[i][:1] == b"I":
            # the plant: drop the bytes after the message and go on
            for n in range(len(payloads[i]) - 1, 0, -1):
                fixed = reference(context, [*payloads[:i], payloads[i][:n], *payloads[i + 1:]])
                if len(fixed) > i and "message" in fixed[i]:
                    return fixed
            break
    return out


if __name__ == "__main__":
    sys.exit(serve(decode_case, name="buggy", version="0"))
