"""Generation speed of pgwire_spec.strategies, side by side with a naive peer, in one run.

    python benchmarks/bench_strategies.py [--examples 200] [--repeat 5] [--json out.json]

Each strategy is driven the way a property test drives it: ``@given`` with ``max_examples``
examples, the generate phase only, no example database, derandomized (every repeat draws
the same examples, so the repeats measure the same work). Reported: the median over the
repeats of streams (or cases) per second and messages (or payloads) per second, measured
interleaved with the peer.

The peer is what a user writes without this package: ``st.lists(st.one_of(st.builds(cls)
for every pgoutput message class))``, each field drawn from its annotated type (integers,
text, bytes, tuples of column values), then encoding every message that the encoder
accepts. It has none of the guarantees (no valid sequence, no consistent relation
or LSN, values that are not what a server sends); the ratio says what those cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pgwire_spec import EncodeError, encode  # noqa: E402
from pgwire_spec.pgoutput import messages as m  # noqa: E402
from pgwire_spec.strategies import (  # noqa: E402
    ProtocolContext,
    malformed_streams,
    streams,
    walsender_streams,
)


def _naive_message(cls: type[m.PgOutputMessage]) -> st.SearchStrategy[m.PgOutputMessage]:
    # Field-wise: what st.builds infers from the annotations, without our registration.
    column = st.one_of(st.text(), st.binary(), st.none())
    tuples = st.lists(column, max_size=5).map(tuple)
    fields: dict[str, Any] = {}
    for name, ann in cls.__annotations__.items():
        if name == "tag":
            continue
        text = str(ann)
        if "TupleData" in text:
            fields[name] = st.none() if "None" in text else tuples
            if name == "old_tuple":
                fields[name] = st.one_of(st.none(), tuples)
        elif "RelationColumn" in text:
            fields[name] = st.lists(st.builds(m.RelationColumn, st.integers(0, 1), st.text(),
                                              st.integers(0, 2**32 - 1), st.integers(-1, 2**31 - 1)),
                                    max_size=5).map(tuple)
        elif "tuple[int" in text:
            fields[name] = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4).map(tuple)
        elif "bool" in text:
            fields[name] = st.booleans()
        elif "bytes" in text:
            fields[name] = st.binary()
        elif "str" in text:
            fields[name] = st.one_of(st.none(), st.sampled_from("KO")) if "None" in text else st.text()
        else:
            ints = st.integers(0, 2**31 - 1)
            fields[name] = st.one_of(st.none(), ints) if "None" in text else ints
    return st.builds(cls, **fields)


NAIVE = st.lists(st.one_of([_naive_message(c) for c in m.MESSAGE_TYPES.values()]), max_size=12)


def _count_stream(x: Any) -> int:
    return len(x.payloads)


def _count_naive(msgs: list[m.PgOutputMessage]) -> int:
    n = 0
    for msg in msgs:
        try:
            encode(msg)
            n += 1
        except (EncodeError, ValueError):
            pass
    return n


def measure(strategy: st.SearchStrategy[Any], count: Callable[[Any], int], examples: int) -> tuple[float, float]:
    """(examples/s, items/s) for one run of *examples* examples."""
    items = 0
    done = 0

    @settings(max_examples=examples, phases=[Phase.generate], database=None, derandomize=True,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(value: Any) -> None:
        nonlocal items, done
        done += 1
        items += count(value)

    start = time.perf_counter()
    run()
    elapsed = time.perf_counter() - start
    return done / elapsed, items / elapsed


CASES: list[tuple[str, st.SearchStrategy[Any], Callable[[Any], int], str]] = [
    ("streams() (context drawn)", streams(), _count_stream, "messages"),
    ("streams(protocol 1)", streams(context=ProtocolContext(1)), _count_stream, "messages"),
    ("streams(protocol 4, parallel, two_phase, binary, messages)",
     streams(context=ProtocolContext(4, "parallel", True, True, True, "any")), _count_stream, "messages"),
    ("walsender_streams()", walsender_streams(), _count_stream, "CopyData payloads"),
    ("malformed_streams()", malformed_streams(), _count_stream, "payloads"),
    ("peer: naive st.builds lists", NAIVE, _count_naive, "messages"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = parser.parse_args()
    if args.short:
        args.examples, args.repeat = 10, 1
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in CASES}
    for _ in range(args.repeat):
        for name, strategy, count, _unit in CASES:  # interleaved: load hits every case alike
            rates[name].append(measure(strategy, count, args.examples))
    peer = statistics.median(r[1] for r in rates["peer: naive st.builds lists"])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.examples} examples x {args.repeat} repeats, medians")
    print(f"{'strategy':58} {'examples/s':>11} {'items/s':>9}  items              vs peer")
    out = {}
    for name, _s, _c, unit in CASES:
        ex = statistics.median(r[0] for r in rates[name])
        it = statistics.median(r[1] for r in rates[name])
        ratio = it / peer
        out[name] = {"examples_per_s": ex, "items_per_s": it, "unit": unit, "ratio_to_peer": ratio}
        print(f"{name:58} {ex:11.1f} {it:9.0f}  {unit:18} {ratio:6.2f}x")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
