"""The Spark job: a campaign's shards as Spark tasks, results gathered on the driver.

A thin shell around :mod:`pgwire_spec.fuzz.shards`: the driver loads the corpus, plans
the shards, ships the package (a zip of ``pgwire_spec`` added with ``addPyFile``) and the
corpus (a broadcast) and runs one task per shard; each task calls
:func:`~pgwire_spec.fuzz.shards.run_shard`, which batches its cases so that no per-case
work happens outside the decoder and the oracle. Progress (shards done, cases so far,
findings) is printed while the job runs. The driver then merges findings by signature,
minimises them, writes each as a regression fixture and writes the findings table
(``findings.parquet``) and ``summary.json``.

``master`` is ``local[*]`` by default; ``local[N]``, ``spark://host:7077`` or any other
master works unchanged. Golden-fixture verification runs through the same machinery
(:func:`verify_fixtures_spark`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._progress import progress
from ..corpus.seeds import SeedStream
from ..errors import PgWireError
from ..pgoutput import _codec
from .findings import ORACLES, merge_findings, minimise, write_regression
from .shards import Campaign, Finding, ShardResult, adaptive, engine_yield, generate_fraction, plan_shards

__all__ = [
    "SparkJobError",
    "CampaignReport",
    "package_zip",
    "ship_package",
    "spark_session",
    "run_campaign",
    "write_outputs",
    "format_report",
    "verify_fixtures_spark",
]


class SparkJobError(PgWireError):
    """Spark is not installed, could not start, or the job failed."""


@dataclass(frozen=True, slots=True)
class CampaignReport:
    """The gathered result of a campaign."""

    campaign: Campaign
    master: str
    cores: int
    shards: tuple[ShardResult, ...]
    findings: tuple[Finding, ...]
    seconds: float
    corpus: str = ""
    paths: dict[str, str] = field(default_factory=dict)
    #: how the package reached the executors (see spark_session)
    shipping: str = ""
    #: the pgoutput codec of the driver ("c" or "python")
    driver_backend: str = ""
    #: stopped before every shard finished: the shards and findings of those that did
    partial: bool = False
    #: the generate engine's share of the cores' time in the second wave, from its yield in
    #: the first (None: one wave, see :func:`~pgwire_spec.fuzz.shards.adaptive`)
    generate_fraction: float | None = None

    @property
    def cases(self) -> int:
        return sum(s.cases for s in self.shards)

    @property
    def ok(self) -> bool:
        return not self.findings

    def per_engine(self) -> dict[str, dict[str, float]]:
        """Cases, task seconds and cases per second per core, per engine."""
        out: dict[str, dict[str, float]] = {}
        for s in self.shards:
            e = out.setdefault(s.engine, {"cases": 0, "seconds": 0.0, "cpu_seconds": 0.0, "shards": 0})
            e["cases"] += s.cases
            e["seconds"] += s.seconds
            e["cpu_seconds"] += s.cpu_seconds
            e["shards"] += 1
        for e in out.values():
            e["cases_per_second_per_core"] = e["cases"] / e["seconds"] if e["seconds"] else 0.0
            e["cases_per_cpu_second"] = e["cases"] / e["cpu_seconds"] if e["cpu_seconds"] else 0.0
        return out

    def oracles(self) -> list[str]:
        """The oracles this campaign ran (see :data:`pgwire_spec.fuzz.findings.ORACLES`)."""
        c = self.campaign
        if c.adapter_cmd or c.target != "reference":
            names = ["differential", "crash", "timeout", "memory"]
        else:
            names = ["roundtrip", "json", "internal", "exception", "timeout", "memory"]
            if any(s.backend == "c" for s in self.shards):
                names.append("backend")
        if any(s.engine == "generate" for s in self.shards):
            names.append("catalogue")
        return names

    def executors(self) -> dict[str, dict[str, Any]]:
        """Per executor process (host:pid): its codec backend, shards, cases, cases/s."""
        out: dict[str, dict[str, Any]] = {}
        for s in self.shards:
            e = out.setdefault(f"{s.host}:{s.pid}", {"backend": s.backend, "shards": 0, "cases": 0,
                                                      "seconds": 0.0, "cpu_seconds": 0.0})
            e["shards"] += 1
            e["cases"] += s.cases
            e["seconds"] += s.seconds
            e["cpu_seconds"] += s.cpu_seconds
        for e in out.values():
            e["cases_per_second"] = round(e["cases"] / e["seconds"], 1) if e["seconds"] else 0.0
            e["cases_per_cpu_second"] = round(e["cases"] / e["cpu_seconds"], 1) if e["cpu_seconds"] else 0.0
            e["seconds"], e["cpu_seconds"] = round(e["seconds"], 3), round(e["cpu_seconds"], 3)
        return out

    def summary(self) -> dict[str, Any]:
        """The JSON summary: campaign, totals, per engine, per shard, findings."""
        return {
            "campaign": self.campaign.to_dict(),
            "status": "interrupted: shards that finished only" if self.partial else "complete",
            "master": self.master,
            "cores": self.cores,
            "corpus": self.corpus,
            "seconds": round(self.seconds, 3),
            "cases": self.cases,
            "cases_per_second": round(self.cases / self.seconds, 1) if self.seconds else 0.0,
            "findings": len(self.findings),
            "occurrences": sum(f.count for f in self.findings),
            "engines": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in self.per_engine().items()},
            "generate_fraction": None if self.generate_fraction is None else round(self.generate_fraction, 4),
            "oracles": {name: ORACLES[name] for name in self.oracles()},
            "shipping": self.shipping,
            "driver_backend": self.driver_backend,
            "executors": self.executors(),
            "shards": [
                {k: v for k, v in s.to_dict().items() if k != "findings_list"} for s in self.shards
            ],
            "findings_list": [
                {"id": f.id, "signature": f.signature, "oracle": f.oracle, "count": f.count, "detail": f.detail,
                 "kind": f.kind, "engine": f.engine, "shard": f.shard,
                 "bytes": sum(len(p) for p in (f.minimised or f.payloads))}
                for f in self.findings
            ],
            "paths": dict(self.paths),
        }


# -- shipping the package -------------------------------------------------------------------------


def package_zip(directory: Path | str | None = None) -> Path:
    """A zip of the ``pgwire_spec`` package (for ``addPyFile`` / ``--py-files``), named by
    its content hash and reused while the sources do not change."""
    pkg = Path(__file__).resolve().parents[1]
    # Compiled extensions cannot be imported from a zip: the shipped package runs on the
    # pure-Python codecs (the C decoders are an optional speed-up of the same grammar).
    files = sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.suffix not in (".pyc", ".so", ".c", ".tmp"))
    h = hashlib.blake2b(digest_size=8)
    for p in files:
        st = p.stat()
        h.update(f"{p.relative_to(pkg)}:{st.st_size}:{st.st_mtime_ns}".encode())
    out_dir = Path(directory) if directory is not None else Path(tempfile.gettempdir()) / "pgwire-spec-spark"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"pgwire_spec-{h.hexdigest()}.zip"
    if not target.exists():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p in files:
                z.write(p, Path("pgwire_spec") / p.relative_to(pkg))
        tmp.replace(target)
    return target


# -- the session ----------------------------------------------------------------------------------


def environment_archive(directory: Path | str | None = None) -> Path | None:
    """The running virtualenv packed for executors (venv-pack, as PySpark's docs ship Python
    dependencies: ``spark.archives``), without pyspark and py4j (executors bring their own),
    named by its content and reused while it does not change. None outside a virtualenv or
    without venv-pack (``pip install 'pgwire-spec[spark]'``)."""
    if sys.prefix == sys.base_prefix:
        return None
    try:
        import venv_pack
    except ImportError:
        return None
    prefix = Path(sys.prefix)
    site = [Path(p) for p in sys.path if p.startswith(str(prefix)) and p.endswith("site-packages")]
    h = hashlib.blake2b(digest_size=8)
    for d in site:
        for entry in sorted(d.iterdir()):
            st = entry.stat()
            h.update(f"{entry.name}:{st.st_mtime_ns}".encode())
    pkg = Path(__file__).resolve().parents[1]
    for p in sorted(pkg.rglob("*.py")):
        h.update(f"{p.relative_to(pkg)}:{p.stat().st_mtime_ns}".encode())
    out_dir = Path(directory) if directory is not None else Path(tempfile.gettempdir()) / "pgwire-spec-spark"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"environment-{h.hexdigest()}.tar.gz"
    if not target.exists():
        tmp = out_dir / f"environment-{h.hexdigest()}.{os.getpid()}.tar.gz"
        venv_pack.pack(prefix=str(prefix), output=str(tmp), force=True, compress_level=1, filters=[
            ("exclude", "lib/python*/site-packages/pyspark/*"), ("exclude", "lib/python*/site-packages/py4j/*"),
            ("exclude", "lib/python*/site-packages/pyspark-*"), ("exclude", "*/__pycache__/*"),
        ])
        tmp.replace(target)
    return target


#: How the package reaches the executors: "installed" (local masters: the executors are
#: this interpreter's children), "environment" (a packed virtualenv: the C codec included),
#: "zip" (the package's sources: the pure-Python codec, said so in the report).
Shipping = str


def _plan_shipping(master: str, ship: bool | None, settings: dict[str, str], env: dict[str, str]) -> Shipping:
    """Decide how the package reaches the executors of *master*; sets the launch-time
    settings and the executors' Python (PYSPARK_PYTHON, read when the context starts)."""
    if ship is None:
        ship = not master.startswith("local")
    if not ship:
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return "installed"
    archive = environment_archive()
    if archive is not None:
        settings["spark.archives"] = f"{archive}#environment"
        env.setdefault("PYSPARK_PYTHON", "./environment/bin/python")
        return "environment"
    env.setdefault("PYSPARK_PYTHON", sys.executable if _is_loopback_master(master) else "python3")
    return "zip"


