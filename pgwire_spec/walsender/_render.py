"""From a compiled history to the pgoutput messages one client gets, with their XLogData LSNs.

What a client gets depends on what it negotiated (proto_version, publication_names,
streaming, two_phase, binary, messages, origin), on the server major (its persona) and on
where it starts (transactions whose commit record lies before the start point are skipped,
as ``SnapBuildXactNeedsSkip`` does). The rules followed here, and where they come from:

* the write location of each message (erratum E-ZERO-LSN): Begin and Begin Prepare at the
  transaction's first LSN, DML and Truncate at the change's LSN, Commit / Prepare /
  Commit Prepared / Rollback Prepared / Stream Commit / Stream Prepare at the end LSN,
  Stream Start at its segment's first change, Stream Stop at its last, Stream Abort at the
  abort record, 'M' at the message's LSN; Relation and Type — and Begin, Begin Prepare and
  Stream Start when an Origin follows — at 0/0 ("not the last write of the change");
* Relation (and Type for types with OID >= 10000) before the first change of a relation on
  this connection, and once per streamed transaction; after a streamed transaction commits
  its relations count as sent (pgoutput's ``cleanup_rel_sync_cache``);
* publications (``get_rel_sync_entry``, see :mod:`._relsync`): a partition's changes under
  its root's Relation with publish_via_partition_root; Relation and tuples hold only the
  published columns (column lists; stored generated columns from 18 when published); row
  filters on INSERT (new row), DELETE (old row) and UPDATE, where with an old tuple (REPLICA
  IDENTITY FULL, or a changed key) an update leaving the filter is sent as DELETE and one
  entering it as INSERT (``pgoutput_row_filter``);
* transactions with nothing published: Begin/Commit still sent before 15, skipped from 15;
* streaming: a transaction whose reorder-buffer memory exceeds logical_decoding_work_mem is
  sent in Stream Start/Stop segments; in a segment DML carries the xid of the
  (sub)transaction that made it; a rolled-back subtransaction whose changes were already
  streamed gets a Stream Abort (xid, subxid); Stream Abort carries abort LSN and time only
  with streaming = parallel (erratum E-STREAM-ABORT-TAIL);
* two-phase: with two_phase, Begin Prepare … Prepare, later Commit Prepared or Rollback
  Prepared; without it, the transaction is sent as a plain one at COMMIT PREPARED and not
  at all when rolled back;
* origin = none (16+) skips transactions that carry an origin.
"""

from __future__ import annotations

import bisect
import gc
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, repeat
from operator import add as _add
from typing import Any, overload

from ..pgoutput import messages as m
from ..pgoutput._codec import SPEEDUPS, encode
from ..pgoutput.decoder import decode_message
from ..replication import frames
from ._history import ChangeEvent, History, InsertRuns, MessageEvent, PreparedEnd, SubAbort, TxnEvent
from ._relsync import RelSync, rel_sync
from .personas import Persona, ServerError, StreamOptions
from .scenario import Column, Table

__all__ = ["Write", "Notice", "Plan", "Items", "render"]


class Write:
    """One XLogData: its dataStart/walEnd (equal, or both 0) and the pgoutput message.

    A plain transaction's Insert is encoded straight from the row (the hot path of a cold
    stream); its message is then decoded from the payload only if someone asks (the
    transcript)."""

    __slots__ = ("lsn", "_message", "payload", "_lazy")

    def __init__(self, lsn: int, message: m.PgOutputMessage | None, payload: bytes, lazy: bool = False) -> None:
        self.lsn = lsn
        self._message = message
        self.payload = payload
        self._lazy = lazy

    @property
    def message(self) -> m.PgOutputMessage | None:
        if self._lazy:
            self._message = decode_message(self.payload)  # a top-level Insert: no context needed
            self._lazy = False
        return self._message

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Write) and (self.lsn, self.message, self.payload)
                == (other.lsn, other.message, other.payload))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Write(lsn={self.lsn!r}, message={self.message!r}, payload={self.payload!r})"


@dataclass(slots=True)
class Notice:
    """An ErrorResponse (ends the stream) or a NoticeResponse (WARNING) at this point."""

    error: ServerError


#: In ``Plan.messages``: the message is decoded from the payload when asked for (a
#: top-level Insert, which needs no stream context).
_LAZY: Any = object()


