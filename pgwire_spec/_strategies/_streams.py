"""Whole pgoutput streams, valid as a sequence: what a server sends after START_REPLICATION.

The builder plays the server: it keeps the tables of a database, the relation cache the
client has been told about, the open streamed transactions and the prepared ones, an LSN
and a clock, and writes messages the way pgoutput does (pgoutput.c, proto.c; the errata
of spec/errata.yaml):

- Relation (after the Type of every column type with OID >= 10000) before a table's
  first change, again after a schema change, and in every streamed transaction before
  its first use there; repeats are identical.
- Begin.final_lsn == Commit.commit_lsn; Begin Prepare and Prepare agree on LSN, xid, GID.
- Updates and deletes shaped by the replica identity (K full width, O under FULL only).
- Streamed blocks of several xids interleave; first_segment is 1 exactly on an xid's
  first block; changes carry the xid (or a subtransaction's xid) prefix; Origin follows
  Stream Start only on a first segment, with origin LSN 0; subtransaction aborts name a
  subxid that had changes; Stream Abort carries its tail exactly with streaming=parallel.
- Non-transactional logical messages only between transactions.

Every message gets the LSN a walsender would put in its XLogData header (erratum
E-ZERO-LSN): 0 for Relation and Type and for a Begin / Begin Prepare / Stream Start that
an Origin follows; otherwise the position described there. LSNs never go down (a
simplification: a real server's Begin may name an LSN below the previous Commit's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from ..pgoutput import _catalogue, _codec
from ..pgoutput import messages as m
from ._context import ProtocolContext, Streaming, contexts
from ._messages import (
    Table,
    _gids,
    draw_delete,
    draw_insert,
    draw_update,
    from_layout,
    names,
    relation_oids,
    strings,
    tables,
)
from ._types import BUILTIN_TYPES

__all__ = ["Stream", "streams", "Builder", "Entry", "choose"]

T = TypeVar("T")

#: The change messages the builder draws itself, with a server's logic (a Relation before
#: the first change of a table, Truncate's table groups, an Origin opening a transaction …).
#: Any other message whose catalogue entry gives it the role of a change is drawn from its
#: layout (``from_layout``) wherever the context lets a server send it: a new message kind
#: appears in drawn streams without an edit here.
DRAWN_HERE: frozenset[str] = frozenset({
    "Origin", "Relation", "Type", "Insert", "Update", "Delete", "Truncate", "LogicalMessage",
})


def _from_layout_kinds(ctx: ProtocolContext) -> list[str]:
    """The catalogue's change messages the builder does not draw itself, sent in *ctx*."""
    tags = ctx.tags
    return [e.name for e in _catalogue.BY_TAG.values()
            if e.facts.role == "change" and e.name not in DRAWN_HERE and e.tag in tags]


@dataclass(frozen=True, slots=True)
class Stream:
    """A valid pgoutput stream and what a decoder needs to read it.

    ``options`` are the keyword arguments of :class:`~pgwire_spec.PgOutputDecoder`;
    ``in_stream[i]`` says whether message *i* sits in a streamed block (for
    :func:`~pgwire_spec.decode_message`; Stream Stop included, Stream Start not);
    ``write_lsns[i]`` is the dataStart/walEnd a
    walsender gives message *i* in its XLogData.
    """

    context: ProtocolContext
    messages: tuple[m.PgOutputMessage, ...]
    payloads: tuple[bytes, ...]
    in_stream: tuple[bool, ...]
    write_lsns: tuple[int, ...]

    @property
    def options(self) -> dict[str, Any]:
        return self.context.decoder_options

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(slots=True)
class Entry:
    msg: m.PgOutputMessage
    in_stream: bool
    lsn: int


@dataclass(slots=True)
class _Streamed:
    xid: int
    segments: int = 0
    #: subtransaction xids still alive, and those that had changes (may be aborted)
    subxids: list[int] = field(default_factory=list)
    changed: set[int] = field(default_factory=set)
    schema: dict[int, m.Relation] = field(default_factory=dict)


@dataclass(slots=True)
class _Prepared:
    xid: int
    gid: str
    end_lsn: int
    time: int


