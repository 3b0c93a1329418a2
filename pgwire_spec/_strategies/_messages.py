"""Tables, tuples and single pgoutput messages for a protocol context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..pgoutput import _catalogue
from ..pgoutput import messages as m
from ._context import ProtocolContext, Streaming, contexts
from ._types import BUILTIN_TYPES, FIRST_NORMAL_OID, PgType, UserType, user_types

__all__ = [
    "Table",
    "tables",
    "draw_insert",
    "draw_update",
    "draw_delete",
    "pgoutput_messages",
    "column_values",
    "relation_oids",
    "NEEDS",
]

_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1

# Field value strategies. Relation OIDs avoid a first byte of 0x4E ('N') so that an xid
# prefix sent where none belongs always fails at the same byte (see spec/rules.yaml,
# xid-prefix-unexpected).
relation_oids = st.integers(FIRST_NORMAL_OID, _U32).map(lambda o: o ^ (1 << 24) if o >> 24 == 0x4E else o)
type_oids = st.integers(FIRST_NORMAL_OID, _U32)
xids = st.integers(3, _U32)  # FirstNormalTransactionId = 3
lsns = st.integers(0, _U64)
timestamps = st.integers(-(1 << 63), (1 << 63) - 1)
_NAME_CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
names = st.one_of(
    st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12),
    st.text(_NAME_CHARS, min_size=1, max_size=12),
)
#: Text without NUL (a String field): prefixes, origin names, GIDs.
strings = st.text(_NAME_CHARS, max_size=16)
namespaces = st.one_of(st.sampled_from(["public", "app", "Schéma"]), names)


@dataclass(frozen=True, slots=True)
class Table:
    """A published table: its Relation message (without xid) and its column types."""

    relation: m.Relation
    types: tuple[PgType, ...]
    #: Types with OID >= 10000 among the columns (each needs a Type message), by OID.
    user_types: tuple[UserType, ...] = ()

    @property
    def oid(self) -> int:
        return self.relation.relation_id

    @property
    def key(self) -> tuple[int, ...]:
        """Positions of the replica identity's columns (empty for 'n'; all for 'f')."""
        return tuple(i for i, c in enumerate(self.relation.columns) if c.flags & 1)

    def with_column(self, name: str, t: PgType) -> Table:
        """The table after ``ALTER TABLE … ADD COLUMN`` (a nullable, non-key column)."""
        flags = 1 if self.relation.replica_identity == "f" else 0
        col = m.RelationColumn(flags, name, t.oid, t.typmod)
        rel = m.Relation(None, self.oid, self.relation.namespace, self.relation.name,
                         self.relation.replica_identity, self.relation.columns + (col,))
        return Table(rel, self.types + (t,), self.user_types)


_BUILTIN_INDEX = st.integers(0, len(BUILTIN_TYPES) - 1)
_USER_TYPES = user_types(type_oids)
_COLUMN_NAMES = st.one_of(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8), names)


@st.composite
def tables(
    draw: st.DrawFn,
    relation_id: int | None = None,
    *,
    identity: str | None = None,
    max_columns: int = 5,
    user_type_oids: st.SearchStrategy[int] = type_oids,
) -> Table:
    """A table with a replica identity (d, n, f, i) and columns of built-in and user types.

    Default ('d', a primary key) and index ('i') identities have at least one key column;
    FULL flags every column (erratum E-FULL-KEY-FLAGS); NOTHING flags none.
    """
    oid = relation_id if relation_id is not None else draw(relation_oids)
    ident = identity or "dfin"[draw(st.integers(0, 3))]
    ncols = draw(st.integers(1 if ident in "di" else 0, max_columns))
    cols = draw(st.lists(_COLUMN_NAMES, min_size=ncols, max_size=ncols, unique=True))
    types: list[PgType] = []
    users: dict[int, UserType] = {}
    for _ in range(ncols):
        if draw(st.integers(0, 7)) == 7:  # a user type now and then; shrinks to built-in
            ut = draw(_USER_TYPES if user_type_oids is type_oids else user_types(user_type_oids))
            ut = users.setdefault(ut.oid, ut)
            types.append(ut.pgtype)
        else:
            types.append(BUILTIN_TYPES[draw(_BUILTIN_INDEX)])
    key: set[int] = set()
    if ident in "di":
        keyable = [i for i, t in enumerate(types) if t.keyable]
        if not keyable:
            types[0] = BUILTIN_TYPES[1]  # int4
            keyable = [0]
        key = set(draw(st.lists(st.sampled_from(keyable), min_size=1, max_size=2, unique=True)))
    elif ident == "f":
        key = set(range(ncols))
    columns = tuple(
        m.RelationColumn(1 if i in key else 0, cols[i], t.oid, t.typmod) for i, t in enumerate(types)
    )
    rel = m.Relation(None, oid, draw(namespaces), draw(names), ident, columns)
    return Table(rel, tuple(types), tuple(users.values()))


