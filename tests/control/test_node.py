"""A Node.js client (npm's pg-logical-replication) against ``pgwire-spec serve --control``,
driving everything over HTTP from JavaScript (tests/control/node_resume.js): a disconnect
armed right after the 3rd Commit, the client resumes from its acknowledged position and
applies every transaction exactly once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

SCRIPT = Path(__file__).with_name("node_resume.js")


@pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_a_node_client_resumes_after_a_disconnect_armed_over_http(tmp_path: Path) -> None:
    from pgwire_spec.conformance.adapters.pg_logical_replication import install

    prefix = install()
    command = [sys.executable, "-m", "pgwire_spec"]
    proc = subprocess.run(["node", str(SCRIPT), str(prefix), str(tmp_path), json.dumps(command)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["applied"] == list(range(100, 108))
    assert result["events"] == ["fault:disconnect"] and result["fired"] == [1]
    assert result["starts"] >= 2 and result["startCommands"] >= 2
