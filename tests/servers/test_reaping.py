"""Nothing a provider starts outlives the process that started it: a test run killed with
SIGKILL leaves no postmaster and no directory behind (its watchdog stops and removes them),
and a later run reaps what a run left behind when even the watchdog could not act — only
directories marked as ours whose owner is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgwire_spec.servers._watchdog import OWNER_FILE, PREFIX, reap_stale, start_time
from tests._servers import system_major_available

OWNER = """
import sys, time
from pgwire_spec.servers import provider
p = provider("system", 15)
p.start()
print(p.cluster.root, p.cluster.process.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int, started: int | None, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if start_time(pid) != started:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.live
@pytest.mark.skipif(not system_major_available(15), reason="needs Debian's postgresql-15 (bash .ci/install)")
def test_a_sigkilled_owner_leaves_no_server_and_no_directory() -> None:
    proc = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        assert proc.stdout is not None
        root_text, pid_text = proc.stdout.readline().split()
        root, postmaster = Path(root_text), int(pid_text)
        started = start_time(postmaster)
        assert started is not None and (root / OWNER_FILE).is_file()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _gone(postmaster, started), "the postmaster outlived its owner"
        deadline = time.monotonic() + 10
        while root.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not root.exists()
    finally:
        proc.kill()
        proc.wait()


def test_a_later_run_reaps_only_stale_directories_it_owns(tmp_path: Path) -> None:
    # a dead owner: a process that has exited; its "postmaster": a live process of ours
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        def marked(name: str, owner: int, owner_start: int | None, pm: int | None) -> Path:
            root = tmp_path / (PREFIX + name)
            (root / "data").mkdir(parents=True)
            (root / OWNER_FILE).write_text(json.dumps({
                "owner": owner, "owner_start": owner_start, "postmaster": pm,
                "postmaster_start": start_time(pm) if pm else None}))
            return root

        stale = marked("stale", dead.pid, 12345, stand_in.pid)
        live = marked("live", os.getpid(), start_time(os.getpid()), None)
        reused = marked("reused", os.getpid(), 1, None)  # our pid, another process's start time
        unmarked = tmp_path / (PREFIX + "unmarked")
        unmarked.mkdir()
        other = tmp_path / "someone-else"
        other.mkdir()
        assert sorted(reap_stale(tmp_path)) == sorted([stale, reused])
        assert not stale.exists() and not reused.exists()
        assert live.exists() and unmarked.exists() and other.exists()
        assert stand_in.wait(10) is not None  # its postmaster was stopped
    finally:
        stand_in.kill()
        stand_in.wait()
