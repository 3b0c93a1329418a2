"""The mutate engine: field maps, seeds, deterministic structure-aware mutations."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pgwire_spec import PgOutputDecoder, encode
from pgwire_spec.corpus._fields import field_map
from pgwire_spec.corpus.load import load_corpus
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.errors import DecodeError
from pgwire_spec.fuzz.mutate import Mutator, prepare_seeds
from pgwire_spec.pgoutput.messages import UNCHANGED, Insert


def test_field_map_of_an_insert_names_every_field_at_its_offset() -> None:
    data = encode(Insert(None, 16384, ("ab", None, b"\x01", UNCHANGED)))
    fields = field_map(data)
    assert [(f.offset, f.path, f.kind) for f in fields] == [
        (0, "tag", "tag"), (1, "relation_id", "int"), (5, "new_tag", "kind-byte"),
        (6, "new_tuple.count", "count"), (8, "new_tuple[0].kind", "kind-byte"),
        (9, "new_tuple[0].length", "length"), (15, "new_tuple[1].kind", "kind-byte"),
        (16, "new_tuple[2].kind", "kind-byte"), (17, "new_tuple[2].length", "length"),
        (22, "new_tuple[3].kind", "kind-byte"),
    ]
    # a payload that does not decode still maps up to where it fails
    assert [f.path for f in field_map(data[:7])][-1] == "new_tuple.count"
    assert field_map(b"") == ()


@pytest.mark.parametrize("corpus", ["builtin", "fixtures"])
def test_seed_windows_are_valid_prefixes_with_their_relations(corpus: str) -> None:
    streams = load_corpus([corpus])
    if not streams:
        pytest.skip("no golden fixtures in this checkout (fixtures/)")
    payload_seeds, windows = prepare_seeds(streams)
    assert len(payload_seeds) > 100 and windows
    for w in windows:
        dec = PgOutputDecoder(strict=True, **w.options)
        for p in w.payloads:
            try:
                dec.decode(p)
            except DecodeError as err:  # a window may end inside a transaction, never earlier
                raise AssertionError(f"window {w.payloads} fails: {err}") from None


def test_same_seed_same_cases_other_seed_other_cases() -> None:
    m = Mutator(*prepare_seeds(builtin_streams()))

    def draw(seed: int) -> list[tuple]:
        r = random.Random(seed)
        return [m.case(r) for _ in range(2000)]

    a, b, c = draw(1), draw(1), draw(2)
    assert a == b
    assert a != c


def test_every_mutation_kind_is_drawn_and_changes_bytes() -> None:
    m = Mutator(*prepare_seeds(builtin_streams()), stream_ratio=0.1)
    r = random.Random(5)
    ops: Counter[str] = Counter()
    changed = 0
    payload_cases = 0
    for _ in range(20_000):
        case = m.case(r)
        for op in case[-1]:
            ops[op.split(":")[0]] += 1
        if case[0] == "p":
            payload_cases += 1
            changed += case[1] not in {s.data for s in m.seeds}
    expected = {"bitflip", "byte", "truncate", "extend", "length", "kind", "string", "int", "splice",
                "context", "swap", "drop", "duplicate", "move", "splice-streams", "options", "payload"}
    assert expected <= set(ops), expected - set(ops)
    # most payload mutations give bytes that are not a seed any more
    assert changed > 0.8 * payload_cases
