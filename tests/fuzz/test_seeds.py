"""The built-in seed streams and the corpus loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.corpus.load import CorpusError, fixtures_root, load_corpus, load_fixture_streams
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.pgoutput.messages import MESSAGE_TYPES, tuple_kinds


@pytest.mark.parametrize("stream", builtin_streams(), ids=lambda s: s.name)
def test_builtin_streams_are_valid_for_a_strict_decoder(stream) -> None:
    dec = PgOutputDecoder(strict=True, **stream.options)
    for p in stream.payloads:
        dec.decode(p)
    dec.finish()
    assert dec.state == "idle"


def test_builtin_streams_reach_every_message_kind_tuple_kind_and_version() -> None:
    kinds, tuple_kinds_seen, versions = set(), set(), set()
    for s in builtin_streams():
        versions.add(s.options["protocol_version"])
        dec = PgOutputDecoder(strict=True, **s.options)
        for p in s.payloads:
            msg = dec.decode(p)
            kinds.add(type(msg).__name__)
            for attr in ("new_tuple", "old_tuple"):
                values = getattr(msg, attr, None)
                if values:
                    tuple_kinds_seen.update(tuple_kinds(values))
    assert kinds == set(MESSAGE_TYPES)
    assert tuple_kinds_seen == set("ntub")
    assert versions == {1, 2, 3, 4}


def test_fixture_streams_keep_ids_expected_json_and_order() -> None:
    root = fixtures_root()
    if root is None:
        pytest.skip("no golden fixtures in this checkout (fixtures/)")
    streams = load_fixture_streams(root)
    assert streams, "fixtures/ holds files but no stream was read"
    for s in streams[:5]:
        assert s.ids is not None and s.expected is not None and len(s.ids) == len(s.payloads)
        assert len(set(s.ids)) == len(s.ids)


def test_corpus_sources_and_errors(tmp_path: Path) -> None:
    assert [s.name for s in load_corpus("builtin")] == [s.name for s in builtin_streams()]
    assert load_corpus([f"fixtures:{tmp_path}"]) == []
    with pytest.raises(CorpusError, match="unknown corpus source"):
        load_corpus(["nonsense"])
    with pytest.raises(CorpusError, match="does not exist"):
        load_fixture_streams(tmp_path / "missing")
