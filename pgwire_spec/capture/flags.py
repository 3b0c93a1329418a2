"""Flags for the tricky cases of a captured stream, and the notes that explain them.

A flag names what makes a case worth a decoder author's attention; every flag used in a
file is explained in that file's ``notes`` (Wycheproof's idiom).
"""

from __future__ import annotations

from typing import Any

from ..pgoutput import messages as m
from ..pgoutput._catalogue import STREAMED_XID

__all__ = ["NOTES", "Flagger"]

NOTES: dict[str, str] = {
    "xid-prefix": "Inside a streamed block (between Stream Start and Stream Stop) R Y I U D T M carry an "
                  "Int32 xid right after the tag; outside they do not (pglogrepl #66 expected it everywhere).",
    "stream-first-segment": "Stream Start with first_segment = 1: the first block of this xid.",
    "stream-interleaved": "Stream Start of an xid while another streamed xid is still open: blocks of "
                          "several transactions interleave; key state by xid.",
    "stream-abort-no-tail-with-streaming-on": "Stream Abort of 9 bytes: no abort LSN/time, because the "
                                              "client asked for streaming = on (even at protocol 4; the 16/17 "
                                              "docs say 'since protocol version 4', the server sends the tail "
                                              "only with streaming = parallel; Npgsql mis-parses this).",
    "stream-abort-parallel-tail": "Stream Abort of 25 bytes: Int64 abort LSN and Int64 abort time follow, "
                                  "because streaming = parallel was asked for.",
    "stream-abort-subtransaction": "Stream Abort with subxid != xid: only that subtransaction's changes are "
                                   "discarded; the transaction goes on (go-pq-cdc #166 dropped it all).",
    "stream-abort-whole-transaction": "Stream Abort with subxid == xid: the whole streamed transaction aborted.",
    "stray-stream-abort": "Stream Abort of a subtransaction of an xid never streamed (no Stream Start): "
                          "PostgreSQL 18 sends it for a transaction it discarded unstreamed because it "
                          "had aborted, to every client, also one that did not ask for streaming "
                          "(erratum E-PG18-STRAY-STREAM-ABORT); a decoder must accept and ignore it.",
    "toast-key-unchanged": "A 'u' value in a key column of the new tuple: the replica-identity key is "
                           "stored out of line and the UPDATE did not change it; the 'K' old tuple "
                           "carries the key, de-toasted.",
    "stream-prepare": "Stream Prepare 'p': a streamed transaction was prepared (two_phase and streaming).",
    "key-tuple-full-width": "A 'K' old tuple is as wide as the relation: non-key columns are 'n'.",
    "old-tuple-full": "An 'O' old tuple (REPLICA IDENTITY FULL): every column, de-toasted, never 'u'.",
    "unchanged-toast": "A 'u' value: an out-of-line TOASTed value the change did not touch; not sent, "
                       "not NULL (electric #1482 treated it as NULL).",
    "mixed-text-binary": "binary = true, yet one tuple mixes 'b' and 't': a type without a send function "
                         "falls back to text.",
    "binary-values": "'b' values: the types' send-function output (binary = true).",
    "null-values": "'n' values.",
    "non-ascii": "Text outside ASCII (UTF-8 in the connection's client_encoding).",
    "repeated-relation": "A Relation identical to one already sent in this stream (relation cache "
                         "invalidated, e.g. by ANALYZE, or a new streamed transaction): accept repeats.",
    "relation-changed": "A Relation for an OID already described, with different content.",
    "replica-identity-default": "Relation with replica identity 'd' (primary key).",
    "replica-identity-full": "Relation with replica identity 'f': every column flagged as key.",
    "replica-identity-index": "Relation with replica identity 'i' (USING INDEX).",
    "replica-identity-nothing": "Relation with replica identity 'n'.",
    "type-user-defined": "Type 'Y': sent before a Relation using a type with OID >= 10000.",
    "type-domain-base-name": "Type 'Y' of a domain: the OID is the domain's, the namespace and name those "
                             "of its base type (namespace '' for pg_catalog).",
    "truncate-cascade": "Truncate with option bit 1 (CASCADE).",
    "truncate-restart-identity": "Truncate with option bit 2 (RESTART IDENTITY).",
    "truncate-several": "Truncate naming several relations.",
    "message-transactional": "Logical message with flags 1 (transactional), inside a transaction.",
    "message-non-transactional": "Logical message with flags 0, outside any transaction (the SQL "
                                 "interface reports xid 0 for it).",
    "message-empty": "Logical message with empty content.",
    "origin": "Origin 'O' after Begin: the transaction came from a replication origin "
              "(pg_replication_origin_session_setup).",
    "origin-in-stream": "Origin after the first Stream Start of a streamed transaction (origin LSN as sent).",
    "empty-transaction": "Begin directly followed by Commit: a transaction with nothing published "
                         "(sent up to 14, skipped from 15).",
    "two-phase-begin": "Begin Prepare 'b' (no flags byte).",
    "two-phase-prepare": "Prepare 'P'.",
    "commit-prepared": "Commit Prepared 'K'.",
    "rollback-prepared": "Rollback Prepared 'r'.",
    "partition-root": "Published via the partition root (publish_via_partition_root, 13+): the Relation "
                      "and DML carry the root table's OID.",
    "row-filter": "Captured through a publication with a row filter (15+): an UPDATE into the filter "
                  "is sent as Insert, out of it as Delete.",
    "column-list": "Captured through a publication with a column list (15+): Relation and TupleData "
                   "hold only the listed columns.",
    "generated-column-published": "publish_generated_columns = stored (18): the generated column is in "
                                  "Relation and TupleData, with no flag marking it generated.",
    # walsender sessions (fixtures/sessions/)
    "startup-replication-database": "StartupMessage with replication=database: a logical replication "
                                    "connection that also takes SQL.",
    "copy-both-response": "CopyBothResponse answering START_REPLICATION: exactly 'W', Int8 0, Int16 0.",
    "copy-done-client": "The client ends streaming with CopyDone.",
    "copy-done-server": "The server answers the client's CopyDone with its own CopyDone (CopyData may "
                        "still arrive before it).",
    "copy-done-command-complete": "After CopyDone: CommandComplete 'COPY 0', then START_REPLICATION's "
                                  "CommandComplete and ReadyForQuery.",
    "copydata-after-copydone": "CopyData (a keepalive) from the server after its own CopyDone, before "
                               "CommandComplete: read CopyData until CommandComplete, not until CopyDone.",
    "xlogdata-zero-position": "XLogData with dataStart = walEnd = 0: a write that is not the last of its "
                              "change (Relation, Type, a Begin followed by Origin), erratum E-ZERO-LSN.",
    "keepalive-reply-requested": "Primary keepalive with replyRequested = 1: answer with a status update.",
    "standby-status-update": "Standby status update 'r' from the client: write = received, flush = end "
                             "of the last whole transaction, apply = 0.",
}


