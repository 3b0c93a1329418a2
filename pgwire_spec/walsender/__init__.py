"""A fake PostgreSQL walsender: logical replication that real clients accept, driven by
scenarios, with faults on cue and a transcript of every message.

>>> from pgwire_spec.walsender import FakeWalsender, load_scenario
>>> async with FakeWalsender("examples/scenarios/accounts.yaml") as server:
...     subprocess.run(["pg_recvlogical", "-d", server.dsn, ...])

The conversation is a sans-IO core (:mod:`.core`: startup, authentication, simple query,
replication commands, CopyBoth streaming) driven by a thin asyncio shell (:mod:`.server`).
What the server says depends on its persona (the scenario's server version, 10 … 18, see
:mod:`.personas`) and on what each client negotiates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core import Close, Connection, Send, ServerState, SlotState, Wait
from .faults import ACTIONS as FAULT_ACTIONS
from .faults import Fault
from .personas import PERSONAS, Persona, ServerError, StreamOptions, persona
from .scenario import (
    AuthConfig,
    Column,
    CommitPrepared,
    EmitMessage,
    KeepaliveConfig,
    Publication,
    RawStream,
    RollbackPrepared,
    RowDelete,
    RowInsert,
    RowUpdate,
    Scenario,
    ScenarioError,
    ServerInfo,
    Slot,
    Subtransaction,
    Table,
    TableTruncate,
    Transaction,
    load_scenario,
)
from .transcript import Entry, Transcript
from .types import ColumnType, resolve_type

if TYPE_CHECKING:
    from .server import FakeWalsender, SyncFakeWalsender


def __getattr__(name: str) -> Any:
    # The asyncio shell is imported on first use, so the sans-IO core imports no I/O module.
    if name in ("FakeWalsender", "SyncFakeWalsender"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FakeWalsender",
    "SyncFakeWalsender",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "ServerInfo",
    "AuthConfig",
    "Table",
    "Column",
    "ColumnType",
    "resolve_type",
    "Publication",
    "Slot",
    "KeepaliveConfig",
    "Transaction",
    "RowInsert",
    "RowUpdate",
    "RowDelete",
    "TableTruncate",
    "EmitMessage",
    "Subtransaction",
    "CommitPrepared",
    "RollbackPrepared",
    "RawStream",
    "Fault",
    "FAULT_ACTIONS",
    "Transcript",
    "Entry",
    "Persona",
    "PERSONAS",
    "persona",
    "StreamOptions",
    "ServerError",
    "ServerState",
    "Connection",
    "SlotState",
    "Send",
    "Wait",
    "Close",
]
