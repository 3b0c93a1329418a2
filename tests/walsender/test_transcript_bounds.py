"""The transcript bounded: a ring of the most recent records, or spilled to a file that
ends up holding every entry (as JSON lines), with memory bounded either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.walsender.transcript import Transcript

from ._client import Client

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def _session(transcript: Transcript | None = None) -> ServerState:
    sc = Scenario.from_dict({
        "server": {"version": "16.4"}, "publications": {"pub": ["t"]},
        "tables": {"t": {"columns": [{"name": "id", "type": "int4", "key": True}]}},
        "transactions": [{"changes": [{"insert": "t", "new": {"id": i}}]} for i in range(300)]})
    st = ServerState(sc, clock=lambda: 0.0, wall_clock=lambda: 946684800.0, pid=100,
                     random_bytes=lambda n: b"\1" * n)
    if transcript is not None:
        st.transcript = transcript
    for _ in range(20):  # twenty short sessions: many small records
        c = Client(st)
        c.startup()
        c.query("IDENTIFY_SYSTEM")
        c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
        c.query(START)
        c.copy_done()
        c.query("DROP_REPLICATION_SLOT s")
        c.terminate()
    return st


def test_a_ring_keeps_the_most_recent_records() -> None:
    full = _session().transcript
    ring = _session(Transcript(max_records=50)).transcript
    assert full is not None and ring is not None
    assert ring.dropped > 0 and len(ring._raw) < 100
    kept = [e.describe() for e in ring.entries]
    assert kept == [e.describe() for e in full.entries][-len(kept):]


def test_spilled_to_a_file_every_entry_is_there(tmp_path: Path) -> None:
    full = _session().transcript
    path = tmp_path / "t.jsonl"
    spilled = _session(Transcript(max_records=50, spill_to=path)).transcript
    assert full is not None and spilled is not None
    assert spilled.dropped > 0 and len(spilled._raw) < 100
    spilled.close()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == [json.loads(json.dumps(e.as_json())) for e in full.entries]


def test_pages_read_back_what_memory_no_longer_holds(tmp_path: Path) -> None:
    full = _session().transcript
    spilled = _session(Transcript(max_records=50, spill_to=tmp_path / "t.jsonl")).transcript
    ring = _session(Transcript(max_records=50)).transcript
    assert full is not None and spilled is not None and ring is not None
    everything = [json.loads(json.dumps(e.as_json())) for e in full.entries]
    assert spilled.first_kept > 1024  # pages cross the file's index marks
    for size in (97, 1000, 5000):
        pages = [spilled.page(at, size) for at in range(0, len(everything), size)]
        assert all(total == len(everything) for _, total in pages)
        assert [json.loads(json.dumps(e)) for page, _ in pages for e in page] == everything
    for at in (0, 1023, 1024, 1025, spilled.first_kept - 1, spilled.first_kept, len(everything) - 1):
        assert [json.loads(json.dumps(e)) for e in spilled.page(at, 2)[0]] == everything[at:at + 2]
    # a ring without a file: the same positions, the dropped ones marked as such
    page, total = ring.page(0, len(everything))
    assert total == len(everything) and page[0] == {"event": "no longer kept"}
    assert [json.loads(json.dumps(e)) for e in page[ring.first_kept:]] == everything[ring.first_kept:]


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_records"):
        Transcript(max_records=0)
