"""Fuzzing throughput against the reference decoder, and scaling on local Spark executors.

    python benchmarks/bench_fuzz.py [--repeat 5] [--cases 200000] [--budget 20] [--skip-spark]

1. Cases per second on one core, per engine (``run_shard`` in this process: what one Spark
   task does), median of ``--repeat`` runs; side by side with a named peer: the
   hypothesis ``@given(st.binary())`` harness around ``decode_message`` (the idiom of
   h11's fuzz test), which has the same oracle (DecodeError or nothing) and no structure.
2. The same campaign (mutate engine, same seed, same budget) on Spark ``local[1]`` and
   ``local[2]``, each in a fresh process: total cases and the ratio 2 executors / 1.

Prints medians, the spread (min–max) and the machine's load average before and after,
because another workload on the same cores lowers every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _mutate_rate(cases: int, seed: int, corpus: tuple[str, ...]) -> tuple[float, float]:
    from pgwire_spec.corpus.load import load_corpus
    from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard

    streams = load_corpus(corpus)
    warm = Campaign(engines=("mutate",), corpus=corpus, cases=512, shards_per_core=1)
    run_shard(plan_shards(warm, 1)[0], streams)  # prepares and caches the seeds, like a reused worker
    c = Campaign(engines=("mutate",), corpus=corpus, seed=seed, cases=cases, budget=600, shards_per_core=1)
    r = run_shard(plan_shards(c, 1)[0], streams)
    return r.rate, r.cpu_rate


def _generate_rate(cases: int, seed: int) -> tuple[float, float]:
    from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard

    c = Campaign(engines=("generate",), seed=seed, cases=cases, budget=600, shards_per_core=1)
    r = run_shard(plan_shards(c, 1)[0], [])
    return r.rate, r.cpu_rate


def _peer_rate(cases: int, seed: int) -> tuple[float, float]:
    """hypothesis + st.binary() around decode_message: the same oracle, no structure."""
    from hypothesis import strategies as st

    from pgwire_spec import DecodeError, decode_message
    from pgwire_spec.corpus.examples import each_example

    n = 0

    def body(data: bytes) -> None:
        nonlocal n
        n += 1
        try:
            decode_message(data, protocol_version=4, streaming="parallel")
        except DecodeError:
            pass

    t0, c0 = time.perf_counter(), time.process_time()
    each_example(st.binary(max_size=96), cases, seed, body)
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def _spark_child(master: str, budget: float) -> dict[str, Any]:
    from pgwire_spec.fuzz.shards import Campaign
    from pgwire_spec.fuzz.spark import run_campaign

    c = Campaign(name="bench", engines=("mutate",), corpus=("builtin", "fixtures"), seed=1, budget=budget,
                 shards_per_core=2)
    r = run_campaign(c, master=master, say=lambda m: None, minimise_findings=False)
    busy = sum(s.seconds for s in r.shards)
    cpu = sum(s.cpu_seconds for s in r.shards)
    return {"master": master, "cases": r.cases, "wall": r.seconds, "task_seconds": busy,
            "per_core": r.cases / busy if busy else 0.0, "per_cpu_second": r.cases / cpu if cpu else 0.0,
            "findings": len(r.findings)}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):>9,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--cases", type=int, default=200_000, help="mutated cases per run (default 200000)")
    p.add_argument("--generate-cases", type=int, default=200)
    p.add_argument("--peer-cases", type=int, default=20_000)
    p.add_argument("--budget", type=float, default=20.0, help="Spark campaign budget in seconds")
    p.add_argument("--spark-repeat", type=int, default=3)
    p.add_argument("--skip-spark", action="store_true")
    p.add_argument("--spark-child", metavar="MASTER", help=argparse.SUPPRESS)
    p.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot; figures are rough)")
    args = p.parse_args()
    if args.short:
        args.repeat, args.cases, args.generate_cases, args.peer_cases = 1, 5_000, 10, 1_000
        args.budget, args.spark_repeat = 4.0, 1
    if args.spark_child:
        print(json.dumps(_spark_child(args.spark_child, args.budget)))
        return 0
    from pgwire_spec.pgoutput import _codec

    print(f"load average before: {_load()} on {os.cpu_count()} cores; pgoutput decode backend: {_codec.BACKEND}")
    rows = {
        "mutate (builtin + fixtures corpus)": [_mutate_rate(args.cases, i, ("builtin", "fixtures"))
                                               for i in range(args.repeat)],
        "mutate (builtin corpus only)": [_mutate_rate(args.cases, i, ("builtin",)) for i in range(args.repeat)],
        "generate (pgwire_spec.strategies)": [_generate_rate(args.generate_cases, i) for i in range(args.repeat)],
        "peer: hypothesis st.binary() + decode_message": [_peer_rate(args.peer_cases, i)
                                                           for i in range(args.repeat)],
    }
    print(f"\none core, median of {args.repeat} (min–max): cases per wall second | per CPU second")
    for name, values in rows.items():
        print(f"  {name:<48} {_fmt([v[0] for v in values])} | {_fmt([v[1] for v in values])}")
    peer = statistics.median(v[1] for v in rows["peer: hypothesis st.binary() + decode_message"])
    mut = statistics.median(v[1] for v in rows["mutate (builtin + fixtures corpus)"])
    print(f"  mutate / peer (per CPU second): {mut / peer:.1f}x")
    if not args.skip_spark:
        results: dict[str, list[dict[str, Any]]] = {"local[1]": [], "local[2]": []}
        for _ in range(args.spark_repeat):
            for master in results:
                out = subprocess.run(
                    [sys.executable, __file__, "--spark-child", master, "--budget", str(args.budget)],
                    capture_output=True, text=True, check=True,
                )
                results[master].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"\nSpark, mutate engine, budget {args.budget:g} s, same seed (median of {args.spark_repeat}):")
        med = {}
        for master, runs in results.items():
            cases = statistics.median(r["cases"] for r in runs)
            per_core = statistics.median(r["per_core"] for r in runs)
            per_cpu = statistics.median(r["per_cpu_second"] for r in runs)
            wall = statistics.median(r["wall"] for r in runs)
            med[master] = cases
            print(f"  {master:<9} {cases:>12,.0f} cases  {per_core:>9,.0f} cases/s per task  "
                  f"{per_cpu:>9,.0f} per CPU second  {wall:5.1f} s wall (JVM start included)")
        print(f"  scaling local[2] / local[1]: {med['local[2]'] / med['local[1]']:.2f}x")
    print(f"\nload average after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