_SHIPPING_TEXT = {
    "installed": "executors import the installed package",
    "environment": "package shipped as a packed virtualenv",
    "zip": "package shipped as sources (pure-Python codec on the executors)",
}


def _session_shipping(spark: Any) -> Shipping:
    """How the package reaches this session's executors (a session made elsewhere: the
    installed package on local masters, its sources otherwise)."""
    shipping = getattr(spark, "pgwire_shipping", None)
    if shipping is None:
        local = str(spark.sparkContext.master).startswith("local")
        shipping = spark.pgwire_shipping = ship_package(spark.sparkContext, "installed" if local else "zip")
    return str(shipping)


def ship_package(sc: Any, shipping: Shipping) -> Shipping:
    """After the session started: add the package's sources for the "zip" shipping."""
    if shipping == "zip":
        sc.addPyFile(str(package_zip()))
    return shipping


_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|spark://[^/\s]+|k8s://\S+")


def check_master(master: str, timeout: float = 5.0) -> None:
    """A clear :class:`SparkJobError` for a master URL Spark would refuse, or a standalone
    master that does not answer (before Spark spends a minute retrying it)."""
    if not _MASTER.fullmatch(master):
        raise SparkJobError(f"expected a Spark master (local, local[N], local[*], spark://HOST:PORT, yarn or "
                            f"k8s://URL), found {master!r}")
    if not master.startswith("spark://"):
        return
    errors = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise SparkJobError(f"expected spark://HOST:PORT, found {master!r}")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            return
        except OSError as exc:
            errors.append(f"{hostport}: {exc.strerror or exc}")
    raise SparkJobError(f"cannot connect to the Spark master {master} ({'; '.join(errors)})")


