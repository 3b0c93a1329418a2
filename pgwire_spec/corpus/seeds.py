"""Built-in seed streams: small valid pgoutput streams built from the message classes.

They reach every message kind, every TupleData kind and every protocol version with a few
dozen messages, so the fuzz engines and the conformance runner have a corpus even where no
golden fixture is installed (a wheel without ``fixtures/``). Every stream passes
``PgOutputDecoder(strict=True, **options)`` (``tests/fuzz/test_seeds.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import encode
from ..pgoutput import messages as m
from ..pgoutput.messages import UNCHANGED

__all__ = ["SeedStream", "builtin_streams"]


@dataclass(frozen=True, slots=True)
class SeedStream:
    """A named stream of pgoutput payloads and the decoder options it was made for.

    ``options`` are the keyword arguments of :class:`~pgwire_spec.PgOutputDecoder`
    (protocol_version, streaming, two_phase, binary, messages); ``source`` says where the
    stream comes from (``builtin``, ``fixture:<file>``, ``generated``, ``finding``).
    """

    name: str
    options: dict[str, Any]
    payloads: tuple[bytes, ...]
    source: str = "builtin"
    #: The expected JSON form per payload (golden fixtures), else None.
    expected: tuple[dict[str, Any] | None, ...] | None = field(default=None, compare=False)
    #: Flags per payload (golden fixtures: ``key-tuple-full-width`` …), else None.
    flags: tuple[tuple[str, ...], ...] | None = field(default=None, compare=False)
    #: Stable ids per payload (golden fixture case ids), else None.
    ids: tuple[str, ...] | None = field(default=None, compare=False)


def _opts(protocol_version: int, streaming: str = "off", two_phase: bool = False,
          binary: bool = False, messages: bool = False) -> dict[str, Any]:
    return {"protocol_version": protocol_version, "streaming": streaming,
            "two_phase": two_phase, "binary": binary, "messages": messages}


_T0 = 780_000_000_000_000  # 2024-09-20, microseconds since 2000-01-01
_COLS = (
    m.RelationColumn(flags=1, name="id", type_oid=23, type_modifier=-1),
    m.RelationColumn(flags=0, name="name", type_oid=25, type_modifier=-1),
    m.RelationColumn(flags=0, name="doc", type_oid=3802, type_modifier=-1),
    m.RelationColumn(flags=0, name="price", type_oid=1700, type_modifier=655366),
)
_FULL_COLS = tuple(m.RelationColumn(1, c.name, c.type_oid, c.type_modifier) for c in _COLS)


def _rel(xid: int | None, rid: int, name: str, identity: str = "d") -> m.Relation:
    cols = _FULL_COLS if identity == "f" else _COLS
    return m.Relation(xid, rid, "public", name, identity, cols)


def _proto1() -> list[m.PgOutputMessage]:
    """Protocol 1 (servers 10-13 and later): every non-streamed change kind."""
    lsn = 0x1_6B37_4800
    return [
        m.Begin(final_lsn=lsn + 0x400, commit_time=_T0, xid=740),
        m.Origin(origin_lsn=0x2_0000_0010, name="node_b"),
        m.Type(None, 16_390, "public", "mood"),
        _rel(None, 16_384, "items"),
        m.Insert(None, 16_384, ("1", "caf\u00e9", '{"a": [1, 2]}', "9.99")),
        m.Insert(None, 16_384, ("2", None, None, "0")),
        m.Update(None, 16_384, None, None, ("2", "two", UNCHANGED, "1.5")),
        m.Update(None, 16_384, "K", ("2", None, None, None), ("3", "three", None, "1.5")),
        m.Delete(None, 16_384, "K", ("3", None, None, None)),
        # a key TOASTed out of line, left unchanged: in full in 'K', 'u' in the new tuple
        # (heapam.c heap_update, erratum E-KEY-FULL-WIDTH)
        m.Update(None, 16_384, "K", ("4" * 2_496, None, None, None), (UNCHANGED, "four", None, "2")),
        _rel(None, 16_400, "audit", "f"),
        m.Update(None, 16_400, "O", ("1", "a", None, "1"), ("1", "b", None, "1")),
        m.Delete(None, 16_400, "O", ("1", "b", None, "1")),
        _rel(None, 16_384, "items"),  # re-sent after a cache invalidation
        m.Truncate(None, 3, (16_384, 16_400)),
        m.Commit(flags=0, commit_lsn=lsn + 0x400, end_lsn=lsn + 0x430, commit_time=_T0),
        m.Begin(final_lsn=lsn + 0x500, commit_time=_T0 + 1_000, xid=741),
        m.Commit(flags=0, commit_lsn=lsn + 0x500, end_lsn=lsn + 0x530, commit_time=_T0 + 1_000),
    ]


def _messages() -> list[m.PgOutputMessage]:
    """Logical decoding messages, transactional and not (messages = true, servers >= 14)."""
    lsn = 0x1_7000_0000
    return [
        m.LogicalMessage(None, 0, lsn, "audit", b"\x00\x01 non-transactional"),
        m.Begin(final_lsn=lsn + 0x200, commit_time=_T0, xid=800),
        m.LogicalMessage(None, 1, lsn + 0x100, "wal2x", b"{}"),
        m.LogicalMessage(None, 1, lsn + 0x150, "", b""),
        m.Commit(0, lsn + 0x200, lsn + 0x230, _T0),
    ]


def _streaming(parallel: bool) -> list[m.PgOutputMessage]:
    """Protocol >= 2: interleaved streamed blocks, subtransaction and whole aborts."""
    lsn = 0x2_0000_0000
    tail = {"abort_lsn": lsn + 0x900, "abort_time": _T0 + 9} if parallel else {}
    return [
        m.StreamStart(xid=900, first_segment=True),
        m.Origin(origin_lsn=0, name="node_c"),
        m.Relation(900, 16_384, "public", "items", "d", _COLS),
        m.Insert(900, 16_384, ("10", "x" * 40, None, "1")),
        m.LogicalMessage(900, 1, lsn + 0x10, "app", b"in stream"),
        m.StreamStop(),
        m.StreamStart(xid=901, first_segment=True),
        m.Relation(901, 16_384, "public", "items", "d", _COLS),
        m.Insert(901, 16_384, ("11", "y", None, "2")),
        m.Truncate(901, 0, (16_384,)),
        m.StreamStop(),
        m.StreamStart(xid=900, first_segment=False),
        m.Update(900, 16_384, None, None, ("10", "z", UNCHANGED, "1")),
        m.Delete(900, 16_384, "K", ("10", None, None, None)),
        m.StreamStop(),
        m.StreamAbort(xid=900, subtransaction_xid=905, **tail),  # ROLLBACK TO SAVEPOINT
        m.StreamAbort(xid=901, subtransaction_xid=901, **tail),  # whole transaction
        m.StreamCommit(xid=900, flags=0, commit_lsn=lsn + 0x800, end_lsn=lsn + 0x830,
                       commit_time=_T0 + 5),
        # 18: a transaction aborted before it was decoded, never streamed, still announced
        # (erratum E-PG18-STRAY-STREAM-ABORT)
        m.StreamAbort(xid=910, subtransaction_xid=911, **tail),
        # Not streamed: no xid prefix outside a streamed block (pglogrepl #66).
        m.Begin(final_lsn=lsn + 0xA00, commit_time=_T0 + 6, xid=902),
        m.Relation(None, 16_384, "public", "items", "d", _COLS),
        m.Insert(None, 16_384, ("12", "w", None, "3")),
        m.Commit(0, lsn + 0xA00, lsn + 0xA30, _T0 + 6),
    ]


def _binary() -> list[m.PgOutputMessage]:
    """binary = true: 'b' values, mixed with 't' for a type without a send function."""
    lsn = 0x2_1000_0000
    return [
        m.Begin(final_lsn=lsn, commit_time=_T0, xid=950),
        m.Relation(None, 16_384, "public", "items", "d", _COLS),
        m.Insert(None, 16_384, (b"\x00\x00\x00\x01", b"abc", None, "1.00")),
        m.Update(None, 16_384, None, None, (b"\x00\x00\x00\x01", b"", UNCHANGED, b"\x00\x02")),
        m.Commit(0, lsn, lsn + 0x30, _T0),
    ]


def _two_phase(streaming: bool) -> list[m.PgOutputMessage]:
    """Protocol >= 3 with two_phase: prepare, commit and rollback prepared, stream prepare."""
    lsn = 0x3_0000_0000
    out: list[m.PgOutputMessage] = [
        m.BeginPrepare(lsn + 0x100, lsn + 0x130, _T0, 1000, "gid-1"),
        m.Relation(None, 16_384, "public", "items", "d", _COLS),
        m.Insert(None, 16_384, ("20", "p", None, "1")),
        m.Prepare(0, lsn + 0x100, lsn + 0x130, _T0, 1000, "gid-1"),
        m.CommitPrepared(0, lsn + 0x200, lsn + 0x230, _T0 + 2, 1000, "gid-1"),
        m.BeginPrepare(lsn + 0x300, lsn + 0x330, _T0 + 3, 1001, "g\u00efd 2"),
        m.Prepare(0, lsn + 0x300, lsn + 0x330, _T0 + 3, 1001, "g\u00efd 2"),
        m.RollbackPrepared(0, lsn + 0x330, lsn + 0x400, _T0 + 3, _T0 + 4, 1001, "g\u00efd 2"),
    ]
    if streaming:
        out += [
            m.StreamStart(1002, True),
            m.Relation(1002, 16_384, "public", "items", "d", _COLS),
            m.Insert(1002, 16_384, ("21", "q", None, "2")),
            m.StreamStop(),
            m.StreamPrepare(0, lsn + 0x500, lsn + 0x530, _T0 + 5, 1002, "gid-3"),
            m.CommitPrepared(0, lsn + 0x600, lsn + 0x630, _T0 + 6, 1002, "gid-3"),
        ]
    return out


def _stream(name: str, options: dict[str, Any], msgs: list[m.PgOutputMessage]) -> SeedStream:
    return SeedStream(name, options, tuple(encode(x) for x in msgs))


def builtin_streams() -> list[SeedStream]:
    """The built-in seed streams, in a fixed order (names are stable ids)."""
    return [
        _stream("builtin/proto1", _opts(1), _proto1()),
        _stream("builtin/proto1-messages", _opts(1, messages=True), _messages()),
        _stream("builtin/proto2-streaming", _opts(2, "on", messages=True), _streaming(False)),
        _stream("builtin/proto2-binary", _opts(2, binary=True), _binary()),
        _stream("builtin/proto3-two-phase", _opts(3, "on", two_phase=True), _two_phase(True)),
        _stream("builtin/proto3-two-phase-only", _opts(3, two_phase=True), _two_phase(False)),
        _stream("builtin/proto4-streaming-on", _opts(4, "on", messages=True), _streaming(False)),
        _stream("builtin/proto4-parallel", _opts(4, "parallel", messages=True), _streaming(True)),
        _stream("builtin/proto4-all", _opts(4, "parallel", True, True, True),
                _proto1() + _messages() + _binary() + _two_phase(False)),
    ]
