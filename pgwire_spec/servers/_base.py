"""What every provider shares: the running-server record, the provider interface, and a
local cluster (initdb + postgres) run as an unprivileged user on a free loopback port.

PostgreSQL refuses to run as root; when we are root the cluster runs as ``postgres`` (or
``$PGWIRE_SPEC_USER``), created with ``useradd`` when missing. Everything a provider
creates (data directory, socket directory, the postmaster) is removed by :meth:`stop`,
also when ``start`` fails half-way, on Ctrl-C, and at interpreter exit.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from ..errors import PgWireError
from ._watchdog import PREFIX, reap_stale, write_owner

__all__ = [
    "Server",
    "ProviderError",
    "Provider",
    "LocalCluster",
    "CAPTURE_SETTINGS",
    "SETTING_SINCE",
    "free_port",
    "server_user",
    "cache_dir",
    "describe_server",
    "ClusterProvider",
]


class ProviderError(PgWireError):
    """A server that cannot be found, started, reached or stopped."""


@dataclass(frozen=True, slots=True)
class Server:
    """A running PostgreSQL server as a provider hands it out."""

    provider: str
    host: str
    port: int
    user: str
    dbname: str
    #: ``server_version`` as the server reports it, e.g. ``"16.4"`` or ``"15.8 (Debian …)"``.
    version: str
    #: ``server_version_num`` // 10000, e.g. 16.
    major: int
    #: Directory of the server binaries, when the provider knows it.
    bin_dir: Path | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def dsn(self) -> str:
        """A libpq connection string for this server."""
        dsn = f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"
        if self.password:
            dsn += " password=" + "'" + self.password.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return dsn


#: Server settings every provider starts with (what capture needs: logical decoding,
#: two-phase, streaming of small transactions; fsync off because nothing here must survive).
CAPTURE_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "max_prepared_transactions": "10",
    "logical_decoding_work_mem": "64kB",
    "fsync": "off",
    "full_page_writes": "off",
    # Deterministic captures: no autovacuum/ANALYZE invalidating relation caches at random.
    "autovacuum": "off",
    "max_connections": "40",
    "shared_buffers": "16MB",
    "timezone": "UTC",
    "log_min_messages": "warning",
}

#: Settings that exist only from a major on (older servers refuse unknown settings).
SETTING_SINCE: dict[str, int] = {"logical_decoding_work_mem": 13}

_LIVE: weakref.WeakSet[Provider] = weakref.WeakSet()


def _stop_all() -> None:
    for provider in list(_LIVE):
        try:
            provider.stop()
        except Exception:  # pragma: no cover - best effort at exit
            pass


atexit.register(_stop_all)


class Provider(ABC):
    """One way of getting a PostgreSQL server: ``start()`` -> :class:`Server`, ``stop()``.

    Use it as a context manager; ``stop`` is idempotent and leaves nothing behind.
    """

    name: ClassVar[str]

    def __init__(self) -> None:
        self.server: Server | None = None

    @abstractmethod
    def _start(self) -> Server: ...

    @abstractmethod
    def _stop(self) -> None: ...

    def start(self) -> Server:
        if self.server is not None:
            return self.server
        _LIVE.add(self)
        try:
            self.server = self._start()
        except BaseException:
            self.stop()
            raise
        return self.server

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            self.server = None
            _LIVE.discard(self)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def describe(self) -> str:
        """Short text naming the provider and what it runs (for fixture headers)."""
        return self.name


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bind port 0; the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _world_traversable(path: Path) -> bool:
    for part in [path, *path.parents]:
        if part.exists() and not (part.stat().st_mode & 0o001):
            return False
    return True


def cache_dir(kind: str) -> Path:
    """Where downloaded servers are kept: ``$PGWIRE_SPEC_CACHE/<kind>``, else
    ``~/.cache/pgwire-spec/<kind>``; as root, when the home directory is closed to other
    users (the server user must execute the binaries), ``/var/cache/pgwire-spec/<kind>``."""
    env = os.environ.get("PGWIRE_SPEC_CACHE")
    if env:
        root = Path(env)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        root = base / "pgwire-spec"
        if os.geteuid() == 0 and not _world_traversable(root.parent):
            root = Path("/var/cache/pgwire-spec")
    path = root / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def server_user() -> tuple[str, int, int] | None:
    """(name, uid, gid) of the unprivileged user servers run as when we are root, created if
    missing; None when we are not root (the server then runs as us)."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("PGWIRE_SPEC_USER", "postgres")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        proc = subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", name],
            capture_output=True, text=True,
        )
        if proc.returncode not in (0, 9):  # 9: created meanwhile by someone else
            raise ProviderError(
                f"cannot create the unprivileged user {name!r} PostgreSQL must run as: "
                f"{proc.stderr.strip() or proc.returncode}"
            ) from None
        entry = pwd.getpwnam(name)
    return entry.pw_name, entry.pw_uid, entry.pw_gid


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:]) or "(empty log)"