# -- values and tuples -------------------------------------------------------------------------


def _render(t: PgType, value: Any, binary: bool) -> str | bytes:
    if binary and t.send is not None:
        return t.send(value)
    return t.text(value)


def column_values(
    t: PgType, *, binary: bool = False, null: bool = True, unchanged: bool = False
) -> st.SearchStrategy[m.ColumnValue]:
    """Values of one column as a TupleData carries them: text (str), binary (bytes, the type's
    send function, when *binary* and the type has one), NULL (None), unchanged (UNCHANGED,
    for toastable types when *unchanged*)."""
    present = t.values.map(lambda v: _render(t, v, binary))
    extra: list[st.SearchStrategy[m.ColumnValue]] = []
    if null:
        extra.append(st.none())
    if unchanged and t.toastable:
        extra.append(st.just(m.UNCHANGED))
    return st.one_of(present, *extra) if extra else present


def _value(draw: st.DrawFn, t: PgType, binary: bool, *, null: bool, unchanged: bool) -> m.ColumnValue:
    # One draw picks the kind, so shrinking goes to a present value first.
    k = draw(st.integers(0, 7))
    if k == 6 and null:
        return None
    if k in (5, 7) and unchanged and t.toastable:
        return m.UNCHANGED
    return _render(t, draw(t.values), binary)


def draw_tuple(draw: st.DrawFn, table: Table, binary: bool, *, unchanged: bool = False,
               key_only: bool = False, key_values: Sequence[m.ColumnValue] | None = None) -> m.TupleData:
    """A tuple of *table*: key columns never NULL nor unchanged; ``key_only`` gives the
    full-width 'K' form (non-key columns NULL, erratum E-KEY-FULL-WIDTH)."""
    key = set(table.key) if table.relation.replica_identity in "di" else set()
    out: list[m.ColumnValue] = []
    for i, t in enumerate(table.types):
        if i in key:
            if key_values is not None:
                out.append(key_values[i])
            else:
                out.append(_render(t, draw(t.values), binary))
        elif key_only:
            out.append(None)
        else:
            out.append(_value(draw, t, binary, null=True, unchanged=unchanged))
    return tuple(out)


def draw_insert(draw: st.DrawFn, table: Table, binary: bool, xid: int | None) -> m.Insert:
    return m.Insert(xid, table.oid, draw_tuple(draw, table, binary))


def draw_update(draw: st.DrawFn, table: Table, binary: bool, xid: int | None) -> m.Update:
    """An UPDATE shaped by the replica identity: FULL sends the whole old row ('O', never
    'u'); default/index send the old key ('K') only when the key changed; NOTHING: nothing."""
    ident = table.relation.replica_identity
    if ident == "f":
        old = draw_tuple(draw, table, binary)
        return m.Update(xid, table.oid, "O", old, draw_tuple(draw, table, binary, unchanged=True))
    if ident in "di" and draw(st.booleans()):
        old = draw_tuple(draw, table, binary, key_only=True)
        return m.Update(xid, table.oid, "K", old, draw_tuple(draw, table, binary, unchanged=True))
    return m.Update(xid, table.oid, None, None, draw_tuple(draw, table, binary, unchanged=True))


def draw_delete(draw: st.DrawFn, table: Table, binary: bool, xid: int | None) -> m.Delete:
    """A DELETE: 'O' with the whole row under FULL, else 'K' with the key (full width)."""
    if table.relation.replica_identity == "f":
        return m.Delete(xid, table.oid, "O", draw_tuple(draw, table, binary))
    return m.Delete(xid, table.oid, "K", draw_tuple(draw, table, binary, key_only=True))


# -- single messages, valid on their own in a context --------------------------------------------

