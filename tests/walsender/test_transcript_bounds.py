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


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_records"):
        Transcript(max_records=0)
