"""Campaigns and shards as plain functions, without Spark: planning, determinism, budgets,
the hang and memory guards, findings from a planted bug."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec import encode
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.fuzz.shards import (
    Campaign,
    Finding,
    ShardResult,
    adaptive,
    derive_seed,
    engine_yield,
    finding_id,
    generate_fraction,
    plan_shards,
    run_shard,
)
from pgwire_spec.pgoutput import _codec
from pgwire_spec.pgoutput.messages import Insert

STREAMS = builtin_streams()


def _schedule(shards: list, cores: int) -> list[float]:
    """When each core is done if tasks start in list order on the first free core (Spark's
    FIFO scheduling of one stage)."""
    free = [0.0] * cores
    for s in shards:
        c = min(range(cores), key=lambda i: (free[i], i))
        free[c] += s.budget
    return free


@pytest.mark.parametrize(("cores", "per_core"), [(1, 2), (2, 2), (4, 2), (3, 1), (2, 3)])
def test_plan_gives_the_generate_engine_a_slice_and_fills_every_core(cores: int, per_core: int) -> None:
    c = Campaign(budget=60, shards_per_core=per_core)
    shards = plan_shards(c, cores)
    gen = [s for s in shards if s.engine == "generate"]
    assert gen and all(s.budget == pytest.approx(60 / per_core * c.generate_time) for s in gen)
    assert _schedule(shards, cores) == pytest.approx([60.0] * cores)  # no core idle, none late
    assert len({s.seed for s in shards}) == len(shards)


@pytest.mark.parametrize(("cores", "per_core"), [(1, 2), (2, 2), (4, 2), (3, 1), (2, 3)])
@pytest.mark.parametrize("fraction", [0.0, 0.02, 0.3, 0.5, 1.0])
def test_a_later_wave_gives_the_generate_engine_its_fraction_and_fills_every_core(
        cores: int, per_core: int, fraction: float) -> None:
    c = Campaign(budget=60, shards_per_core=per_core)
    shards = plan_shards(c, cores, budget=48, generate_fraction=fraction, first_index=10)
    gen = sum(s.budget for s in shards if s.engine == "generate")
    assert gen == pytest.approx(fraction * cores * 48)
    assert _schedule(shards, cores) == pytest.approx([48.0] * cores)
    assert [s.index for s in shards] == list(range(10, 10 + len(shards)))
    first = plan_shards(c, cores, budget=12)
    assert not {s.seed for s in first} & {s.seed for s in shards}  # a new wave, new cases


def _result(engine: str, cpu: float, *sigs: str) -> ShardResult:
    f = [Finding(sig, "exception", "", engine, "reference", 0, 0, "payload", {}, (b"I",)) for sig in sigs]
    return ShardResult(0, engine, 0, cases=1, seconds=cpu, cpu_seconds=cpu, findings=tuple(f))


def test_the_generate_share_follows_its_yield_within_floor_and_cap() -> None:
    c = Campaign(budget=60, generate_floor=0.05, generate_cap=0.6)
    # 2 signatures in 4 CPU s against 1 in 20 CPU s: yields 0.5 and 0.05 -> 91%, capped
    waves = [_result("generate", 4.0, "a", "b"), _result("mutate", 10.0, "a"), _result("mutate", 10.0)]
    assert engine_yield(waves) == pytest.approx({"generate": 0.5, "mutate": 0.05})
    assert generate_fraction(c, waves) == 0.6
    # equal yields: half each
    assert generate_fraction(c, [_result("generate", 2.0, "x"), _result("mutate", 2.0, "y")]) == pytest.approx(0.5)
    # a yield 9 times the other's: a tenth
    assert generate_fraction(c, [_result("generate", 9.0, "x"), _result("mutate", 1.0, "y")]) == pytest.approx(0.1)
    # nothing found by either, or only mutate finds: the floor
    assert generate_fraction(c, [_result("generate", 2.0), _result("mutate", 20.0)]) == 0.05
    assert generate_fraction(c, [_result("generate", 2.0), _result("mutate", 20.0, "z")]) == 0.05
    assert adaptive(Campaign(budget=60)) and not adaptive(Campaign(budget=60, engines=("mutate",)))
    assert not adaptive(Campaign(budget=60, cases=100)) and not adaptive(Campaign(budget=10))
    with pytest.raises(ValueError, match="generate_floor"):
        Campaign(generate_floor=0.7, generate_cap=0.5)


def test_plan_spreads_engines_and_budget() -> None:
    c = Campaign(budget=60, shards_per_core=2)
    shards = plan_shards(c, 4)
    assert len(shards) == 8
    assert [s.engine for s in shards].count("generate") == 2
    # two waves of 30 s on the cores without the slow engine; 7.5 s + 52.5 s on the others
    assert sorted(s.budget for s in shards) == pytest.approx([7.5, 7.5, 30, 30, 30, 30, 52.5, 52.5])
    assert len({s.seed for s in shards}) == 8
    assert plan_shards(c, 4) == shards  # planning is deterministic
    only = plan_shards(Campaign(engines=("mutate",), shards_per_core=1), 3)
    assert [s.engine for s in only] == ["mutate"] * 3


def test_campaign_validation() -> None:
    with pytest.raises(ValueError, match="engines"):
        Campaign(engines=("bogus",))
    with pytest.raises(ValueError, match="budget"):
        Campaign(budget=0)
    with pytest.raises(ValueError, match="unknown campaign keys"):
        Campaign.from_mapping({"speed": 1})
    assert Campaign.from_mapping({"engines": "mutate", "corpus": "builtin"}).engines == ("mutate",)


def test_same_seed_same_cases_whatever_the_budget() -> None:
    c = Campaign(engines=("mutate",), corpus=("builtin",), seed=11, cases=4_000, shards_per_core=1)
    shard = plan_shards(c, 1)[0]
    a, b = run_shard(shard, STREAMS), run_shard(shard, STREAMS)
    assert (a.cases, a.crc) == (b.cases, b.crc) and a.cases == 4_000
    other = run_shard(plan_shards(Campaign(engines=("mutate",), seed=12, cases=4_000, shards_per_core=1), 1)[0],
                      STREAMS)
    assert other.crc != a.crc
    # a time budget goes as far as it can; its first chunk is the same cases
    timed = run_shard(plan_shards(Campaign(engines=("mutate",), seed=11, budget=0.3, cases=512,
                                           shards_per_core=1), 1)[0], STREAMS)
    first = run_shard(plan_shards(Campaign(engines=("mutate",), seed=11, cases=512, shards_per_core=1), 1)[0],
                      STREAMS)
    assert timed.crc == first.crc


def test_a_time_budget_is_kept() -> None:
    c = Campaign(engines=("mutate",), corpus=("builtin",), budget=0.5, shards_per_core=1)
    t0 = time.monotonic()
    r = run_shard(plan_shards(c, 1)[0], STREAMS)
    assert time.monotonic() - t0 < 5
    assert r.cases > 0 and r.accepted + r.rejected == r.cases and r.findings == ()


def test_a_planted_crash_is_one_finding_counted_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _codec.FAMILY.decoders[ord("I")]

    def planted(data: bytes, *args: Any) -> Any:
        if len(data) % 7 == 3:
            raise AttributeError("planted")
        return real(data, *args)

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("I"), planted)
    c = Campaign(engines=("mutate",), corpus=("builtin",), seed=2, cases=6_000, shards_per_core=1)
    r = run_shard(plan_shards(c, 1)[0], STREAMS)
    sigs = [f.signature for f in r.findings]
    assert any(s.startswith("exception:AttributeError:I:") for s in sigs), sigs
    f = next(f for f in r.findings if f.signature.startswith("exception:AttributeError:I:"))
    assert f.count > 1 and f.id == finding_id(f.signature)
    assert f.kind in ("payload", "stream")
    # the result survives the trip through a dict (what Spark collects)
    assert ShardResult.from_dict(r.to_dict()) == r


def test_a_hanging_case_is_a_timeout_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _codec.FAMILY.decoders[ord("B")]

    def sometimes_hangs(data: bytes, *args: Any) -> Any:
        if data[1:2] == b"\xff":
            time.sleep(10)
        return real(data, *args)

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("B"), sometimes_hangs)
    c = Campaign(engines=("mutate",), corpus=("builtin",), seed=4, budget=20, cases=3_000, case_timeout=0.3,
                 shards_per_core=1)
    t0 = time.monotonic()
    r = run_shard(plan_shards(c, 1)[0], STREAMS)
    assert time.monotonic() - t0 < 15
    assert "timeout:B" in {f.signature for f in r.findings}


def test_derived_seeds_are_the_same_in_another_process() -> None:
    """Seeds must not depend on PYTHONHASHSEED: executors are other processes."""
    import subprocess
    import sys

    code = "from pgwire_spec.fuzz.shards import derive_seed; print(derive_seed(0, 'shard', 1, 'mutate'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert int(other.stdout) == derive_seed(0, "shard", 1, "mutate") != derive_seed(0, "shard", 2, "mutate")


def test_finding_round_trip(tmp_path: Path) -> None:
    f = Finding("sig", "exception", "d", "mutate", "reference", 0, 5, "payload",
                {"in_stream": False, "abort_tail": False}, (encode(Insert(None, 1, ("a",))),), ("bitflip",))
    assert Finding.from_dict(f.to_dict()) == f


def test_memory_a_case_keeps_is_a_memory_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _codec.FAMILY.decoders[ord("T")]
    kept: list[bytes] = []

    def leaky(data: bytes, *args: Any) -> Any:
        if len(kept) < 6 and len(data) % 7 == 6:
            kept.append(b"\x01" * (40 * 1024 * 1024))  # 40 MiB kept, for every such input
        return real(data, *args)

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("T"), leaky)
    monkeypatch.setitem(_codec._DECODERS, ord("T"), leaky)
    c = Campaign(engines=("mutate",), corpus=("builtin",), seed=4, cases=4_000, memory_limit_mb=24,
                 shards_per_core=1)
    r = run_shard(plan_shards(c, 1)[0], STREAMS)
    assert kept, "the plant never ran"
    found = {f.signature: f for f in r.findings}
    assert "memory:T" in found, sorted(found)
    assert "this case allocated" in found["memory:T"].detail
    kept.clear()
