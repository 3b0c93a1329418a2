"""Spark fixtures: a ``local[2]`` session, and a standalone cluster (one master, one worker)
started from the pyspark installation's own launcher (``bin/spark-class``) on 127.0.0.1 with
free ports, stopped and cleaned up afterwards, also when a test fails.

Real Spark, no mock. Needs Java (Debian: ``default-jre-headless``); without it the Spark
tests are skipped with that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_spark() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e .[test])")
    if not java_available():
        pytest.skip("no Java runtime on PATH: Spark needs one (Debian: apt-get install default-jre-headless)")


@pytest.fixture(scope="module")
def spark_local() -> Iterator[Any]:
    """A ``local[2]`` SparkSession for the module, stopped at its end."""
    require_spark()
    from pgwire_spec.fuzz.spark import spark_session

    spark = spark_session("local[2]", "pgwire-spec tests")
    try:
        yield spark
    finally:
        spark.stop()


@dataclass(frozen=True, slots=True)
class StandaloneCluster:
    master_url: str
    web_url: str
    workdir: Path


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _log_tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


@contextlib.contextmanager
def standalone_cluster(workers: int = 1, cores: int = 2) -> Iterator[StandaloneCluster]:
    """A standalone Spark cluster on loopback: ``spark-class`` Master and *workers* Workers
    (*cores* each), each in its own process group, killed (executors included) at the end,
    also when the body fails."""
    require_spark()
    home = spark_home()
    launcher = home / "bin" / "spark-class"
    if not launcher.exists():
        pytest.skip(f"this pyspark installation has no bin/spark-class ({home})")
    workdir = Path(tempfile.mkdtemp(prefix="pgwire-spec-spark-"))
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
               SPARK_LOG_DIR=str(workdir / "logs"), SPARK_WORKER_DIR=str(workdir / "work"))
    port, web = free_port(), free_port()
    daemons: list[tuple[subprocess.Popen[bytes], Path]] = []
    mlog = workdir / "master.log"
    try:
        with open(mlog, "wb") as out:
            daemons.append((subprocess.Popen(
                [str(launcher), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(web)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            ), mlog))
        url = f"spark://127.0.0.1:{port}"
        for n in range(workers):
            wlog = workdir / f"worker{n}.log"
            with open(wlog, "wb") as out:
                daemons.append((subprocess.Popen(
                    [str(launcher), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                     "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
                     "--memory", "1g", "--work-dir", str(workdir / f"work{n}"), url],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                ), wlog))
        web_url = f"http://127.0.0.1:{web}"
        deadline = time.monotonic() + 90
        while True:
            for proc, log in daemons:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({proc.returncode}):\n{_log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{web_url}/json/", timeout=2) as resp:
                    state = json.load(resp)
                if int(state.get("aliveworkers", 0)) >= workers:
                    break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} live worker(s) expected after 90 s:\n"
                                   + "\n".join(_log_tail(log) for _, log in daemons))
            time.sleep(0.5)
        yield StandaloneCluster(url, web_url, workdir)
    finally:
        for proc, _ in reversed(daemons):
            _stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def spark_standalone() -> Iterator[StandaloneCluster]:
    """A standalone cluster of one master and one worker with 2 cores."""
    with standalone_cluster(workers=1, cores=2) as cluster:
        yield cluster
