"""The HTML conformance report as people see it: opened in a real browser (Debian's
Chromium, headless), its DOM read after rendering and a screenshot taken."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from pgwire_spec.conformance import FunctionAdapter, run_cases, write_reports
from pgwire_spec.conformance.cases import builtin_cases
from tests.conformance.test_report import _no_streaming  # the reference, less streaming

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (.ci/install installs it)")

# What the workplace's closed network needs: no background traffic, no sandbox as root.
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--hide-scrollbars"]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


def _png_pixels(path: Path) -> tuple[int, int, set[bytes]]:
    """Width, height and the set of distinct RGB(A) pixels of a PNG (8-bit, no interlace)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, colors, prev = zlib.decompress(idat), width * channels, set(), bytearray(width * channels)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        f, cur = line[0], bytearray(line[1:])
        for i in range(stride):  # undo the PNG row filters
            a = cur[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                cur[i] = (cur[i] + a) & 255
            elif f == 2:
                cur[i] = (cur[i] + b) & 255
            elif f == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:
            colors.update(bytes(cur[x:x + 3]) for x in range(0, stride, channels * 8))
        prev = cur
    return width, height, colors


def test_the_html_report_renders_in_a_real_browser(tmp_path: Path) -> None:
    result = run_cases(FunctionAdapter(_no_streaming, name="nostream", version="9"), builtin_cases())
    assert result.count("failed") > 0
    page = write_reports(result, tmp_path / "report")["html"]

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    # the kind x version matrix, with a failing and a passing cell
    assert "Message kind × protocol version" in dom.stdout
    assert re.search(r'<td class="k">StreamStart</td>(<td class="[a-z]+">[^<]*</td>)*<td class="bad">0/\d+</td>',
                     dom.stdout)
    assert re.search(r'<td class="k">Insert</td><td class="ok">(\d+)/\1</td>', dom.stdout)
    # a failure: its id, the failing payload's hex marked, expected and actual
    assert "stream/builtin/proto2-streaming" in text and "unknown message 'S'" in text
    assert re.search(r'<span class="hl">#0 53[0-9a-f]+</span>', dom.stdout)
    assert "expected" in text and "actual" in text
    # one row per capability: binary conforms, streaming fails (no profile declared)
    assert re.search(r'<td class="k">binary</td><td>yes</td><td class="ok">conforms</td>', dom.stdout)
    assert re.search(r'<td class="k">streaming on</td><td>yes</td><td class="bad">fails</td>', dom.stdout)
    assert "StreamStart: valid message rejected" in text  # its defect, named once

    shot = tmp_path / "report.png"
    png = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    assert png.returncode == 0 and shot.exists(), png.stderr[-2000:]
    width, height, colors = _png_pixels(shot)
    assert (width, height) == (1200, 900)
    # not a blank page: text, table borders and the matrix's green and red cells
    assert len(colors) > 20
    assert any(g > r + 20 and g > b + 20 for r, g, b in (tuple(c) for c in colors))  # green cells
    assert any(r > g + 20 and r > b + 20 for r, g, b in (tuple(c) for c in colors))  # red cells
