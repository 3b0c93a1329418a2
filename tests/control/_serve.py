"""``pgwire-spec serve --control`` as a subprocess, for the control plane's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml


@contextmanager
def served(scenario: Path | dict[str, Any], tmp: Path, *extra: str) -> Iterator[dict[str, Any]]:
    """Start ``serve SCENARIO --control 127.0.0.1:0 --ready-file …``; yield the ready file's
    content (host, port, dsn, control, pid); stop it (SIGTERM, then kill) whatever happens."""
    if isinstance(scenario, dict):
        path = tmp / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario))
        scenario = path
    with running(["serve", str(scenario), *extra], tmp) as info:
        yield info


@contextmanager
def running(args: list[str], tmp: Path) -> Iterator[dict[str, Any]]:
    """``pgwire-spec ARGS --quiet --control 127.0.0.1:0 --ready-file …`` (serve or proxy)."""
    ready = tmp / f"ready-{time.monotonic_ns()}.json"
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "pgwire_spec", *args, "--quiet",
                             "--control", "127.0.0.1:0", "--ready-file", str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve did not start: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        info["process"] = proc
        yield info
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
