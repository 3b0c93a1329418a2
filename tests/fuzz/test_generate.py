"""The generate engine: streams drawn from pgwire_spec.strategies through the oracles."""

from __future__ import annotations

from hypothesis import strategies as st

from pgwire_spec.corpus.examples import draw_examples, strategies_available
from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard


def test_draws_are_reproducible_by_seed() -> None:
    s = st.lists(st.binary(max_size=8), max_size=5)
    assert draw_examples(s, 40, 3) == draw_examples(s, 40, 3)
    assert draw_examples(s, 40, 3) != draw_examples(s, 40, 4)


def test_generate_shard_runs_valid_and_malformed_streams_through_the_reference() -> None:
    assert strategies_available("streams") and strategies_available("malformed_streams")
    c = Campaign(engines=("generate",), cases=120, seed=9, shards_per_core=1)
    r = run_shard(plan_shards(c, 1)[0], [])
    assert r.cases == 120 and r.engine == "generate"
    # valid streams are accepted and malformed ones rejected (the catalogue oracle holds)
    assert r.accepted > 0 and r.rejected > 0
    assert r.findings == (), [f.detail for f in r.findings]
