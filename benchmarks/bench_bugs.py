"""Fuzz effectiveness, FuzzBench-style: how long each engine takes to find planted bugs.

    python benchmarks/bench_bugs.py [--seeds 3] [--budget 60] [--peer-budget 20]
                                    [--engines mutate,generate,peer] [--bugs NAME,…] [--spark]

Targets: the mutant decoders of :mod:`pgwire_spec.fuzz.planted` (the reference with one
message reader replaced by a hand-written one carrying one bug), and the bug-free control
(which must never be found: it shows the oracle gives no false alarm). For each target and
engine, ``--seeds`` runs on one core, each stopping at its first finding
(``Campaign.stop_on_finding``), over the default corpus (built-in streams and the golden
fixtures); the table shows the median time to find (a run that does not find the bug
within its budget counts as not found: the median is "—" when most runs miss) and how many
runs found it.

Engines: ``mutate`` and ``generate`` are the campaign's engines (``run_shard``: what one
Spark task does, the differential oracle against the reference); the peer is hypothesis
``st.binary()`` — unstructured streams (``st.lists(st.binary())`` in a context drawn from
the corpus's) through the same differential oracle.

``--spark`` also runs the default campaign (both engines, two waves) on ``local[2]`` for
each bug with a 300 s budget, each shard stopping at its first finding, and reports the
earliest finding's time.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CORPUS = ("builtin", "fixtures")
#: the per-case timeout: generous, so that a busy machine (or a garbage collection) does not
#: make the bug-free control "hang"; the looping mutant is found by it all the same
TIMEOUT = 2.0


class _Found(BaseException):
    """Stops the peer's hypothesis run at its first finding (hypothesis lets it through)."""


def _engine_run(bug: str, engine: str, seed: int, budget: float, streams: Any) -> float | None:
    from pgwire_spec.fuzz import planted
    from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard

    c = Campaign(name="bugs", target=planted.target(bug), engines=(engine,), corpus=CORPUS, seed=seed,
                 budget=budget, shards_per_core=1, case_timeout=TIMEOUT, stop_on_finding=True)
    r = run_shard(plan_shards(c, 1)[0], streams)
    return min((f.seconds for f in r.findings), default=None)


def _peer_run(bug: str, seed: int, budget: float, contexts: list[dict[str, Any]]) -> float | None:
    """hypothesis st.binary(): unstructured streams through the same differential oracle."""
    from hypothesis import strategies as st

    from pgwire_spec.conformance.adapters import open_decoder
    from pgwire_spec.corpus.examples import each_example
    from pgwire_spec.fuzz import planted
    from pgwire_spec.fuzz.oracles import DifferentialOracle

    adapter = open_decoder(planted.target(bug), TIMEOUT)
    oracle = DifferentialOracle(adapter)
    strategy = st.tuples(st.sampled_from(contexts), st.lists(st.binary(max_size=64), min_size=1, max_size=6))
    t0 = time.perf_counter()
    found: list[float] = []

    def body(drawn: Any) -> None:
        if time.perf_counter() - t0 > budget:
            raise _Found()
        options, payloads = drawn
        if oracle.check_stream(options, payloads) is not None:
            found.append(time.perf_counter() - t0)
            raise _Found()

    try:
        round_ = 0
        while time.perf_counter() - t0 < budget:
            each_example(strategy, 2_000, seed * 1_000 + round_, body)
            round_ += 1
    except _Found:
        pass
    finally:
        adapter.close()
    return found[0] if found else None


def _spark_run(bug: str, budget: float, spark: Any) -> tuple[float | None, float]:
    from pgwire_spec.fuzz import planted
    from pgwire_spec.fuzz.shards import Campaign
    from pgwire_spec.fuzz.spark import run_campaign

    c = Campaign(name="bugs", target=planted.target(bug), corpus=CORPUS, seed=1, budget=budget,
                 case_timeout=TIMEOUT, stop_on_finding=True)
    r = run_campaign(c, spark=spark, say=lambda m: None, minimise_findings=False)
    # the first wave's shards start with the job: their findings' times are the campaign's
    wave1 = [f.seconds for f in r.findings if f.shard < r.cores * c.shards_per_core]
    later = [f.seconds for f in r.findings]
    return (min(wave1) if wave1 else min(later) if later else None), r.seconds


def _median(times: list[float | None]) -> float:
    return statistics.median(math.inf if t is None else t for t in times)


