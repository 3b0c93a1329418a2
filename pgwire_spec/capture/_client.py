"""What a sans-IO replication client does in either mode: the one piece the logical
(:class:`~pgwire_spec.capture.session.ReplicationClient`) and the physical
(:class:`~pgwire_spec.physical.client.PhysicalClient`) clients share.

It keeps the conversation with its exact bytes (:class:`Exchange`), sends the startup
packet, simple queries, standby status updates, CopyDone and Terminate, collects the rows
of a query's result and follows CopyBoth; what a mode adds (decoding pgoutput, keeping
WAL, raising on ErrorResponse) stays in its client.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Literal

from ..errors import PgWireError
from ..lsn import datetime_to_timestamp
from ..pgoutput.messages import PgOutputMessage
from ..replication.messages import ReplicationMessage, StandbyStatusUpdate, encode_copy_data
from ..wire import (
    NEED_DATA,
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


class SessionError(PgWireError):
    """A replication conversation that went wrong: an ErrorResponse, a closed connection,
    a server that stopped answering."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One message of the conversation: who sent it (``F`` client, ``B`` server), its exact
    bytes, and the decoded message (for CopyData, also the replication payload and the
    pgoutput message inside, with the stream position it was decoded at)."""

    direction: Literal["F", "B"]
    data: bytes
    message: WireMessage
    copy: ReplicationMessage | None = None
    pgoutput: PgOutputMessage | None = None
    in_stream: bool = False


@dataclass(frozen=True, slots=True)
class Replicated:
    """A CopyData from the server during streaming, decoded."""

    payload: ReplicationMessage
    pgoutput: PgOutputMessage | None


def now_timestamp() -> int:
    """The protocol's TimestampTz for now."""
    return datetime_to_timestamp(_dt.datetime.now(_dt.UTC))


class ClientBase:
    """The conversation both clients hold with a walsender; subclasses add their mode."""

    def __init__(self, *, user: str, application_name: str) -> None:
        self.user = user
        self.application_name = application_name
        self.reader = BackendReader()
        self.transcript: list[Exchange] = []
        #: Column names of the last result set.
        self.columns: tuple[str, ...] = ()
        #: CopyBoth running; the server ended its side (CopyDone).
        self.streaming = False
        self.server_done = False
        self._raw = b""
        self._raw_base = 0

    # -- what the client sends -------------------------------------------------------------
    def _send(self, message: WireMessage, copy: ReplicationMessage | None = None) -> bytes:
        data = encode_message(message)
        self.transcript.append(Exchange("F", data, message, copy))
        return data

    def _startup(self, *params: tuple[str, str]) -> bytes:
        return self._send(StartupMessage(PROTOCOL_3_0, (("user", self.user), *params)))

    def _reset_rows(self) -> None:
        raise NotImplementedError

    def query(self, sql: str) -> bytes:
        self.columns = ()
        self._reset_rows()
        return self._send(Query(sql))

    def _status_update(self, write: int, flush: int, apply: int, reply_requested: bool) -> bytes:
        msg = StandbyStatusUpdate(
            write_lsn=write, flush_lsn=flush, apply_lsn=apply, send_time=now_timestamp(),
            reply_requested=reply_requested)
        return self._send(CopyData(encode_copy_data(msg)), msg)

    def copy_done(self) -> bytes:
        return self._send(CopyDone())

    def terminate(self) -> bytes:
        return self._send(Terminate())

    # -- what the server sends -------------------------------------------------------------
    def receive_data(self, data: bytes) -> None:
        """Bytes from the server (``b""``: the connection closed)."""
        # Keep the unconsumed bytes too: each message is recorded with its exact bytes.
        consumed = self.reader.offset - self._raw_base
        if consumed > 0:
            self._raw = self._raw[consumed:]
            self._raw_base += consumed
        self._raw += data
        self.reader.feed(data)

    def _next_message(self) -> tuple[WireMessage, bytes] | NeedData:
        """The next server message with its exact bytes, its result rows and CopyBoth state
        followed, or :data:`NEED_DATA`. Raises SessionError when the connection closed."""
        start = self.reader.offset
        msg = self.reader.next_event()
        if not isinstance(msg, WireMessage):
            if msg is NEED_DATA:
                return NEED_DATA
            raise SessionError("the server closed the connection")
        data = self.reader_bytes(start)
        if isinstance(msg, RowDescription):
            self.columns = tuple(f.name for f in msg.fields)
            self._reset_rows()
        elif isinstance(msg, DataRow):
            self._add_row(msg)
        elif isinstance(msg, CopyBothResponse):
            self.streaming = True
        elif isinstance(msg, CopyDone) and self.streaming:
            self.server_done = True
        elif isinstance(msg, (CommandComplete, ReadyForQuery, CopyOutResponse)):
            # Not at CopyDone: the server may send CopyData after its own CopyDone (seen on 16).
            self.streaming = False
        return msg, data

    def _add_row(self, row: DataRow) -> None:
        raise NotImplementedError

    def reader_bytes(self, start: int) -> bytes:
        """The bytes the reader consumed from stream offset *start* (its last message)."""
        return self._raw[start - self._raw_base:self.reader.offset - self._raw_base]