#: What a message type needs from the context: (protocol version, option names).
NEEDS: dict[type[m.PgOutputMessage], tuple[int, tuple[str, ...]]] = {
    _catalogue.BY_TAG[tag].cls: needs for tag, needs in _catalogue.NEEDS.items()
}

#: Message types that carry the streamed xid inside a streamed block.
_PREFIXED = tuple(_catalogue.BY_TAG[tag].cls for tag in sorted(_catalogue.STREAMED_XID))
_gids = st.text(_NAME_CHARS, min_size=1, max_size=24)  # GIDSIZE is 200 bytes


def _one(draw: st.DrawFn, cls: type[m.PgOutputMessage], ctx: ProtocolContext, in_stream: bool) -> m.PgOutputMessage:
    xid = draw(xids) if in_stream else None
    d = draw
    if cls is m.Begin:
        return m.Begin(d(lsns), d(timestamps), d(xids))
    if cls is m.LogicalMessage:
        flags = 1 if in_stream else d(st.integers(0, 1))
        return m.LogicalMessage(xid, flags, d(lsns), d(strings), d(st.binary(max_size=32)))
    if cls is m.Commit:
        return m.Commit(0, d(lsns), d(lsns), d(timestamps))
    if cls is m.Origin:
        return m.Origin(d(lsns), d(strings))
    if cls is m.Relation:
        rel = d(tables()).relation
        return m.Relation(xid, rel.relation_id, rel.namespace, rel.name, rel.replica_identity, rel.columns)
    if cls is m.Type:
        ut = d(user_types(type_oids))
        return m.Type(xid, ut.oid, ut.type_namespace, ut.type_name)
    if cls in (m.Insert, m.Update, m.Delete):
        table = d(tables())
        make = {m.Insert: draw_insert, m.Update: draw_update, m.Delete: draw_delete}[cls]
        if cls is not m.Insert and table.relation.replica_identity == "n":
            table = d(tables(identity=d(st.sampled_from("dfi"))))
        return make(d, table, ctx.binary, xid)
    if cls is m.Truncate:
        oids = d(st.lists(relation_oids, min_size=1, max_size=4, unique=True))
        return m.Truncate(xid, d(st.integers(0, 3)), tuple(oids))
    if cls is m.StreamStart:
        return m.StreamStart(d(xids), d(st.booleans()))
    if cls is m.StreamStop:
        return m.StreamStop()
    if cls is m.StreamCommit:
        return m.StreamCommit(d(xids), 0, d(lsns), d(lsns), d(timestamps))
    if cls is m.StreamAbort:
        top = d(xids)
        sub = d(st.one_of(st.just(top), xids))
        if ctx.abort_tail:
            return m.StreamAbort(top, sub, d(lsns), d(timestamps))
        return m.StreamAbort(top, sub)
    if cls is m.BeginPrepare:
        return m.BeginPrepare(d(lsns), d(lsns), d(timestamps), d(xids), d(_gids))
    if cls is m.Prepare:
        return m.Prepare(0, d(lsns), d(lsns), d(timestamps), d(xids), d(_gids))
    if cls is m.CommitPrepared:
        return m.CommitPrepared(0, d(lsns), d(lsns), d(timestamps), d(xids), d(_gids))
    if cls is m.RollbackPrepared:
        return m.RollbackPrepared(0, d(lsns), d(lsns), d(timestamps), d(timestamps), d(xids), d(_gids))
    if cls is m.StreamPrepare:
        return m.StreamPrepare(0, d(lsns), d(lsns), d(timestamps), d(xids), d(_gids))
    return from_layout(draw, cls, ctx, xid)


#: Values of a wire type, for a message drawn field by field.
_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "XLogRecPtr": lsns,
    "TimestampTz": timestamps,
    "TransactionId": xids,
    "Oid": relation_oids,
    "Int8": st.integers(0, 0xFF),
    "UInt16": st.integers(0, 0xFFFF),
    "Int32": st.integers(-(1 << 31), (1 << 31) - 1),
    "UInt32": st.integers(0, _U32),
    "Bool8": st.booleans(),
    "String": strings,
    "Byten32": st.binary(max_size=32),
}


