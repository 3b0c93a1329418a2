"""Every script in benchmarks/ runs in its short mode, so none can rot unseen. Found by
listing the folder: a new benchmark is covered without an edit here (it must take --short)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_the_benchmarks_are_found() -> None:
    assert len(BENCHMARKS) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_runs_in_short_mode(script: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(script), "--short"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    # each prints a table or lines of figures: at least a few lines with a number per second or a ratio
    figures = [line for line in proc.stdout.splitlines() if any(c.isdigit() for c in line)]
    assert len(figures) >= 3, proc.stdout
