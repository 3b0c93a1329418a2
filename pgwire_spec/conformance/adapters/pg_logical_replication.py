"""Adapter for the npm package ``pg-logical-replication``: its pgoutput parser in Node.

:func:`command` installs the package (pinned to :data:`VERSION`, override with
``PGWIRE_SPEC_PLR_VERSION``) with ``npm install`` into a cache directory
(``$PGWIRE_SPEC_CACHE`` or ``~/.cache/pgwire-spec``) on first use, so a fresh machine with
node and npm works, and returns the command line that runs ``pg_logical_replication.js``
against it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from ..adapter import AdapterError

__all__ = ["VERSION", "cache_dir", "install", "command", "client_command", "CLIENT_OPTIONS"]

#: The pinned version the reports were made with.
VERSION = "2.5.0"
SCRIPT = Path(__file__).with_name("pg_logical_replication.js")
CLIENT_SCRIPT = Path(__file__).with_name("pg_logical_replication_client.js")

#: The pgoutput options the package as a client can send: PgoutputPlugin's proto_version,
#: publication_names and messages (its profile and shape are in its harness's hello).
CLIENT_OPTIONS = ("proto_version", "publication_names", "messages")


def cache_dir() -> Path:
    base = os.environ.get("PGWIRE_SPEC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pgwire-spec")
    return Path(base)


def install(version: str | None = None) -> Path:
    """Install pg-logical-replication into the cache (once); return its prefix dir."""
    version = version or os.environ.get("PGWIRE_SPEC_PLR_VERSION") or VERSION
    prefix = cache_dir() / "npm" / f"pg-logical-replication-{version}"
    marker = prefix / "node_modules" / "pg-logical-replication" / "package.json"
    if marker.is_file():
        return prefix
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise AdapterError("pg-logical-replication needs node and npm on PATH (Debian: apt-get install nodejs npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return prefix
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(prefix),
             f"pg-logical-replication@{version}"],
            capture_output=True, text=True, timeout=600,
        )
        if proc.returncode != 0 or not marker.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise AdapterError(f"npm install pg-logical-replication@{version} failed: {' | '.join(tail)}")
    return prefix


def command(version: str | None = None) -> list[str]:
    """The adapter's command line (installs the package first if needed)."""
    prefix = install(version)
    node = shutil.which("node")
    if node is None:  # pragma: no cover - install() checked
        raise AdapterError("node not found on PATH")
    return [node, str(SCRIPT), str(prefix)]


def client_command(version: str | None = None) -> list[str]:
    """The package as a whole client (``pg_logical_replication_client.js``): its command
    line with the wire adapter's placeholders (it says its name, version, profile and
    shape in its hello line)."""
    version = version or os.environ.get("PGWIRE_SPEC_PLR_VERSION") or VERSION
    prefix = install(version)
    node = shutil.which("node")
    if node is None:  # pragma: no cover - install() checked
        raise AdapterError("node not found on PATH")
    return [node, str(CLIENT_SCRIPT), str(prefix), "{host}", "{port}", "{user}", "{dbname}", "{slot}", "{options}"]