def from_layout(draw: st.DrawFn, cls: type[m.PgOutputMessage], ctx: ProtocolContext, xid: int | None) -> m.PgOutputMessage:
    """A message drawn field by field from its catalogue entry: what a message kind without
    a hand-written draw above gets (the xid prefix exactly in a streamed block, Stream
    Abort's tail exactly with streaming = parallel, the documented values of flags)."""
    entry = _catalogue.BY_TAG.get(getattr(cls, "tag", ""))
    if entry is None or entry.cls is not cls:
        raise InvalidArgument(f"not a pgoutput message type: {cls!r}")
    values: list[Any] = []
    for f in entry.fields:
        if f.const is not None or f.derived:
            continue
        if f.when == "in_stream":
            values.append(xid)
            continue
        if f.when == "abort_tail" and not ctx.abort_tail:
            values.append(None)
            continue
        documented = entry.facts.values.get(f.name)
        if f.when not in (None, "abort_tail") or f.optional:
            strategy = None
        elif documented:
            strategy = st.sampled_from(documented)
        elif f.values:
            strategy = st.sampled_from(f.values)
        else:
            strategy = _BY_TYPE.get(f.type)
        if strategy is None:
            raise InvalidArgument(f"{entry.name}.{f.name} ({f.type}) cannot be drawn from its layout alone")
        values.append(draw(strategy))
    return cls(*values)


def _allowed(cls: type[m.PgOutputMessage], ctx: ProtocolContext) -> bool:
    return cls.tag in ctx.tags


def _context_for(cls: type[m.PgOutputMessage]) -> st.SearchStrategy[ProtocolContext]:
    version, options = NEEDS.get(cls, (1, ()))
    kwargs: dict[str, Any] = {}
    if "streaming" in options:
        kwargs["streaming"] = st.sampled_from(["on", "parallel"])
    if "two_phase" in options:
        kwargs["two_phase"] = True
    if "messages" in options:
        kwargs["messages"] = True
    if cls is m.Origin:
        return contexts().filter(lambda c: c.origin != "none")
    if "streaming" in kwargs:
        modes: st.SearchStrategy[Streaming] = kwargs.pop("streaming")

        def with_mode(mode: Streaming) -> st.SearchStrategy[ProtocolContext]:
            return contexts(streaming=mode, **kwargs)

        return modes.flatmap(with_mode)
    return contexts(**kwargs)


def pgoutput_messages(
    *types: type[m.PgOutputMessage],
    context: ProtocolContext | None = None,
    in_stream: bool | None = None,
) -> st.SearchStrategy[m.PgOutputMessage]:
    """Single pgoutput messages of the given types (all types when none is given), each one
    a message a server could send on its own in *context* (drawn when ``None``).

    R Y I U D T M carry the xid prefix exactly when they sit in a streamed block: drawn
    (in a streaming context) unless *in_stream* is given. Stream Abort carries its tail
    exactly with streaming = parallel. Decode a message with ``in_stream = xid is not None``.
    """
    chosen = tuple(types) or tuple(m.MESSAGE_TYPES.values())
    for cls in chosen:
        if cls not in m.MESSAGE_TYPES.values():
            raise InvalidArgument(f"not a pgoutput message type: {cls!r}")
    if context is not None:
        chosen = tuple(c for c in chosen if _allowed(c, context))
        if not chosen:
            raise InvalidArgument(f"none of {types} can be sent in {context}")
    if in_stream and context is not None and context.streaming == "off":
        raise InvalidArgument("in_stream=True needs a streaming context")

    @st.composite
    def draw_message(draw: st.DrawFn) -> m.PgOutputMessage:
        cls = draw(st.sampled_from(chosen))
        ctx = context if context is not None else draw(_context_for(cls))
        streamable = cls in _PREFIXED and ctx.streaming != "off"
        if in_stream is None:
            inside = streamable and draw(st.booleans())
        else:
            inside = in_stream and streamable
        return _one(draw, cls, ctx, inside)

    return draw_message()


def relation_columns() -> st.SearchStrategy[m.RelationColumn]:
    """Columns of Relation messages (for ``st.from_type(RelationColumn)``)."""
    return tables(identity="d").flatmap(lambda t: st.sampled_from(t.relation.columns))


def message_strategy_for(cls: type[m.PgOutputMessage]) -> Callable[[], st.SearchStrategy[m.PgOutputMessage]]:
    """For ``st.register_type_strategy``: any message of *cls*, in a drawn context."""
    return lambda: pgoutput_messages(cls)
