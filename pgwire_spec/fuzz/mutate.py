"""The mutate engine: structure-aware mutations of seed payloads and streams.

Each seed payload is mapped once (:func:`~pgwire_spec.corpus._fields.field_map`): field
boundaries, length and count fields, kind bytes, strings. A case is then one to three
mutations drawn from a seeded ``random.Random``:

payload mutations
    ``bitflip``, ``byte`` (an interesting value), ``truncate`` (at a field boundary or
    anywhere), ``extend`` (trailing bytes), ``length`` (a length or count set to 0, -1,
    one past the end, huge …), ``kind`` (a tag, tuple kind or K/O/N marker replaced),
    ``string`` (NUL removed, invalid UTF-8, NUL inserted), ``int`` (a field set to a
    boundary value), ``splice`` (this payload's head on another's tail, at field
    boundaries), ``context`` (the same bytes decoded in the other streaming context);
stream mutations
    ``swap``, ``drop``, ``duplicate``, ``move`` (message reordering), ``splice-streams``
    (one window's head on another's tail), ``options`` (other negotiated options), and a
    payload mutation applied inside the stream.

Cases are plain tuples (no per-case objects on the hot path):
``("p", data, in_stream, abort_tail, ops)`` or ``("s", options, payloads, ops)``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..corpus._fields import TAGS, Field, field_map
from ..corpus.seeds import SeedStream
from ..errors import DecodeError
from ..pgoutput.decoder import PgOutputDecoder

__all__ = ["PayloadSeed", "StreamSeed", "Mutator", "prepare_seeds"]

_INTERESTING8 = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x4E, 0x4B, 0x4F, 0x74, 0x62, 0x6E, 0x75)
_INTERESTING32 = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFF, 0x10000)
_KIND_BYTES = b"ntubKONxX\x00\xff"
_MAX_WINDOW = 6


@dataclass(frozen=True, slots=True)
class PayloadSeed:
    """A seed payload with its decoding context and field map."""

    data: bytes
    in_stream: bool
    abort_tail: bool
    fields: tuple[Field, ...]
    boundaries: tuple[int, ...]
    lengths: tuple[Field, ...]
    kinds: tuple[Field, ...]
    strings: tuple[Field, ...]
    ints: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class StreamSeed:
    """A short valid window of a seed stream (Relations it needs included)."""

    options: dict[str, Any]
    payloads: tuple[bytes, ...]


def _payload_seed(data: bytes, in_stream: bool, abort_tail: bool) -> PayloadSeed:
    fields = field_map(data, in_stream, abort_tail)
    return PayloadSeed(
        data, in_stream, abort_tail, fields,
        tuple(sorted({f.offset for f in fields if f.offset > 0})),
        tuple(f for f in fields if f.kind in ("length", "count")),
        tuple(f for f in fields if f.kind in ("kind-byte", "tag", "char", "bool")),
        tuple(f for f in fields if f.kind == "string"),
        tuple(f for f in fields if f.kind == "int"),
    )


def prepare_seeds(
    streams: Sequence[SeedStream], *, max_payloads: int = 20_000, max_windows: int = 2_000
) -> tuple[list[PayloadSeed], list[StreamSeed]]:
    """Payload seeds (distinct payloads in their context) and stream windows of *streams*.

    Each stream is replayed through a lenient reference decoder to learn every payload's
    streaming context and, at transaction boundaries, the relation cache a window starting
    there needs.
    """
    from .. import encode

    payloads: dict[tuple[bytes, bool, bool], None] = {}
    windows: list[StreamSeed] = []
    per_stream = max(1, max_windows // max(1, len(streams)))
    for s in streams:
        opts: dict[str, Any] = {k: s.options[k] for k in ("protocol_version", "streaming", "two_phase", "binary", "messages")
                if k in s.options}
        try:
            dec = PgOutputDecoder(strict=False, **opts)
        except Exception:  # noqa: BLE001 - a corpus stream with an impossible context: skip it
            continue
        abort_tail = dec.streaming == "parallel"
        starts: list[tuple[int, dict[int, Any]]] = []
        flags: list[bool] = []
        step = max(1, len(s.payloads) // per_stream)
        for i, p in enumerate(s.payloads):
            if dec.state == "idle" and not dec.open_streams and (i % step == 0 or not starts) \
                    and len(starts) < per_stream:
                starts.append((i, dict(dec.relations)))
            flags.append(dec.in_stream)
            payloads.setdefault((p, dec.in_stream, abort_tail), None)
            try:
                dec.decode(p)
            except DecodeError:
                break
        for i, cache in starts:
            window = list(s.payloads[i:i + _MAX_WINDOW])
            rels = [cache[rid] for rid in _needed(window, flags[i:i + _MAX_WINDOW], abort_tail) if rid in cache]
            # the relation cache goes right after the window's first block opener (Relation
            # messages only come inside a transaction or a streamed block)
            at = next((k for k, p in enumerate(window) if p[:1] in (b"B", b"b", b"S")), None)
            if at is not None and rels:
                xid = int.from_bytes(window[at][1:5], "big") if window[at][:1] == b"S" else None
                window[at + 1:at + 1] = [encode(_with_xid(r, xid)) for r in rels]
            windows.append(StreamSeed(opts, tuple(window)))
    keys = list(payloads)[:max_payloads]
    return [_payload_seed(d, ins, at) for d, ins, at in keys], windows


def _needed(window: Sequence[bytes], in_stream: Sequence[bool], abort_tail: bool) -> list[int]:
    """Relation OIDs the changes of *window* use before a Relation in the window names them."""
    from ..pgoutput._codec import FAMILY
    from ..pgoutput.messages import Delete, Insert, Relation, Truncate, Update

    seen: set[int] = set()
    out: list[int] = []
    for p, ins in zip(window, in_stream):
        try:
            msg = FAMILY.decode(p, ins, abort_tail)
        except DecodeError:
            continue
        if isinstance(msg, Relation):
            seen.add(msg.relation_id)
            continue
        ids = (msg.relation_id,) if isinstance(msg, (Insert, Update, Delete)) else \
            msg.relation_ids if isinstance(msg, Truncate) else ()
        out += [rid for rid in ids if rid not in seen and rid not in out]
    return out


def _with_xid(rel: Any, xid: int | None) -> Any:
    from dataclasses import replace

    return replace(rel, xid=xid)


def _pick(r: random.Random, seq: Sequence[Any]) -> Any:
    """``r.choice`` without its rejection sampling (random() is ten times cheaper)."""
    return seq[int(r.random() * len(seq))]


def _below(r: random.Random, n: int) -> int:
    """``r.randrange(n)`` for small n, the cheap way (a bias below 2**-40)."""
    return int(r.random() * n)


class Mutator:
    """Draws mutated cases from prepared seeds with a given ``random.Random``."""

    def __init__(self, payload_seeds: Sequence[PayloadSeed], stream_seeds: Sequence[StreamSeed],
                 stream_ratio: float = 0.01) -> None:
        if not payload_seeds:
            raise ValueError("the mutate engine needs at least one seed payload")
        self.seeds = list(payload_seeds)
        self.windows = list(stream_seeds)
        self.stream_ratio = stream_ratio if self.windows else 0.0
        self._window_seeds: dict[tuple[bytes, bool, bool], PayloadSeed] = {}
        self._ops = (
            ("bitflip", self._bitflip, 3), ("byte", self._byte, 2), ("truncate", self._truncate, 3),
            ("extend", self._extend, 1), ("length", self._length, 3), ("kind", self._kind, 2),
            ("string", self._string, 2), ("int", self._int, 2), ("splice", self._splice, 2),
        )
        # (mutation, its op names): the names tuple is built once, not per case
        self._table = [(fn, (name,)) for name, fn, w in self._ops for _ in range(w)]

    # -- payload mutations ----------------------------------------------------------------------
    def _bitflip(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if d:
            i = int(r.random() * len(d))
            d[i] ^= 1 << int(r.random() * 8)

    def _byte(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if d:
            d[int(r.random() * len(d))] = _pick(r, _INTERESTING8) if r.random() < 0.7 else int(r.random() * 256)

    def _truncate(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if s.boundaries and r.random() < 0.7:
            cut = _pick(r, s.boundaries)
        else:
            cut = int(r.random() * (len(d) + 1))
        del d[cut:]

    def _extend(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if d and r.random() < 0.5:
            a = int(r.random() * len(d))
            d.extend(d[a:a + 1 + int(r.random() * 8)])
        else:
            d.extend(r.randbytes(1 + int(r.random() * 4)))

    def _length(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if not s.lengths:
            return self._truncate(r, d, s)
        f = _pick(r, s.lengths)
        if f.offset + f.size > len(d):
            return None
        size = f.size
        left = len(d) - f.offset - size
        choice = int(r.random() * 6)
        if choice == 0:
            value = _pick(r, _INTERESTING32)
        elif choice == 1:
            value = left + 1
        elif choice == 2:
            value = max(left - 1, 0)
        elif choice == 3:
            value = int.from_bytes(d[f.offset:f.offset + size], "big") + _pick(r, (-1, 1, 2))
        else:
            value = r.getrandbits(8 * size)
        d[f.offset:f.offset + size] = (value % (1 << (8 * size))).to_bytes(size, "big")
        return None

    def _kind(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if not s.kinds:
            return self._byte(r, d, s)
        f = _pick(r, s.kinds)
        if f.offset < len(d):
            d[f.offset] = _pick(r, TAGS) if f.kind == "tag" and r.random() < 0.7 else _pick(r, _KIND_BYTES)
        return None

    def _string(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if not s.strings:
            return self._bitflip(r, d, s)
        f = _pick(r, s.strings)
        end = f.offset + f.size - 1
        if end >= len(d):
            return None
        choice = int(r.random() * 3)
        if choice == 0 and d[end] == 0:
            del d[end]  # unterminated: the string runs into the next field
        elif choice == 1:
            d[f.offset:f.offset] = _pick(r, (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82"))
        else:
            d[f.offset:f.offset] = b"\x00"
        return None

    def _int(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        if not s.ints:
            return self._byte(r, d, s)
        f = _pick(r, s.ints)
        if f.offset + f.size > len(d):
            return None
        n = f.size * 8
        value = _pick(r, (0, 1, (1 << (n - 1)) - 1, 1 << (n - 1), (1 << n) - 1, r.getrandbits(n)))
        d[f.offset:f.offset + f.size] = value.to_bytes(f.size, "big")
        return None

    def _splice(self, r: random.Random, d: bytearray, s: PayloadSeed) -> None:
        other = _pick(r, self.seeds)
        a = _pick(r, s.boundaries) if s.boundaries else int(r.random() * (len(d) + 1))
        b = _pick(r, other.boundaries) if other.boundaries else int(r.random() * (len(other.data) + 1))
        d[a:] = other.data[b:]

    def mutate_payload(self, r: random.Random, seed: PayloadSeed) -> tuple[bytes, bool, bool, tuple[str, ...]]:
        """Apply one to three payload mutations to *seed*; return (bytes, in_stream,
        abort_tail, op names)."""
        x = r.random()
        return self._mutate_n(r, seed, 1 if x < 0.6 else 2 if x < 0.8 else 3)

    def _mutate_n(self, r: random.Random, seed: PayloadSeed, n: int) -> tuple[bytes, bool, bool, tuple[str, ...]]:
        d = bytearray(seed.data)
        in_stream, abort_tail = seed.in_stream, seed.abort_tail
        rand = r.random
        table = self._table
        size = len(table)
        names: list[str] = []
        for _ in range(n):
            if rand() < 0.04:
                names.append("context")
                if rand() < 0.5:
                    in_stream = not in_stream
                else:
                    abort_tail = not abort_tail
                continue
            fn, ops = table[int(rand() * size)]
            fn(r, d, seed)
            names += ops
        return bytes(d), in_stream, abort_tail, tuple(names)

    # -- stream mutations --------------------------------------------------------------------------
    def _window_seed(self, data: bytes, in_stream: bool, abort_tail: bool) -> PayloadSeed:
        """The field map of a window's payload in its context (cached: windows repeat)."""
        key = (data, in_stream, abort_tail)
        seed = self._window_seeds.get(key)
        if seed is None:
            if len(self._window_seeds) >= 50_000:
                self._window_seeds.clear()
            seed = self._window_seeds[key] = _payload_seed(data, in_stream, abort_tail)
        return seed

    def mutate_stream(self, r: random.Random) -> tuple[dict[str, Any], tuple[bytes, ...], tuple[str, ...]]:
        w = _pick(r, self.windows)
        pl = list(w.payloads)
        options = dict(w.options)
        # half the cases mutate one payload in its place (the bugs of a decoder's message
        # readers); the others change the stream around valid payloads
        choice = 6 if r.random() < 0.5 else int(r.random() * 6)
        n = len(pl)
        if choice == 0 and n > 1:
            i, j = int(r.random() * n), int(r.random() * n)
            pl[i], pl[j] = pl[j], pl[i]
            op = "swap"
        elif choice == 1 and n > 1:
            del pl[int(r.random() * n)]
            op = "drop"
        elif choice == 2:
            i = int(r.random() * n)
            pl.insert(int(r.random() * (n + 1)), pl[i])
            op = "duplicate"
        elif choice == 3 and n > 1:
            p = pl.pop(int(r.random() * n))
            pl.insert(int(r.random() * n), p)
            op = "move"
        elif choice == 4:
            other = _pick(r, self.windows).payloads
            pl = pl[:int(r.random() * (n + 1))] + list(other[int(r.random() * (len(other) + 1)):])
            op = "splice-streams"
        elif choice == 5:
            key = _pick(r, ("protocol_version", "streaming", "two_phase", "binary", "messages"))
            if key == "protocol_version":
                options[key] = 1 + int(r.random() * 4)
            elif key == "streaming":
                options[key] = _pick(r, ("off", "on", "parallel"))
            else:
                options[key] = not options.get(key, False)
            op = f"options:{key}"
        else:
            i = int(r.random() * n)
            # inside a streamed block (after Stream Start, before Stream Stop) the payload
            # carries the xid prefix: map its fields as the decoder will read them
            in_stream = False
            for p in pl[:i]:
                if p[:1] == b"S":
                    in_stream = True
                elif p[:1] == b"E":
                    in_stream = False
            seed = self._window_seed(pl[i], in_stream, options.get("streaming") == "parallel")
            data, _, _, ops = self.mutate_payload(r, seed)
            pl[i] = data
            op = "payload:" + "+".join(ops)
        return options, tuple(pl), (op,)

    def case(self, r: random.Random) -> tuple[Any, ...]:
        """One mutated case: ``("p", data, in_stream, abort_tail, ops)`` or
        ``("s", options, payloads, ops)``."""
        rand = r.random
        if self.stream_ratio and rand() < self.stream_ratio:
            options, payloads, ops = self.mutate_stream(r)
            return ("s", options, payloads, ops)
        seeds = self.seeds
        seed = seeds[int(rand() * len(seeds))]
        x = rand()
        n = 1 if x < 0.6 else 2 if x < 0.8 else 3
        if n == 1 and rand() >= 0.04:
            # the common case (one mutation, the seed's context) inline: no loop, no list
            table = self._table
            fn, ops = table[int(rand() * len(table))]
            d = bytearray(seed.data)
            fn(r, d, seed)
            return ("p", bytes(d), seed.in_stream, seed.abort_tail, ops)
        data, in_stream, abort_tail, ops = self._mutate_n(r, seed, n)
        return ("p", data, in_stream, abort_tail, ops)
