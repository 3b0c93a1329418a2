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

import datetime as _dt

from ..capture.session import NEED_DATA, Exchange, Replicated
from ..lsn import datetime_to_timestamp, format_lsn
from ..replication.messages import (
    HotStandbyFeedback,
    PrimaryKeepalive,
    ReplicationMessage,
    StandbyStatusUpdate,
    XLogData,
    decode_copy_data,
    encode_copy_data,
)
from ..wire import (
    PROTOCOL_3_0,
    BackendReader,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyOutResponse,
    DataRow,
    NeedData,
    Query,
    ReadyForQuery,
    RowDescription,
    StartupMessage,
    Terminate,
    WireMessage,
    encode_message,
)
from .wal import WalStore

__all__ = ["PhysicalClient", "now_timestamp"]


def now_timestamp() -> int:
    """The protocol's TimestampTz for now."""
    return datetime_to_timestamp(_dt.datetime.now(_dt.UTC))


class PhysicalClient:
    """A sans-IO client of a walsender in physical mode (``replication=true``)."""

    def __init__(self, *, user: str, segment_size: int, application_name: str = "pgwire-spec-physical") -> None:
        self.user = user
        self.application_name = application_name
        self.reader = BackendReader()
        self.transcript: list[Exchange] = []
        self.wal = WalStore(segment_size)
        #: Rows of the last result set: (column names, rows of raw values).
        self.columns: tuple[str, ...] = ()
        self.rows: list[tuple[bytes | None, ...]] = []
        #: CopyBoth running; the server ended its side (CopyDone) / we ended ours.
        self.streaming = False
        self.server_done = False
        self.client_done = False
        #: Timeline of the running START_REPLICATION.
        self.timeline = 0
        #: End of the WAL received on the running stream; the last walEnd the server sent.
        self.received = 0
        self.wal_end = 0
        self._raw = b""
        self._raw_base = 0

    # -- what the client sends -------------------------------------------------------------
    def _send(self, message: WireMessage, copy: ReplicationMessage | None = None) -> bytes:
        data = encode_message(message)
        self.transcript.append(Exchange("F", data, message, copy))
        return data

    def startup(self) -> bytes:
        return self._send(StartupMessage(PROTOCOL_3_0, (
            ("user", self.user), ("database", "replication"), ("replication", "true"),
            ("application_name", self.application_name),
        )))

    def query(self, sql: str) -> bytes:
        self.columns, self.rows = (), []
        return self._send(Query(sql))

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
        msg = StandbyStatusUpdate(  # type: ignore[call-arg]
            write_lsn=pos if write is None else write, flush_lsn=pos if flush is None else flush,
            apply_lsn=apply, send_time=now_timestamp(), reply_requested=reply_requested)
        return self._send(CopyData(encode_copy_data(msg)), msg)

    def hot_standby_feedback(self, xmin: int, *, epoch: int = 0, catalog_xmin: int = 0,
                             catalog_epoch: int = 0) -> bytes:
        msg = HotStandbyFeedback(  # type: ignore[call-arg]
            send_time=now_timestamp(), xmin=xmin, xmin_epoch=epoch, catalog_xmin=catalog_xmin,
            catalog_xmin_epoch=catalog_epoch)
        return self._send(CopyData(encode_copy_data(msg)), msg)

    def copy_done(self) -> bytes:
        self.client_done = True
        return self._send(CopyDone())

    def terminate(self) -> bytes:
        return self._send(Terminate())

    # -- what the server sends -------------------------------------------------------------
    def receive_data(self, data: bytes) -> None:
        """Bytes from the server (``b""``: the connection closed)."""
        consumed = self.reader.offset - self._raw_base
        if consumed > 0:
            self._raw = self._raw[consumed:]
            self._raw_base += consumed
        self._raw += data
        self.reader.feed(data)

    def next_event(self) -> WireMessage | Replicated | NeedData:
        """The next server message (CopyData while streaming as :class:`Replicated`) or
        :data:`NEED_DATA`. Raises SessionError when the connection closed."""
        from ..capture.session import SessionError

        start = self.reader.offset
        msg = self.reader.next_event()
        if not isinstance(msg, WireMessage):
            if msg is NEED_DATA:
                return NEED_DATA
            raise SessionError("the server closed the connection")
        data = self._raw[start - self._raw_base:self.reader.offset - self._raw_base]
        if isinstance(msg, RowDescription):
            self.columns = tuple(f.name for f in msg.fields)
            self.rows = []
        elif isinstance(msg, DataRow):
            self.rows.append(tuple(msg.values))
        elif isinstance(msg, CopyBothResponse):
            self.streaming = True
        elif isinstance(msg, CopyDone) and self.streaming:
            self.server_done = True
        elif isinstance(msg, (CommandComplete, ReadyForQuery, CopyOutResponse)):
            self.streaming = False
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
