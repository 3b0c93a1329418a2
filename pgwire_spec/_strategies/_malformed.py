"""Malformed streams: one typed violation applied to a valid stream.

Each violation (``VIOLATIONS``, documented in spec/rules.yaml) takes a valid stream from
the :class:`~._streams.Builder`, finds or makes a site for itself, breaks it, and says by
construction which payload is the first wrong one and which rule a decoder must report
there. The expected rule is derived from the layout and the stream, never by running the
reference decoder: the catalogue is the oracle the reference decoder is tested against.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..pgoutput import _codec, _state
from ..pgoutput import messages as m
from ..replication.messages import PrimaryKeepalive, XLogData, encode_copy_data
from ._context import ProtocolContext, Streaming, contexts
from ._streams import Builder, Entry
from ._walsender import frame

__all__ = ["MalformedStream", "malformed_streams", "VIOLATIONS", "Violation"]

_encode = _codec.encode


@dataclass(frozen=True, slots=True)
class MalformedStream:
    """A stream whose payload ``index`` is the first wrong one.

    A decoder given ``options`` (and ``strict=True``) must accept ``payloads[:index]`` and
    reject ``payloads[index]`` with rule ``expected_rule`` (the reference decoder's rule);
    a third-party decoder may report any rule of ``acceptable_rules``. ``index ==
    len(payloads)`` means the stream ends where it must not (reported by ``finish()``).
    ``tolerant`` is what a non-strict decoder does: ``"raise"`` (bytes that are no message),
    ``"warn"`` (a sequence violation it records and goes on from) or ``"accept"`` (a rule
    only strict decoders enforce). ``framing`` is ``"pgoutput"`` (bare payloads, as from
    ``pg_logical_slot_get_binary_changes``) or ``"walsender"`` (CopyData payloads: XLogData
    and keepalives; check with a walsender-level checker).
    """

    context: ProtocolContext
    payloads: tuple[bytes, ...]
    index: int
    expected_rule: str
    acceptable_rules: frozenset[str]
    violation: str
    framing: str
    tolerant: str

    @property
    def options(self) -> dict[str, Any]:
        return self.context.decoder_options


@dataclass(slots=True)
class _Case:
    entries: list[Entry]
    index: int
    rule: str
    also: frozenset[str] = frozenset()
    #: raw payloads replacing the encoding of some entries (bytes no message encodes to)
    raw: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class Violation:
    """One kind of malformation: its name, the rule it triggers, where it applies."""

    name: str
    rule: str
    tolerant: str
    apply: Callable[[st.DrawFn, Builder], _Case]
    applies: Callable[[ProtocolContext], bool] = lambda ctx: True
    #: the context arguments it needs (passed to contexts())
    needs: tuple[tuple[str, Any], ...] = ()
    framing: str = "any"


# -- helpers ------------------------------------------------------------------------------------


def _states(entries: list[Entry]) -> list[str]:
    """The decoder state before each entry (and after the last), from the transition table."""
    state = _state.IDLE
    out = []
    for e in entries:
        out.append(state)
        state = _state.TRANSITIONS[(state, e.msg.tag)]
    out.append(state)
    return out


# The states of the last builder asked about. The builder itself is kept (not its id, which
# a new builder may reuse once the old one is gone), so a draw never sees stale states.
_STATE_CACHE: list[tuple[Builder, int, list[str]]] = []


def _state_at(b: Builder, i: int) -> str:
    """The decoder state before entry *i* of the builder's (possibly grown) stream."""
    if not _STATE_CACHE or _STATE_CACHE[0][0] is not b or _STATE_CACHE[0][1] != len(b.entries):
        _STATE_CACHE[:] = [(b, len(b.entries), _states(b.entries))]
    return _STATE_CACHE[0][2][i]


def _sites(b: Builder, pred: Callable[[int, Entry], bool], make: Callable[[], Any]) -> list[int]:
    found = [i for i, e in enumerate(b.entries) if pred(i, e)]
    for _ in range(5):  # a made site can miss by a drawn detail (an Origin, a NULL): retry
        if found:
            break
        make()
        b.close()
        found = [i for i, e in enumerate(b.entries) if pred(i, e)]
    assert found, "the violation could not make a site for itself"
    return found


def _pick(draw: st.DrawFn, sites: list[int]) -> int:
    return draw(st.sampled_from(sites))


def _payload(b: Builder, e: Entry) -> bytes:
    return _encode(e.msg)


class _Fields:
    """Field starts of one payload, from the generated codec's tracing decoder."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: list[tuple[int, str, str]] = []

    def __call__(self, field: str, offset: int, expected: str) -> None:
        self.fields.append((offset, field, expected))


def _fields(payload: bytes, in_stream: bool, abort_tail: bool) -> list[tuple[int, str, str]]:
    rec = _Fields()
    _codec.FAMILY.by_tag[payload[0]].explain(payload, in_stream, abort_tail, True, rec)
    return rec.fields


_STRING = "String (NUL-terminated)"
_LENGTH = "Int32 length"
_KIND = "Byte1 n, u, t or b"


def _with_raw(b: Builder, i: int, data: bytes, rule: str, also: frozenset[str] = frozenset()) -> _Case:
    return _Case(b.entries, i, rule, also, {i: data})


def _force_txn(b: Builder, kind: str) -> Callable[[], None]:
    return lambda: b.transaction(changes=1, kind=kind)


def _dml(e: Entry) -> bool:
    return isinstance(e.msg, (m.Insert, m.Update, m.Delete))


# -- byte-level violations ---------------------------------------------------------------------------


def _truncation(draw: st.DrawFn, b: Builder) -> _Case:
    """Cut a payload short: at a field boundary, or inside a field."""
    i = _pick(draw, list(range(len(b.entries))) or _sites(b, lambda i, e: True, _force_txn(b, "insert")))
    e = b.entries[i]
    data = _payload(b, e)
    fields = _fields(data, e.in_stream, b.ctx.abort_tail)
    if draw(st.booleans()):
        cut = draw(st.sampled_from(sorted({off for off, _, _ in fields})))
    else:
        cut = draw(st.integers(0, len(data) - 1))
    # The field the cut falls in decides what a decoder sees (spec/rules.yaml, truncation).
    off, _, expected = max((f for f in fields if f[0] <= cut), key=lambda f: f[0])
    if expected == _STRING:
        rule = "string-unterminated"
    elif expected == _LENGTH and cut >= off + 4:
        rule = "length-out-of-range"
    else:
        rule = "truncated"
    return _with_raw(b, i, data[:cut], rule, frozenset({"truncated"}))


def _length_offsets(b: Builder, e: Entry) -> list[int]:
    data = _payload(b, e)
    return [off for off, _, exp in _fields(data, e.in_stream, b.ctx.abort_tail) if exp == _LENGTH]


def _tuples(msg: Any) -> list[m.TupleData]:
    out = []
    if getattr(msg, "old_tuple", None) is not None:
        out.append(msg.old_tuple)
    if getattr(msg, "new_tuple", None) is not None:
        out.append(msg.new_tuple)
    return out


def _bad_length(negative: bool) -> Callable[[st.DrawFn, Builder], _Case]:
    def apply(draw: st.DrawFn, b: Builder) -> _Case:
        i = _pick(draw, _sites(b, lambda i, e: bool(_length_offsets(b, e)), lambda: _insert_on_keyed_table(b)))
        data = _payload(b, b.entries[i])
        off = draw(st.sampled_from(_length_offsets(b, b.entries[i])))
        room = len(data) - (off + 4)
        ln = draw(st.integers(-(1 << 31), -1)) if negative else draw(st.integers(room + 1, (1 << 31) - 1))
        bad = data[:off] + struct.pack(">i", ln) + data[off + 4:]
        return _with_raw(b, i, bad, "length-out-of-range")

    return apply


def _unknown_tag(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: True, _force_txn(b, "insert")))
    data = _payload(b, b.entries[i])
    known = set(_codec.FAMILY.by_tag)
    tag = draw(st.integers(0, 255).filter(lambda t: t not in known))
    return _with_raw(b, i, bytes([tag]) + data[1:], "unknown-message-tag")


def _kind_offsets(b: Builder, e: Entry) -> list[int]:
    data = _payload(b, e)
    return [off for off, _, exp in _fields(data, e.in_stream, b.ctx.abort_tail) if exp == _KIND]


def _unknown_tuple_kind(draw: st.DrawFn, b: Builder) -> _Case:
    def pred(i: int, e: Entry) -> bool:
        return _dml(e) and any(len(t) for t in _tuples(e.msg))

    i = _pick(draw, _sites(b, pred, lambda: _insert_on_keyed_table(b)))
    e = b.entries[i]
    data = bytearray(_payload(b, e))
    off = draw(st.sampled_from(_kind_offsets(b, e)))
    data[off] = draw(st.integers(0, 255).filter(lambda k: k not in b"ntub"))
    return _with_raw(b, i, bytes(data), "unknown-tuple-kind")


def _insert_on_keyed_table(b: Builder) -> None:
    """A transaction with an INSERT into a table with a primary key (a non-NULL value)."""
    b.transaction(changes=1, kind="insert", identities="di")


def _string_sites(b: Builder) -> list[int]:
    def pred(i: int, e: Entry) -> bool:
        return isinstance(e.msg, (m.Relation, m.Type, m.Origin, m.LogicalMessage, m.BeginPrepare,
                                  m.Prepare, m.CommitPrepared, m.RollbackPrepared, m.StreamPrepare))

    return _sites(b, pred, _force_txn(b, "insert"))


def _string_without_nul(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _string_sites(b))
    e = b.entries[i]
    data = _payload(b, e)
    starts = [off for off, _, exp in _fields(data, e.in_stream, b.ctx.abort_tail) if exp == _STRING]
    start = draw(st.sampled_from(starts))
    nul = data.index(0, start)
    # No NUL from the String's start to the end: replace the terminator and all that follows.
    return _with_raw(b, i, data[:nul] + b"A" * (len(data) - nul), "string-unterminated")


def _trailing(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: True, _force_txn(b, "insert")))
    data = _payload(b, b.entries[i]) + draw(st.binary(min_size=1, max_size=8))
    return _with_raw(b, i, data, "trailing-bytes")


def _both_key_and_old(draw: st.DrawFn, b: Builder) -> _Case:
    """An Update with a 'K' tuple *and* an 'O' tuple ("never both"): the decoder reads the
    'K' part, then finds 'O' where 'N' must come."""
    i = _pick(draw, _sites(b, lambda i, e: _dml(e), _force_txn(b, "insert")))
    e = b.entries[i]
    msg: Any = e.msg
    values = msg.old_tuple if isinstance(msg, m.Delete) else msg.new_tuple
    # Encoded by the grammar: head N tuple, head K tuple N tuple, head O tuple N tuple; the
    # case is head K tuple, then O tuple N tuple.
    plain = _encode(m.Update(msg.xid, msg.relation_id, None, None, values))
    keyed = _encode(m.Update(msg.xid, msg.relation_id, "K", values, values))
    full = _encode(m.Update(msg.xid, msg.relation_id, "O", values, values))
    head = 2 * len(plain) - len(keyed)
    return _with_raw(b, i, keyed[:head + len(keyed) - len(plain)] + full[head:], "unexpected-byte")


def _stream_insert(b: Builder) -> Callable[[], None]:
    def make() -> None:
        b.stream_block(changes=1, kind="insert")

    return make


def _xid_prefix_missing(draw: st.DrawFn, b: Builder) -> _Case:
    """An Insert inside a streamed block without its xid prefix. The decoder reads the
    relation OID as the xid and 'N', the column count and the first kind as the OID, then
    finds a kind byte or a length byte where 'N' must be (never 'N'): unexpected-byte, or
    truncated when the message is too short to get there."""
    i = _pick(draw, _sites(b, lambda i, e: e.in_stream and isinstance(e.msg, m.Insert), _stream_insert(b)))
    msg = b.entries[i].msg
    assert isinstance(msg, m.Insert)
    data = _encode(replace(msg, xid=None))
    rule = "unexpected-byte" if len(data) > 9 else "truncated"
    return _with_raw(b, i, data, rule, frozenset({"unexpected-byte", "truncated"}))


def _xid_prefix_unexpected(draw: st.DrawFn, b: Builder) -> _Case:
    """An Insert outside a streamed block with an xid prefix (pglogrepl #66 the other way):
    the decoder reads the xid as the relation OID, then the OID's first byte where 'N' must
    be (relation OIDs here never start with 0x4E): unexpected-byte at offset 5."""
    def pred(i: int, e: Entry) -> bool:
        return (not e.in_stream and isinstance(e.msg, m.Insert) and _state_at(b, i) != _state.STREAM
                and e.msg.relation_id >> 24 != 0x4E)

    i = _pick(draw, _sites(b, pred, _force_txn(b, "insert")))
    msg = b.entries[i].msg
    assert isinstance(msg, m.Insert)
    data = _encode(replace(msg, xid=draw(st.integers(3, (1 << 32) - 1))))
    return _with_raw(b, i, data, "unexpected-byte")


def _abort_tail_mismatch(draw: st.DrawFn, b: Builder) -> _Case:
    """Stream Abort with its LSN/time tail under streaming=on (trailing-bytes), or without
    it under streaming=parallel (truncated): the tail follows the option, not the protocol
    version (erratum E-STREAM-ABORT-TAIL; Npgsql's bug)."""

    def make() -> None:
        sx = b.stream_block(changes=1)
        b.stream_end(sx, "abort")

    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.StreamAbort), make))
    data = _payload(b, b.entries[i])
    if b.ctx.abort_tail:
        return _with_raw(b, i, data[:9], "truncated")
    msg: Any = b.entries[i].msg
    with_tail = _encode(m.StreamAbort(msg.xid, msg.subtransaction_xid, b.lsn, b.time))
    return _with_raw(b, i, data + with_tail[len(data):], "trailing-bytes")


