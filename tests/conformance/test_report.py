"""Reports: the terminal summary's last line, JUnit XML, the JSON index, the HTML matrix."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from pgwire_spec.conformance import FunctionAdapter, print_summary, run_cases, write_reports
from pgwire_spec.conformance.adapters.reference import decode_case
from pgwire_spec.conformance.cases import builtin_cases, derived_malformed_cases


def _no_streaming(context: Any, payloads: Any) -> list[dict[str, Any]]:
    """A decoder that knows no streaming message: the reference, until the first S."""
    out = decode_case(context, payloads)
    for i, p in enumerate(payloads):
        if p[:1] == b"S" and i < len(out):
            return out[:i] + [{"error": {"message": "unknown message 'S'"}}]
    return out


def _run() -> Any:
    cases = builtin_cases() + [c for c in derived_malformed_cases() if c.level == "MUST"][:40]
    return run_cases(FunctionAdapter(_no_streaming, name="nostream", version="9"), cases)


def test_summary_ends_with_the_count_line() -> None:
    result = _run()
    out = io.StringIO()
    print_summary(result, out)
    lines = out.getvalue().splitlines()
    p, f, s = result.count("passed"), result.count("failed"), result.count("skipped")
    assert f > 0 and p > 0
    assert lines[-1] == f"{p} passed, {f} failed, 0 skipped" and s == 0
    assert lines[0] == "decoder: nostream 9"
    assert any("FAIL [MUST] stream/builtin/proto2-streaming" in ln for ln in lines)


def test_junit_index_and_html(tmp_path: Path) -> None:
    result = _run()
    paths = write_reports(result, tmp_path / "r")
    root = ET.parse(paths["junit"]).getroot()
    # every failure is a test case of its own; passes are counted per source and level
    suites = [s for s in root.findall("testsuite") if not s.get("name", "").endswith((".profile", ".defects"))]
    assert sum(int(s.get("tests", 0)) for s in suites) == len(result.verdicts)
    assert sum(len(s.findall(".//failure")) for s in suites) == result.count("failed")
    counted = [int(tc.get("name", "").split()[0]) for tc in root.findall(".//testcase")
               if tc.get("name", "").endswith("cases passed")]
    assert sum(counted) == result.count("passed")
    fail = root.find(".//testcase[@name='stream/builtin/proto2-streaming']/failure")
    assert fail is not None and "unknown message 'S'" in fail.get("message", "")
    assert ">> #0 53" in (fail.text or "")  # the failing payload's hex, marked
    index = json.loads(paths["index"].read_text())
    assert index["summary"] == {"passed": result.count("passed"), "failed": result.count("failed"), "skipped": 0,
                                "not claimed": 0, "not applicable": 0}
    assert index["ok"] is False and index["decoder"] == "nostream"
    assert len(index["failures"]) == result.count("failed") and all("payloads" in f for f in index["failures"])
    assert sum(g["passed"] for g in index["groups"].values()) == result.count("passed")
    # the matrix: streamed messages fail at protocol 2, protocol 1 inserts pass
    assert index["matrix"]["StreamStart"]["2"][0] == 0 and index["matrix"]["StreamStart"]["2"][1] > 0
    ok, total = index["matrix"]["Insert"]["1"]
    assert total > 0 and ok == total
    html = paths["html"].read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html.split("<body>")[1]
    assert "Message kind × protocol version" in html and "stream/builtin/proto2-streaming" in html
    assert '<span class="hl">#0 53' in html
    # one row per capability: no profile declared, so every capability is claimed
    assert "no profile declared: judged on everything" in html
    assert any(r["capability"] == "streaming on" and r["status"] == "fails" for r in index["capabilities"])
    assert any(r["capability"] == "protocol 1" and r["status"] == "conforms" for r in index["capabilities"])
    caps = root.find("testsuite[@name='nostream.profile']")
    assert caps is not None and any(tc.get("name", "").startswith("streaming on: ") and tc.find("failure") is not None
                                    for tc in caps.findall("testcase"))
    # the defects: the missing Stream Start once, with its smallest case
    titles = [d["kind"] + ": " + d["what"] for d in index["defects"]]
    assert titles.count("StreamStart: valid message rejected") == 1
