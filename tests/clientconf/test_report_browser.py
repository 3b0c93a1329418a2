"""The client-conformance HTML report as people see it: opened in Debian's Chromium
(headless), its DOM read after rendering and a screenshot taken (the decoder suite's
browser test's helpers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgwire_spec.clientconf import Run, case, write_reports
from pgwire_spec.clientconf.runner import ClientResult
from pgwire_spec.replication.messages import PrimaryKeepalive, StandbyStatusUpdate
from pgwire_spec.walsender import Entry
from tests.conformance.test_report_browser import CHROMIUM, _chromium, _png_pixels

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (.ci/install installs it)")


def _result(name: str, answered: bool) -> ClientResult:
    asked = [Entry(1, "B", 1.0, None, PrimaryKeepalive(0x1500000, 0, True))]
    reply = [Entry(1, "F", 1.2 if answered else 4.5, None, StandbyStatusUpdate(0x1500000, 0x1500000, 0, 0, False))]
    later = [Entry(1, "B", 6.0, None, PrimaryKeepalive(0x1500000, 0, False))]
    grades = (case("keepalive-reply").grade(Run(asked + reply + later)),
              case("stream-subxact-abort").grade(Run(later)))
    return ClientResult(name, f"{name} '{{dsn}}'", grades, {"keepalive-reply": ["error: boom"]})


def test_the_client_report_renders_in_a_real_browser(tmp_path: Path) -> None:
    results = [_result("good-client", True), _result("bad-client", False)]
    page = write_reports(results, tmp_path / "report")["html"]
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the grid: one row per case, one column per client
    assert re.search(r'<td class="k">keepalive-reply</td><td class="ok">pass</td><td class="bad">fail</td>', dom.stdout)
    assert re.search(r'<td class="k">stream-subxact-abort</td><td class="na">n/a</td><td class="na">n/a</td>',
                     dom.stdout)
    assert re.search(r'<td class="k">slot-missing</td><td class="none">–</td>', dom.stdout)  # not run
    # the failure with its evidence, the keepalive it is about marked, and the stderr
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    assert "was not answered within 3 s" in text and "error: boom" in text
    assert re.search(r'<span class="hl">&gt;\s+1\.000 \[1\] B CopyData k', dom.stdout)
    shot = tmp_path / "report.png"
    png = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,700", page.as_uri())
    assert png.returncode == 0 and shot.exists(), png.stderr[-2000:]
    width, height, colors = _png_pixels(shot)
    assert (width, height) == (1000, 700) and len(colors) > 20
    assert any(g > r + 20 and g > b + 20 for r, g, b in (tuple(c)[:3] for c in colors))  # a green cell
    assert any(r > g + 20 and r > b + 20 for r, g, b in (tuple(c)[:3] for c in colors))  # a red cell
