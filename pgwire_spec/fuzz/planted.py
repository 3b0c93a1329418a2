"""Planted bugs: mutant decoders that measure how fast the fuzz engines find real bug kinds.

A FuzzBench-style benchmark needs targets with known bugs. Each mutant here is the reference
decoder (``PgOutputDecoder``, strict) with the reading of one or a few message kinds replaced
by a small hand-written reader (:class:`_Reader`, in the style of the pgoutput decoders
found in the wild) that carries one planted bug: an off-by-one length check, the streamed
xid prefix forgotten, ``'u'`` read like ``'t'``, an LSN read as signed, binary values left
unconsumed, Stream Abort's tail ignored, a string read until a NUL that never comes, a
relation cache that is not keyed by OID, …

What the mutant's reader accepts is encoded again and given to the reference decoder, so
the stream's state machine and relation checks stay the reference's; a message the encoder
refuses (a value out of range) is reported as the reader read it. Without a bug
(:data:`CONTROL`) a mutant answers exactly as the reference does, so any difference the
differential oracle sees is the planted bug.

Every mutant is a fuzz target: ``pgwire-spec fuzz --target pgwire_spec.fuzz.planted:NAME``
(``NAME`` with ``_`` for ``-``), as :func:`target` names it. ``benchmarks/bench_bugs.py``
measures the time each engine takes to find each bug.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._primitives import UNCHANGED
from ..errors import DecodeError, PgWireError
from ..jsonform import to_json
from ..pgoutput import messages as m
from ..pgoutput._codec import encode
from ..pgoutput.decoder import PgOutputDecoder

__all__ = ["PlantedBug", "BUGS", "CONTROL", "target", "decode_case"]

_OPTIONS = ("protocol_version", "streaming", "two_phase", "binary", "messages")


@dataclass(frozen=True, slots=True)
class PlantedBug:
    """One planted bug: its name, what the mutant gets wrong, and which decoder's pattern
    it follows."""

    name: str
    what: str
    pattern: str


#: The planted bugs, by name.
BUGS: dict[str, PlantedBug] = {b.name: b for b in (
    PlantedBug("insert-trailing-bytes", "bytes after an Insert's tuple are ignored (no end-of-message check)",
               "pypgoutput, pg-logical-replication"),
    PlantedBug("text-length-off-by-one", "a 't' value's length is checked against one byte past the payload's "
               "end, so a value one byte short is accepted", "off-by-one bounds check"),
    PlantedBug("binary-not-consumed", "a 'b' value's length and bytes are not consumed (the next column is read "
               "from them)", "pypgoutput"),
    PlantedBug("unchanged-as-text", "'u' (unchanged TOAST) is read like 't': a length and bytes are expected",
               "pg-logical-replication fills 'u' in"),
    PlantedBug("null-reads-length", "'n' (NULL) is followed by a length, as if it were 't'", "kind switch fall-through"),
    PlantedBug("string-unterminated-loop", "a String is read byte by byte until a NUL; at the end of the payload "
               "it keeps reading empty bytes forever", "pypgoutput"),
    PlantedBug("lsn-signed", "LSNs are read as signed 64-bit integers (an LSN of 2^63 or more turns negative)",
               "signed/unsigned confusion"),
    PlantedBug("stream-xid-missing", "inside a streamed block Insert, Update and Delete are read without their "
               "xid prefix", "decoders written for protocol 1"),
    PlantedBug("stream-abort-tail-ignored", "Stream Abort's abort LSN and time (streaming = parallel) are not read",
               "decoders written for protocol 2-3"),
    PlantedBug("relation-cache-last", "the relation cache is not keyed by OID: a change's column count is checked "
               "against the last Relation received", "single-table decoders"),
    PlantedBug("commit-flags-ignored", "Commit's flags byte is skipped, not checked to be 0",
               "pg-logical-replication"),
    PlantedBug("replica-identity-unchecked", "Relation's replica identity byte is not checked to be d, n, f or i "
               "(anything else is taken for d)", "pypgoutput"),
    PlantedBug("delete-kind-unchecked", "Delete's K/O marker is not checked (any byte is taken for K)",
               "pypgoutput"),
    PlantedBug("truncate-count-ignored", "Truncate's relation ids are read to the end of the payload, not by "
               "their count", "length-free reader"),
    PlantedBug("message-content-unbounded", "a logical Message's content length is not checked against the "
               "payload (a short content is accepted)", "slicing without a bounds check"),
    PlantedBug("update-key-as-new", "an Update's 'K' old-key tuple is taken for the new tuple; what follows is "
               "ignored", "pypgoutput's optional tuple identifier"),
    PlantedBug("empty-tuple-crash", "a tuple of zero columns crashes the reader (IndexError on the last column)",
               "unchecked indexing"),
    PlantedBug("commit-lsns-swapped", "Commit's commit LSN and end LSN are read in the wrong order",
               "field order slip"),
)}

#: The bug-free mutant: the hand-written readers without a bug (it must agree with the reference).
CONTROL = "control"


class _Reject(Exception):
    """The mutant's reader refuses the payload."""