class Plan:
    """The items a client gets, rendered while they are streamed: ``items`` holds what is
    rendered so far, :meth:`grow` renders more, ``done`` says everything is.

    Kept as one list per field (``lsns``, ``payloads``, ``messages``; a Notice has no
    payload and stands in ``messages``): a cold stream appends three references per
    message instead of building an object, and the frames are cut from the lists in
    C-level passes. ``items`` shows them as :class:`Write` and :class:`Notice`."""

    __slots__ = ("lsns", "payloads", "messages", "notices", "end_lsn", "_frames", "_source")

    def __init__(self, end_lsn: int = 0) -> None:
        self.lsns: list[int] = []
        self.payloads: list[bytes | None] = []
        self.messages: list[Any] = []
        #: Indices of the Notices, increasing.
        self.notices: list[int] = []
        #: The WAL position the stream has reached when every item is sent.
        self.end_lsn = end_lsn
        self._frames: Frames | NativeFrames | None = None
        #: What renders the rest (one step per history event), None once done.
        self._source: Iterator[None] | None = None

    @property
    def items(self) -> Items:
        return Items(self)

    def write(self, lsn: int, message: m.PgOutputMessage | None, payload: bytes) -> None:
        self.lsns.append(lsn)
        self.payloads.append(payload)
        self.messages.append(message)

    def notice(self, error: ServerError) -> None:
        self.notices.append(len(self.payloads))
        self.lsns.append(0)
        self.payloads.append(None)
        self.messages.append(Notice(error))

    def item(self, i: int) -> Write | Notice:
        payload = self.payloads[i]
        msg = self.messages[i]
        if payload is None:
            notice: Notice = msg
            return notice
        if msg is _LAZY:
            return Write(self.lsns[i], None, payload, True)
        return Write(self.lsns[i], msg, payload)

    @property
    def done(self) -> bool:
        return self._source is None

    def grow(self, count: int) -> None:
        """Render until at least *count* items exist (or all of them do). Each step is one
        history event, so a caller asking a little past what it sends keeps every call
        short and the first frames go out before the rest is rendered."""
        source = self._source
        payloads = self.payloads
        # The cyclic collector waits while a slice renders: it would otherwise run every
        # few hundred new items, each time walking the young ones (a cold stream's CPU
        # was a quarter collection); what the slice made is looked at once, after it.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while source is not None and len(payloads) < count:
                try:
                    next(source)
                except StopIteration:
                    self._source = source = None
        finally:
            if collecting:
                gc.enable()

    def finish(self) -> Plan:
        """Render everything (for callers that want the whole plan at once)."""
        while self._source is not None:
            self.grow(len(self.payloads) + (1 << 16))
        return self

    def frames(self) -> Frames | NativeFrames:
        """The items rendered so far as frames (CopyData + XLogData header + payload), shared
        by every connection that streams this plan: cut from the plan's lists at each send
        by the C extension, else framed once in Python."""
        if self._frames is None:
            self._frames = NativeFrames(self) if SPEEDUPS is not None else Frames()
        self._frames.extend(self)
        return self._frames


class Items(Sequence[Write | Notice]):
    """A plan's items so far, as :class:`Write` and :class:`Notice` (made when read)."""

    __slots__ = ("_plan",)

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    def __len__(self) -> int:
        return len(self._plan.payloads)

    @overload
    def __getitem__(self, i: int) -> Write | Notice: ...

    @overload
    def __getitem__(self, i: slice) -> list[Write | Notice]: ...

    def __getitem__(self, i: int | slice) -> Write | Notice | list[Write | Notice]:
        if isinstance(i, slice):
            return [self._plan.item(k) for k in range(*i.indices(len(self)))]
        return self._plan.item(i)

    def __iter__(self) -> Iterator[Write | Notice]:
        item = self._plan.item
        for i in range(len(self)):
            yield item(i)


class _Notices:
    """Where a plan's framed items stop for a Notice (which is no frame)."""

    __slots__ = ()
    notices: list[int]

    def __len__(self) -> int:
        raise NotImplementedError

    def next_notice(self, i: int) -> int:
        """The first Notice at or after item *i* among those framed (else their count)."""
        k = bisect.bisect_left(self.notices, i)
        return min(self.notices[k], len(self)) if k < len(self.notices) else len(self)


class NativeFrames(_Notices):
    """A plan's items framed by the C extension straight from the plan's lists, at each send
    (a pass over the payloads, no object per frame): :meth:`run` is the frames of a range
    of items, :meth:`span` how far a range reaches a size. Items are indexed as in the plan;
    a run stops before a Notice (:meth:`next_notice`)."""

    __slots__ = ("_lsns", "_payloads", "notices", "_count")

    def __init__(self, plan: Plan) -> None:
        self._lsns = plan.lsns
        self._payloads = plan.payloads
        self.notices = plan.notices
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def extend(self, plan: Plan) -> None:
        self._count = len(plan.payloads)

    def run(self, start: int, stop: int, stamp: bytes) -> bytes:
        """The frames of items [start, stop) (no Notice among them), sendTime = *stamp*."""
        frames_: bytes = SPEEDUPS.xlog_frames(self._lsns, self._payloads, start, stop, stamp)
        return frames_

    def span(self, start: int, stop: int, size: int) -> int:
        """The first j in (start, stop] whose frames [start, j) take *size* bytes, else stop."""
        j: int = SPEEDUPS.xlog_span(self._lsns, self._payloads, start, stop, size)
        return j