def _first_segment_not_boolean(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.StreamStart), _stream_insert(b)))
    data = bytearray(_payload(b, b.entries[i]))
    data[5] = draw(st.integers(2, 255))
    return _with_raw(b, i, bytes(data), "invalid-value")


# -- sequence violations ------------------------------------------------------------------------------


def _replace(b: Builder, i: int, msg: m.PgOutputMessage, rule: str) -> _Case:
    entries = list(b.entries)
    entries[i] = Entry(msg, entries[i].in_stream, entries[i].lsn)
    return _Case(entries, i, rule)


def _insert_at(b: Builder, p: int, msg: m.PgOutputMessage, rule: str, in_stream: bool = False) -> _Case:
    entries = list(b.entries)
    lsn = next((e.lsn for e in reversed(entries[:p]) if e.lsn), b.lsn)
    entries.insert(p, Entry(msg, in_stream, lsn))
    return _Case(entries, p, rule)


def _idle_positions(b: Builder) -> list[int]:
    states = _states(b.entries)
    return [p for p, s in enumerate(states) if s == _state.IDLE]


def _column_count(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: _dml(e), _force_txn(b, "insert")))
    msg: Any = b.entries[i].msg
    field = "old_tuple" if isinstance(msg, m.Delete) else "new_tuple"
    values = getattr(msg, field)
    if values and draw(st.booleans()):
        values = values[:-1]
    else:
        values = values + (None,)
    return _replace(b, i, replace(msg, **{field: values}), "column-count-mismatch")


