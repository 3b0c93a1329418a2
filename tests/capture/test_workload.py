"""The built-in workload, SQL splitting, and the option sets per major (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgwire_spec.capture import WorkloadError, builtin_workload, option_sets, sql_workload
from pgwire_spec.capture.fixture import FixtureCase
from pgwire_spec.capture.live import elide
from pgwire_spec.capture.options import SERVER_OPTIONS
from pgwire_spec.capture.workload import split_sql
from pgwire_spec.errors import OptionError
from pgwire_spec.pgoutput.decoder import PgOutputDecoder


def test_split_sql_respects_quotes_dollar_quotes_and_comments() -> None:
    text = """
    -- a comment; with a semicolon
    INSERT INTO t VALUES ('a;b', "x;y");
    CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
    /* block; comment */ SELECT $$;$$;
    SELECT 'it''s; fine'
    """
    assert split_sql(text) == [
        "INSERT INTO t VALUES ('a;b', \"x;y\")",
        "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql",
        "SELECT $$;$$",
        "SELECT 'it''s; fine'",
    ]


def test_sql_workload_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="cannot read SQL workload"):
        sql_workload([tmp_path / "missing.sql"])
    empty = tmp_path / "empty.sql"
    empty.write_text("-- nothing\n")
    with pytest.raises(WorkloadError, match="expected SQL statements"):
        sql_workload([empty])
    ok = tmp_path / "mine.sql"
    ok.write_text("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);")
    assert [s.sql for s in sql_workload([ok]).actions] == ["INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)"]


def test_builtin_workload_grows_with_the_major() -> None:
    wl = builtin_workload()
    sizes = [len(wl.for_major(m).setup) + len(wl.for_major(m).actions) for m in range(10, 19)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert [p[0] for p in wl.for_major(12).publications] == []
    assert [p[0] for p in wl.for_major(18).publications] == ["pgws_root", "pgws_filtered", "pgws_gen"]


@pytest.mark.parametrize("major", range(10, 19))
def test_every_option_set_is_a_valid_decoder_context(major: int) -> None:
    sets = option_sets(major, "pub")
    names = [s.name for s in sets]
    assert len(names) == len(set(names))
    top = SERVER_OPTIONS[major][0]
    assert max(s.protocol_version for s in sets) == top
    for s in sets:
        PgOutputDecoder(**s.context())
        opts = s.pgoutput_options()
        assert opts["proto_version"] == str(s.protocol_version) and opts["publication_names"] == "pub"
        assert list(opts)[0] == "proto_version"


def test_option_sets_follow_the_server_table() -> None:
    assert [s.name for s in option_sets(13, "p")] == ["p1"]
    assert {s.streaming for s in option_sets(15, "p")} == {"off", "on"}
    assert "parallel" in {s.streaming for s in option_sets(16, "p")}
    assert not any(s.two_phase for s in option_sets(14, "p"))
    with pytest.raises(OptionError, match="found 9"):
        option_sets(9, "p")


def _case(i: int) -> FixtureCase:
    return FixtureCase(f"x/{i}", i, "49", False, "0/0", 1, {"type": "Insert"})


def test_elide_keeps_both_ends_of_a_run_and_counts_the_rest() -> None:
    cases = [_case(i) for i in range(20)]
    shapes = [None] + [("I", 1)] * 18 + [None]
    out = elide(cases, shapes, keep=3)
    assert [c.index for c in out] == [0, 1, 2, 3, 16, 17, 18, 19]
    assert out[3].elided_after == 12 and sum(c.elided_after for c in out) == 12
    short = elide(cases[:7], [("I", 1)] * 6 + [None], keep=3)
    assert len(short) == 7


@pytest.mark.parametrize("major", [13, 14, 15, 16])
def test_exhaustive_option_sets_are_the_cross_product(major: int) -> None:
    sets = option_sets(major, "pub", exhaustive=True)
    names = [s.name for s in sets]
    assert len(names) == len(set(names))
    for s in sets:
        PgOutputDecoder(**s.context())
    # the curated sets are all in the cross product (same options, maybe other names)
    key = lambda s: (s.protocol_version, s.streaming, s.two_phase, s.binary, s.messages, s.origin)  # noqa: E731
    assert {key(s) for s in option_sets(major, "pub")} <= {key(s) for s in sets}
    # proto 1: binary x messages; proto 2: x streaming off/on; proto 3: x two_phase
    expected = {13: 1, 14: 4 + 8, 15: 4 + 8 + 16}.get(major)
    if expected is not None:
        assert len(sets) == expected