class Frames(_Notices):
    """Every Write of a plan framed once (CopyData, XLogData header, payload), shared by the
    connections that stream the plan, cut around the sendTime field: ``heads[w]`` is frame
    w up to its sendTime, ``payloads[w]`` its payload; a run of frames with a fresh
    sendTime is one ``bytes.join`` (:meth:`run`). Frames sent before (a warm stream) also
    keep ``mids[w]`` = ``payloads[w] + heads[w + 1]``, made on their second send, so that
    a later run joins one piece per frame.

    Items are indexed as in the plan (a Notice is no frame): ``offsets[i]`` is where item i
    starts in the framed stream, ``writes[i]`` the number of Writes before item i;
    :meth:`next_notice` the first Notice at or after item i. Framed as the plan grows
    (:meth:`extend`)."""

    __slots__ = ("heads", "payloads", "mids", "offsets", "writes", "notices", "_sent")

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.payloads: list[bytes] = []
        self.mids: list[bytes] = []
        #: Writes up to this one were sent at least once.
        self._sent = 0
        self.offsets = [0]
        self.writes = [0]
        self.notices: list[int] = []

    def __len__(self) -> int:
        """The items framed so far."""
        return len(self.writes) - 1

    def extend(self, plan: Plan) -> None:
        """Frame the plan's items past those framed so far: each run of Writes between two
        Notices in a few C-level passes over the plan's lists (no Python step per frame)."""
        done, count = len(self), len(plan.payloads)
        k = bisect.bisect_left(plan.notices, done)
        while done < count:
            stop = plan.notices[k] if k < len(plan.notices) else count
            if stop > done:
                payloads: list[bytes] = plan.payloads[done:stop]  # type: ignore[assignment]  # no Notice
                self._writes(plan.lsns[done:stop], payloads)
            if stop < count:  # a Notice: no frame
                self.notices.append(stop)
                self.offsets.append(self.offsets[-1])
                self.writes.append(len(self.heads))
                k += 1
            done = stop + 1

    def _writes(self, lsns: list[int], payloads: list[bytes]) -> None:
        lens = list(map(len, payloads))
        first = len(self.heads)
        self.heads.extend(frames.xlog_heads(lsns, lens))
        self.payloads.extend(payloads)
        ends = accumulate(map(_add, lens, repeat(frames.XLOG_FRAME_OVERHEAD)), initial=self.offsets[-1])
        next(ends)
        self.offsets.extend(ends)
        self.writes.extend(range(first + 1, first + 1 + len(lens)))

    def span(self, start: int, stop: int, size: int) -> int:
        """The first j in (start, stop] whose frames [start, j) take *size* bytes, else stop."""
        offsets = self.offsets
        j = bisect.bisect_left(offsets, offsets[start] + size, start + 1, stop + 1)
        return max(min(start + 1, stop), min(j, stop))

    def run(self, start: int, stop: int, stamp: bytes) -> bytes:
        """The frames of items [start, stop) (no Notice among them), sendTime = *stamp*.
        The first time: head, stamp, payload of each, interleaved by two slice assignments
        and joined (a cold stream copies no frame before it is sent); from the second on,
        the stamp joins the kept ``mids`` (made here once)."""
        a, b = self.writes[start], self.writes[stop]
        if b <= self._sent:
            mids = self.mids
            if len(mids) < b - 1:
                k = len(mids)
                mids.extend(map(bytes.__add__, self.payloads[k:b - 1], self.heads[k + 1:b]))
            if b - a == 1:
                return self.heads[a] + stamp + self.payloads[a]
            return stamp.join([self.heads[a], *mids[a:b - 1], self.payloads[b - 1]])
        self._sent = max(self._sent, b)
        parts = [stamp] * (3 * (b - a))
        parts[0::3] = self.heads[a:b]
        parts[2::3] = self.payloads[a:b]
        return b"".join(parts)


_U = m.UNCHANGED
_INSERT_HEAD = struct.Struct(">cIcH")
_KIND_LEN = struct.Struct(">ci")


#: Columns up to which a relation's Insert encoder is one unrolled function (see below).
_UNROLL_COLUMNS = 64
#: A text value's kind and length ('t', Int32), by length, for values up to 4 kB (a
#: longer one leaves the unrolled encoder for the loop).
_TEXT_LENGTHS = tuple(_KIND_LEN.pack(b"t", n) for n in range(4096))
#: A value of a column's ``str_type`` as text bytes (the unrolled encoder's short path; a
#: str that strict UTF-8 cannot hold, a lone surrogate, leaves it for the loop).
_SHORT = {int: "f'{{v{i}}}'.encode()", str: "v{i}.encode()"}

#: A relation's encoders of top-level text Inserts: one row, and a run of rows.
InsertEncoders = tuple[Callable[[dict[str, Any]], bytes], Callable[[list[dict[str, Any]]], list[bytes]]]