def _dml_before_relation(draw: st.DrawFn, b: Builder) -> _Case:
    """Move a table's Relation message(s) from before its first use to just after it."""

    def used(e: Entry) -> tuple[int, ...]:
        msg: Any = e.msg
        if isinstance(msg, m.Truncate):
            return msg.relation_ids
        return (msg.relation_id,) if _dml(e) else ()

    def first_uses() -> list[tuple[int, int]]:
        out, seen = [], set()
        for i, e in enumerate(b.entries):
            for oid in used(e):
                if oid not in seen:
                    out.append((i, oid))
                    seen.add(oid)
        return out

    if not first_uses():
        b.transaction(changes=1, kind="insert")
        b.close()
    d, oid = draw(st.sampled_from(first_uses()))
    before = [i for i in range(d) if isinstance(b.entries[i].msg, m.Relation)
              and b.entries[i].msg.relation_id == oid]  # type: ignore[attr-defined]
    rel: Any = b.entries[before[-1]].msg
    entries = [e for i, e in enumerate(b.entries) if i not in set(before)]
    d -= len(before)
    user: Any = entries[d].msg
    entries.insert(d + 1, Entry(replace(rel, xid=user.xid), entries[d].in_stream, 0))
    return _Case(entries, d, "unknown-relation")


def _stop_without_start(draw: st.DrawFn, b: Builder) -> _Case:
    states = _states(b.entries)
    # Never between an opener and its Origin: an opener written at LSN 0 is right only when
    # the Origin follows it (the walsender zero-LSN rule), so a Stream Stop there would
    # break an earlier message too.
    sites = [p for p, s in enumerate(states) if s != _state.STREAM
             and not (p < len(b.entries) and isinstance(b.entries[p].msg, m.Origin))]
    p = draw(st.sampled_from(sites))
    return _insert_at(b, p, m.StreamStop(), "unexpected-message")


