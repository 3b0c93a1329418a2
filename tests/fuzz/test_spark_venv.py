"""The fuzz job as a user runs it: the package installed from its wheel into a clean
virtualenv outside the checkout, that venv's ``pgwire-spec`` called by its path from another
folder (the venv is not on PATH), on ``local[2]`` and on a standalone cluster of two workers
started on loopback. The executors must run the C codec: on the cluster they get the venv
packed (venv-pack, ``spark.archives``), not a zip of sources."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._spark import require_spark, standalone_cluster
from tests._venv import build_wheel, make_venv, outside_env

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_spark()
    wheel = build_wheel(tmp_path_factory.mktemp("wheel"))
    return make_venv(tmp_path_factory.mktemp("venv") / "env", wheel, extras=("spark",)).parent


def _fuzz(venv_bin: Path, cwd: Path, master: str, budget: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    out = cwd / "out"
    proc = subprocess.run(
        [str(venv_bin / "pgwire-spec"), "fuzz", "--master", master, "--budget", budget, "--out", str(out)],
        capture_output=True, text=True, cwd=cwd, env=outside_env(venv_bin / "python"), timeout=500,
    )
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
    return proc, summary


def test_fuzz_from_a_venv_on_local_workers(venv_bin: Path, tmp_path: Path) -> None:
    proc, summary = _fuzz(venv_bin, tmp_path, "local[2]", "6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    assert summary["shipping"] == "installed" and summary["cases"] > 0
    assert {e["backend"] for e in summary["executors"].values()} == {"c"}
    assert "roundtrip" in summary["oracles"]


def test_fuzz_from_a_venv_on_a_standalone_cluster_ships_the_venv(venv_bin: Path, tmp_path: Path) -> None:
    with standalone_cluster(workers=2, cores=1) as cluster:
        proc, summary = _fuzz(venv_bin, tmp_path, cluster.master_url, "8")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert summary["shipping"] == "environment", summary["shipping"]
    executors = summary["executors"]
    assert len(executors) >= 2, executors  # one executor per worker
    assert {e["backend"] for e in executors.values()} == {"c"}, executors
    assert all(e["cases_per_second"] > 0 for e in executors.values())
    assert "packed virtualenv" in proc.stdout + proc.stderr