def _insert_encoders(oid: int, columns: tuple[Column, ...], *,
                     native: Callable[..., list[bytes]] | None = SPEEDUPS and SPEEDUPS.encode_text_rows) -> InsertEncoders:
    """The payload of a top-level Insert of a row in text form: the same bytes as encoding
    ``Insert(None, oid, values)`` (the docs' "Logical Replication Message Formats": 'I',
    OID, 'N', TupleData), without building the message; made once per relation, for one
    row and for a run of rows (a plain transaction's inserts into one table).

    With the C extension (*native*, its TupleData writer generated from the grammar) a run
    of rows is one call, no Python step per row or value; ``payload`` below, the loop over
    the columns, is its reference and encodes what it does not (a row that is no dict, a
    text that is no str). Without it (pure Python), a row without NULLs (most of a stream)
    is one ``bytes.join`` of the head, each value's kind and length (looked up by length)
    and its text, from functions written out for the relation's columns (as
    ``dataclasses`` writes its methods): a loop over the columns costs three times as much
    per row, one ``struct`` call with a format per combination of lengths a third more."""
    head = _INSERT_HEAD.pack(b"I", oid, b"N", len(columns))
    spec = tuple((c.name, c.type.str_type, c.type.text) for c in columns)
    pack = _KIND_LEN.pack

    def payload(row: dict[str, Any]) -> bytes:
        parts = [head]
        append = parts.append
        for name, str_type, text in spec:
            v = row.get(name)
            if v is None:
                append(b"n")
                continue
            if type(v) is str_type:
                raw = str(v).encode("utf-8", "surrogateescape")
            else:
                t = text(v)
                if t is None:
                    append(b"n")
                    continue
                raw = t.encode("utf-8", "surrogateescape")
            append(pack(b"t", len(raw)))
            append(raw)
        return b"".join(parts)

    if native is not None:
        names, str_types, texts = (tuple(c) for c in zip(*spec)) if spec else ((), (), ())
        rows_c = partial(native, head, names, str_types, texts, payload)
        return (lambda row: rows_c([row])[0]), rows_c
    if not columns or len(columns) > _UNROLL_COLUMNS:
        return payload, lambda rows: list(map(payload, rows))
    k = range(len(columns))
    env: dict[str, Any] = {"loop": payload, "join": b"".join, "head": head, "lengths": _TEXT_LENGTHS}
    for i, (name, str_type, text) in enumerate(spec):
        env[f"n{i}"], env[f"t{i}"], env[f"x{i}"] = name, str_type, text
    short = [_SHORT.get(str_type, _SHORT[str]).format(i=i) for i, (_n, str_type, _x) in enumerate(spec)]
    packed = f"join((head, {', '.join(f'lengths[len(r{i})], r{i}' for i in k)}))"

    def body(indent: str, done: str) -> list[str]:
        """One row's encoding (a missing key, a value strict UTF-8 refuses or one of 4 kB or
        more: the loop)."""
        return [f"{indent}{line}" for line in [
            "try:",
            *(f"    v{i} = row[n{i}]" for i in k),
            f"    if {' or '.join(f'v{i} is None' for i in k)}:",
            f"        {done.format('loop(row)')}",
            *(f"    r{i} = {short[i]} if type(v{i}) is t{i} else x{i}(v{i}).encode('utf-8', 'surrogateescape')"
              for i in k),
            f"    {done.format(packed)}",
            "except (KeyError, IndexError, UnicodeEncodeError):",
            f"    {done.format('loop(row)')}",
        ]]

    source = "\n".join([
        "def payload(row):",
        *body("    ", "return {}"),
        "def payloads(rows):",
        "    out = []",
        "    append = out.append",
        "    for row in rows:",
        *body("        ", "append({}); continue"),
        "    return out",
    ])
    exec(source, env)  # noqa: S102 - our own text, from column positions only
    return env["payload"], env["payloads"]


