"""``pgwire-spec conform`` end to end (the reference, a broken in-process decoder, a
subprocess adapter)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.cli import main
from pgwire_spec.conformance.adapters.reference import decode_case


def broken(context: Any, payloads: Any) -> list[dict[str, Any]]:
    """An in-process entry point that mangles every Commit."""
    out = decode_case(context, payloads)
    for r in out:
        if r.get("message", {}).get("type") == "Commit":
            r["message"]["flags"] = 9
    return out


def test_reference_passes_everything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "--decoder", "reference", "--sources", "builtin,malformed", "--per-context", "3",
                 "--strict", "--report", str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0, out[-20:]
    assert out[-1].endswith("0 failed, 0 skipped") and int(out[-1].split()[0]) > 300
    assert {p.name for p in tmp_path.iterdir()} == {"junit.xml", "index.json", "report.html"}


def test_a_broken_decoder_exits_1_and_names_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "--decoder", f"{__name__}:broken", "--sources", "builtin"])
    out = capsys.readouterr().out
    assert code == 1
    assert "differs at flags" in out


def test_subprocess_adapter_command_and_listing(capsys: pytest.CaptureFixture[str]) -> None:
    cmd = f"{sys.executable} -m pgwire_spec.conformance.adapters.reference"
    assert main(["conform", "--adapter-cmd", cmd, "--sources", "builtin", "--only", "stream/builtin/proto4"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "3 passed, 0 failed, 0 skipped"
    assert main(["conform", "--decoder", "reference", "--sources", "builtin", "--list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].startswith("stream/builtin/proto1\tMUST\t")


def test_user_mistakes_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--decoder", "nope"]) == 1
    err = capsys.readouterr().err
    assert "unknown decoder 'nope'" in err and "Traceback" not in err
    assert main(["conform", "--decoder", "reference", "--sources", "bogus"]) == 2
    assert main(["conform", "--adapter-cmd", "/nonexistent/adapter"]) == 1
    assert "cannot start adapter" in capsys.readouterr().err
