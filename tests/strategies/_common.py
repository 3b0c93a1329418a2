"""Shared settings and helpers of the strategy tests."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings

from pgwire_spec.pgoutput import _catalogue
from pgwire_spec.pgoutput import messages as m

#: Generating whole streams is slower than hypothesis' default budget expects.
SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]


def fast(n: int = 100, **kw: Any) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=SLOW_DATA, **kw)


#: Messages that carry the xid prefix inside a streamed block (from the catalogue).
PREFIXED = tuple(e.cls for e in _catalogue.ENTRIES.values() if e.streamed_xid)


def decode_context(msg: m.PgOutputMessage) -> dict[str, Any]:
    """The decode_message() keywords a single message implies: its xid prefix says it sits
    in a streamed block, a Stream Abort tail says streaming = parallel."""
    if isinstance(msg, m.StreamAbort) and msg.abort_lsn is not None:
        return {"protocol_version": 4, "streaming": "parallel"}
    if isinstance(msg, PREFIXED) and msg.xid is not None:
        return {"protocol_version": 2, "streaming": "on", "in_stream": True}
    return {"protocol_version": 4}


def tuples(msg: Any) -> list[tuple[str, m.TupleData]]:
    out = []
    for name in ("old_tuple", "new_tuple"):
        value = getattr(msg, name, None)
        if value is not None:
            out.append((name, value))
    return out