class Flagger:
    """Flags the cases of one stream, in order (it remembers Relations and open streams)."""

    def __init__(self, context: dict[str, Any], relation_flags: dict[str, str] | None = None) -> None:
        self.streaming = context.get("streaming", "off")
        #: Relation name -> flag for the Relation and DML of that table (publication features).
        self.relation_flags = relation_flags or {}
        self.relations: dict[int, m.Relation] = {}
        self.open_streams: set[int] = set()
        self.prev: m.PgOutputMessage | None = None

    def flags(self, msg: m.PgOutputMessage, in_stream: bool, payload: bytes) -> list[str]:
        out: list[str] = []
        rel_id = getattr(msg, "relation_id", None)
        if self.relation_flags and rel_id is not None:
            name = msg.name if isinstance(msg, m.Relation) else getattr(self.relations.get(rel_id), "name", None)
            if name in self.relation_flags:
                out.append(self.relation_flags[name])
        if in_stream and getattr(msg, "xid", None) is not None and msg.tag in STREAMED_XID:
            out.append("xid-prefix")
        if isinstance(msg, m.Relation):
            seen = self.relations.get(msg.relation_id)
            if seen is not None:
                # The xid prefix (inside a streamed block) is not part of the description.
                same = (seen.namespace, seen.name, seen.replica_identity, seen.columns) == (
                    msg.namespace, msg.name, msg.replica_identity, msg.columns)
                out.append("repeated-relation" if same else "relation-changed")
            self.relations[msg.relation_id] = msg
            out.append({"d": "replica-identity-default", "f": "replica-identity-full",
                        "i": "replica-identity-index", "n": "replica-identity-nothing"}.get(
                            msg.replica_identity, "replica-identity-default"))
            if not msg.name.isascii() or any(not c.name.isascii() for c in msg.columns):
                out.append("non-ascii")
        elif isinstance(msg, m.Type):
            out.append("type-domain-base-name" if msg.namespace == "" else "type-user-defined")
        elif isinstance(msg, (m.Insert, m.Update, m.Delete)):
            tuples = [getattr(msg, "old_tuple", None), getattr(msg, "new_tuple", None)]
            kinds = "".join(m.tuple_kinds(t) for t in tuples if t is not None)
            old_kind = getattr(msg, "old_kind", None)
            if old_kind == "K" and "n" in m.tuple_kinds(msg.old_tuple or ()):  # type: ignore[union-attr]
                out.append("key-tuple-full-width")
            if old_kind == "O":
                out.append("old-tuple-full")
            if "u" in kinds:
                out.append("unchanged-toast")
                rel = self.relations.get(msg.relation_id)
                new_tuple = getattr(msg, "new_tuple", None) or ()
                # a key of its own (default or USING INDEX): under FULL every column is flagged
                if rel is not None and rel.replica_identity in ("d", "i") and any(
                        k == "u" and c.flags & 1 for k, c in zip(m.tuple_kinds(new_tuple), rel.columns)):
                    out.append("toast-key-unchanged")
            if "b" in kinds:
                out.append("binary-values")
                if any("b" in m.tuple_kinds(t) and "t" in m.tuple_kinds(t) for t in tuples if t is not None):
                    out.append("mixed-text-binary")
            if "n" in kinds and old_kind != "K":
                out.append("null-values")
            if any(isinstance(v, str) and not v.isascii() for t in tuples if t is not None for v in t):
                out.append("non-ascii")
        elif isinstance(msg, m.Truncate):
            if msg.cascade:
                out.append("truncate-cascade")
            if msg.restart_identity:
                out.append("truncate-restart-identity")
            if len(msg.relation_ids) > 1:
                out.append("truncate-several")
        elif isinstance(msg, m.LogicalMessage):
            out.append("message-transactional" if msg.transactional else "message-non-transactional")
            if not msg.content:
                out.append("message-empty")
        elif isinstance(msg, m.Origin):
            out.append("origin-in-stream" if isinstance(self.prev, m.StreamStart) else "origin")
        elif isinstance(msg, m.Commit):
            if isinstance(self.prev, m.Begin):
                out.append("empty-transaction")
        elif isinstance(msg, m.StreamStart):
            if msg.first_segment:
                out.append("stream-first-segment")
            if self.open_streams - {msg.xid}:
                out.append("stream-interleaved")
            self.open_streams.add(msg.xid)
        elif isinstance(msg, m.StreamAbort):
            if self.streaming == "off" or msg.xid not in self.open_streams:
                out.append("stray-stream-abort")
            if self.streaming != "off":
                out.append("stream-abort-no-tail-with-streaming-on" if len(payload) == 9
                           else "stream-abort-parallel-tail")
            if msg.aborts_whole_transaction:
                out.append("stream-abort-whole-transaction")
                self.open_streams.discard(msg.xid)
            else:
                out.append("stream-abort-subtransaction")
        elif isinstance(msg, (m.StreamCommit, m.StreamPrepare)):
            self.open_streams.discard(msg.xid)
            if isinstance(msg, m.StreamPrepare):
                out.append("stream-prepare")
        elif isinstance(msg, m.BeginPrepare):
            out.append("two-phase-begin")
        elif isinstance(msg, m.Prepare):
            out.append("two-phase-prepare")
        elif isinstance(msg, m.CommitPrepared):
            out.append("commit-prepared")
        elif isinstance(msg, m.RollbackPrepared):
            out.append("rollback-prepared")
        self.prev = msg
        return list(dict.fromkeys(out))