def _is_loopback_master(master: str) -> bool:
    return master.startswith("local") or any(h in master for h in ("127.0.0.1", "localhost", "[::1]"))


def spark_session(master: str = "local[*]", app_name: str = "pgwire-spec", conf: dict[str, str] | None = None,
                  ship: bool | None = None) -> Any:
    """A SparkSession for *master*, quiet (no UI, no console progress bar: the job prints
    its own). The executors' Python: this interpreter on ``local`` masters (a virtualenv's
    own, not the ``python3`` on PATH); elsewhere the packed virtualenv when there is one
    (:func:`environment_archive`), else the package's sources (``PYSPARK_PYTHON`` wins if
    set). ``session.pgwire_shipping`` says which."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkJobError("pyspark is not installed: pip install 'pgwire-spec[spark]'") from None
    from pyspark import SparkContext

    check_master(master)
    active = SparkContext._active_spark_context
    if active is not None and str(active.master) != master:
        raise SparkJobError(f"a Spark session with master {active.master!r} is already running in this "
                            f"process; stop it before starting one on {master!r}")
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "true",
        "spark.task.maxFailures": "1" if master.startswith("local") else "2",
    }
    if _is_loopback_master(master):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    # PySpark starts its Python workers with $PYSPARK_PYTHON as read when the context starts
    # (pyspark/core/context.py), not with spark.pyspark.python: set it for that moment.
    launch_env = {k: os.environ[k] for k in ("PYSPARK_PYTHON",) if k in os.environ}
    shipping = _plan_shipping(master, ship, settings, launch_env)
    quiet = _quiet_log4j()
    settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{quiet}"
    settings["spark.executor.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{quiet}"
    settings.update(conf or {})
    for k, v in settings.items():
        builder = builder.config(k, v)
    env = dict(os.environ)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1") if _is_loopback_master(master) else None
    os.environ.update(launch_env)
    # The driver's JVM starts with the gateway, before any session setting: its log4j
    # configuration goes on the launcher's command line (unless the user set one).
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                          f'--driver-java-options "-Dlog4j2.configurationFile=file:{quiet}" pyspark-shell')
    sigint = signal.getsignal(signal.SIGINT)
    try:
        with _jvm_stderr_filtered():
            spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - Java missing, a bad master URL …
        raise SparkJobError(f"cannot start Spark with master {master!r}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        if "PYSPARK_PYTHON" in env:
            os.environ["PYSPARK_PYTHON"] = env["PYSPARK_PYTHON"]
        else:
            os.environ.pop("PYSPARK_PYTHON", None)
    if threading.current_thread() is threading.main_thread() and sigint is not None:
        # PySpark's own SIGINT handler calls into the JVM from inside the signal (py4j
        # tracebacks when it lands mid-call): keep ours; the job is cancelled on the way out.
        signal.signal(signal.SIGINT, sigint)
    spark.sparkContext.setLogLevel("ERROR")
    spark.pgwire_shipping = ship_package(spark.sparkContext, shipping)
    return spark


#: What the JVM that PySpark starts writes to stderr before any log configuration applies
#: (the JVM's module notice, the shell's log level notice): not the job's output.
_JVM_NOTICES = (b"WARNING: Using incubator modules", b"Setting default log level to",
                b"To adjust logging level use sc.setLogLevel")


@contextlib.contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """While the gateway starts, stderr (fd 2, which the JVM inherits for its lifetime) is a
    pipe whose lines go on to the real stderr, less :data:`_JVM_NOTICES`."""
    try:
        real = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:  # pragma: no cover - no stderr to filter
        yield
        return

    def pump() -> None:
        with os.fdopen(read_end, "rb") as src:
            for line in src:
                if not line.startswith(_JVM_NOTICES):
                    try:
                        os.write(real, line)
                    except OSError:
                        pass

    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=pump, name="pgwire-spark-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # this process's own stderr back; the JVM keeps writing to the pipe


def _stop_quietly(spark: Any) -> None:
    """Stop a session this module started, without the executors' disconnection errors
    that Spark logs while it shuts down."""
    try:
        spark.sparkContext.setLogLevel("OFF")
    except Exception:  # noqa: BLE001 - stopping matters, not the log level
        pass
    spark.stop()


def _running_session(master: str) -> Any:
    """The session already running in this process on *master* (used, not stopped), if any."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    active = SparkSession.getActiveSession()
    if active is not None and str(active.sparkContext.master) == master:
        return active
    return None