def choose(draw: st.DrawFn, options: Sequence[T]) -> T:
    """One of *options* (cheaper than a new ``sampled_from`` per draw; shrinks to the first)."""
    return options[draw(st.integers(0, len(options) - 1))]


_BUILTINS = st.sampled_from(BUILTIN_TYPES)


@st.composite
def _span(draw: st.DrawFn, body: Any) -> Any:
    return body(draw)
_LSN_STEP = 0x38
_XACT_STEP = 0x40


class Builder:
    """Plays the server for one stream; every choice is a hypothesis draw."""

    def __init__(self, draw: st.DrawFn, ctx: ProtocolContext, *, max_changes: int = 4,
                 max_tables: int = 4) -> None:
        self.draw = draw
        self.ctx = ctx
        self.max_changes = max_changes
        self.max_tables = max_tables
        self.entries: list[Entry] = []
        self.lsn = draw(st.integers(0x1000000, 0xFFFFFFFF)) * 8
        self.time = draw(st.integers(7 * 10**14, 9 * 10**14))
        self.next_xid = draw(st.integers(3, (1 << 31)))
        # The database's tables, drawn first (one span): a change picks one by position, so
        # shrinking can drop a change without the others drawing differently.
        schema = draw(st.lists(tables(), min_size=1, max_size=max_tables, unique_by=lambda t: t.oid))
        self.tables: dict[int, Table] = {t.oid: t for t in schema}
        #: what the client's relation cache holds (what it was last told)
        self.client: dict[int, m.Relation] = {}
        #: relations counted as sent outside streamed transactions (pgoutput's schema_sent)
        self.schema_sent: dict[int, m.Relation] = {}
        self.streams: dict[int, _Streamed] = {}
        self.prepared: list[_Prepared] = []
        self.gids: set[str] = set()
        self.last_change_lsn = self.lsn

    # -- small helpers -------------------------------------------------------------------------
    def span(self, fn: Any, *args: Any, **kwargs: Any) -> st.SearchStrategy[Any]:
        """A strategy that runs *fn* with its own draws grouped (a hypothesis span), so that
        shrinking can drop or simplify one event or one change as a whole."""
        outer = self.draw

        def body(draw: st.DrawFn) -> Any:
            self.draw = draw
            try:
                return fn(*args, **kwargs)
            finally:
                self.draw = outer

        return _span(body)

    def repeat(self, fn: Any, *args: Any, low: int = 0, high: int) -> None:
        """*fn* low to high times, each a span, counted like a list (hypothesis' own
        "one more?" flags, which shrinking can delete element by element)."""
        self.draw(st.lists(self.span(fn, *args), min_size=low, max_size=high))

    def emit(self, msg: m.PgOutputMessage, lsn: int, in_stream: bool = False) -> int:
        self.entries.append(Entry(msg, in_stream, lsn))
        return len(self.entries) - 1

    def new_xid(self) -> int:
        xid = self.next_xid
        self.next_xid += 1 + self.draw(st.integers(0, 3))
        return xid

    def tick(self) -> int:
        self.time += 1000
        return self.time

    def step(self, n: int = _LSN_STEP) -> int:
        lsn = self.lsn
        self.lsn += n
        return lsn

    def new_gid(self, xid: int) -> str:
        gid = self.draw(st.one_of(st.just(f"pg_gid_16390_{xid}"), _gids))
        while gid in self.gids:
            gid += "_"
        self.gids.add(gid)
        return gid

    def origin(self) -> bool:
        return self.ctx.origin != "none" and self.draw(st.integers(0, 5)) == 5

    def pick_table(self, identities: str = "dfin") -> Table:
        """A table of the database (with one of *identities*; a new one if none has)."""
        d = self.draw
        known = [t for t in self.tables.values() if t.relation.replica_identity in identities]
        if known:
            return choose(d, known)
        oid = d(relation_oids)
        while oid in self.tables or oid >> 24 == 0x4E:
            oid = (oid + 1) & 0xFFFFFFFF or 16384
        table = d(tables(oid, identity=choose(d, identities)))
        self.tables[oid] = table
        return table

    # -- schema ----------------------------------------------------------------------------------
    def ensure_schema(self, table: Table, sx: _Streamed | None, xid: int | None, force: bool = False) -> None:
        """Send Type and Relation messages unless this context already has them."""
        rel = table.relation
        sent = sx.schema if sx is not None else self.schema_sent
        if not force and sent.get(table.oid) == rel and self.client.get(table.oid) == rel:
            return
        for ut in table.user_types:
            self.emit(m.Type(xid, ut.oid, ut.type_namespace, ut.type_name), 0, sx is not None)
        self.emit(m.Relation(xid, rel.relation_id, rel.namespace, rel.name, rel.replica_identity,
                             rel.columns), 0, sx is not None)
        sent[table.oid] = rel
        self.client[table.oid] = rel

    # -- changes -----------------------------------------------------------------------------------
    def change(self, sx: _Streamed | None, kind: str | None = None, identities: str | None = None) -> None:
        """One change inside a transaction or a streamed block (of *kind*, or drawn; on a
        table with one of *identities*, or any)."""
        d = self.draw
        xid: int | None = None
        # Drawn outside streamed blocks too, so that a change draws the same either way.
        j = d(st.integers(0, (len(sx.subxids) if sx is not None else 0) + 1))
        if sx is not None:
            # A change of a subtransaction carries the subtransaction's xid.
            if j == 0 or j > len(sx.subxids) and len(sx.subxids) >= 3:
                xid = sx.xid
            elif j > len(sx.subxids):
                xid = self.new_xid()
                sx.subxids.append(xid)
            else:
                xid = sx.subxids[j - 1]
            if xid != sx.xid:
                sx.changed.add(xid)
        kinds = ["insert", "update", "delete", "truncate", "relation"]
        if self.ctx.messages:
            kinds.append("message")
        kinds += _from_layout_kinds(self.ctx)
        kind = kind or choose(d, kinds)
        inside = sx is not None
        lsn = self.lsn
        if kind == "message":
            self.emit(m.LogicalMessage(xid, 1, lsn, d(strings), d(st.binary(max_size=16))), lsn, inside)
            self.last_change_lsn = self.step()
            return
        if kind in _catalogue.ENTRIES:
            self.emit(from_layout(d, _catalogue.ENTRIES[kind].cls, self.ctx, xid), lsn, inside)
            self.last_change_lsn = self.step()
            return
        table = self.pick_table(identities or ("dfi" if kind in ("update", "delete") else "dfin"))
        if kind == "relation":
            if d(st.booleans()):
                # ALTER TABLE … ADD COLUMN: the next change sends the new Relation.
                cols = {c.name for c in table.relation.columns}
                name = d(names.filter(lambda n: n not in cols))
                table = table.with_column(name, d(_BUILTINS))
                self.tables[table.oid] = table
            # A cache invalidation (e.g. ANALYZE) re-sends the Relation, identical.
            self.ensure_schema(table, sx, xid, force=True)
            kind = "insert"
        if kind == "truncate":
            group = [table] + [t for t in self.tables.values() if t is not table and d(st.booleans())]
            for t in group:
                self.ensure_schema(t, sx, xid)
            msg: m.PgOutputMessage = m.Truncate(xid, d(st.integers(0, 3)), tuple(t.oid for t in group))
        else:
            if table.relation.replica_identity == "n":
                kind = "insert"  # UPDATE/DELETE on a table without replica identity fail
            self.ensure_schema(table, sx, xid)
            make = {"insert": draw_insert, "update": draw_update, "delete": draw_delete}[kind]
            msg = make(d, table, self.ctx.binary, xid)
        self.emit(msg, lsn, inside)
        self.last_change_lsn = lsn
        self.step(_LSN_STEP + 8 * len(table.types))

    # -- transactions --------------------------------------------------------------------------------
    def transaction(self, *, prepared: bool = False, changes: int | None = None,
                    kind: str | None = None, identities: str | None = None) -> None:
        """Begin … Commit (or Begin Prepare … Prepare), possibly empty."""
        d = self.draw
        xid = self.new_xid()
        first = self.lsn
        begin_at = self.emit(m.Begin(0, 0, xid), first)
        if self.origin():
            self.entries[begin_at].lsn = 0
            self.emit(m.Origin(d(st.integers(1, 1 << 40)), d(strings)), first)
        if changes is not None:
            for _ in range(changes):
                self.change(None, kind, identities)
        else:
            self.repeat(self.change, None, kind, identities, high=self.max_changes)
        commit_lsn = self.lsn
        end_lsn = commit_lsn + _XACT_STEP
        self.lsn = end_lsn
        when = self.tick()
        if prepared:
            gid = self.new_gid(xid)
            self.entries[begin_at].msg = m.BeginPrepare(commit_lsn, end_lsn, when, xid, gid)
            self.emit(m.Prepare(0, commit_lsn, end_lsn, when, xid, gid), end_lsn)
            self.prepared.append(_Prepared(xid, gid, end_lsn, when))
        else:
            self.entries[begin_at].msg = m.Begin(commit_lsn, when, xid)
            self.emit(m.Commit(0, commit_lsn, end_lsn, when), end_lsn)

    def resolve_prepared(self) -> None:
        """COMMIT PREPARED or ROLLBACK PREPARED of a transaction prepared earlier."""
        d = self.draw
        p = self.prepared.pop(d(st.integers(0, len(self.prepared) - 1)))
        start = self.step(_XACT_STEP)
        end = self.lsn
        if d(st.booleans()):
            self.emit(m.CommitPrepared(0, start, end, self.tick(), p.xid, p.gid), end)
        else:
            self.emit(m.RollbackPrepared(0, p.end_lsn, end, p.time, self.tick(), p.xid, p.gid), end)

    def logical_message(self) -> None:
        """pg_logical_emit_message(false, …): outside any transaction, flags 0."""
        d = self.draw
        lsn = self.step()
        self.emit(m.LogicalMessage(None, 0, lsn, d(strings), d(st.binary(max_size=16))), lsn)

    # -- streamed transactions ----------------------------------------------------------------------
    def stream_block(self, sx: _Streamed | None = None, changes: int | None = None,
                     kind: str | None = None) -> _Streamed:
        """Stream Start … Stream Stop for a new or an open streamed transaction."""
        d = self.draw
        if sx is None:
            sx = _Streamed(self.new_xid())
            self.streams[sx.xid] = sx
        first = sx.segments == 0
        start = self.lsn
        at = self.emit(m.StreamStart(sx.xid, first), start)
        if first and self.origin():
            self.entries[at].lsn = 0
            self.emit(m.Origin(0, d(strings)), start, True)
        if changes is not None:
            for _ in range(changes):
                self.change(sx, kind)
        else:
            self.repeat(self.change, sx, kind, low=1, high=self.max_changes)
        self.emit(m.StreamStop(), self.last_change_lsn, True)
        sx.segments += 1
        return sx

    def stream_subabort(self, sx: _Streamed) -> None:
        """ROLLBACK TO SAVEPOINT in a streamed transaction: Stream Abort (xid, subxid)."""
        d = self.draw
        sub = choose(d, sorted(sx.changed))
        sx.changed.discard(sub)
        if sub in sx.subxids:
            sx.subxids.remove(sub)
        self.emit(self._abort(sx.xid, sub), self.lsn)
        self.step()

    def _abort(self, xid: int, sub: int) -> m.StreamAbort:
        if self.ctx.abort_tail:
            return m.StreamAbort(xid, sub, self.lsn, self.tick())
        return m.StreamAbort(xid, sub)

    def stream_end(self, sx: _Streamed, how: str | None = None) -> None:
        """Stream Commit, Stream Abort of the whole transaction, or Stream Prepare."""
        d = self.draw
        ways = ["commit", "abort"] + (["prepare"] if self.ctx.two_phase else [])
        how = how or choose(d, ways)
        del self.streams[sx.xid]
        if how == "abort":
            self.emit(self._abort(sx.xid, sx.xid), self.lsn)
            self.step()
            return
        commit_lsn = self.lsn
        end_lsn = commit_lsn + _XACT_STEP
        self.lsn = end_lsn
        when = self.tick()
        # pgoutput counts the schema sent in a committed (or prepared) streamed transaction
        # as sent (cleanup_rel_sync_cache).
        self.schema_sent.update(sx.schema)
        if how == "commit":
            self.emit(m.StreamCommit(sx.xid, 0, commit_lsn, end_lsn, when), end_lsn)
        else:
            gid = self.new_gid(sx.xid)
            self.emit(m.StreamPrepare(0, commit_lsn, end_lsn, when, sx.xid, gid), end_lsn)
            self.prepared.append(_Prepared(sx.xid, gid, end_lsn, when))

    # -- the whole stream --------------------------------------------------------------------------
    def run(self, max_steps: int) -> None:
        """Up to *max_steps* events (each drawn as one span), then close what is open."""
        self.repeat(self.event, high=max_steps)
        self.close()

    def event(self) -> None:
        """One transaction, streamed block, stream end, prepared-transaction end or
        non-transactional message."""
        d = self.draw
        ctx = self.ctx
        kinds = ["transaction"]
        if ctx.streaming != "off":
            if len(self.streams) < 3:
                kinds.append("stream")
            if self.streams:
                kinds += ["block", "end"]
                if any(s.changed for s in self.streams.values()):
                    kinds.append("subabort")
        if ctx.two_phase:
            kinds.append("prepared")
        if self.prepared:
            kinds.append("resolve")
        if ctx.messages:
            kinds.append("message")
        kind = choose(d, kinds)
        if kind == "transaction":
            self.transaction()
        elif kind == "prepared":
            self.transaction(prepared=True)
        elif kind == "resolve":
            self.resolve_prepared()
        elif kind == "message":
            self.logical_message()
        elif kind == "stream":
            self.stream_block()
        else:
            sx = choose(d, sorted(self.streams.values(), key=lambda s: s.xid))
            if kind == "block":
                self.stream_block(sx)
            elif kind == "end":
                self.stream_end(sx)
            else:
                self.stream_subabort(sx) if sx.changed else self.stream_block(sx)

    def close(self) -> None:
        """End every open streamed transaction and resolve every prepared one."""
        for sx in sorted(self.streams.values(), key=lambda s: s.xid):
            self.stream_end(sx)
        while self.prepared:
            self.resolve_prepared()

    def stream(self) -> Stream:
        encode = _codec.encode
        return Stream(
            self.ctx,
            tuple(e.msg for e in self.entries),
            tuple(encode(e.msg) for e in self.entries),
            tuple(e.in_stream for e in self.entries),
            tuple(e.lsn for e in self.entries),
        )


