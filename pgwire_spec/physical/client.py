"""A sans-IO physical replication client: what pg_receivewal and a standby send.

:class:`PhysicalClient` touches no socket: its methods return the bytes to send (startup
with ``replication=true``, replication commands, standby status updates, hot standby
feedback, CopyDone, Terminate); ``receive_data`` takes what the server sent and
``next_event`` hands out the server's messages, CopyData decoded (XLogData, keepalives).
Every message, both directions, is kept in :attr:`PhysicalClient.transcript` with its exact
bytes (:class:`~pgwire_spec.capture.session.Exchange`), and the WAL received is kept per
timeline in :attr:`PhysicalClient.wal`.

Unlike the logical client, an ErrorResponse is handed out as a message, not raised: the
recording keeps the server's errors (TIMELINE_HISTORY of timeline 1, a position ahead of
the flush position …) as part of the conversation.
"""

from __future__ import annotations

from ..capture._client import ClientBase, Exchange, Replicated, now_timestamp
from ..lsn import format_lsn
from ..replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    XLogData,
    decode_copy_data,
    encode_copy_data,
)
from ..wire import NEED_DATA, CopyData, DataRow, NeedData, WireMessage
from .wal import WalStore

__all__ = ["PhysicalClient", "now_timestamp"]


class PhysicalClient(ClientBase):
    """A sans-IO client of a walsender in physical mode (``replication=true``)."""

    def __init__(self, *, user: str, segment_size: int, application_name: str = "pgwire-spec-physical") -> None:
        super().__init__(user=user, application_name=application_name)
        self.wal = WalStore(segment_size)
        #: Rows of the last result set, raw values.
        self.rows: list[tuple[bytes | None, ...]] = []
        #: We ended our side of the CopyBoth.
        self.client_done = False
        #: Timeline of the running START_REPLICATION.
        self.timeline = 0
        #: End of the WAL received on the running stream; the last walEnd the server sent.
        self.received = 0
        self.wal_end = 0

    def _reset_rows(self) -> None:
        self.rows = []

    def _add_row(self, row: DataRow) -> None:
        self.rows.append(tuple(row.values))

    # -- what the client sends -------------------------------------------------------------
    def startup(self) -> bytes:
        return self._startup(
            ("database", "replication"), ("replication", "true"), ("application_name", self.application_name),
        )

    def start_replication(self, lsn: int, timeline: int | None = None, slot: str | None = None) -> bytes:
        """``START_REPLICATION [SLOT s] X/X [TIMELINE n]`` as pg_receivewal writes it."""
        self.timeline = timeline or 0
        self.received = lsn
        self.server_done = self.client_done = False
        text = "START_REPLICATION "
        if slot is not None:
            text += f'SLOT "{slot}" '
        text += format_lsn(lsn)
        if timeline is not None:
            text += f" TIMELINE {timeline}"
        return self.query(text)

    def status_update(self, *, write: int | None = None, flush: int | None = None, apply: int = 0,
                      reply_requested: bool = False) -> bytes:
        """'r': written and flushed default to what was received (pg_receivewal reports
        flush = write after fsync; apply is invalid, 0)."""
        pos = self.received
        return self._status_update(pos if write is None else write, pos if flush is None else flush, apply,
                                   reply_requested)

    def hot_standby_feedback(self, xmin: int, *, epoch: int = 0, catalog_xmin: int = 0,
                             catalog_epoch: int = 0) -> bytes:
        msg = HotStandbyFeedback(
            send_time=now_timestamp(), xmin=xmin, xmin_epoch=epoch, catalog_xmin=catalog_xmin,
            catalog_xmin_epoch=catalog_epoch)
        return self._send(CopyData(encode_copy_data(msg)), msg)

    def copy_data(self, data: bytes) -> bytes:
        """A CopyData of *data* (COPY IN: UPLOAD_MANIFEST's manifest)."""
        return self._send(CopyData(data))

    def copy_done(self) -> bytes:
        self.client_done = True
        return super().copy_done()

    # -- what the server sends -------------------------------------------------------------
    def next_event(self) -> WireMessage | Replicated | NeedData:
        """The next server message (CopyData while streaming as :class:`Replicated`) or
        :data:`NEED_DATA`. Raises SessionError when the connection closed."""
        got = self._next_message()
        if isinstance(got, NeedData):
            return NEED_DATA
        msg, data = got
        if isinstance(msg, CopyData) and self.streaming:
            payload = decode_copy_data(msg.data)
            if isinstance(payload, XLogData):
                if self.timeline:
                    self.wal.add(self.timeline, payload.data_start, payload.data)
                self.received = max(self.received, payload.data_start + len(payload.data))
                self.wal_end = payload.wal_end
            elif isinstance(payload, PrimaryKeepalive):
                self.wal_end = payload.wal_end
            self.transcript.append(Exchange("B", data, msg, payload))
            return Replicated(payload, None)
        self.transcript.append(Exchange("B", data, msg))
        return msg
