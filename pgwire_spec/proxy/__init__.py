"""A protocol-aware replication proxy: forwards a client to a real PostgreSQL, checks both
directions of the replication conversation against the reference decoder and the protocol's
rules, records it as a session fixture and plays the fake walsender's faults on the real
stream.

>>> async with ReplicationProxy("host=db port=5432 dbname=app user=repl", record="sessions/") as proxy:
...     run_my_cdc_client(proxy.dsn)
...     assert proxy.violations == []

The core (:mod:`.core`) is sans-IO; :mod:`.server` is its asyncio shell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core import PROXY_ACTIONS, ProxySession, ProxyState, Violation

if TYPE_CHECKING:
    from .server import ProxyError, ReplicationProxy


def __getattr__(name: str) -> Any:
    # The asyncio shell is imported on first use, so the sans-IO core imports no I/O module.
    if name in ("ReplicationProxy", "ProxyError"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ReplicationProxy", "ProxyError", "ProxyState", "ProxySession", "Violation", "PROXY_ACTIONS"]