def streams(
    *,
    protocol_version: int | None = None,
    streaming: Streaming | bool | None = None,
    two_phase: bool | None = None,
    binary: bool | None = None,
    messages: bool | None = None,
    origin: str | None = None,
    context: ProtocolContext | st.SearchStrategy[ProtocolContext] | None = None,
    max_steps: int = 6,
    max_changes: int = 4,
) -> st.SearchStrategy[Stream]:
    """Valid pgoutput streams; see :mod:`pgwire_spec.strategies` for the guarantees.

    Every context argument left as ``None`` is drawn (``origin``: not sent, ``'any'`` or
    ``'none'``); or pass a whole *context* (a :class:`ProtocolContext` or a strategy).
    *max_steps* bounds the transactions, streamed blocks and messages drawn;
    *max_changes* the changes per transaction or block.
    """
    if context is None:
        ctxs = contexts(protocol_version=protocol_version, streaming=streaming, two_phase=two_phase,
                        binary=binary, messages=messages, origin=origin)  # type: ignore[arg-type]
    elif isinstance(context, ProtocolContext):
        ctxs = st.just(context)
    else:
        ctxs = context

    @st.composite
    def draw_stream(draw: st.DrawFn) -> Stream:
        ctx = draw(ctxs)
        b = Builder(draw, ctx, max_changes=max_changes)
        b.run(max_steps)
        return b.stream()

    return draw_stream()