def _quiet_log4j() -> Path:
    """A log4j2 configuration that keeps Spark's JVM to errors (our progress lines are the
    job's output)."""
    path = Path(tempfile.gettempdir()) / "pgwire-spec-spark" / "log4j2-quiet.properties"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(
            "rootLogger.level = error\n"
            "rootLogger.appenderRef.stderr.ref = console\n"
            "appender.console.type = Console\n"
            "appender.console.name = console\n"
            "appender.console.target = SYSTEM_ERR\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n",
            encoding="utf-8",
        )
        tmp.replace(path)
    return path


# -- the job -------------------------------------------------------------------------------------


def _light(streams: Iterable[SeedStream]) -> list[SeedStream]:
    """The streams without expected JSON (the mutate engine needs bytes and context only)."""
    return [SeedStream(s.name, dict(s.options), s.payloads, s.source) for s in streams]


def _shard_task(shard: Any, streams_bc: Any, cases_acc: Any, report_to: tuple[str, int] | None,
                results_to: tuple[str, int] | None = None) -> dict[str, Any]:
    """One Spark task: run a shard; its running case count goes to the driver as UDP
    datagrams (best effort: a lost one only delays the count), the final one through the
    accumulator, and its result also over TCP (kept by the driver if the job is stopped)."""
    from pgwire_spec.fuzz.shards import run_shard

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if report_to else None
    last = [0.0]

    def progress(n: int) -> None:
        now = time.monotonic()
        if sock is not None and now - last[0] >= 0.5:
            last[0] = now
            try:
                sock.sendto(f"{shard.index} {n}".encode(), report_to)  # type: ignore[arg-type]
            except OSError:
                pass

    try:
        result = run_shard(shard, streams_bc.value, progress)
    finally:
        if sock is not None:
            sock.close()
    cases_acc.add(result.cases)
    out = result.to_dict()
    if results_to is not None:
        try:
            with socket.create_connection(results_to, timeout=10) as conn:
                conn.sendall(json.dumps(out).encode())
        except OSError:
            pass  # the collected result is the one that counts
    return out