def _cell(times: list[float | None]) -> str:
    med = _median(times)
    hits = sum(t is not None for t in times)
    return f"{'—' if math.isinf(med) else f'{med:.2f} s'} ({hits}/{len(times)})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", type=float, default=60.0, help="seconds per run of the mutate engine")
    p.add_argument("--slow-budget", type=float, default=20.0,
                   help="seconds per run of the generate engine and the peer (default 20)")
    p.add_argument("--engines", default="mutate,generate,peer")
    p.add_argument("--bugs", default="", help="comma-separated planted bugs (default: all, and the control)")
    p.add_argument("--spark", action="store_true", help="also the default campaign on local[2] per bug")
    p.add_argument("--short", action="store_true", help="a quick run for CI (the script must not rot)")
    args = p.parse_args()
    from pgwire_spec.corpus.load import load_corpus
    from pgwire_spec.fuzz import planted
    from pgwire_spec.fuzz.shards import _prepared

    bugs = [b for b in args.bugs.split(",") if b] or [planted.CONTROL, *planted.BUGS]
    engines = [e for e in args.engines.split(",") if e]
    if args.short:
        bugs = [planted.CONTROL, "insert-trailing-bytes", "stream-xid-missing", "commit-flags-ignored"]
        args.seeds, args.budget, args.slow_budget = 1, 3.0, 2.0
    streams = load_corpus(CORPUS)
    _prepared(streams)  # seeds prepared once, as in a reused Spark worker
    contexts = sorted({tuple(sorted(s.options.items())) for s in streams if s.options})
    ctx = [dict(c) for c in contexts] or [{}]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"{len(bugs)} targets, engines {', '.join(engines)}, {args.seeds} seed(s), budget {args.budget:g} s "
          f"(mutate), {args.slow_budget:g} s (generate, peer)")
    rows: dict[str, dict[str, list[float | None]]] = {}
    for bug in bugs:
        row = rows[bug] = {}
        for engine in engines:
            times: list[float | None] = []
            for seed in range(args.seeds):
                if engine == "peer":
                    times.append(_peer_run(bug, seed, args.slow_budget, ctx))
                else:
                    budget = args.budget if engine == "mutate" else args.slow_budget
                    times.append(_engine_run(bug, engine, seed, budget, streams))
            row[engine] = times
        print(f"  {bug:<28} " + "  ".join(f"{e} {_cell(t)}" for e, t in row.items()), flush=True)
    spark: dict[str, tuple[float | None, float]] = {}
    if args.spark and not args.short:
        from pgwire_spec.fuzz.spark import spark_session

        session = spark_session("local[2]", "pgwire-spec bench_bugs")  # one JVM for every campaign
        try:
            for bug in bugs:
                if bug == planted.CONTROL:
                    continue
                spark[bug] = found, wall = _spark_run(bug, 300.0, session)
                print(f"  local[2] default campaign, {bug}: "
                      f"{'not found' if found is None else f'found {found:.2f} s into its shard'}, "
                      f"campaign {wall:.1f} s wall", flush=True)
        finally:
            session.stop()
    names = {"mutate": "mutate", "generate": "generate", "peer": "hypothesis st.binary()"}
    print(f"\nmedian time to find over {args.seeds} seed(s), one core (runs that found it):\n")
    head = "| planted bug | " + " | ".join(names[e] for e in engines) + (" | local[2] campaign |" if spark else " |")
    print(head)
    print("|---" * (len(engines) + 1 + bool(spark)) + "|")
    for bug, row in rows.items():
        cells = [_cell(row[e]) for e in engines]
        if spark:
            t = spark.get(bug)
            cells.append("" if t is None else "not found" if t[0] is None else f"{t[0]:.2f} s")
        print(f"| `{bug}` | " + " | ".join(cells) + " |")
    found_by = {e: sum(not math.isinf(_median(r[e])) for b, r in rows.items() if b != planted.CONTROL)
                for e in engines}
    planted_n = sum(b != planted.CONTROL for b in rows)
    print("\nfound (median within budget): " + ", ".join(f"{names[e]} {n}/{planted_n}" for e, n in found_by.items()))
    control = rows.get(planted.CONTROL)
    if control is not None and any(t is not None for ts in control.values() for t in ts):
        print("WARNING: the bug-free control was 'found': the oracle or a mutant reader is wrong")
        return 1
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
