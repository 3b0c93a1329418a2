"""Decode and encode speed of the generated codec, side by side with its peers, in one run.

    python benchmarks/bench_codec.py [--repeat 7] [--json out.json]

Input: the real PostgreSQL 15 stream in tests/data/pg15_sample.jsonl, protocol 1 (Begin,
Relation, Insert, Update, Delete, Truncate, Commit: the kinds pypgoutput supports), and the
PostgreSQL 16 golden fixture's protocol-1 stream (fixtures/pg16-builtin.json.gz, group p1:
many small transactions, so many Begin, Commit and Relation messages; its Type and Origin
messages left out, pypgoutput has no decoder for them).
Decoders measured over the same payloads, each repeated, median reported:

- pgwire_spec PgOutputDecoder (stateful: relation cache, arity and sequence checks)
- the same, then reading every tuple value (the Python codec decodes values on first
  access; pypgoutput decodes them all)
- pgwire_spec decode_message (no sequence state)
- pypgoutput 0.0.3 (its per-message classes)
- construct, interpreted and compiled, over our grammar
- a bare struct.unpack loop that walks every field and builds nothing (the floor)

Times are the CPU time of the measuring thread (``time.thread_time``): on a machine shared
with other work, wall time would count the time other processes held the core.

Encoders: pgwire_spec.encode vs construct's interpreted and compiled build.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import statistics
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pgwire_spec import PgOutputDecoder, decode_message, encode  # noqa: E402
from pgwire_spec.pgoutput import grammar  # noqa: E402

DATA = ROOT / "tests" / "data" / "pg15_sample.jsonl"
PG16 = ROOT / "fixtures" / "pg16-builtin.json.gz"
#: the message kinds pypgoutput decodes (its Origin class takes no payload)
PEER_KINDS = b"BCRIUDT"


def load_payloads() -> list[bytes]:
    lines = [json.loads(x) for x in DATA.read_text().splitlines()]
    return [bytes.fromhex(c["hex"]) for c in lines[1:] if c["set"] == 0]


def load_pg16_payloads() -> list[bytes]:
    """The protocol-1 stream of the PostgreSQL 16 golden fixture (group p1), the kinds
    pypgoutput decodes."""
    with gzip.open(PG16, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    group = next(g for g in doc["groups"] if g["name"] == "p1")
    payloads = [bytes.fromhex(c["hex"]) for c in group["cases"]]
    return [p for p in payloads if p[0] in PEER_KINDS]


def read_values(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """*decode*, then read every tuple value of the message."""

    def decode_and_read(d: bytes) -> Any:
        msg = decode(d)
        t = d[0]
        if t == 73 or t == 85:
            tuple(msg.new_tuple)
            if t == 85 and msg.old_tuple is not None:
                tuple(msg.old_tuple)
        elif t == 68:
            tuple(msg.old_tuple)
        return msg

    return decode_and_read


# -- the floor: walk every field with struct, build nothing ----------------------------------
_B = struct.Struct(">QqI").unpack_from
_C = struct.Struct(">BQQq").unpack_from
_I = struct.Struct(">I").unpack_from
_H = struct.Struct(">H").unpack_from
_i = struct.Struct(">i").unpack_from
_COL = struct.Struct(">Ii").unpack_from


def _walk_tuple(d: bytes, p: int) -> int:
    (n,) = _H(d, p)
    p += 2
    for _ in range(n):
        k = d[p]
        p += 1
        if k == 116 or k == 98:
            (ln,) = _i(d, p)
            p += 4 + ln
    return p


def bare_struct(d: bytes) -> Any:
    t = d[0]
    if t == 66:
        return _B(d, 1)
    if t == 67:
        return _C(d, 1)
    if t == 73:
        _I(d, 1)
        return _walk_tuple(d, 6)
    if t == 85 or t == 68:
        _I(d, 1)
        p = 5
        if d[p] in (75, 79):
            p = _walk_tuple(d, p + 1)
            if t == 68:
                return p
        return _walk_tuple(d, p + 1)
    if t == 82:
        _I(d, 1)
        p = d.index(0, 5) + 1
        p = d.index(0, p) + 1
        (n,) = _H(d, p + 1)
        p += 3
        for _ in range(n):
            p = d.index(0, p + 1) + 1
            _COL(d, p)
            p += 8
        return p
    if t == 84:
        (n,) = _I(d, 1)
        return struct.unpack_from(f">{n}I", d, 6)
    raise ValueError(t)


def pypgoutput_decoder() -> Callable[[bytes], Any] | None:
    try:
        from pypgoutput import decoders as pd
    except ImportError:
        return None
    table = {66: pd.Begin, 67: pd.Commit, 82: pd.Relation, 73: pd.Insert, 85: pd.Update, 68: pd.Delete,
             84: pd.Truncate}

    def decode(d: bytes) -> Any:
        return table[d[0]](d)

    return decode


def construct_decoder(compiled: bool) -> Callable[[bytes], Any]:
    layouts = {ord(lay.subcons[0].subcon.value): lay for lay in grammar.LAYOUTS.values()}
    if compiled:
        layouts = {k: v.compile() for k, v in layouts.items()}

    def decode(d: bytes) -> Any:
        return layouts[d[0]].parse(d, in_stream=False, abort_tail=False)

    return decode


def construct_encoder(compiled: bool) -> Callable[[Any], bytes]:
    by_name = dict(grammar.LAYOUTS)
    if compiled:
        by_name = {k: v.compile() for k, v in by_name.items()}

    def enc(msg: Any) -> bytes:
        fields = {f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)}
        if "columns" in fields:
            fields["columns"] = [dataclasses.asdict(c) for c in fields["columns"]]
        return by_name[type(msg).__name__].build(fields, in_stream=getattr(msg, "xid", None) is not None,
                                                  abort_tail=False)

    return enc


def measure_interleaved(
    contenders: dict[str, Callable[[], Callable[[Any], Any]]], items: list[Any], repeat: int
) -> dict[str, float]:
    """Median messages per second of each contender; passes interleaved (A B C A B C …) so
    that load from elsewhere on the machine hits all of them alike. Each contender is a
    factory, called before every pass (stateful decoders start fresh)."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, factory in contenders.items():
            fn = factory()
            t0 = time.thread_time()
            for x in items:
                fn(x)
            rates[name].append(len(items) / max(time.thread_time() - t0, 1e-9))
    return {name: statistics.median(r) for name, r in rates.items()}