def _commit_without_begin(draw: st.DrawFn, b: Builder) -> _Case:
    p = draw(st.sampled_from(_idle_positions(b)))
    lsn = b.lsn
    return _insert_at(b, p, m.Commit(0, lsn, lsn + 0x40, b.time), "unexpected-message")


_FLAGGED = (m.Commit, m.StreamCommit, m.Prepare, m.StreamPrepare)


def _nonzero_flags(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, _FLAGGED), _force_txn(b, "insert")))
    return _replace(b, i, replace(b.entries[i].msg, flags=draw(st.integers(1, 255))), "nonzero-flags")  # type: ignore[type-var]


def _commit_lsn_mismatch(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.Commit), _force_txn(b, "insert")))
    msg = b.entries[i].msg
    assert isinstance(msg, m.Commit)
    other = draw(st.integers(0, (1 << 64) - 1).filter(lambda x: x != msg.commit_lsn))
    return _replace(b, i, replace(msg, commit_lsn=other), "commit-lsn-mismatch")


def _first_segment_wrong(draw: st.DrawFn, b: Builder) -> _Case:
    def make() -> None:
        sx = b.stream_block(changes=1)
        b.stream_block(sx, changes=1)

    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.StreamStart), make))
    msg = b.entries[i].msg
    assert isinstance(msg, m.StreamStart)
    rule = "stream-xid-not-open" if msg.first_segment else "stream-xid-already-open"
    return _replace(b, i, m.StreamStart(msg.xid, not msg.first_segment), rule)


