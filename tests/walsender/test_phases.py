"""The connection-phase table: complete, and followed for every (phase, message kind)."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.walsender.core import INPUT_PHASES, MESSAGE_KINDS, PHASES, TRANSITIONS, message_kind
from pgwire_spec.wire import (
    CancelRequest,
    CopyDone,
    EmptyQueryResponse,
    Parse,
    PasswordMessage,
    Query,
    SSLRequest,
    StartupMessage,
    Terminate,
    WireMessage,
)

from ._client import Client
from .scenarios import accounts

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def _other() -> WireMessage:
    """A message no frontend sends (the reader refuses its type byte; handed one anyway,
    the table still has a row for it)."""
    return EmptyQueryResponse()


SAMPLES: dict[str, Any] = {
    "encryption": SSLRequest(),
    "cancel": CancelRequest(999, b"\x00\x00\x00\x00"),
    "startup": StartupMessage(parameters=(("user", "replicator"), ("database", "postgres"),
                                          ("replication", "database"))),
    "password": PasswordMessage(b"wrong"),
    "query": Query("IDENTIFY_SYSTEM"),
    "extended": Parse("", "SELECT 1"),
    "terminate": Terminate(),
    "copy": CopyDone(),
}


def _client(phase: str) -> Client:
    data = accounts(16)
    data["auth"] = {"method": "md5" if phase == "auth" else "trust", "users": {"replicator": "s3cret"}}
    c = Client(ServerState(Scenario.from_dict(data)))
    if phase == "startup":
        return c
    c.startup("replicator")
    if phase in ("ready", "streaming"):
        assert c.conn.phase == "ready"
    if phase == "streaming":
        c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
        c.query(START)
    assert c.conn.phase == phase
    return c


def test_table_is_complete() -> None:
    assert set(TRANSITIONS) == {(p, k) for p in INPUT_PHASES for k in MESSAGE_KINDS}
    for action, after in TRANSITIONS.values():
        assert after and after <= set(PHASES), action


@pytest.mark.parametrize("kind", MESSAGE_KINDS)
@pytest.mark.parametrize("phase", INPUT_PHASES)
def test_every_phase_and_message(phase: str, kind: str) -> None:
    c = _client(phase)
    msg = SAMPLES[kind] if kind != "other" else _other()
    assert message_kind(msg) == kind
    c.conn._dispatch(msg, c.clock)
    _, after = TRANSITIONS[(phase, kind)]
    assert c.conn.phase in after, (phase, kind, c.conn.phase)
    c.pump()  # and the connection goes on without an exception
