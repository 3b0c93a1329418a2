"""The README's subprocess example: a tiny pgoutput decoder in Node
(examples/adapters/node/tiny-pgoutput.js) conforms to the profile it declares, run by the
machine's node through ``pgwire-spec conform --adapter-cmd``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pgwire_spec.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "adapters" / "node" / "tiny-pgoutput.js"

pytestmark = [pytest.mark.clients,
              pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Debian: nodejs)")]


def test_the_node_example_conforms_to_its_declared_profile(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "--adapter-cmd", f"{shutil.which('node')} {SCRIPT}", "--sources", "builtin,malformed",
                 "--per-context", "4", "--strict", "--report", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "profile: protocol 1, text, logical messages, origin, message level (declared by the decoder)" in out
    assert "conforms to its profile" in out
    index = json.loads((tmp_path / "index.json").read_text())
    rows = {r["capability"]: r for r in index["capabilities"]}
    assert rows["protocol 1"]["status"] == "conforms" and rows["protocol 1"]["passed"] > 50
    assert rows["streaming on"]["status"] == "not claimed" and rows["binary"]["status"] == "not claimed"
    assert index["defects"] == []


def test_claiming_more_than_the_node_example_does_fails(capsys: pytest.CaptureFixture[str]) -> None:
    # it skips every context but protocol 1 text: a larger claim is not met, and says why
    code = main(["conform", "--adapter-cmd", f"{shutil.which('node')} {SCRIPT}", "--sources", "builtin",
                 "--claim", "all"])
    out = capsys.readouterr().out
    assert code == 1 and "skipped by the decoder: protocol 1 with text values only" in out