def segments(payloads: list[bytes]) -> dict[str, list[bytes]]:
    """The whole stream, its bulk transactions (> 50 changes) and its small ones."""
    bulk: list[bytes] = []
    small: list[bytes] = []
    current: list[bytes] = []
    for p in payloads:
        current.append(p)
        if p[0] == ord("C"):
            (bulk if len(current) > 52 else small).extend(current)
            current = []
    # A segment starts with the stream's Relation messages (wrapped in its first
    # transaction's Begin and Commit), so the stateful decoder knows every relation.
    first_begin = next(p for p in payloads if p[0] == ord("B"))
    first_commit = next(p for p in payloads if p[0] == ord("C"))
    prefix = [first_begin] + [p for p in payloads if p[0] == ord("R")] + [first_commit]
    return {"whole stream": payloads, "bulk transactions": prefix + bulk, "small transactions": prefix + small}


#: the PostgreSQL 16 stream is short: each pass decodes it this many times over
PG16_ROUNDS = 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the results as JSON to this file")
    ap.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = ap.parse_args()
    if args.short:
        args.repeat = 1
    payloads = load_payloads()
    messages = [decode_message(p) for p in payloads]
    # sanity: every decoder agrees on what it is given
    for p, m in zip(payloads, messages):
        assert encode(m) == p

    pyp = pypgoutput_decoder()
    decoders: dict[str, Callable[[], Callable[[Any], Any]]] = {
        "pgwire_spec PgOutputDecoder (stateful, strict)": lambda: PgOutputDecoder().decode,
        "pgwire_spec PgOutputDecoder, reading every value": lambda: read_values(PgOutputDecoder().decode),
        "pgwire_spec decode_message (stateless)": lambda: decode_message,
    }
    if pyp is not None:
        decoders["pypgoutput 0.0.3"] = lambda: pyp
    decoders["bare struct.unpack loop (builds nothing)"] = lambda: bare_struct
    slow = {
        "construct 2.10.70 interpreted parse": construct_decoder(False),
        "construct 2.10.70 compiled parse": construct_decoder(True),
    }
    ours = "pgwire_spec PgOutputDecoder (stateful, strict)"
    results: dict[str, Any] = {}
    print("pgwire_spec pgoutput decode backend:", sys.modules["pgwire_spec.pgoutput._codec"].BACKEND)
    print(f"Real PostgreSQL 15 stream, protocol 1 ({DATA.name}); median of {args.repeat} interleaved passes\n")
    streams = segments(payloads)
    pg16 = load_pg16_payloads()
    for p in pg16:
        assert encode(decode_message(p)) == p
    streams[f"PostgreSQL 16 stream ({PG16.name}, p1, x{PG16_ROUNDS})"] = pg16 * PG16_ROUNDS
    peer = "pypgoutput 0.0.3"
    summary = []
    for seg_name, items in streams.items():
        rates = measure_interleaved(decoders, items, args.repeat)
        if seg_name == "whole stream":
            rates.update(measure_interleaved({k: (lambda f=f: f) for k, f in slow.items()}, items,
                                             max(1, args.repeat // 3)))
        results[seg_name] = rates
        print(f"### decode, {seg_name}: {len(items)} messages\n")
        print("| decoder | messages/s | pgwire_spec stateful ÷ this |")
        print("|---|---:|---:|")
        for name, rate in rates.items():
            print(f"| {name} | {rate:,.0f} | {rates[ours] / rate:.2f}x |")
        print()
        if peer in rates:
            summary.append((seg_name, *(rates[k] / rates[peer] for k in list(decoders)[:3])))

    if summary:
        print("### ratio to pypgoutput (same run, medians)\n")
        print("| stream | stateful | stateful, reading every value | stateless |")
        print("|---|---:|---:|---:|")
        for seg_name, *ratios in summary:
            print(f"| {seg_name} | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
        print()

    # per message kind, stateless decoders (stateful checks need the whole stream)
    print("### decode per message kind (stateless), messages/s\n")
    print("| kind | count | pgwire_spec decode_message | pypgoutput | ratio |")
    print("|---|---:|---:|---:|---:|")
    per_kind = {}
    for tag in "BRIUDTC":
        items = [p for p in payloads if p[0] == ord(tag)]
        if not items or pyp is None:
            continue
        r = measure_interleaved({"ours": lambda: decode_message, "pyp": lambda: pyp}, items, args.repeat)
        per_kind[tag] = r
        print(f"| {tag} | {len(items)} | {r['ours']:,.0f} | {r['pyp']:,.0f} | {r['ours'] / r['pyp']:.2f}x |")
    results["per kind"] = per_kind

    encoders = {
        "pgwire_spec encode": lambda: encode,
        "construct 2.10.70 interpreted build": lambda: construct_encoder(False),
        "construct 2.10.70 compiled build": lambda: construct_encoder(True),
    }
    sample = messages[: min(len(messages), 3000)]
    enc = measure_interleaved(encoders, sample, max(3, args.repeat // 2))
    results["encode"] = enc
    print(f"\n### encode: {len(sample)} messages of the same stream\n")
    print("| encoder | messages/s | pgwire_spec ÷ this |")
    print("|---|---:|---:|")
    for name, rate in enc.items():
        print(f"| {name} | {rate:,.0f} | {enc['pgwire_spec encode'] / rate:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
