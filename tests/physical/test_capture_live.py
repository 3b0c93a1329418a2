"""Recording a real PostgreSQL 15 across a promotion (``pgwire-spec capture --physical``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgwire_spec.cli import main
from pgwire_spec.physical import read_recording, verify_recording
from pgwire_spec.servers import ProviderError
from pgwire_spec.servers.system import find_system_bin_dir

try:
    find_system_bin_dir(15)
    HAVE_PG15 = True
except ProviderError:
    HAVE_PG15 = False


@pytest.mark.live
@pytest.mark.skipif(not HAVE_PG15, reason="needs Debian's postgresql-15 (apt-get install postgresql-15; "
                                          ".ci/install does it)")
def test_capture_physical_records_both_timelines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--physical", "--out", str(tmp_path), "-q"]) == 0
    path = tmp_path / "physical" / "pg15-timeline-switch.json.gz"
    assert str(path) in capsys.readouterr().out
    rec = read_recording(path)
    count, problems = verify_recording(rec)
    assert problems == [] and count > 100
    assert rec.major == 15 and rec.history.timelines == [1, 2]
    switch, following = rec.history.switchpoint(1)
    assert following == 2 and rec.store.range(1)[1] == switch
    assert rec.store.range(2)[0] == switch - switch % rec.segment_size
    promoted = next(c for c in rec.conversations if c.name == "promoted")
    tags = [m.expected.get("command_tag") for m in promoted.messages if m.expected["type"] == "CommandComplete"]
    assert tags.count("START_STREAMING") == tags.count("START_REPLICATION") >= 3
    # both directions: status updates and hot standby feedback from the client, keepalives back
    copies = [m.copy["type"] for c in rec.conversations for m in c.messages if m.copy is not None]
    assert {"XLogData", "PrimaryKeepalive", "StandbyStatusUpdate", "HotStandbyFeedback"} <= set(copies)


def test_capture_physical_refuses_options_that_do_not_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--physical", "--dsn", "host=x"]) == 2
    assert "--physical runs its own servers" in capsys.readouterr().err
