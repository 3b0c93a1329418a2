"""A modest number of examples reaches everything: at most 400 streams per protocol context
reach every message kind that context allows and every tuple kind, and 400 streams with
the context drawn reach every protocol version. Derandomized; the budget leaves room
because a text value in a binary context (a type without a send function) is rare: over
random seeds it first appears after 50 to 200 streams, and a full run under load once
drew it past 200."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings

from pgwire_spec.pgoutput.messages import tuple_kinds
from pgwire_spec.strategies import ProtocolContext, Stream, streams
from tests.strategies._common import SLOW_DATA, tuples

BUDGET = 400

CONTEXTS = [
    ProtocolContext(1),
    ProtocolContext(1, binary=True, messages=True, origin="any"),
    ProtocolContext(2, "on", binary=True),
    ProtocolContext(3, "off", two_phase=True, messages=True, origin="none"),
    ProtocolContext(3, "on", two_phase=True),
    ProtocolContext(4, "on", two_phase=True, binary=True, messages=True, origin="any"),
    ProtocolContext(4, "parallel", two_phase=True, binary=True, messages=True, origin="any"),
]


def _reach(strategy: object) -> tuple[set[str], set[str], set[int], int]:
    tags: set[str] = set()
    kinds: set[str] = set()
    versions: set[int] = set()
    count = 0

    @settings(max_examples=BUDGET, derandomize=True, database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=SLOW_DATA)
    @given(strategy)
    def collect(stream: Stream) -> None:
        nonlocal count
        count += 1
        versions.add(stream.context.protocol_version)
        for msg in stream.messages:
            tags.add(msg.tag)
            for _, values in tuples(msg):
                kinds.update(tuple_kinds(values))

    collect()
    return tags, kinds, versions, count


@pytest.mark.parametrize("ctx", CONTEXTS, ids=str)
def test_every_message_and_tuple_kind_within_the_budget(ctx: ProtocolContext) -> None:
    tags, kinds, _, count = _reach(streams(context=ctx))
    assert count <= BUDGET
    assert tags == set(ctx.tags)
    assert kinds == set(ctx.tuple_kinds)


def test_every_protocol_version_within_the_budget() -> None:
    tags, kinds, versions, count = _reach(streams())
    assert count <= BUDGET
    assert versions == {1, 2, 3, 4}
    assert kinds == set("ntub")
