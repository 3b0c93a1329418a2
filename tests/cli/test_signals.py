"""Every command stops cleanly on SIGTERM, SIGHUP and SIGINT: its children (servers,
subprocess adapters) are gone, the exit status is 128 + the signal, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLOW_ADAPTER = Path(__file__).with_name("_slow_adapter.py")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_conform_stopped_by_a_signal_leaves_no_decoder_running(tmp_path: Path, sig: signal.Signals,
                                                              status: int) -> None:
    pid_file = tmp_path / "adapter.pid"
    env = {**os.environ, "SLOW_ADAPTER_PID": str(pid_file), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgwire_spec", "conform", "--adapter-cmd", f"{sys.executable} {SLOW_ADAPTER}",
         "--only", "builtin/", "--report", str(tmp_path / "r")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert pid_file.exists(), proc.communicate()
    time.sleep(0.5)  # mid-run
    adapter = int(pid_file.read_text())
    assert _alive(adapter)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 10
    while _alive(adapter) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(adapter), "the decoder subprocess outlived the command"
