"""Start a real PostgreSQL 15 (Debian's ``postgresql-15``) for a test.

A session-scoped fixture factory over :mod:`pgwire_spec.servers` (which does the work:
``initdb -A trust`` in a temp dir, ``postgres`` as an unprivileged user on a free loopback
port with ``wal_level=logical`` and the other capture settings, everything removed at the
end, also on failure)::

    from tests._pg15 import pg15  # noqa: F401  (the default fixture)

    @pytest.mark.live
    def test_something(pg15: Server) -> None:
        sock = socket.create_connection((pg15.host, pg15.port))

    # other server settings: a fixture of your own, one server per fixture and session
    pg15_small_wal = pg15_fixture({"max_wal_size": "64MB"}, name="pg15_small_wal")

    # files the server reads (pg_hba.conf …): written to a directory the server user can
    # read; "{dir}" in a setting is that directory
    pg15_scram = pg15_fixture({"hba_file": "{dir}/pg_hba.conf"}, name="pg15_scram",
                              files={"pg_hba.conf": "host all all 127.0.0.1/32 scram-sha-256\n"})

A fixture defined in a test module is seen by that module only: to share one server
between modules, import it in their ``conftest.py``. For any major 10-18 use
``tests._servers.pg_server`` instead.

When /usr/lib/postgresql/15/bin is missing and we are root, :func:`ensure_pg15` installs
the Debian package (``apt-get install postgresql-15``) without letting it create and start
its own "main" cluster; when that is not possible the tests that need the server are
skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.servers import ProviderError, Server, provider
from pgwire_spec.servers.system import find_system_bin_dir

__all__ = ["ensure_pg15", "pg15_fixture", "pg15"]

_PACKAGE = "postgresql-15"
# postgresql-common creates and starts a "main" cluster on port 5432 when a server package
# is installed, unless told not to; our tests start their own clusters.
_NO_MAIN_CLUSTER = Path("/etc/postgresql-common/createcluster.d/pgwire-spec.conf")


def ensure_pg15() -> Path:
    """The bin dir of PostgreSQL 15, installing Debian's package if needed (as root)."""
    try:
        return find_system_bin_dir(15)
    except ProviderError as missing:
        apt = shutil.which("apt-get")
        if apt is None or os.geteuid() != 0:
            raise ProviderError(f"{missing}; install the Debian package {_PACKAGE}") from None
    _NO_MAIN_CLUSTER.parent.mkdir(parents=True, exist_ok=True)
    if not _NO_MAIN_CLUSTER.exists():
        _NO_MAIN_CLUSTER.write_text("create_main_cluster = false\n")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "install", "-y", "--no-install-recommends", _PACKAGE]
    proc = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:  # a stale package list: update once and retry
        subprocess.run([apt, "update"], capture_output=True, text=True, env=env, timeout=900)
        proc = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise ProviderError(f"apt-get install {_PACKAGE} failed: {proc.stderr.strip()[-500:]}")
    return find_system_bin_dir(15)


def pg15_fixture(
    settings: dict[str, str] | None = None,
    *,
    name: str | None = None,
    files: dict[str, str] | None = None,
) -> Callable[..., Any]:
    """A session-scoped pytest fixture giving a running PostgreSQL 15 :class:`Server`
    (``host``, ``port``, ``user`` ``postgres`` with trust auth, ``dbname`` ``postgres``,
    ``dsn``, ``bin_dir``), started with the capture settings plus *settings*; *files* are
    written first to a directory readable by the server, named ``{dir}`` in *settings*."""

    @pytest.fixture(scope="session", name=name)
    def fixture() -> Iterator[Server]:
        try:
            bin_dir = ensure_pg15()
        except (ProviderError, OSError, subprocess.SubprocessError) as exc:
            pytest.skip(f"needs PostgreSQL 15 ({_PACKAGE}): {exc}")
        folder = Path(tempfile.mkdtemp(prefix="pgwire-spec-pg15-files-")) if files else None
        try:
            final = dict(settings or {})
            if folder is not None:
                folder.chmod(0o755)
                for filename, text in (files or {}).items():
                    (folder / filename).write_text(text)
                    (folder / filename).chmod(0o644)
                final = {k: v.replace("{dir}", str(folder)) for k, v in final.items()}
            prov = provider("system", 15, bin_dir=bin_dir, settings=final)
            try:
                yield prov.start()
            finally:
                prov.stop()
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    return fixture


#: The default PostgreSQL 15 fixture (capture settings: wal_level=logical, trust auth).
pg15 = pg15_fixture(name="pg15")