class _Renderer:
    def __init__(self, history: History, persona: Persona, options: StreamOptions, start_lsn: int) -> None:
        self.history = history
        self.scenario = history.scenario
        self.persona = persona
        self.opts = options
        self.start = start_lsn
        self.plan = Plan(end_lsn=max(start_lsn, history.end_lsn))
        self.sent: set[int] = set()
        self.stream_sent: dict[int, set[int]] = {}
        major = persona.table
        self.binary = options.binary and major.accepts("binary")
        self.streaming = options.streaming != "off" and major.accepts("streaming")
        self.two_phase = options.two_phase and major.accepts("two_phase")
        self.messages = options.messages and major.accepts("messages")
        self.publications = []
        self.missing: list[str] = []
        for name in options.publication_names:
            pub = self.scenario.publication(name)
            if pub is None:
                self.missing.append(name)
            else:
                self.publications.append(pub)
        self.loaded = False
        self._syncs: dict[int, RelSync] = {}
        #: By table OID, once its Relation went out: the payload of a top-level text Insert
        #: published unfiltered (a plain transaction's inserts, the bulk of a stream, take
        #: this short path, a run of rows at a time; every other change the general one).
        self._inserts: dict[int, Callable[[list[dict[str, Any]]], list[bytes]]] = {}
        #: By table OID: the payload of a top-level text Insert (see _insert_encoders).
        self._encoders: dict[int, Callable[[dict[str, Any]], bytes]] = {}
        self.work_mem = max(self.scenario.server.logical_decoding_work_mem, 1)
        # A streamed transaction that was prepared and not yet decided (two_phase off).
        self.streamed_prepared: set[int] = set()

    # -- output ----------------------------------------------------------------------------
    def emit(self, lsn: int, msg: m.PgOutputMessage) -> None:
        self.plan.write(lsn, msg, encode(msg))

    def load_publications(self) -> None:
        """The first decoded change loads the publications: a missing one is an ERROR
        before 18 and a WARNING from 18 (pgoutput's LoadPublications)."""
        if self.loaded:
            return
        self.loaded = True
        for name in self.missing:
            if self.persona.missing_publication_is_error:
                raise _Stop(ServerError("42704", f'publication "{name}" does not exist'))
            self.plan.notice(ServerError(
                "55000", f'skipped loading publication "{name}"', severity="WARNING",
                detail="The publication does not exist at this point in the WAL.",
                hint="Create the publication if it does not exist."))

    def sync(self, table: Table) -> RelSync:
        entry = self._syncs.get(table.oid)
        if entry is None:
            entry = rel_sync(self.scenario, table, self.publications, self.persona.major)
            self._syncs[table.oid] = entry
        return entry

    def published(self, table: Table, action: str) -> bool:
        return action in self.sync(table).actions

    def truncated(self, table: Table) -> bool:
        """pgoutput_truncate: published for truncate, and a partition only when it is
        published as itself (with via-root its root's own entry carries the truncate)."""
        entry = self.sync(table)
        if "truncate" not in entry.actions:
            return False
        return table.partition_of is None or entry.publish_as is table

    # -- values ----------------------------------------------------------------------------
    def values(self, columns: tuple[Column, ...], row: dict[str, Any], *, key_only: bool = False,
               unchanged: tuple[str, ...] = ()) -> tuple[Any, ...]:
        out: list[Any] = []
        for c in columns:
            if key_only and not c.key:
                out.append(None)
                continue
            if c.name in unchanged:
                out.append(_U)
                continue
            v = row.get(c.name)
            if v is None:
                out.append(None)
            elif self.binary and c.type.has_binary:
                b = c.type.binary(v)
                out.append(b if b is not None else c.type.text(v))
            else:
                out.append(c.type.text(v))
        return tuple(out)

    def relation(self, entry: RelSync, xid: int | None, top: int | None) -> None:
        """maybe_send_schema: Relation (and user Types) once per connection, or once per
        streamed transaction while streaming, for the changed relation; a partition
        published as its root sends the root's Relation, then its own (both with the
        published columns), and each partition does so the first time it changes."""
        if entry.error is not None:
            raise _Stop(ServerError("0A000", entry.error))
        table = entry.table
        if top is not None:
            done = self.stream_sent.setdefault(top, set())
            if table.oid in done or table.oid in self.sent:
                return
            done.add(table.oid)
        else:
            if table.oid in self.sent:
                return
            self.sent.add(table.oid)
        if entry.publish_as is not table:
            self.send_relation(entry.publish_as, entry.columns, xid)
        names = {c.name for c in entry.columns}
        self.send_relation(table, tuple(c for c in table.columns if c.name in names), xid)

    def send_relation(self, table: Table, columns: tuple[Column, ...], xid: int | None) -> None:
        """send_relation_and_attrs: the user Types of the columns, then the Relation."""
        for c in columns:
            if c.type.is_user_type:
                ns = "" if c.type.namespace == "pg_catalog" else c.type.namespace
                self.emit(0, m.Type(xid, c.type.oid, ns, c.type.name))
        full = table.replica_identity == "f"
        cols = tuple(m.RelationColumn(1 if (full or c.key) else 0, c.name, c.type.oid, c.type.typmod)
                     for c in columns)
        ns = "" if table.schema == "pg_catalog" else table.schema
        self.emit(0, m.Relation(xid, table.oid, ns, table.name, table.replica_identity, cols))

    def outcome(self, ev: ChangeEvent) -> str | None:
        """What a row change is sent as after the row filters (pgoutput_row_filter):
        insert | update | delete, or None when filtered out or not published."""
        table = ev.table
        assert table is not None
        entry = self.sync(table)
        if ev.kind not in entry.actions:
            return None
        if ev.kind == "insert":
            assert ev.new is not None
            return "insert" if entry.passes("insert", ev.new) else None
        if ev.kind == "delete":
            assert ev.old is not None
            return "delete" if entry.passes("delete", ev.old) else None
        assert ev.new is not None and ev.old is not None
        if not entry.filters.get("update"):
            return "update"
        identity = entry.publish_as.replica_identity
        if not (identity == "f" or (ev.key_changed and identity in ("d", "i"))):
            # no old tuple in the WAL: the new row decides alone
            return "update" if entry.passes("update", ev.new) else None
        old_match = entry.passes("update", ev.old)
        new_match = entry.passes("update", ev.new)
        if old_match and new_match:
            return "update"
        if new_match:
            return "insert"
        if old_match:
            return "delete"
        return None

    # -- changes ---------------------------------------------------------------------------
    def change_messages(self, ev: ChangeEvent, xid: int | None, top: int | None,
                        begin: Any) -> None:
        """The messages of one change; ``begin()`` sends Begin first when not yet sent."""
        if ev.kind == "message":
            msg = ev.message
            assert msg is not None
            if not self.messages:
                return
            begin()
            self.emit(ev.lsn, m.LogicalMessage(xid, 1, ev.lsn, msg.prefix, msg.content))
            return
        if ev.kind == "truncate":
            if not self.persona.truncate:
                return
            tables = [t for t in ev.tables if self.truncated(t)]
            if not tables:
                return
            begin()
            for t in tables:
                self.relation(self.sync(t), xid, top)
            options = (1 if ev.cascade else 0) | (2 if ev.restart_identity else 0)
            self.emit(ev.lsn, m.Truncate(xid, options, tuple(t.oid for t in tables)))
            return
        table = ev.table
        assert table is not None
        kind = self.outcome(ev)
        if kind is None:
            return
        begin()
        entry = self.sync(table)
        self.relation(entry, xid, top)
        rel = entry.publish_as
        cols = entry.columns
        full = rel.replica_identity == "f"
        if kind == "insert":
            row = ev.new
            assert row is not None
            if xid is None and not self.binary:
                encoder = self._encoders.get(table.oid)
                if encoder is None:
                    encoder, run = _insert_encoders(rel.oid, cols)
                    self._encoders[table.oid] = encoder
                    if not entry.filters.get("insert"):
                        self._inserts[table.oid] = run
                self.plan.write(ev.lsn, _LAZY, encoder(row))
            else:
                self.emit(ev.lsn, m.Insert(xid, rel.oid, self.values(cols, row)))
        elif kind == "update":
            assert ev.new is not None and ev.old is not None
            new = self.values(cols, ev.new, unchanged=ev.unchanged)
            if full:
                self.emit(ev.lsn, m.Update(xid, rel.oid, "O", self.values(cols, ev.old), new))
            elif rel.replica_identity in ("d", "i") and (
                ev.key_changed or any(c.key and c.name in ev.unchanged for c in cols)
            ):
                # heapam.c heap_update: the old key is logged when a key column changed or
                # holds an out-of-line TOASTed value (id_has_external), which the new tuple
                # then sends as 'u': the key arrives de-toasted in the 'K' tuple only.
                self.emit(ev.lsn, m.Update(xid, rel.oid, "K", self.values(cols, ev.old, key_only=True), new))
            else:
                self.emit(ev.lsn, m.Update(xid, rel.oid, None, None, new))
        elif kind == "delete":
            assert ev.old is not None
            if full:
                self.emit(ev.lsn, m.Delete(xid, rel.oid, "O", self.values(cols, ev.old)))
            else:
                self.emit(ev.lsn, m.Delete(xid, rel.oid, "K", self.values(cols, ev.old, key_only=True)))

    def has_published(self, txn: TxnEvent) -> bool:
        for it in txn.items:
            if not isinstance(it, ChangeEvent):
                continue
            if it.kind == "message":
                if self.messages:
                    return True
            elif it.kind == "truncate":
                if self.persona.truncate and any(self.truncated(t) for t in it.tables):
                    return True
            elif it.table is not None and self.outcome(it) is not None:
                return True
        return False

    # -- transactions ----------------------------------------------------------------------
    def live_changes(self, txn: TxnEvent) -> list[ChangeEvent]:
        """The changes that survive: rolled-back subtransactions removed."""
        if not txn.rollbacks:
            changes: list[ChangeEvent] = txn.items  # type: ignore[assignment]  # no SubAbort
            return changes
        dead: set[int] = set()
        for it in txn.items:
            if isinstance(it, SubAbort):
                dead |= it.xids
        return [it for it in txn.items if isinstance(it, ChangeEvent) and it.xid not in dead]

    def should_stream(self, txn: TxnEvent) -> bool:
        if not self.streaming or txn.stream is False:
            return False
        if txn.stream:
            return True
        return sum(it.size for it in txn.items if isinstance(it, ChangeEvent)) > self.work_mem

    def origin_skipped(self, txn: TxnEvent) -> bool:
        return txn.origin is not None and self.opts.origin == "none" and self.persona.table.accepts("origin")

    def plain(self, txn: TxnEvent, *, final_lsn: int, end_lsn: int, time: int) -> None:
        """Begin … Commit (Begin sent lazily from 15, eagerly before)."""
        changes = self.live_changes(txn)
        state = {"begun": False}
        origin = txn.origin

        def begin() -> None:
            if state["begun"]:
                return
            state["begun"] = True
            self.load_publications()
            b = m.Begin(final_lsn, time, txn.xid)
            if origin is not None:
                self.emit(0, b)
                self.emit(txn.first_lsn, m.Origin(origin[1], origin[0]))
            else:
                self.emit(txn.first_lsn, b)

        if self.persona.sends_empty_transactions:
            begin()
        plan = self.plan
        lsns, payloads, messages = plan.lsns, plan.payloads, plan.messages
        inserts = self._inserts
        runs = txn.inserts if not txn.rollbacks else None
        if runs is None:
            runs = InsertRuns.of(changes)
        ends, run_lsns, news = runs.ends, runs.lsns, runs.news
        i, count = 0, len(changes)
        while i < count:
            ev = changes[i]
            encode_run = inserts.get(ev.table.oid) if ev.kind == "insert" and state["begun"] else None  # type: ignore[union-attr]
            if encode_run is None:
                self.change_messages(ev, None, None, begin)
                i += 1
                continue
            # The inserts into this table from here on, encoded in one call.
            j = ends[i]
            payloads.extend(encode_run(news[i:j]))  # type: ignore[arg-type]
            lsns.extend(run_lsns[i:j])
            messages.extend(repeat(_LAZY, j - i))
            i = j
        if state["begun"]:
            self.emit(end_lsn, m.Commit(0, final_lsn, end_lsn, time))

    def prepared(self, txn: TxnEvent) -> None:
        """Begin Prepare … Prepare (two_phase)."""
        assert txn.gid is not None
        self.load_publications()
        bp = m.BeginPrepare(txn.commit_lsn, txn.end_lsn, txn.commit_time, txn.xid, txn.gid)
        if txn.origin is not None:
            self.emit(0, bp)
            self.emit(txn.first_lsn, m.Origin(txn.origin[1], txn.origin[0]))
        else:
            self.emit(txn.first_lsn, bp)
        for ev in self.live_changes(txn):
            self.change_messages(ev, None, None, lambda: None)
        self.emit(txn.end_lsn, m.Prepare(0, txn.commit_lsn, txn.end_lsn, txn.commit_time, txn.xid, txn.gid))

    def streamed(self, txn: TxnEvent) -> None:
        """Stream Start/Stop segments, Stream Aborts of subtransactions, then the end:
        Stream Commit, Stream Abort (whole), Stream Prepare (two_phase) or nothing yet
        (prepared without two_phase: decided at COMMIT/ROLLBACK PREPARED)."""
        self.load_publications()
        xid = txn.xid
        buffer: list[ChangeEvent] = []
        streamed_xids: set[int] = set()
        first = True
        parallel = self.opts.streaming == "parallel" and "parallel" in self.persona.table.streaming_values

        def flush() -> None:
            nonlocal first, buffer
            published = [ev for ev in buffer if self._publishes(ev)]
            buffer = []
            if not published:
                return
            start = published[0].lsn
            s = m.StreamStart(xid, first)
            if first and txn.origin is not None:
                self.emit(0, s)
                self.emit(start, m.Origin(0, txn.origin[0]))
            else:
                self.emit(start, s)
            first = False
            for ev in published:
                streamed_xids.add(ev.xid)
                self.change_messages(ev, ev.xid, xid, lambda: None)
            self.emit(published[-1].lsn, m.StreamStop())

        memory = 0
        for it in txn.items:
            if isinstance(it, SubAbort):
                buffer = [ev for ev in buffer if ev.xid not in it.xids]
                memory = sum(ev.size for ev in buffer)
                if streamed_xids & it.xids:
                    self.emit(it.lsn, m.StreamAbort(xid, it.subxid, it.lsn if parallel else None,
                                                    it.time if parallel else None))
                    streamed_xids -= it.xids
                continue
            buffer.append(it)
            memory += it.size
            if memory > self.work_mem:
                flush()
                memory = 0
        if txn.outcome == "abort":
            if not first:
                self.emit(txn.commit_lsn, m.StreamAbort(xid, xid, txn.commit_lsn if parallel else None,
                                                        txn.commit_time if parallel else None))
                self.stream_sent.pop(xid, None)
            return
        flush()
        if first:
            # Nothing was published after all: an empty transaction.
            if self.persona.sends_empty_transactions and txn.outcome == "commit":
                self.emit(txn.first_lsn, m.Begin(txn.commit_lsn, txn.commit_time, xid))
                self.emit(txn.end_lsn, m.Commit(0, txn.commit_lsn, txn.end_lsn, txn.commit_time))
            return
        if txn.outcome == "commit":
            self.emit(txn.end_lsn, m.StreamCommit(xid, 0, txn.commit_lsn, txn.end_lsn, txn.commit_time))
            self.sent |= self.stream_sent.pop(xid, set())
        elif txn.outcome == "prepare":
            assert txn.gid is not None
            if self.two_phase:
                self.emit(txn.end_lsn, m.StreamPrepare(0, txn.commit_lsn, txn.end_lsn, txn.commit_time,
                                                       xid, txn.gid))
                self.sent |= self.stream_sent.pop(xid, set())
            else:
                self.streamed_prepared.add(xid)

    def _publishes(self, ev: ChangeEvent) -> bool:
        if ev.kind == "message":
            return self.messages
        if ev.kind == "truncate":
            return self.persona.truncate and any(self.truncated(t) for t in ev.tables)
        return ev.table is not None and self.outcome(ev) is not None

    # -- the whole history -----------------------------------------------------------------
    def steps(self) -> Iterator[None]:
        """Render one history event per step (the plan streams while it renders)."""
        try:
            for ev in self.history.events:
                self.event(ev)
                yield
        except _Stop as stop:
            self.plan.notice(stop.error)

    def event(self, ev: Any) -> None:
        if isinstance(ev, MessageEvent):
            if ev.lsn < self.start or not self.messages:
                return
            self.load_publications()
            self.emit(ev.lsn, m.LogicalMessage(None, 0, ev.lsn, ev.message.prefix, ev.message.content))
            return
        if isinstance(ev, PreparedEnd):
            self.prepared_end(ev)
            return
        txn: TxnEvent = ev
        if txn.commit_lsn < self.start or self.origin_skipped(txn):
            return
        if any(isinstance(it, ChangeEvent) and it.kind != "message" for it in txn.items):
            # the first decoded change loads the publications, published or not
            self.load_publications()
        if txn.outcome == "abort":
            if self.should_stream(txn):
                self.streamed(txn)
            return
        if txn.outcome == "prepare" and not self.two_phase:
            # Decoded at COMMIT PREPARED; a large one may be streamed now.
            if self.should_stream(txn) and self.has_published(txn):
                self.streamed(txn)
            return
        if not txn.items and txn.outcome == "commit":
            return  # no WAL of its own: nothing to decode
        if self.should_stream(txn) and self.has_published(txn):
            self.streamed(txn)
            return
        if txn.outcome == "prepare":
            self.prepared(txn)
            return
        if not self.has_published(txn) and not self.persona.sends_empty_transactions:
            return
        self.plain(txn, final_lsn=txn.commit_lsn, end_lsn=txn.end_lsn, time=txn.commit_time)

    def prepared_end(self, ev: PreparedEnd) -> None:
        txn = ev.txn
        if ev.lsn < self.start or self.origin_skipped(txn):
            return
        if self.two_phase:
            if not self.has_published(txn) and not self.should_stream(txn):
                # pgoutput sends prepared transactions even when empty (no lazy Begin).
                pass
            self.load_publications()
            if ev.commit:
                self.emit(ev.end_lsn, m.CommitPrepared(0, ev.lsn, ev.end_lsn, ev.time, txn.xid, txn.gid or ""))
            else:
                self.emit(ev.end_lsn, m.RollbackPrepared(0, txn.end_lsn, ev.end_lsn, txn.commit_time, ev.time,
                                                         txn.xid, txn.gid or ""))
            return
        if txn.xid in self.streamed_prepared:
            self.streamed_prepared.discard(txn.xid)
            if ev.commit:
                self.emit(ev.end_lsn, m.StreamCommit(txn.xid, 0, ev.lsn, ev.end_lsn, ev.time))
                self.sent |= self.stream_sent.pop(txn.xid, set())
            else:
                parallel = self.opts.streaming == "parallel"
                self.emit(ev.lsn, m.StreamAbort(txn.xid, txn.xid, ev.lsn if parallel else None,
                                                ev.time if parallel else None))
                self.stream_sent.pop(txn.xid, None)
            return
        if not ev.commit:
            return
        if not self.has_published(txn) and not self.persona.sends_empty_transactions:
            return
        self.plain(txn, final_lsn=ev.lsn, end_lsn=ev.end_lsn, time=ev.time)


