"""Decode and encode speed of the generated codec, side by side with its peers, in one run.

    python benchmarks/bench_codec.py [--repeat 7] [--json out.json]

Input: the real PostgreSQL 15 stream in tests/data/pg15_sample.jsonl, protocol 1 (Begin,
Relation, Insert, Update, Delete, Truncate, Commit: the kinds pypgoutput supports).
Decoders measured over the same payloads, each repeated, median reported:

- pgwire_spec PgOutputDecoder (stateful: relation cache, arity and sequence checks)
- pgwire_spec decode_message (no sequence state)
- pypgoutput 0.0.3 (its per-message classes)
- construct, interpreted and compiled, over our grammar
- a bare struct.unpack loop that walks every field and builds nothing (the floor)

Encoders: pgwire_spec.encode vs construct's interpreted and compiled build.
"""

from __future__ import annotations

import argparse
import dataclasses
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


def load_payloads() -> list[bytes]:
    lines = [json.loads(x) for x in DATA.read_text().splitlines()]
    return [bytes.fromhex(c["hex"]) for c in lines[1:] if c["set"] == 0]


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


def measure(fn: Callable[[Any], Any], items: list[Any], repeat: int) -> float:
    """Median messages per second over *repeat* passes."""
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        rates.append(len(items) / (time.perf_counter() - t0))
    return statistics.median(rates)


def stateful(payloads: list[bytes]) -> Callable[[bytes], Any]:
    decoder = PgOutputDecoder()
    state = {"d": decoder}

    def decode(d: bytes) -> Any:
        if d[0] == 66 and state["d"].state != "idle":  # a new pass: start over
            state["d"] = PgOutputDecoder()
        return state["d"].decode(d)

    return decode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the results as JSON to this file")
    args = ap.parse_args()
    payloads = load_payloads()
    messages = [decode_message(p) for p in payloads]
    # sanity: every decoder agrees on what it is given
    for p, m in zip(payloads, messages):
        assert encode(m) == p

    rows: list[tuple[str, float]] = []
    dec_state = PgOutputDecoder()

    def stateful_pass(d: bytes) -> Any:
        return dec_state.decode(d)

    def run_stateful() -> float:
        rates = []
        for _ in range(args.repeat):
            nonlocal dec_state
            dec_state = PgOutputDecoder()
            t0 = time.perf_counter()
            for p in payloads:
                stateful_pass(p)
            rates.append(len(payloads) / (time.perf_counter() - t0))
        return statistics.median(rates)

    rows.append(("pgwire_spec PgOutputDecoder (stateful, strict)", run_stateful()))
    rows.append(("pgwire_spec decode_message (stateless)", measure(decode_message, payloads, args.repeat)))
    pyp = pypgoutput_decoder()
    if pyp is not None:
        rows.append(("pypgoutput 0.0.3", measure(pyp, payloads, args.repeat)))
    rows.append(("construct 2.10.70 interpreted parse", measure(construct_decoder(False), payloads, max(1, args.repeat // 3))))
    rows.append(("construct 2.10.70 compiled parse", measure(construct_decoder(True), payloads, args.repeat)))
    rows.append(("bare struct.unpack loop (builds nothing)", measure(bare_struct, payloads, args.repeat)))

    enc_rows = [
        ("pgwire_spec encode", measure(encode, messages, args.repeat)),
        ("construct 2.10.70 interpreted build", measure(construct_encoder(False), messages, max(1, args.repeat // 3))),
        ("construct 2.10.70 compiled build", measure(construct_encoder(True), messages, args.repeat)),
    ]

    base = dict(rows)
    ours = base["pgwire_spec PgOutputDecoder (stateful, strict)"]
    print(f"{len(payloads)} real PostgreSQL 15 payloads (protocol 1), median of {args.repeat} passes\n")
    print("| decoder | messages/s | pgwire_spec stateful ÷ this |")
    print("|---|---:|---:|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} | {ours / rate:.2f}x |")
    enc_ours = enc_rows[0][1]
    print("\n| encoder | messages/s | pgwire_spec ÷ this |")
    print("|---|---:|---:|")
    for name, rate in enc_rows:
        print(f"| {name} | {rate:,.0f} | {enc_ours / rate:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"decode": rows, "encode": enc_rows}, indent=1))


if __name__ == "__main__":
    main()
