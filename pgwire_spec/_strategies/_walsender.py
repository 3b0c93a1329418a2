"""Walsender framing of pgoutput streams, and the client's CopyData messages.

Each pgoutput message is one CopyData holding XLogData 'w' whose dataStart and walEnd are
the write LSN of the message (both the same, zero for writes that are not the last of
their change: erratum E-ZERO-LSN); primary keepalives 'k' come in between with a walEnd
that never goes down (walsender.c, WalSndKeepalive).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ..replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    ReplicationMessage,
    StandbyStatusUpdate,
    XLogData,
    encode_copy_data,
)
from ._context import ProtocolContext
from ._streams import Stream, streams

__all__ = [
    "WalsenderStream",
    "walsender_streams",
    "frame",
    "status_updates",
    "hot_standby_feedback",
    "keepalives",
]

_U64 = (1 << 64) - 1
_lsns = st.integers(0, _U64)
_times = st.integers(-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True, slots=True)
class WalsenderStream:
    """A pgoutput stream as a walsender sends it: the CopyData payloads of a logical
    START_REPLICATION (XLogData and keepalives), and the stream inside."""

    stream: Stream
    messages: tuple[ReplicationMessage, ...]
    payloads: tuple[bytes, ...]

    @property
    def context(self) -> ProtocolContext:
        return self.stream.context

    @property
    def options(self) -> dict[str, Any]:
        return self.stream.options


def frame(
    draw: st.DrawFn,
    payloads: Sequence[bytes],
    write_lsns: Sequence[int],
    *,
    keepalives: bool = True,
    trailing_keepalive: bool = True,
) -> tuple[list[ReplicationMessage], list[int]]:
    """XLogData around each payload, keepalives drawn in between.

    Returns the replication messages and, for each pgoutput payload, the position of its
    XLogData among them.
    """
    nonzero = [lsn for lsn in write_lsns if lsn]
    seen = draw(st.integers(0x1000000, nonzero[0])) if nonzero else draw(st.integers(0x1000000, 1 << 40))
    clock = draw(st.integers(7 * 10**14, 9 * 10**14))
    out: list[ReplicationMessage] = []
    where: list[int] = []

    def keepalive() -> None:
        out.append(PrimaryKeepalive(seen, clock, draw(st.booleans())))

    for payload, lsn in zip(payloads, write_lsns):
        if keepalives and draw(st.integers(0, 5)) == 5:
            keepalive()
        clock += draw(st.integers(0, 2000))
        where.append(len(out))
        out.append(XLogData(lsn, lsn, clock, payload))
        seen = max(seen, lsn)
    if keepalives and trailing_keepalive and draw(st.booleans()):
        clock += draw(st.integers(0, 2000))
        keepalive()
    return out, where


def walsender_streams(
    *, keepalives: bool = True, **stream_args: Any
) -> st.SearchStrategy[WalsenderStream]:
    """Walsender-framed streams: takes the arguments of :func:`streams`."""
    inner = streams(**stream_args)

    @st.composite
    def draw_walsender(draw: st.DrawFn) -> WalsenderStream:
        s = draw(inner)
        msgs, _ = frame(draw, s.payloads, s.write_lsns, keepalives=keepalives)
        return WalsenderStream(s, tuple(msgs), tuple(encode_copy_data(x) for x in msgs))

    return draw_walsender()


# -- client messages -----------------------------------------------------------------------------


@st.composite
def status_updates(draw: st.DrawFn, *, max_lsn: int = _U64) -> StandbyStatusUpdate:
    """Standby status updates 'r' as clients send them: flush <= write; apply is 0
    (pg_recvlogical) or between flush and write (a subscriber's applied position)."""
    write = draw(st.integers(0, max_lsn))
    flush = draw(st.integers(0, write))
    apply = draw(st.one_of(st.just(0), st.integers(flush, write)))
    return StandbyStatusUpdate(write, flush, apply, draw(_times), draw(st.booleans()))


_xid_or_none = st.one_of(st.just(0), st.integers(3, (1 << 32) - 1))


@st.composite
def hot_standby_feedback(draw: st.DrawFn) -> HotStandbyFeedback:
    """Hot standby feedback 'h': xmin and catalog_xmin 0 when there is none, epochs."""
    xmin = draw(_xid_or_none)
    catalog_xmin = draw(_xid_or_none)
    epochs = st.integers(0, (1 << 32) - 1)
    return HotStandbyFeedback(
        draw(_times), xmin, draw(epochs) if xmin else 0, catalog_xmin, draw(epochs) if catalog_xmin else 0
    )


@st.composite
def keepalives(draw: st.DrawFn) -> PrimaryKeepalive:
    """Primary keepalives 'k'."""
    return PrimaryKeepalive(draw(_lsns), draw(_times), draw(st.booleans()))


@st.composite
def xlogdata(draw: st.DrawFn) -> XLogData:
    """XLogData 'w' carrying one pgoutput message (dataStart = walEnd, possibly 0)."""
    from ..pgoutput import _codec
    from ._messages import pgoutput_messages

    msg = draw(pgoutput_messages())
    lsn = draw(st.one_of(st.just(0), _lsns))
    return XLogData(lsn, lsn, draw(_times), _codec.encode(msg))


def replication_messages() -> st.SearchStrategy[ReplicationMessage]:
    """Any CopyData payload of streaming replication (for ``st.from_type``)."""
    return st.one_of(xlogdata(), keepalives(), status_updates(), hot_standby_feedback())
