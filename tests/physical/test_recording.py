"""The physical-stream fixture format: the committed recording verifies, survives a round
trip, and planted damage is reported where it is."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pgwire_spec.capture import verify_paths
from pgwire_spec.capture.fixture import FixtureError
from pgwire_spec.physical import read_recording, verify_recording
from pgwire_spec.physical.recording import parse_recording, render_recording

from .harness import RECORDING, RECORDING_PATH


def test_the_committed_recording_verifies() -> None:
    count, problems = verify_recording(RECORDING)
    assert problems == []
    assert count == sum(len(c.messages) for c in RECORDING.conversations) > 150
    assert RECORDING.major == 15 and RECORDING.segment_size == 1 << 20
    assert RECORDING.history.timelines == [1, 2]
    assert [c.name for c in RECORDING.conversations] == ["primary", "promoted"]


def test_verify_fixtures_reads_physical_recordings_too() -> None:
    report = verify_paths([RECORDING_PATH])
    assert report.files == 1 and report.mismatches == []


def test_render_and_parse_round_trip() -> None:
    text = render_recording(RECORDING)
    again = parse_recording(json.loads(text), Path("x.json"))
    assert render_recording(again) == text
    assert RECORDING_PATH.stat().st_size < 200_000


def _doc() -> dict:
    return json.loads(gzip.decompress(RECORDING_PATH.read_bytes()))


def test_a_flipped_wal_byte_is_reported_as_a_failed_crc(tmp_path: Path) -> None:
    doc = _doc()
    chunk = doc["wal"][1]["chunks"][1]
    doc["wal"][1]["chunks"][1] = chunk[:400] + ("0" if chunk[400] != "0" else "1") + chunk[401:]
    rec = parse_recording(doc, tmp_path / "bad.json")
    _, problems = verify_recording(rec)
    assert problems and all("fails its CRC" in p for p in problems)
    assert "timeline 2" in problems[0]


def test_a_changed_message_is_reported_with_its_conversation_and_index(tmp_path: Path) -> None:
    doc = _doc()
    msgs = doc["conversations"][0]["messages"]
    query = next(m for m in msgs if m["expected"]["type"] == "Query")
    query["expected"]["sql"] = "IDENTIFY_SYSTEMX"
    _, problems = verify_recording(parse_recording(doc, tmp_path / "bad.json"))
    assert len(problems) == 1 and f"primary/{query['index']}" in problems[0]


def test_broken_files_are_fixture_errors(tmp_path: Path) -> None:
    doc = _doc()
    doc["wal"][0]["end"] = "0/1"
    with pytest.raises(FixtureError, match="bytes from"):
        parse_recording(doc, tmp_path / "a.json")
    doc = _doc()
    doc["formatVersion"] = 9
    with pytest.raises(FixtureError, match="formatVersion 1"):
        parse_recording(doc, tmp_path / "b.json")
    doc = _doc()
    del doc["conversations"][1]["messages"][50]["copy"]
    with pytest.raises(FixtureError, match="copy"):
        parse_recording(doc, tmp_path / "c.json")
    with pytest.raises(FixtureError, match="does not exist"):
        read_recording(tmp_path / "missing.json.gz")
