"""A sans-IO checker of the CopyData payloads a walsender sends for a logical slot.

:class:`WalsenderChecker` decodes each payload ('w' XLogData, 'k' keepalive), feeds the
pgoutput message inside XLogData to a :class:`~pgwire_spec.PgOutputDecoder`, and checks
the framing rules of the docs' "Streaming Replication Protocol" section and erratum
E-ZERO-LSN that hold for every real
server (rules in spec/rules.yaml):

``walsender-zero-lsn``
    Relation and Type are written with dataStart = walEnd = 0; Begin, Begin Prepare and
    Stream Start are 0 exactly when an Origin follows; every other message is non-zero.
``walsender-lsn-mismatch``
    dataStart == walEnd: a logical walsender writes the same LSN in both.
``walsender-lsn-backwards``
    Non-zero LSNs never go down inside one transaction (Begin … Commit, Begin Prepare …
    Prepare) or one streamed block (Stream Start … Stream Stop); the messages that end a
    transaction (Commit, Prepare, Stream Commit/Abort/Prepare, Commit/Rollback Prepared)
    and non-transactional logical messages never go below the previous such one (they are
    written when their WAL record is decoded, in WAL order); keepalive walEnds never go
    down. (A Begin may name an LSN below the previous Commit's: a transaction that began
    earlier and committed later. That is not checked.)

Errors carry ``index`` = the position of the CopyData payload in the conversation.
"""

from __future__ import annotations

from typing import Any

from ..errors import DecodeError
from ..pgoutput import _state
from ..pgoutput.decoder import PgOutputDecoder
from ..pgoutput.messages import PgOutputMessage
from ..replication.messages import PrimaryKeepalive, ReplicationMessage, XLogData, decode_copy_data

__all__ = ["WalsenderChecker"]

_ENDS = frozenset("CPcpKrA")
_OPENS = frozenset("BbS")
_ZERO = frozenset("RY")


class WalsenderChecker:
    """Check a logical walsender's CopyData payloads, one at a time.

    ``strict=False`` records framing violations in :attr:`warnings` (and makes the inner
    decoder tolerant) instead of raising.
    """

    def __init__(self, *, strict: bool = True, **decoder_options: Any) -> None:
        self.strict = strict
        self.decoder = PgOutputDecoder(**decoder_options, strict=strict)
        self.warnings: list[DecodeError] = []
        self.messages: list[PgOutputMessage] = []
        self._index = 0
        self._pending_zero: tuple[int, str] | None = None
        self._unit_lsn = 0
        self._end_lsn = 0
        self._keepalive = 0

    def _violation(self, rule: str, expected: str, found: str, index: int, tag: str | None) -> None:
        err = DecodeError(rule, expected=expected, found=found, index=index, tag=tag,
                          field="XLogData.data_start", context={"framing": "walsender"})
        if self.strict:
            raise err
        self.warnings.append(err)

    def feed(self, payload: bytes) -> ReplicationMessage:
        """Check the next CopyData payload; returns the replication message."""
        index = self._index
        self._index += 1
        try:
            msg = decode_copy_data(payload)
        except DecodeError as err:
            raise err.with_index(index) from None
        if isinstance(msg, PrimaryKeepalive):
            if msg.wal_end < self._keepalive:
                self._violation("walsender-lsn-backwards", f"a keepalive walEnd >= {self._keepalive}",
                                str(msg.wal_end), index, "k")
            self._keepalive = max(self._keepalive, msg.wal_end)
            return msg
        if not isinstance(msg, XLogData):
            raise DecodeError("unexpected-message", expected="XLogData 'w' or keepalive 'k' from a walsender",
                              found=f"{type(msg).__name__} ({msg.tag!r})", index=index, tag=msg.tag)
        tag = chr(msg.data[0]) if msg.data else ""
        lsn = msg.data_start
        before = self.decoder.state
        # The pgoutput message first: when it is not a message, nothing else can be told.
        try:
            decoded = self.decoder.decode(msg.data)
        except DecodeError as err:
            raise err.with_index(index) from None
        finally:
            self._take_warnings(index)
        self.messages.append(decoded)
        if self._pending_zero is not None:
            at, opener = self._pending_zero
            self._pending_zero = None
            if tag != "O":
                self._violation("walsender-zero-lsn", f"an Origin after the {opener!r} written at LSN 0",
                                f"{tag!r}", at, opener)
        if msg.wal_end != msg.data_start:
            self._violation("walsender-lsn-mismatch", f"walEnd equal to dataStart {msg.data_start}",
                            str(msg.wal_end), index, tag)
        self._check_lsn(tag, lsn, before, index)
        return msg

    def _take_warnings(self, index: int) -> None:
        """Move the inner decoder's warnings here, placed at the CopyData position."""
        for w in self.decoder.warnings:
            self.warnings.append(w.with_index(index))
        self.decoder.warnings.clear()

    def _check_lsn(self, tag: str, lsn: int, before: str, index: int) -> None:
        opening = before == _state.IDLE and tag in _OPENS
        if opening:
            # A new transaction or block: its LSNs are compared among themselves only.
            self._unit_lsn = lsn
        if tag in _ZERO:
            if lsn != 0:
                self._violation("walsender-zero-lsn", f"LSN 0 for {tag!r} (not the last write of a change)",
                                str(lsn), index, tag)
            return
        if lsn == 0:
            if opening:
                self._pending_zero = (index, tag)
            else:
                self._violation("walsender-zero-lsn", f"a non-zero LSN for {tag!r}", "0", index, tag)
            return
        if before != _state.IDLE:
            if lsn < self._unit_lsn:
                self._violation("walsender-lsn-backwards",
                                f"an LSN >= {self._unit_lsn} (earlier in this transaction or block)",
                                str(lsn), index, tag)
            self._unit_lsn = max(self._unit_lsn, lsn)
        if tag in _ENDS or (tag == "M" and before == _state.IDLE):
            if lsn < self._end_lsn:
                self._violation("walsender-lsn-backwards",
                                f"an LSN >= {self._end_lsn} (the previous transaction end)", str(lsn), index, tag)
            self._end_lsn = max(self._end_lsn, lsn)

    def finish(self) -> None:
        """The conversation ended: report what is left open."""
        if self._pending_zero is not None:
            at, opener = self._pending_zero
            self._pending_zero = None
            self._violation("walsender-zero-lsn", f"an Origin after the {opener!r} written at LSN 0",
                            "the end of the stream", at, opener)
        try:
            self.decoder.finish()
        except DecodeError as err:
            raise err.with_index(self._index) from None
        finally:
            self._take_warnings(self._index)
