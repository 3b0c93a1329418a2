"""Recorded streams served byte for byte: golden fixtures, walsender sessions, payload files
and seeded hypothesis streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pgwire_spec.lsn import parse_lsn
from pgwire_spec.replication.messages import XLogData
from pgwire_spec.strategies import streams
from pgwire_spec.walsender import Scenario, ScenarioError, ServerState, load_scenario
from pgwire_spec.walsender.replay import zero_lsn_rule
from pgwire_spec.wire import NoticeResponse

from ._client import Client, xlog

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SESSIONS = FIXTURES / "sessions"


def stream_of(scenario: Scenario, options: str, slot: str | None = None) -> tuple[list[XLogData], list[Any]]:
    """What a client gets from *scenario* (its first slot, or a new one) with *options*."""
    st = ServerState(scenario)
    c = Client(st)
    c.startup()
    if slot is None:
        slot = "r"
        c.query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput NOEXPORT_SNAPSHOT")
    out = c.query(f"START_REPLICATION SLOT {slot} LOGICAL 0/0 ({options})")
    return [p for p in xlog(out) if isinstance(p, XLogData)], out


def _options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{k} '{v}'" for k, v in options.items())


def _fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("pg*-builtin.json.gz"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_fixture_groups_are_served_byte_for_byte(path: Path) -> None:
    import gzip

    data = json.loads(gzip.decompress(path.read_bytes()))
    for group in data["groups"][:3]:
        sc = Scenario.from_fixture(path, group["name"])
        assert sc.server.major == data["server"]["major"]
        got, out = stream_of(sc, _options_text(group["options"]), slot=group["slot"])
        cases = sorted(group["cases"], key=lambda c: c["index"])
        assert [g.data.hex() for g in got] == [c["hex"] for c in cases]
        tags = [c["tag"] for c in cases]
        assert [g.data_start for g in got] == zero_lsn_rule(tags, [parse_lsn(c["lsn"]) for c in cases])
        assert not [x for x in out if isinstance(x, NoticeResponse)]  # the options match the recording


def test_fixture_replay_warns_when_the_client_asks_for_other_options() -> None:
    path = FIXTURES / "pg16-builtin.json.gz"
    if not path.exists():
        pytest.skip("fixtures/pg16-builtin.json.gz not present")
    sc = Scenario.from_fixture(path, "p4-parallel")
    _, out = stream_of(sc, "proto_version '1', publication_names 'pgws_all'", slot="pgws_main")
    notices = [x for x in out if isinstance(x, NoticeResponse)]
    assert notices and notices[0].severity == "WARNING"


@pytest.mark.parametrize("path", sorted(SESSIONS.glob("*.json.gz")), ids=lambda p: p.name)
def test_session_captures_are_served_byte_for_byte(path: Path) -> None:
    import gzip

    from pgwire_spec.replication.messages import decode_copy_data
    from pgwire_spec.wire import decode_message

    data = json.loads(gzip.decompress(path.read_bytes()))
    recorded = []
    for msg in data["messages"]:
        if msg["dir"] == "B" and (msg.get("copy") or {}).get("type") == "XLogData":
            x = decode_copy_data(decode_message(bytes.fromhex(msg["hex"]), "backend").data)  # type: ignore[attr-defined]
            recorded.append((x.data_start, x.wal_end, x.data))
    sc = Scenario.from_session(path)
    got, _ = stream_of(sc, _options_text(data["options"]), slot=data["slot"])
    assert [(g.data_start, g.wal_end, g.data) for g in got] == recorded


def test_a_client_that_confirmed_a_commit_restarts_after_it() -> None:
    path = FIXTURES / "pg16-builtin.json.gz"
    if not path.exists():
        pytest.skip("fixtures/pg16-builtin.json.gz not present")
    sc = Scenario.from_fixture(path, "p1")
    st = ServerState(sc)
    c = Client(st)
    c.startup()
    start = "START_REPLICATION SLOT pgws_main LOGICAL 0/0 (proto_version '1', publication_names 'pgws_all')"
    first = [p for p in xlog(c.query(start)) if isinstance(p, XLogData)]
    commits = [i for i, p in enumerate(first) if p.data[:1] == b"C"]
    confirmed = first[commits[2]].data_start
    c.status(confirmed, confirmed)
    c.copy_done()
    again = [p for p in xlog(c.query(start)) if isinstance(p, XLogData)]
    assert [p.data for p in again] == [p.data for p in first[commits[2] + 1:]]


def test_payload_files_and_hex_lists(tmp_path: Path) -> None:
    begin = "420000000001531080000303d41651f8d300000300"
    commit = "4300000000000153108000000000015310b0000303d41651f8d3"
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"hex": begin, "lsn": "0/1530D78"}) + "\n" + json.dumps({"hex": commit, "lsn": "0/15310B0"}) + "\n")
    sc = load_scenario({"replay": {"payloads": str(f)}})
    got, _ = stream_of(sc, "proto_version '1', publication_names 'pub'")
    assert [g.data.hex() for g in got] == [begin, commit]
    assert [g.data_start for g in got] == [parse_lsn("0/1530D78"), parse_lsn("0/15310B0")]
    sc = load_scenario({"replay": {"hex": [begin, commit]}})
    got, _ = stream_of(sc, "proto_version '1', publication_names 'pub'")
    assert [g.data.hex() for g in got] == [begin, commit] and all(g.data_start for g in got)
    for bad in ({"hex": ["zz"]}, {"hex": [begin], "payloads": str(f)}, {"nonsense": 1},
                {"fixture": str(FIXTURES / "pg16-builtin.json.gz"), "group": "nope"}):
        with pytest.raises(ScenarioError):
            load_scenario({"replay": bad})


def test_seeded_hypothesis_scenarios_are_reproducible() -> None:
    spec = {"replay": {"hypothesis": {"seed": 11, "protocol_version": 2, "streaming": "on"}}}
    a, b = load_scenario(spec), load_scenario(spec)
    assert a.raw is not None and a.raw == b.raw and len(a.raw.payloads) >= 8
    got, out = stream_of(a, _options_text(dict(a.raw.options)) + ", publication_names 'pub'")
    assert [g.data for g in got] == list(a.raw.payloads)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(stream=streams())
def test_any_drawn_stream_is_served_with_its_write_lsns(stream: Any) -> None:
    sc = Scenario.from_stream(stream)
    assert sc.raw is not None
    opts = dict(sc.raw.options)
    got, _ = stream_of(sc, _options_text(opts) + ", publication_names 'pub'")
    assert [g.data for g in got] == [bytes(p) for p in stream.payloads]
    assert [g.data_start for g in got] == list(stream.write_lsns)
