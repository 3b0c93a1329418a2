"""Sans-IO harness: the fake walsender's core driven by the physical client, no sockets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pgwire_spec.capture.session import NEED_DATA, Replicated
from pgwire_spec.physical import read_recording
from pgwire_spec.physical.client import PhysicalClient
from pgwire_spec.physical.scenario import FIXTURES
from pgwire_spec.replication.messages import PrimaryKeepalive, XLogData
from pgwire_spec.walsender import Scenario
from pgwire_spec.walsender.core import Close, Connection, Send, ServerState, Wait
from pgwire_spec.wire import WireMessage

RECORDING_PATH = FIXTURES / "pg15-timeline-switch.json.gz"
RECORDING = read_recording(RECORDING_PATH)


def scenario(**physical: Any) -> Scenario:
    """A scenario serving the recording (``physical`` keys override), trust auth."""
    version = physical.pop("version", None)
    data: dict[str, Any] = {"physical": {"recording": RECORDING, **physical}}
    if version is not None:
        data["server"] = {"version": version}
    return Scenario.from_dict(data)


class Clock:
    """The shell's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Pair:
    """One connection of a fake server and a sans-IO physical client talking to it."""

    def __init__(self, state: ServerState, clock: Clock, application_name: str = "pgwire-spec-physical") -> None:
        self.state = state
        self.clock = clock
        self.conn: Connection = state.connect()
        self.client = PhysicalClient(user="postgres", segment_size=RECORDING.segment_size,
                                     application_name=application_name)
        self.closed: Close | None = None
        self.waits: list[float | None] = []

    def pump(self, data: bytes = b"", *, max_rounds: int = 100_000) -> list[Any]:
        """Give the server *data*, run it until it waits, hand what it sent to the client;
        the client's events."""
        if data:
            self.conn.receive_data(data)
        for _ in range(max_rounds):
            action = self.conn.next_action(self.clock.now)
            if isinstance(action, Send):
                self.client.receive_data(action.data)
                continue
            if isinstance(action, Wait):
                self.waits.append(action.deadline)
            elif isinstance(action, Close):
                self.closed = action
            break
        return list(self.events())

    def events(self) -> Iterator[Any]:
        while True:
            try:
                ev = self.client.next_event()
            except Exception:
                return
            if ev is NEED_DATA:
                return
            yield ev.payload if isinstance(ev, Replicated) else ev

    def startup(self) -> list[Any]:
        return self.pump(self.client.startup())

    def query(self, sql: str) -> list[Any]:
        return self.pump(self.client.query(sql))


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def xlogdata(events: list[Any]) -> list[XLogData]:
    return [e for e in events if isinstance(e, XLogData)]


def without_keepalives(events: list[Any]) -> list[Any]:
    return [e for e in events if not isinstance(e, PrimaryKeepalive)]


def connect(state: ServerState, clock: Clock, **kw: Any) -> Pair:
    pair = Pair(state, clock, **kw)
    events = pair.startup()
    assert kinds(events)[-1] == "ReadyForQuery", events
    return pair


def fields(msg: WireMessage) -> dict[str, str]:
    return dict(getattr(msg, "fields", ()))
