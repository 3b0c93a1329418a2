"""What the test clients apply: row changes per transaction, a streamed transaction's
changes kept per (sub)transaction until its Stream Commit, a subtransaction's dropped at
its Stream Abort (protocol docs, 53.9 "Logical Replication Message Formats"). Each applied
transaction is reported through the applied hook: {"applied": "<end LSN>", "changes": N}."""

import json

from pgwire_spec import PgOutputDecoder
from pgwire_spec.lsn import format_lsn

_ROWS = ("Insert", "Update", "Delete")


class Applier:
    def __init__(self, protocol_version: int, streaming: str | None = None) -> None:
        self.decoder = PgOutputDecoder(protocol_version=protocol_version, streaming=streaming, strict=False)
        self.rows = 0  # changes of the open (not streamed) transaction
        self.streamed: dict[int, dict[int, int]] = {}  # top xid -> (sub)xid -> changes
        self.top: int | None = None  # the top-level xid of the open stream block

    def feed(self, payload: bytes) -> str | None:
        """Apply one pgoutput message; the hook line when it ended a transaction."""
        msg = self.decoder.decode(payload)
        kind = type(msg).__name__
        if kind == "StreamStart":
            self.top = msg.xid
        elif kind == "StreamStop":
            self.top = None
        elif kind in _ROWS:
            if self.top is not None:
                subs = self.streamed.setdefault(self.top, {})
                subs[msg.xid] = subs.get(msg.xid, 0) + 1
            else:
                self.rows += 1
        elif kind == "StreamAbort":
            subs = self.streamed.get(msg.xid, {})
            if msg.subtransaction_xid == msg.xid:
                self.streamed.pop(msg.xid, None)
            else:
                subs.pop(msg.subtransaction_xid, None)
        elif kind == "StreamCommit":
            n = sum(self.streamed.pop(msg.xid, {}).values())
            return json.dumps({"applied": format_lsn(msg.end_lsn), "changes": n})
        elif kind == "Commit":
            n, self.rows = self.rows, 0
            return json.dumps({"applied": format_lsn(msg.end_lsn), "changes": n})
        return None