def _stream_end_unknown_xid(draw: st.DrawFn, b: Builder) -> _Case:
    def pred(i: int, e: Entry) -> bool:
        return isinstance(e.msg, (m.StreamCommit, m.StreamPrepare)) or (
            isinstance(e.msg, m.StreamAbort) and e.msg.xid == e.msg.subtransaction_xid)

    i = _pick(draw, _sites(b, pred, lambda: b.stream_end(b.stream_block(changes=1), "commit")))
    msg: Any = b.entries[i].msg
    used = {getattr(e.msg, "xid", None) for e in b.entries} | {
        getattr(e.msg, "subtransaction_xid", None) for e in b.entries}
    xid = draw(st.integers(3, (1 << 32) - 1).filter(lambda x: x not in used))
    if isinstance(msg, m.StreamAbort):
        new: m.PgOutputMessage = replace(msg, xid=xid, subtransaction_xid=xid)
    else:
        new = replace(msg, xid=xid)
    return _replace(b, i, new, "stream-xid-not-open")


def _not_negotiated(draw: st.DrawFn, b: Builder) -> _Case:
    ctx = b.ctx
    lsn, t = b.lsn, b.time
    options: list[m.PgOutputMessage] = []
    if not ctx.messages:
        options.append(m.LogicalMessage(None, 0, lsn, "p", b""))
    if ctx.streaming == "off":
        options += [m.StreamStart(b.next_xid, True), m.StreamCommit(b.next_xid, 0, lsn, lsn + 64, t)]
    if not ctx.two_phase:
        options += [m.BeginPrepare(lsn, lsn + 64, t, b.next_xid, "g"),
                    m.CommitPrepared(0, lsn, lsn + 64, t, b.next_xid, "g"),
                    m.RollbackPrepared(0, lsn, lsn + 64, t, t, b.next_xid, "g")]
    if not ctx.two_phase or ctx.streaming == "off":
        options.append(m.StreamPrepare(0, lsn, lsn + 64, t, b.next_xid, "g"))
    msg = draw(st.sampled_from(options))
    return _insert_at(b, draw(st.sampled_from(_idle_positions(b))), msg, "message-not-negotiated")


def _binary_not_negotiated(draw: st.DrawFn, b: Builder) -> _Case:
    def spots(e: Entry) -> list[tuple[str, int]]:
        msg: Any = e.msg
        if not _dml(e):
            return []
        return [(f, j) for f in ("old_tuple", "new_tuple") if getattr(msg, f, None) is not None
                for j, v in enumerate(getattr(msg, f)) if isinstance(v, str)]

    i = _pick(draw, _sites(b, lambda i, e: bool(spots(e)), lambda: _insert_on_keyed_table(b)))
    msg: Any = b.entries[i].msg
    field, j = draw(st.sampled_from(spots(b.entries[i])))
    values = list(getattr(msg, field))
    values[j] = values[j].encode("utf-8")
    return _replace(b, i, replace(msg, **{field: tuple(values)}), "binary-not-negotiated")


def _unterminated(draw: st.DrawFn, b: Builder) -> _Case:
    """The stream ends inside a transaction or a streamed block (not right after a Begin or
    Stream Start written at LSN 0, whose Origin a walsender checker would miss first)."""

    def cuts() -> list[int]:
        states = _states(b.entries)
        return [p for p in range(1, len(b.entries)) if states[p] != _state.IDLE
                and not (b.entries[p - 1].lsn == 0 and b.entries[p - 1].msg.tag in "BbS")]

    if not cuts():
        b.transaction(changes=draw(st.integers(0, 1)))
        b.close()
    found = cuts()
    while not found:
        b.transaction(changes=1)
        found = cuts()
    p = draw(st.sampled_from(found))
    return _Case(b.entries[:p], p, "unterminated-transaction")


def _old_without_full(draw: st.DrawFn, b: Builder) -> _Case:
    def pred(i: int, e: Entry) -> bool:
        return isinstance(e.msg, (m.Update, m.Delete)) and e.msg.old_kind == "K"

    i = _pick(draw, _sites(b, pred, lambda: b.transaction(changes=1, kind="delete", identities="di")))
    return _replace(b, i, replace(b.entries[i].msg, old_kind="O"), "old-tuple-without-full-identity")  # type: ignore[type-var]


def _prepare_mismatch(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.Prepare),
                           lambda: b.transaction(prepared=True, changes=1)))
    msg = b.entries[i].msg
    assert isinstance(msg, m.Prepare)
    what = draw(st.sampled_from(["gid", "xid", "prepare_lsn"]))
    new: Any = {"gid": msg.gid + "x", "xid": msg.xid ^ 1, "prepare_lsn": msg.prepare_lsn + 8}[what]
    return _replace(b, i, replace(msg, **{what: new}), "prepare-mismatch")


