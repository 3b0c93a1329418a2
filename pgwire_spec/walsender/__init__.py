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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import Close, Compute, Connection, Send, ServerState, SlotState, Wait
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
    from .server import FakeWalsender, SyncFakeWalsender
    from .transcript import Entry, Transcript
    from .types import ColumnType, resolve_type

#: Name -> (module of this package, its name there). Every part is imported on first use:
#: a module that needs one piece (the physical recordings' verifier reads ServerError from
#: .personas) does not pay for the conversation core, and the sans-IO core imports no I/O
#: module (the asyncio shell is .server).
_LAZY: dict[str, tuple[str, str]] = {
    **{n: ("core", n) for n in ("Close", "Compute", "Connection", "Send", "ServerState", "SlotState", "Wait")},
    "FAULT_ACTIONS": ("faults", "ACTIONS"),
    "Fault": ("faults", "Fault"),
    **{n: ("personas", n) for n in ("PERSONAS", "Persona", "ServerError", "StreamOptions", "persona")},
    **{n: ("scenario", n) for n in (
        "AuthConfig", "Column", "CommitPrepared", "EmitMessage", "KeepaliveConfig", "Publication", "RawStream",
        "RollbackPrepared", "RowDelete", "RowInsert", "RowUpdate", "Scenario", "ScenarioError", "ServerInfo",
        "Slot", "Subtransaction", "Table", "TableTruncate", "Transaction", "load_scenario")},
    **{n: ("server", n) for n in ("FakeWalsender", "SyncFakeWalsender")},
    **{n: ("transcript", n) for n in ("Entry", "Transcript")},
    **{n: ("types", n) for n in ("ColumnType", "resolve_type")},
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


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
    "Compute",
]
