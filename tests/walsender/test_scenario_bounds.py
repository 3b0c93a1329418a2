"""Hostile scenario and replay files: each loads or fails with a ScenarioError naming the
file, the entry and what was expected, in bounded time and memory (no RecursionError,
MemoryError or hang), and replay reads only regular files under the scenario's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pgwire_spec.walsender import ScenarioError, load_scenario

TABLE = "tables: {t: {columns: [{name: id, type: int4, key: true}, {name: tags, type: 'text[]'}]}}\n"


def _file(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path: Path, **kw: object) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, **kw)  # type: ignore[arg-type]
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize("text", [
    "server: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "server:\n" + "".join(" " * (2 * i + 2) + "a:\n" for i in range(200)),
    '{"server": ' + "[" * 100_000 + "]" * 100_000 + "}",
], ids=["yaml-flow", "yaml-block", "json"])
def test_deep_nesting_is_a_scenario_error(tmp_path: Path, text: str) -> None:
    err = _error(_file(tmp_path, text))
    assert "levels" in str(err)


def test_billion_laughs_in_a_text_array_is_refused_while_parsing(tmp_path: Path) -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = "x:\n" + "".join(f"  {line}\n" for line in lines) + TABLE + \
        "transactions: [{changes: [{insert: t, new: {id: 1, tags: *a8}}]}]\n"
    err = _error(_file(tmp_path, text))
    assert "aliases" in str(err)


def test_a_huge_string_and_a_huge_integer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pgwire_spec.walsender import scenario

    monkeypatch.setattr(scenario, "MAX_STRING", 1000)  # the mechanism, not PyYAML's speed on 16 MB
    err = _error(_file(tmp_path, "server: {database: " + "x" * 1001 + "}\n"))
    assert err.path.endswith("server.database") and "characters" in err.expected
    _error(_file(tmp_path, "server: {timeline: " + "1" * 5000 + "}\n"))


@pytest.mark.parametrize(("text", "entry"), [
    ("server: {start_lsn: 18446744073709551616}", "server.start_lsn"),
    ("server: {timeline: 100000000000000000000000000}", "server.timeline"),
    ("server: {timeline: 0}", "server.timeline"),
    ("server: {first_xid: 4294967296}", "server.first_xid"),
    ("tables: {t: {oid: 4294967296, columns: [{name: id, type: int4}]}}", "tables['t'].oid"),
    ("transactions: [{changes: [], commit_time: 1180591620717411303424}]", "transactions[0].commit_time"),
    ("transactions: [{changes: [], xid: 4294967296}]", "transactions[0].xid"),
    ("slots: [{name: s, confirmed_flush: 18446744073709551616}]", "slots[0].confirmed_flush"),
    ("keepalive: {advance: 18446744073709551616}", "keepalive.advance"),
    ("tables: {t: {columns: [{name: id, type: {oid: 4294967296, name: x}}]}}", "tables['t'].columns[0].type"),
    ("tables: {t: {columns: [{name: id, type: 'varchar(99999999999)'}]}}", "tables['t'].columns[0].type"),
    ("faults: [{action: stall, after_messages: 99999999999999999999999, seconds: 1}]", "faults[0]"),
    ("faults: [{action: stall, after_messages: 1, seconds: 1.0e+300}]", "faults[0]"),
    ("server: {version: '16.4'}\nreplay: {hypothesis: {seed: abc}}", "replay.hypothesis.seed"),
    ("server: {version: '16.4'}\nreplay: {hypothesis: {seed: 1, min_messages: 100000000}}",
     "replay.hypothesis.min_messages"),
    ("server: {version: '16.4'}\nreplay: {hypothesis: {seed: 1, protocol_version: 9}}", "replay.hypothesis"),
])
def test_numbers_out_of_range(tmp_path: Path, text: str, entry: str) -> None:
    err = _error(_file(tmp_path, text + "\n"))
    assert err.path.endswith(entry), err


def test_replay_reads_only_regular_files_under_the_scenarios_folder(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    err = _error(_file(folder, "replay: {payloads: /dev/zero}\n"))
    assert "scenario's folder" in err.expected
    (folder / "zero").symlink_to("/dev/zero")
    err = _error(_file(folder, "replay: {payloads: zero}\n"))  # the link leads outside
    assert "scenario's folder" in err.expected
    err = _error(_file(folder, "replay: {payloads: /dev/zero}\n"), allow_paths=["/dev"])
    assert "regular" in err.expected
    os.mkfifo(folder / "fifo")
    err = _error(_file(folder, "replay: {payloads: fifo}\n"))
    assert "regular" in err.expected
    outside = tmp_path / "outside.hex"
    outside.write_text("4200000000000000000000000000000000000002ee\n")
    path = _file(folder, f"replay: {{payloads: {outside}}}\n")
    _error(path)
    _error(_file(folder, "replay: {payloads: ../outside.hex}\n"))
    assert load_scenario(path, allow_paths=[tmp_path]).raw is not None
    inside = folder / "inside.hex"
    inside.write_text(outside.read_text())
    assert load_scenario(_file(folder, "replay: {payloads: inside.hex}\n")).raw is not None


def test_a_recording_larger_than_the_limit_is_refused_unread(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from pgwire_spec.walsender import replay

    monkeypatch.setattr(replay, "MAX_RECORDING_BYTES", 2048)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"format": "pgwire-spec/pgoutput-fixtures", "pad": "x" * 4096}))
    err = _error(_file(tmp_path, "replay: {fixture: big.json}\n"))
    assert "at most" in err.expected
    import gzip

    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b" " * (1 << 20)))
    assert os.path.getsize(tmp_path / "bomb.json.gz") < 1 << 12
    err = _error(_file(tmp_path, "replay: {fixture: bomb.json.gz}\n"))
    assert "decompressed" in err.expected


# -- a scenario's physical recording is read with the same bounds ----------------------------

def test_a_physical_recording_that_is_a_device_is_refused_unread(tmp_path: Path) -> None:
    err = _error(_file(tmp_path, "physical: {recording: /dev/zero}\n"), allow_paths=["/dev"])
    assert "physical.recording" in str(err) and "regular" in str(err)


def test_a_physical_recording_outside_the_scenarios_folder_needs_allowing(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "rec.json").write_text("{}")
    inside = tmp_path / "scenarios"
    inside.mkdir()
    err = _error(_file(inside, "physical: {recording: ../elsewhere/rec.json}\n"))
    assert "allow" in str(err)
    # allowed, it is read, and then its structure is what is wrong
    err = _error(_file(inside, "physical: {recording: ../elsewhere/rec.json}\n"), allow_paths=[outside])
    assert "physical recording" in str(err)


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"format": "pgwire-spec/physical-recording", "wal": 5}',
    b"\x1f\x8b\x08\x00garbage",
    b"not json",
], ids=["deep", "wrong-types", "bad-gzip", "not-json"])
def test_a_hostile_physical_recording_is_a_scenario_error(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "rec.json").write_bytes(body)
    err = _error(_file(tmp_path, "physical: {recording: rec.json}\n"))
    assert "physical.recording" in str(err)


def test_the_shipped_physical_recording_still_loads_by_name(tmp_path: Path) -> None:
    scenario = load_scenario(_file(tmp_path, "physical: {recording: pg15-timeline-switch.json.gz}\n"))
    assert scenario.physical is not None