def _transactional_outside(draw: st.DrawFn, b: Builder) -> _Case:
    msg = m.LogicalMessage(None, 1, b.lsn, "p", b"x")
    return _insert_at(b, draw(st.sampled_from(_idle_positions(b))), msg,
                      "transactional-message-outside-transaction")


def _message_flags(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.LogicalMessage), b.logical_message))
    return _replace(b, i, replace(b.entries[i].msg, flags=draw(st.integers(2, 255))), "invalid-value")  # type: ignore[type-var]


def _truncate_options(draw: st.DrawFn, b: Builder) -> _Case:
    i = _pick(draw, _sites(b, lambda i, e: isinstance(e.msg, m.Truncate), _force_txn(b, "truncate")))
    return _replace(b, i, replace(b.entries[i].msg, options=draw(st.integers(4, 255))), "invalid-value")  # type: ignore[type-var]


# -- walsender framing (applied after framing; see _frame_violation) ---------------------------------

_STREAMING = (("streaming", ("on", "parallel")),)


def _never(draw: st.DrawFn, b: Builder) -> _Case:  # pragma: no cover - framing-level only
    raise AssertionError("a walsender violation is applied to the framed stream")


VIOLATIONS: dict[str, Violation] = {v.name: v for v in [
    Violation("truncation", "truncated", "raise", _truncation),
    Violation("length-past-end", "length-out-of-range", "raise", _bad_length(False)),
    Violation("length-negative", "length-out-of-range", "raise", _bad_length(True)),
    Violation("unknown-message-tag", "unknown-message-tag", "raise", _unknown_tag),
    Violation("unknown-tuple-kind", "unknown-tuple-kind", "raise", _unknown_tuple_kind),
    Violation("string-without-nul", "string-unterminated", "raise", _string_without_nul),
    Violation("trailing-bytes", "trailing-bytes", "raise", _trailing),
    Violation("both-key-and-old", "unexpected-byte", "raise", _both_key_and_old),
    Violation("xid-prefix-missing", "unexpected-byte", "raise", _xid_prefix_missing,
              lambda c: c.streaming != "off", _STREAMING),
    Violation("xid-prefix-unexpected", "unexpected-byte", "raise", _xid_prefix_unexpected),
    Violation("stream-abort-tail-mismatch", "trailing-bytes", "raise", _abort_tail_mismatch,
              lambda c: c.streaming != "off", _STREAMING),
    Violation("first-segment-not-boolean", "invalid-value", "raise", _first_segment_not_boolean,
              lambda c: c.streaming != "off", _STREAMING),
    Violation("column-count-mismatch", "column-count-mismatch", "warn", _column_count),
    Violation("dml-before-relation", "unknown-relation", "warn", _dml_before_relation),
    Violation("stream-stop-without-start", "unexpected-message", "warn", _stop_without_start),
    Violation("commit-without-begin", "unexpected-message", "warn", _commit_without_begin),
    Violation("nonzero-flags", "nonzero-flags", "accept", _nonzero_flags),
    Violation("commit-lsn-mismatch", "commit-lsn-mismatch", "warn", _commit_lsn_mismatch),
    Violation("first-segment-wrong", "stream-xid-not-open", "warn", _first_segment_wrong,
              lambda c: c.streaming != "off", _STREAMING),
    Violation("stream-end-unknown-xid", "stream-xid-not-open", "warn", _stream_end_unknown_xid,
              lambda c: c.streaming != "off", _STREAMING),
    Violation("message-not-negotiated", "message-not-negotiated", "warn", _not_negotiated,
              lambda c: not (c.messages and c.two_phase and c.streaming != "off")),
    Violation("binary-not-negotiated", "binary-not-negotiated", "warn", _binary_not_negotiated,
              lambda c: not c.binary, (("binary", False),)),
    Violation("unterminated-transaction", "unterminated-transaction", "warn", _unterminated),
    Violation("old-tuple-without-full-identity", "old-tuple-without-full-identity", "warn", _old_without_full),
    Violation("prepare-mismatch", "prepare-mismatch", "warn", _prepare_mismatch,
              lambda c: c.two_phase, (("two_phase", True),)),
    Violation("transactional-message-outside-transaction", "transactional-message-outside-transaction",
              "warn", _transactional_outside, lambda c: c.messages, (("messages", True),)),
    Violation("message-flags-invalid", "invalid-value", "warn", _message_flags,
              lambda c: c.messages, (("messages", True),)),
    Violation("truncate-options-invalid", "invalid-value", "accept", _truncate_options),
    Violation("walsender-lsn-backwards", "walsender-lsn-backwards", "warn", _never, framing="walsender"),
    Violation("walsender-zero-lsn", "walsender-zero-lsn", "warn", _never, framing="walsender"),
]}


