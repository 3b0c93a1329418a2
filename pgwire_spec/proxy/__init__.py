"""A protocol-aware replication proxy: forwards a client to a real PostgreSQL, checks both
directions of the replication conversation against the reference decoder and the protocol's
rules, records it as a session fixture and plays the fake walsender's faults on the real
stream.

>>> async with ReplicationProxy("host=db port=5432 dbname=app user=repl", record="sessions/") as proxy:
...     run_my_cdc_client(proxy.dsn)
...     assert proxy.violations == []

The core (:mod:`.core`) is sans-IO; :mod:`.server` is its asyncio shell.
"""

from .core import PROXY_ACTIONS, ProxySession, ProxyState, Violation
from .server import ProxyError, ReplicationProxy

__all__ = ["ReplicationProxy", "ProxyError", "ProxyState", "ProxySession", "Violation", "PROXY_ACTIONS"]