class _Stop(Exception):
    def __init__(self, error: ServerError) -> None:
        super().__init__(error.message)
        self.error = error


def render(history: History, persona: Persona, options: StreamOptions, start_lsn: int, *,
           lazy: bool = False) -> Plan:
    """The messages a client with *options* gets from *start_lsn* on; with *lazy* the plan
    renders as it is consumed (:meth:`Plan.grow`), else it is complete."""
    if history.scenario.raw is not None:
        return _render_raw(history, persona, options, start_lsn)
    renderer = _Renderer(history, persona, options, start_lsn)
    renderer.plan._source = renderer.steps()
    return renderer.plan if lazy else renderer.plan.finish()


# ------------------------------------------------------------------------------------------
# Recorded streams (replay, hypothesis): served byte for byte
# ------------------------------------------------------------------------------------------

#: Messages that end a unit the skip rule works on (a transaction, a streamed transaction's
#: end, a two-phase step).
_ENDS = frozenset("CcAPpKr")


def raw_lsns(payloads: tuple[bytes, ...], start: int) -> list[int]:
    """Write LSNs for recorded payloads that came without any: the zero-LSN rule for
    Relation/Type (and Begin/Stream Start/Begin Prepare followed by Origin), a growing
    position for the others."""
    out: list[int] = []
    lsn = start
    for i, p in enumerate(payloads):
        tag = chr(p[0]) if p else "?"
        nxt = chr(payloads[i + 1][0]) if i + 1 < len(payloads) and payloads[i + 1] else ""
        if tag in "RY" or (tag in "BSb" and nxt == "O"):
            out.append(0)
            continue
        lsn += 0x40 + ((len(p) + 7) & ~7)
        out.append(lsn)
    return out