def _collect_interruptibly(sc: Any, rdd: Any) -> list[Any]:
    """``rdd.collect()`` in a thread, so that a signal reaches this (main) thread while it
    waits, not inside a py4j call: then the jobs are cancelled from here, cleanly."""
    box: dict[str, Any] = {}

    def collect() -> None:
        try:
            box["raw"] = rdd.collect()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc

    thread = threading.Thread(target=collect, name="pgwire-fuzz-collect", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:
        sc.cancelAllJobs()
        thread.join(30)
        raise
    if "error" in box:
        raise box["error"]
    return box["raw"]  # type: ignore[no-any-return]


class _FinishedShards:
    """The driver's end of the finished shards' results (JSON over TCP), so that an
    interrupted job still knows what finished."""

    def __init__(self, host: str) -> None:
        self.server = socket.create_server((host, 0))
        self.address: tuple[str, int] = self.server.getsockname()[:2]
        self._results: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="pgwire-fuzz-results", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(30)
                chunks = []
                try:
                    while chunk := conn.recv(1 << 16):
                        chunks.append(chunk)
                    result = json.loads(b"".join(chunks))
                except (OSError, ValueError):
                    continue
            with self._lock:
                self._results.append(result)

    def results(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._results)

    def close(self) -> None:
        self.server.close()


class _LiveCounts:
    """The driver's end of the shards' progress datagrams: cases per shard, running ones
    included."""

    def __init__(self, host: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.counts: dict[int, int] = {}

    def poll(self) -> int:
        while True:
            try:
                data = self.sock.recv(64)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            try:
                index, n = (int(x) for x in data.split())
            except ValueError:
                continue
            self.counts[index] = max(self.counts.get(index, 0), n)
        return sum(self.counts.values())

    def close(self) -> None:
        self.sock.close()


class _Progress:
    """Shows the job's progress while it runs: shards done and running, cases so far
    (running shards included), time against the budget."""

    def __init__(self, sc: Any, total: int, budget: float, say: Callable[[str], None] | None,
                 cases_acc: Any, live: _LiveCounts | None, interval: float = 2.0) -> None:
        self.sc, self.total, self.budget, self.say = sc, total, budget, say
        self.acc, self.live = cases_acc, live
        self.interval = interval
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="pgwire-fuzz-progress", daemon=True)

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        with progress(self.budget or None, "fuzz", "s", say=self.say, interval=self.interval) as bar:
            while not self.stop.wait(0.5 if self.say is None else self.interval):
                try:
                    tracker = self.sc.statusTracker()
                    done = running = 0
                    for sid in tracker.getActiveStageIds():
                        info = tracker.getStageInfo(sid)
                        if info is not None:
                            done += info.numCompletedTasks
                            running += info.numActiveTasks
                    cases = max(self.acc.value, self.live.poll() if self.live is not None else 0)
                except Exception:  # noqa: BLE001 - progress is best effort; the job decides
                    continue
                bar.update_to(time.monotonic() - self.t0,
                              f"shards {done}/{self.total} done, {running} running, {cases:,} cases")


def run_campaign(
    campaign: Campaign,
    *,
    master: str = "local[*]",
    out: Path | str | None = None,
    spark: Any = None,
    streams: Sequence[SeedStream] | None = None,
    say: Callable[[str], None] = print,
    minimise_findings: bool = True,
    ship: bool | None = None,
    bar: bool = False,
) -> CampaignReport:
    """Run *campaign* as a Spark job on *master*; write its outputs to *out* if given.
    Progress goes through *say* every 2 s, or to a bar when *bar* and stderr is a terminal."""
    from ..corpus.load import describe, load_corpus

    t0 = time.perf_counter()
    if streams is None:
        streams = load_corpus(campaign.corpus)
    if not streams:
        raise SparkJobError(f"the corpus {list(campaign.corpus)} is empty")
    if spark is None:
        spark = _running_session(master)
    own = spark is None
    if own:
        say(f"[fuzz] starting Spark ({master}) …")
        spark = spark_session(master, f"pgwire-spec fuzz {campaign.name}", ship=ship)
    sc = spark.sparkContext
    try:
        shipping = _session_shipping(spark)
        master = str(sc.master)
        cores = int(sc.defaultParallelism)
        waves = adaptive(campaign)
        first_budget = campaign.budget * campaign.explore if waves else campaign.budget
        shards = plan_shards(campaign, cores, budget=first_budget)
        engines = sorted({s.engine for s in shards})
        say(f"[fuzz] campaign {campaign.name}: target {campaign.adapter_cmd or campaign.target}, engines "
            f"{'+'.join(engines)}, seed {campaign.seed}, {len(shards)} shards on {cores} cores, "
            f"corpus {describe(streams)}, {_SHIPPING_TEXT[shipping]}, budget "
            + (f"{campaign.cases:,} cases per shard" if campaign.cases else f"{campaign.budget:g} s")
            + (f" (a first wave of {first_budget:g} s measures each engine's yield)" if waves else ""))
        bc = sc.broadcast(_light(streams))
        raw: list[Any] = []
        fraction: float | None = None
        for wave in (1, 2) if waves else (1,):
            if wave == 2:
                done = [ShardResult.from_dict(d) for d in raw]
                fraction = generate_fraction(campaign, done)
                yields = engine_yield(done)
                shards = plan_shards(campaign, cores, budget=campaign.budget - first_budget,
                                     generate_fraction=fraction, first_index=len(done))
                say("[fuzz] wave 2: yield (signatures per CPU second) "
                    + ", ".join(f"{e} {v:.3g}" for e, v in sorted(yields.items()))
                    + f"; the generate engine gets {fraction:.0%} of the cores' time, {len(shards)} shards")
            raw += _run_wave(sc, campaign, shards, bc, streams, shipping, master, cores, t0, out, say, bar, raw)
        bc.unpersist()
    finally:
        if own:
            _stop_quietly(spark)
    results = tuple(sorted((ShardResult.from_dict(d) for d in raw), key=lambda r: r.index))
    findings = merge_findings(results)
    if minimise_findings and findings:
        say(f"[fuzz] minimising {len(findings)} finding(s) …")
        findings = _minimise_all(campaign, findings)
    report = CampaignReport(campaign, master, cores, results, tuple(findings), time.perf_counter() - t0,
                            describe(streams), shipping=shipping, driver_backend=_codec.BACKEND,
                            generate_fraction=fraction)
    if out is not None:
        report = write_outputs(report, out)
    return report


def _run_wave(sc: Any, campaign: Campaign, shards: list[Any], bc: Any, streams: Sequence[SeedStream],
              shipping: str, master: str, cores: int, t0: float, out: Path | str | None,
              say: Callable[[str], None], bar: bool, earlier: list[Any]) -> list[Any]:
    """Run one wave of shards as a Spark job; on an interrupt, write the partial report of
    the earlier waves and the shards of this one that finished, then re-raise."""
    from ..corpus.load import describe

    acc = sc.accumulator(0)
    host = sc.getConf().get("spark.driver.host", "127.0.0.1")
    live, finished = _LiveCounts(host), _FinishedShards(host)
    report_to, results_to = live.address, finished.address
    rdd = sc.parallelize(shards, len(shards)).map(lambda s: _shard_task(s, bc, acc, report_to, results_to))
    expected = sum(s.budget for s in shards) / max(1, cores) if not campaign.cases else 0.0
    use_bar = bar and sys.stderr.isatty()
    with _Progress(sc, len(shards), expected, None if use_bar else say, acc, live):
        try:
            return _collect_interruptibly(sc, rdd)
        except KeyboardInterrupt:
            # stopped from outside: keep what finished, say so, then stop as asked
            got = [*earlier, *finished.results()]
            partial = CampaignReport(
                campaign, master, cores,
                tuple(sorted((ShardResult.from_dict(d) for d in got), key=lambda r: r.index)),
                (), time.perf_counter() - t0, describe(streams), shipping=shipping,
                driver_backend=_codec.BACKEND, partial=True,
            )
            partial = replace(partial, findings=tuple(merge_findings(partial.shards)))
            if out is not None:
                partial = write_outputs(partial, out)
            say(f"[fuzz] interrupted: {len(partial.shards)} shards finished "
                f"({partial.cases:,} cases, {len(partial.findings)} finding(s))"
                + (f"; partial summary in {partial.paths['summary']}" if partial.paths else ""))
            raise
        except Exception as exc:  # noqa: BLE001 - a task failed: say which, no JVM trace
            text = str(exc)
            hint = next((ln.strip() for ln in text.splitlines() if "Error" in ln or "error" in ln), text[:300])
            raise SparkJobError(f"the fuzz job failed: {hint}") from None
        finally:
            live.close()
            finished.close()


def _minimise_all(campaign: Campaign, findings: list[Finding]) -> list[Finding]:
    from .oracles import DifferentialOracle, ReferenceOracle
    from .shards import _open_target

    adapter = _open_target(campaign)
    try:
        oracle: Any = DifferentialOracle(adapter) if adapter is not None else ReferenceOracle(json_every=1)
        # at most ~30 s in all, shared by the findings (an adapter answers slowly)
        each = min(2.0 if adapter is None else 10.0, max(0.5, 30.0 / len(findings)))
        return [minimise(f, oracle, max_seconds=each) for f in findings]
    finally:
        if adapter is not None:
            adapter.close()


def write_outputs(report: CampaignReport, out: Path | str) -> CampaignReport:
    """Write ``findings/<id>.json`` (regression fixtures), ``findings.parquet`` and
    ``summary.json`` into *out*; return the report with their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fdir = out / "findings"
    paths: dict[str, str] = {}
    for f in report.findings:
        write_regression(f, fdir, report.campaign)
    if report.findings:
        paths["findings"] = str(fdir)
    paths["table"] = str(_write_table(report, out / "findings.parquet"))
    paths["summary"] = str(out / "summary.json")
    report = replace(report, paths=paths)
    (out / "summary.json").write_text(json.dumps(report.summary(), indent=1) + "\n", encoding="utf-8")
    return report


_COLUMNS = ("id", "signature", "oracle", "detail", "engine", "target", "shard", "case_index", "count",
            "kind", "context", "payloads", "minimised", "ops")


def _rows(report: CampaignReport) -> list[dict[str, Any]]:
    rows = []
    for f in report.findings:
        rows.append({
            "id": f.id, "signature": f.signature, "oracle": f.oracle, "detail": f.detail, "engine": f.engine,
            "target": f.target, "shard": f.shard, "case_index": f.case_index, "count": f.count, "kind": f.kind,
            "context": json.dumps(f.context, sort_keys=True), "payloads": [p.hex() for p in f.payloads],
            "minimised": [p.hex() for p in (f.minimised or f.payloads)], "ops": list(f.ops),
        })
    return rows


def _write_table(report: CampaignReport, path: Path) -> Path:
    """The findings table as Parquet (pyarrow; Spark's writer if pyarrow is missing)."""
    rows = _rows(report)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return _write_table_spark(rows, path)
    schema = pa.schema([
        ("id", pa.string()), ("signature", pa.string()), ("oracle", pa.string()), ("detail", pa.string()),
        ("engine", pa.string()), ("target", pa.string()), ("shard", pa.int32()), ("case_index", pa.int64()),
        ("count", pa.int64()), ("kind", pa.string()), ("context", pa.string()),
        ("payloads", pa.list_(pa.string())), ("minimised", pa.list_(pa.string())), ("ops", pa.list_(pa.string())),
    ])
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path)
    return path


def _write_table_spark(rows: list[dict[str, Any]], path: Path) -> Path:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

    spark = SparkSession.getActiveSession() or spark_session("local[1]", "pgwire-spec findings table")
    s, i, long_ = StringType(), IntegerType(), LongType()
    schema = StructType([
        StructField("id", s), StructField("signature", s), StructField("oracle", s), StructField("detail", s),
        StructField("engine", s), StructField("target", s), StructField("shard", i), StructField("case_index", long_),
        StructField("count", long_), StructField("kind", s), StructField("context", s),
        StructField("payloads", ArrayType(s)), StructField("minimised", ArrayType(s)), StructField("ops", ArrayType(s)),
    ])
    target = path.with_suffix(".parquet.d") if path.suffix == ".parquet" else path
    spark.createDataFrame([tuple(r[c] for c in _COLUMNS) for r in rows], schema).coalesce(1) \
        .write.mode("overwrite").parquet(str(target))
    return target


def format_report(report: CampaignReport) -> str:
    """The campaign's report for the terminal."""
    c = report.campaign
    lines = [
        f"fuzz campaign {c.name}: target {c.adapter_cmd or c.target}, seed {c.seed}, master {report.master} "
        f"({report.cores} cores), corpus {report.corpus}",
        f"{'shard':>5} {'engine':<9} {'cases':>11} {'seconds':>8} {'cases/s':>10} {'per CPU s':>10} "
        f"{'accepted':>9} {'rejected':>9} {'findings':>8}",
    ]
    for s in report.shards:
        lines.append(f"{s.index:>5} {s.engine:<9} {s.cases:>11,} {s.seconds:>8.2f} {s.rate:>10,.0f} "
                     f"{s.cpu_rate:>10,.0f} {s.accepted:>9,} {s.rejected:>9,} {len(s.findings):>8}")
        for note in s.notes:
            lines.append(f"      note: {note}")
    for engine, e in sorted(report.per_engine().items()):
        lines.append(f"engine {engine}: {int(e['cases']):,} cases in {e['seconds']:.1f} task-seconds = "
                     f"{e['cases_per_second_per_core']:,.0f} cases/s per task "
                     f"({e['cases_per_cpu_second']:,.0f} per CPU second)")
    if report.generate_fraction is not None:
        lines.append(f"second wave: the generate engine had {report.generate_fraction:.0%} of the cores' time "
                     "(its share of the first wave's yield, within the campaign's floor and cap)")
    names = {"c": "C", "python": "pure Python"}
    lines.append(f"package: {_SHIPPING_TEXT.get(report.shipping, report.shipping or '?')}; driver codec "
                 f"{names.get(report.driver_backend, report.driver_backend or '?')}")
    for where, e in report.executors().items():
        lines.append(f"executor {where}: {names.get(e['backend'], e['backend'] or '?')} codec, {e['shards']} shard(s), "
                     f"{e['cases']:,} cases, {e['cases_per_second']:,.0f} cases/s "
                     f"({e['cases_per_cpu_second']:,.0f} per CPU second)")
    slow = [w for w, e in report.executors().items() if e["backend"] == "python"]
    if slow and report.driver_backend == "c":
        lines.append(f"note: {len(slow)} executor(s) ran the pure-Python codec (no C extension there: ship a "
                     "virtualenv with the package installed, see the README)")
    lines.append(f"oracles: {', '.join(report.oracles())}")
    lines.append(f"total: {report.cases:,} cases in {report.seconds:.1f} s wall "
                 f"({report.cases / report.seconds if report.seconds else 0:,.0f} cases/s)")
    if report.findings:
        lines.append(f"findings ({len(report.findings)} distinct, {sum(f.count for f in report.findings)} cases):")
        for f in report.findings:
            size = sum(len(p) for p in (f.minimised or f.payloads))
            lines.append(f"  {f.id} ×{f.count} [{f.oracle}] {f.signature}: {f.detail[:140]} ({size} bytes)")
    else:
        lines.append("findings: none")
    for name, p in report.paths.items():
        lines.append(f"{name}: {p}")
    return "\n".join(lines)


# -- fixture verification on Spark ------------------------------------------------------------------------


def _verify_task(item: tuple[str, Any], verify: Callable[..., Any]) -> list[Any]:
    file, group = item
    return list(verify(group, file=file))


def verify_fixtures_spark(
    paths: Sequence[str | Path],
    *,
    master: str = "local[*]",
    verify: Callable[..., Any] | None = None,
    spark: Any = None,
    say: Callable[[str], None] = print,
    ship: bool | None = None,
) -> Any:
    """Verify golden fixture files as a Spark job: one task per fixture group (an option
    set of one file), each running *verify* (default
    :func:`pgwire_spec.capture.verify.verify_group`, ``verify(group, file=…) -> mismatches``).
    Returns a :class:`pgwire_spec.capture.VerifyReport`."""
    from ..capture.fixture import FORMAT, document_format, find_fixture_files, load_document, parse_fixture
    from ..capture.verify import VerifyReport, verify_group, verify_paths

    fn = verify or verify_group
    t0 = time.perf_counter()
    files = find_fixture_files(list(paths))
    items: list[tuple[str, Any]] = []
    report = VerifyReport()
    other: list[Path] = []
    for path in files:
        doc = load_document(path)
        if document_format(doc) != FORMAT:
            other.append(path)  # walsender sessions, physical streams: small, verified here
            continue
        fx = parse_fixture(doc, path)
        report.files += 1
        report.groups += len(fx.groups)
        report.cases += sum(len(g.cases) for g in fx.groups)
        items += [(str(path), g) for g in fx.groups]
    if other:
        rest = verify_paths(other)
        report.files += rest.files
        report.groups += rest.groups
        report.cases += rest.cases
        report.mismatches += rest.mismatches
    if not items:
        raise SparkJobError(f"no fixture groups in {', '.join(map(str, paths))}")
    if spark is None:
        spark = _running_session(master)
    own = spark is None
    if own:
        say(f"[verify] starting Spark ({master}) …")
        spark = spark_session(master, "pgwire-spec verify-fixtures", ship=ship)
    sc = spark.sparkContext
    try:
        say(f"[verify] {_SHIPPING_TEXT[_session_shipping(spark)]}")
        say(f"[verify] {sum(len(g.cases) for _, g in items):,} pgoutput cases in {len(items)} option sets as "
            f"Spark tasks on {sc.defaultParallelism} cores ({len(other)} session/physical files verified here)")
        mismatches = sc.parallelize(items, min(len(items), 4 * sc.defaultParallelism)) \
            .flatMap(lambda it: _verify_task(it, fn)).collect()
    finally:
        if own:
            _stop_quietly(spark)
    report.mismatches = list(mismatches) + report.mismatches
    report.seconds = time.perf_counter() - t0
    return report