# -- walsender-level violations ------------------------------------------------------------------------


def _walsender_case(draw: st.DrawFn, name: str, b: Builder) -> tuple[list[Any], int, str]:
    """Frame the valid stream, then break the framing: returns messages, index, rule."""
    if name == "walsender-lsn-backwards":
        return _lsn_backwards(draw, b)
    # walsender-zero-lsn: a Relation/Type at a non-zero LSN, a change at LSN 0, or a Begin /
    # Stream Start at 0 with no Origin after it (reported at the opener's position).
    kinds = ["relation", "change", "opener"]
    kind = draw(st.sampled_from(kinds))
    if kind == "relation":
        sites = _sites(b, lambda i, e: isinstance(e.msg, (m.Relation, m.Type)), _force_txn(b, "insert"))
    elif kind == "change":
        sites = _sites(b, lambda i, e: e.lsn != 0 and not isinstance(e.msg, m.StreamStop)
                       and e.msg.tag not in "BbS", _force_txn(b, "insert"))
    else:
        sites = _sites(b, lambda i, e: e.msg.tag in "BbS" and _state_at(b, i) == _state.IDLE and e.lsn != 0
                       and i + 1 < len(b.entries), _force_txn(b, "insert"))
    i = draw(st.sampled_from(sites))
    if kind == "relation":
        lsn = draw(st.integers(1, (1 << 64) - 1))
    else:
        lsn = 0
    lsns = [x.lsn for x in b.entries]
    lsns[i] = lsn
    msgs, where = frame(draw, [_encode(x.msg) for x in b.entries], lsns, trailing_keepalive=False)
    return msgs, where[i], "walsender-zero-lsn"


def _lsn_backwards(draw: st.DrawFn, b: Builder) -> tuple[list[Any], int, str]:
    kind = draw(st.sampled_from(["in-transaction", "transaction-end", "keepalive"]))
    lsns = [x.lsn for x in b.entries]
    payloads = [_encode(x.msg) for x in b.entries]
    if kind == "keepalive":
        # two keepalives between two messages, the second one's walEnd lower
        msgs, _ = frame(draw, payloads, lsns, trailing_keepalive=False)
        p = draw(st.integers(0, len(msgs)))
        seen = max([0] + [x.wal_end for x in msgs[:p] if isinstance(x, PrimaryKeepalive)]
                   + [x.wal_end for x in msgs[:p] if isinstance(x, XLogData)])
        high = seen + draw(st.integers(1, 1 << 20))
        msgs[p:p] = [PrimaryKeepalive(high, b.time, False),
                     PrimaryKeepalive(draw(st.integers(0, high - 1)), b.time, False)]
        return msgs, p + 1, "walsender-lsn-backwards"
    if kind == "in-transaction":
        # a non-zero LSN below an earlier one of the same transaction or streamed block: the
        # checker compares LSNs from the unit's opener on (an opener written at LSN 0 under
        # E-ZERO-LSN included), so the bound is the unit's highest LSN before the site
        def unit_high(i: int) -> int:
            u = i - 1
            while u >= 0 and not (b.entries[u].msg.tag in "BbS" and _state_at(b, u) == _state.IDLE):
                u -= 1
            return max((b.entries[k].lsn for k in range(max(u, 0), i)), default=0)

        def pred(i: int, e: Entry) -> bool:
            return e.lsn != 0 and _state_at(b, i) != _state.IDLE and unit_high(i) >= 2

        i = draw(st.sampled_from(_sites(b, pred, _force_txn(b, "insert"))))
        prev = unit_high(i)
    else:
        # a transaction end below the previous transaction end (or non-transactional message):
        # the checker's bound is the highest of those, not of every earlier LSN
        def ends() -> list[int]:
            return [i for i, e in enumerate(b.entries) if e.lsn and (
                e.msg.tag in _ENDS_TAGS or (e.msg.tag == "M" and _state_at(b, i) == _state.IDLE))]

        def end_high(i: int) -> int:
            return max((b.entries[k].lsn for k in ends() if k < i), default=0)

        if len([k for k in ends()[1:] if end_high(k) >= 2]) < 1:
            b.transaction(changes=0)
            b.transaction(changes=0)
        i = draw(st.sampled_from([k for k in ends()[1:] if end_high(k) >= 2]))
        prev = end_high(i)
    lsns = [x.lsn for x in b.entries]
    lsns[i] = draw(st.integers(1, prev - 1))
    msgs, where = frame(draw, [_encode(x.msg) for x in b.entries], lsns, trailing_keepalive=False)
    return msgs, where[i], "walsender-lsn-backwards"


_ENDS_TAGS = frozenset("CPcpKrA")


# -- the strategy --------------------------------------------------------------------------------------------