def _render_raw(history: History, persona: Persona, options: StreamOptions, start_lsn: int) -> Plan:
    raw = history.scenario.raw
    assert raw is not None
    if raw.lsns is not None:
        lsns = [ws for ws, _we in raw.lsns]
    else:
        lsns = raw_lsns(raw.payloads, history.scenario.server.start_lsn)
    plan = Plan(end_lsn=max([start_lsn, history.scenario.server.start_lsn, *lsns]))
    recorded = _recorded_options(persona, raw.options)
    if recorded is not None and recorded.decoder_options() != options.decoder_options():
        plan.notice(ServerError(
            "01000", "replaying a recorded stream: its options differ from the ones requested", severity="WARNING",
            detail=f"Recorded with {dict(raw.options)}; requested {options.decoder_options()}."))
    # Skip whole units that ended at or before the start point (a client that confirmed a
    # Commit's position restarts after it).
    skip_until = -1
    unit_start = 0
    for i, p in enumerate(raw.payloads):
        tag = chr(p[0]) if p else "?"
        if tag in _ENDS or (tag == "M" and unit_start == i):
            if lsns[i] and lsns[i] <= start_lsn:
                skip_until = i
            unit_start = i + 1
    for i, (p, lsn) in enumerate(zip(raw.payloads, lsns)):
        if i > skip_until:
            plan.write(lsn, None, p)
    return plan


def _recorded_options(persona: Persona, options: tuple[tuple[str, Any], ...]) -> StreamOptions | None:
    if not options:
        return None
    try:
        return persona.parse_options([(k, None if v is None else str(v)) for k, v in options])
    except ServerError:
        return None


def iter_writes(plan: Plan) -> Iterator[Write]:
    for it in plan.items:
        if isinstance(it, Write):
            yield it