class LocalCluster:
    """A throw-away cluster from a bin dir: ``initdb`` then ``postgres`` on 127.0.0.1.

    Not a provider itself: providers that have binaries (system, wheel, npm) own one.
    """

    def __init__(
        self,
        bin_dir: Path,
        *,
        settings: dict[str, str] | None = None,
        lib_dir: Path | None = None,
        startup_timeout: float = 60.0,
        initdb_args: tuple[str, ...] = (),
    ) -> None:
        self.bin_dir = Path(bin_dir)
        self.settings = {**CAPTURE_SETTINGS, **(settings or {})}
        #: Extra initdb arguments, e.g. ``("--wal-segsize=1",)``.
        self.initdb_args = tuple(initdb_args)
        self.lib_dir = lib_dir
        self.startup_timeout = startup_timeout
        self.root: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    # -- helpers ---------------------------------------------------------------------------
    def _binary(self, name: str) -> str:
        path = self.bin_dir / name
        if not path.is_file():
            raise ProviderError(f"expected the PostgreSQL program {name} in {self.bin_dir}, found nothing")
        return str(path)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        env["LANG"] = "C"
        if self.lib_dir is not None:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [str(self.lib_dir), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
            )
        return env

    def _run_kwargs(self) -> dict[str, Any]:
        user = server_user()
        if user is None:
            return {}
        _, uid, gid = user
        return {"user": uid, "group": gid, "extra_groups": []}

    # -- life cycle ------------------------------------------------------------------------
    def binary_major(self) -> int:
        """The major of the binaries (``postgres --version``)."""
        postgres = self._binary("postgres")
        try:
            out = subprocess.run([postgres, "--version"], capture_output=True, text=True, timeout=30,
                                 env=self._env())
        except (OSError, subprocess.SubprocessError) as exc:
            raise ProviderError(f"cannot run {postgres} --version: {exc}") from None
        for word in out.stdout.split():
            head = word.split(".")[0]
            if head.isdigit():
                return int(head)
        raise ProviderError(f"expected '{postgres} --version' to print a version, found {out.stdout.strip()!r} "
                          f"{out.stderr.strip()[-300:]!r}")

    def start(self) -> tuple[str, int]:
        """Create and start the cluster; return (host, port)."""
        initdb = self._binary("initdb")
        self._binary("postgres")
        reap_stale()  # what runs killed before us left behind
        self.root = new_root()
        data, sock = self.root / "data", self.root / "sock"
        sock.mkdir()
        user = server_user()
        if user is not None:
            for p in (self.root, sock):
                os.chown(p, user[1], user[2])
        self.root.chmod(0o755)
        proc = subprocess.run(
            [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
             "--locale=C", "--no-sync", *self.initdb_args],
            capture_output=True, env=self._env(), cwd=str(self.root), **self._run_kwargs(),
        )
        if proc.returncode != 0:
            raise ProviderError(
                f"initdb ({initdb}) failed with status {proc.returncode}: "
                f"{proc.stderr.decode(errors='replace').strip()[-800:]}"
            )
        return self.launch(data)

    def launch(self, data: Path) -> tuple[str, int]:
        """Start postgres on the existing data directory *data* (inside :attr:`root`, owned
        by the server user); return (host, port)."""
        postgres = self._binary("postgres")
        assert self.root is not None
        # Older servers refuse settings they do not know.
        major = self.binary_major()
        self.settings = {k: v for k, v in self.settings.items() if SETTING_SINCE.get(k, 0) <= major}
        sock, log = self.root / "sock", self.root / "postgres.log"
        sock.mkdir(exist_ok=True)
        user = server_user()
        if user is not None:
            os.chown(sock, user[1], user[2])
        # Several users and test runs start servers at once: a port found free may be
        # taken before postgres binds it; retry with another.
        for _attempt in range(5):
            self.port = free_port()
            args = [postgres, "-D", str(data), "-p", str(self.port), "-h", "127.0.0.1",
                    "-k", str(sock)]
            for key, value in self.settings.items():
                args += ["-c", f"{key}={value}"]
            with open(log, "ab") as logf:
                if user is not None:
                    os.chown(log, user[1], user[2])
                # Own session: a Ctrl-C in the terminal reaches us, and we stop the server.
                self.process = subprocess.Popen(
                    args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self._env(), cwd=str(self.root), start_new_session=True,
                    **self._run_kwargs(),
                )
            self._watch(self.process.pid)
            if self._wait_ready(log):
                return "127.0.0.1", self.port
            if "could not bind" not in _tail(log, 30) and "in use" not in _tail(log, 30):
                break
        raise ProviderError(f"postgres ({postgres}) did not start: {_tail(log)}")

    def _watch(self, postmaster: int) -> None:
        """Record the postmaster in the owner file and start its watchdog (see
        :mod:`._watchdog`): if this process dies without stopping it, the watchdog does."""
        assert self.root is not None
        write_owner(self.root, postmaster)
        self._unwatch()
        read_end, write_end = os.pipe()
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-m", "pgwire_spec.servers._watchdog", str(self.root)], stdin=read_end,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(
                    [str(Path(__file__).resolve().parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])])},
            )
        finally:
            os.close(read_end)
        self._watch_fd = write_end

    def _unwatch(self) -> None:
        """Let the watchdog go (it finds nothing left to do)."""
        fd, self._watch_fd = getattr(self, "_watch_fd", None), None
        if fd is not None:
            os.close(fd)
        dog, self._watchdog = getattr(self, "_watchdog", None), None
        if dog is not None:
            try:
                dog.wait(10)
            except subprocess.TimeoutExpired:
                dog.kill()
                dog.wait()

    def _wait_ready(self, log: Path) -> bool:
        import psycopg

        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                    connect_timeout=2,
                ):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._kill()
        raise ProviderError(f"postgres did not accept connections in {self.startup_timeout:.0f} s: {_tail(log)}")

    def _kill(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        # SIGINT: "fast shutdown" (docs: Shutting Down the Server); SIGQUIT if it hangs.
        for sig, wait in ((signal.SIGINT, 15.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            try:
                if sig == signal.SIGKILL:
                    os.killpg(proc.pid, sig)  # the postmaster's children too
                else:
                    proc.send_signal(sig)
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return

    def stop(self) -> None:
        try:
            self._kill()
        finally:
            root, self.root = self.root, None
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
            self._unwatch()


def new_root() -> Path:
    """A new cluster directory in the temporary folder, marked as this process's."""
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    write_owner(root)
    return root


def describe_server(provider: str, host: str, port: int, user: str, dbname: str,
                    bin_dir: Path | None = None, connect_timeout: int = 5,
                    password: str | None = None) -> Server:
    """Connect once and build the :class:`Server` record (version, major)."""
    import psycopg

    try:
        with psycopg.connect(host=host, port=port, user=user, dbname=dbname, password=password,
                             connect_timeout=connect_timeout, autocommit=True) as conn:
            version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            num = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
    except psycopg.Error as exc:
        raise ProviderError(
            f"cannot reach PostgreSQL at host={host} port={port} user={user} dbname={dbname}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        ) from None
    return Server(provider, host, port, user, dbname, version, num // 10000, bin_dir, password)


class ClusterProvider(Provider):
    """A provider that runs a :class:`LocalCluster` from a bin dir it finds."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.cluster: LocalCluster | None = None

    @abstractmethod
    def locate(self) -> tuple[Path, Path | None]:
        """(bin dir, lib dir or None) of the binaries to run; may download them."""

    def _start(self) -> Server:
        bin_dir, lib_dir = self.locate()
        self.cluster = LocalCluster(bin_dir, settings=self.settings, lib_dir=lib_dir)
        host, port = self.cluster.start()
        return describe_server(self.name, host, port, "postgres", "postgres", bin_dir)

    def _stop(self) -> None:
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.stop()