class _Reader:
    """A cursor over one payload, pgoutput's primitive types, and the bug it carries."""

    __slots__ = ("data", "pos", "bug")

    def __init__(self, data: bytes, bug: str) -> None:
        self.data = data
        self.pos = 1  # after the tag
        self.bug = bug

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise _Reject(f"{n} bytes wanted at offset {self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def int8(self) -> int:
        return self.unpack(">B")  # type: ignore[no-any-return]

    def char(self) -> str:
        return chr(self.take(1)[0])

    def uint16(self) -> int:
        return self.unpack(">H")  # type: ignore[no-any-return]

    def int32(self) -> int:
        return self.unpack(">i")  # type: ignore[no-any-return]

    def uint32(self) -> int:
        return self.unpack(">I")  # type: ignore[no-any-return]

    def int64(self) -> int:
        return self.unpack(">q")  # type: ignore[no-any-return]

    def lsn(self) -> int:
        return self.unpack(">q" if self.bug == "lsn-signed" else ">Q")  # type: ignore[no-any-return]

    def string(self) -> str:
        if self.bug == "string-unterminated-loop":
            out = bytearray()
            while True:  # the plant: an empty read is never the NUL, so this never ends
                c = self.data[self.pos:self.pos + 1]
                self.pos += 1
                if c == b"\x00":
                    return out.decode("utf-8", "surrogateescape")
                out += c
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise _Reject("a String without its NUL")
        out_b = self.data[self.pos:end]
        self.pos = end + 1
        return out_b.decode("utf-8", "surrogateescape")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise _Reject(f"{len(self.data) - self.pos} trailing byte(s)")

    def value(self, n: int) -> bytes:
        """A 't'/'b' value of *n* bytes."""
        if self.bug == "text-length-off-by-one" and n > 0 and self.pos + n == len(self.data) + 1:
            out = self.data[self.pos:]  # the plant: the bounds check allows one byte past the end
            self.pos = len(self.data)
            return out
        return self.take(n)

    def tuple(self) -> m.TupleData:
        n = self.uint16()
        values: list[m.ColumnValue] = []
        bug = self.bug
        for _ in range(n):
            kind = self.char()
            if kind == "n":
                if bug == "null-reads-length":
                    self.value(self.int32())
                values.append(None)
            elif kind == "u":
                if bug == "unchanged-as-text":
                    values.append(self.value(self.int32()).decode("utf-8", "surrogateescape"))
                else:
                    values.append(UNCHANGED)
            elif kind == "t":
                values.append(self.value(self.int32()).decode("utf-8", "surrogateescape"))
            elif kind == "b":
                values.append(b"" if bug == "binary-not-consumed" else self.value(self.int32()))
            else:
                raise _Reject(f"tuple kind {kind!r}")
        if bug == "empty-tuple-crash":
            values[-1]  # the plant: IndexError on a tuple of no columns  # noqa: B018
        return tuple(values)


# -- the readers of the kinds a mutant replaces ---------------------------------------------------


class _State:
    """What a mutant keeps across the payloads of a stream besides the reference decoder."""

    __slots__ = ("last_columns",)

    def __init__(self) -> None:
        self.last_columns: int | None = None


def _xid(r: _Reader, in_stream: bool, dml: bool = False) -> int | None:
    if not in_stream or (dml and r.bug == "stream-xid-missing"):
        return None
    return r.uint32()


def _begin(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    msg = m.Begin(r.lsn(), r.int64(), r.uint32())
    r.end()
    return msg


def _commit(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    flags = r.int8()
    if r.bug == "commit-flags-ignored":
        flags = 0
    a, b = r.lsn(), r.lsn()
    if r.bug == "commit-lsns-swapped":
        a, b = b, a
    msg = m.Commit(flags, a, b, r.int64())
    r.end()
    return msg


def _relation(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream)
    rid, ns, name, ident = r.uint32(), r.string(), r.string(), r.char()
    if ident not in "dnfi":
        if r.bug != "replica-identity-unchecked":
            raise _Reject(f"replica identity {ident!r}")
        ident = "d"  # the plant: an unknown identity is taken for the default
    cols = tuple(m.RelationColumn(r.int8(), r.string(), r.uint32(), r.int32()) for _ in range(r.uint16()))
    r.end()
    st.last_columns = len(cols)
    return m.Relation(xid, rid, ns, name, ident, cols)


def _check_last(r: _Reader, st: _State, *tuples: m.TupleData | None) -> None:
    if r.bug == "relation-cache-last" and st.last_columns is not None:
        for t in tuples:
            if t is not None and len(t) != st.last_columns:
                raise _Reject(f"{len(t)} columns, the relation has {st.last_columns}")


def _insert(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream, dml=True)
    rid = r.uint32()
    if r.char() != "N":
        raise _Reject("N expected")
    new = r.tuple()
    if r.bug != "insert-trailing-bytes":
        r.end()
    _check_last(r, st, new)
    return m.Insert(xid, rid, new)


def _update(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream, dml=True)
    rid = r.uint32()
    kind = r.char()
    old_kind: str | None = None
    old: m.TupleData | None = None
    if kind == "K" and r.bug == "update-key-as-new":
        new = r.tuple()  # the plant: the key tuple taken for the new one; the rest ignored
        _check_last(r, st, new)
        return m.Update(xid, rid, None, None, new)
    if kind in ("K", "O"):
        old_kind, old = kind, r.tuple()
        kind = r.char()
    if kind != "N":
        raise _Reject("N expected")
    new = r.tuple()
    r.end()
    _check_last(r, st, old, new)
    return m.Update(xid, rid, old_kind, old, new)


def _delete(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream, dml=True)
    rid = r.uint32()
    kind = r.char()
    if kind not in ("K", "O"):
        if r.bug != "delete-kind-unchecked":
            raise _Reject("K or O expected")
        kind = "K"
    old = r.tuple()
    r.end()
    _check_last(r, st, old)
    return m.Delete(xid, rid, kind, old)


def _truncate(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream)
    count, options = r.uint32(), r.int8()
    if r.bug == "truncate-count-ignored":
        count = max(0, (len(r.data) - r.pos) // 4)
    ids = tuple(r.uint32() for _ in range(count))
    r.end()
    return m.Truncate(xid, options, ids)


def _message(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid = _xid(r, in_stream)
    flags, lsn, prefix = r.int8(), r.lsn(), r.string()
    n = r.int32()
    if r.bug == "message-content-unbounded" and n >= 0:
        content = r.data[r.pos:r.pos + n]
        r.pos = min(len(r.data), r.pos + n)
    else:
        content = r.take(n)
    r.end()
    return m.LogicalMessage(xid, flags, lsn, prefix, content)


def _stream_abort(r: _Reader, in_stream: bool, abort_tail: bool, st: _State) -> Any:
    xid, sub = r.uint32(), r.uint32()
    if abort_tail and r.bug != "stream-abort-tail-ignored":
        msg = m.StreamAbort(xid, sub, r.lsn(), r.int64())
    else:
        msg = m.StreamAbort(xid, sub)
        if r.bug == "stream-abort-tail-ignored":
            return msg  # the plant: the tail is neither read nor reported
    r.end()
    return msg


_READERS: dict[int, Callable[[_Reader, bool, bool, _State], Any]] = {
    ord("B"): _begin, ord("C"): _commit, ord("R"): _relation, ord("I"): _insert, ord("U"): _update,
    ord("D"): _delete, ord("T"): _truncate, ord("M"): _message, ord("A"): _stream_abort,
}


def decode_case(bug: str, context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    """Decode a case (the adapter contract's ``decode_case``) with the mutant of *bug*."""
    if bug != CONTROL and bug not in BUGS:
        raise ValueError(f"unknown planted bug {bug!r}: expected {CONTROL} or one of {', '.join(BUGS)}")
    decoder = PgOutputDecoder(strict=True, **{k: context[k] for k in _OPTIONS if k in context})
    abort_tail = decoder.streaming == "parallel"
    st = _State()
    out: list[dict[str, Any]] = []
    for payload in payloads:
        read = _READERS.get(payload[0]) if payload else None
        try:
            if read is None:
                out.append({"message": to_json(decoder.decode(payload))})
                continue
            try:
                mine = read(_Reader(payload, bug), decoder.in_stream, abort_tail, st)
            except (_Reject, struct.error) as exc:
                out.append({"error": {"message": f"mutant {bug}: {exc}"}})
                return out
            try:
                again = encode(mine)
            except PgWireError:
                # a value the encoder refuses: the mutant reports what it read, unchecked
                out.append({"message": to_json(mine)})
                continue
            out.append({"message": to_json(decoder.decode(again))})
        except DecodeError as err:
            out.append({"error": {"message": str(err), "rule": err.rule}})
            return out
    try:
        decoder.finish()
    except DecodeError as err:
        out.append({"error": {"message": str(err), "rule": err.rule}})
    return out


def target(bug: str) -> str:
    """The ``--target`` of the mutant of *bug*: ``pgwire_spec.fuzz.planted:NAME``."""
    return f"{__name__}:{bug.replace('-', '_')}"


def _entry(bug: str) -> Callable[[Mapping[str, Any], Sequence[bytes]], list[dict[str, Any]]]:
    def run(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
        return decode_case(bug, context, payloads)

    run.__name__ = run.__qualname__ = bug.replace("-", "_")
    run.__doc__ = f"The mutant decoder with the planted bug {bug!r}."
    return run


for _name in (CONTROL, *BUGS):
    globals()[_name.replace("-", "_")] = _entry(_name)