def malformed_streams(
    *,
    violations: list[str] | tuple[str, ...] | None = None,
    framing: str | None = "pgoutput",
    protocol_version: int | None = None,
    streaming: Streaming | bool | None = None,
    two_phase: bool | None = None,
    binary: bool | None = None,
    messages: bool | None = None,
    origin: str | None = None,
    max_steps: int = 4,
    max_changes: int = 3,
) -> st.SearchStrategy[MalformedStream]:
    """Streams with exactly one violation (of *violations*, names from ``VIOLATIONS``; all
    when ``None``), framed as bare pgoutput payloads (*framing* ``"pgoutput"``, the default)
    or as walsender CopyData payloads (``"walsender"``: XLogData and keepalives, with the
    walsender-only violations too; ``None`` draws either). Context arguments as in
    :func:`streams`; violations that cannot happen in a fixed context are left out."""
    names = tuple(violations) if violations is not None else tuple(VIOLATIONS)
    for name in names:
        if name not in VIOLATIONS:
            raise InvalidArgument(f"unknown violation {name!r}; known: {', '.join(VIOLATIONS)}")
    if framing not in (None, "pgoutput", "walsender"):
        raise InvalidArgument(f"framing must be 'pgoutput' or 'walsender', found {framing!r}")
    fixed = {"protocol_version": protocol_version, "streaming": streaming, "two_phase": two_phase,
             "binary": binary, "messages": messages, "origin": origin}
    usable = []
    for name in names:
        v = VIOLATIONS[name]
        if framing == "pgoutput" and v.framing == "walsender":
            continue
        if _possible(v, fixed):
            usable.append(v)
    if not usable:
        raise InvalidArgument(f"none of the violations {names} can happen with {fixed}, framing={framing}")

    @st.composite
    def draw_malformed(draw: st.DrawFn) -> MalformedStream:
        v = draw(st.sampled_from(usable))
        ctx = draw(_contexts_for(v, fixed))
        b = Builder(draw, ctx, max_changes=max_changes)
        b.run(max_steps)
        how = framing or ("walsender" if v.framing == "walsender" else draw(st.sampled_from(["pgoutput", "walsender"])))
        if v.framing == "walsender":
            msgs, index, rule = _walsender_case(draw, v.name, b)
            framed_walsender = tuple(encode_copy_data(x) for x in msgs)
            return MalformedStream(ctx, framed_walsender, index, rule, frozenset({rule}), v.name, "walsender", v.tolerant)
        case = v.apply(draw, b)
        raw = case.raw or {}
        payloads = [raw[i] if i in raw else _encode(e.msg) for i, e in enumerate(case.entries)]
        acceptable = frozenset({case.rule}) | case.also
        if how == "pgoutput":
            return MalformedStream(ctx, tuple(payloads), case.index, case.rule, acceptable, v.name,
                                   "pgoutput", v.tolerant)
        lsns = [e.lsn for e in case.entries]
        msgs, where = frame(draw, payloads, lsns, trailing_keepalive=False)
        # A stream cut short (index == len(payloads)) has nothing after its last message.
        index = where[case.index] if case.index < len(where) else len(msgs)
        framed = tuple(encode_copy_data(x) for x in msgs)
        return MalformedStream(ctx, framed, index, case.rule, acceptable, v.name, "walsender", v.tolerant)

    return draw_malformed()


def _possible(v: Violation, fixed: dict[str, Any]) -> bool:
    for key, need in v.needs:
        have = fixed.get(key)
        if have is None:
            continue
        if isinstance(need, tuple):
            if have not in need and not (key == "streaming" and have is True):
                return False
        elif have != need:
            return False
    if v.name == "message-not-negotiated":
        if fixed["messages"] and fixed["two_phase"] and fixed["streaming"] not in (None, "off", False):
            return False
    if fixed["protocol_version"] is not None and any(k == "streaming" for k, _ in v.needs):
        if fixed["protocol_version"] < 2:
            return False
    if fixed["protocol_version"] is not None and fixed["protocol_version"] < 3 and v.name == "prepare-mismatch":
        return False
    return True


def _contexts_for(v: Violation, fixed: dict[str, Any]) -> st.SearchStrategy[ProtocolContext]:
    kwargs = {k: val for k, val in fixed.items() if val is not None}
    for key, need in v.needs:
        if key in kwargs:
            continue
        if isinstance(need, tuple):
            choices = [x for x in need if not (x == "parallel" and kwargs.get("protocol_version", 4) < 4)]

            def with_choice(value: Any, key: str = key) -> st.SearchStrategy[ProtocolContext]:
                return contexts(**{**kwargs, key: value}).filter(v.applies)

            return st.sampled_from(choices).flatmap(with_choice)
        kwargs[key] = need
    return contexts(**kwargs).filter(v.applies)

