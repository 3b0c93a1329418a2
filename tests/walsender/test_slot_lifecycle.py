"""The slot lifecycle in the fake (sans-IO): slots invalidated (by scenario, by a fault at a
position, at once as the control plane adds it), dropped behind the client's back, kept
active after a disconnect, pg_replication_slots as each major shows them, and
wal_sender_timeout enforced."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.replication.messages import PrimaryKeepalive
from pgwire_spec.walsender import Fault, Scenario, ScenarioError, ServerState
from pgwire_spec.walsender.scenario import Limits
from pgwire_spec.wire import CopyBothResponse, DataRow, ErrorResponse, RowDescription

from ._client import Client, xlog

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def _scenario(version: str = "16.4", **slot: Any) -> Scenario:
    return Scenario.from_dict({
        "server": {"version": version},
        "publications": {"pub": ["public.t"]},
        "tables": {"public.t": {"columns": [{"name": "id", "type": "int4", "key": True}]}},
        "transactions": [{"changes": [{"insert": "public.t", "new": {"id": i}}]} for i in range(5)],
        "slots": [{"name": "s", **slot}],
    })


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _error(messages: list[Any]) -> ErrorResponse:
    errs = [m for m in messages if isinstance(m, ErrorResponse)]
    assert errs, messages
    return errs[0]


def _slots_row(state: ServerState) -> dict[str, Any]:
    c = Client(state)
    c.startup(replication=None)
    out = c.query("SELECT * FROM pg_replication_slots")
    names = [f.name for f in next(m for m in out if isinstance(m, RowDescription)).fields]
    row = next(m for m in out if isinstance(m, DataRow)).values
    return dict(zip(names, [None if v is None else v.decode() for v in row]))


@pytest.mark.parametrize(("version", "cause", "message", "detail"), [
    ("15.8", "wal_removed", 'cannot read from logical replication slot "s"',
     "This slot has been invalidated because it exceeded the maximum reserved size."),
    ("16.4", "rows_removed", 'can no longer get changes from replication slot "s"',
     "This slot has been invalidated because it was conflicting with recovery."),
    ("17.2", "wal_removed", 'can no longer get changes from replication slot "s"',
     "This slot has been invalidated because it exceeded the maximum reserved size."),
    ("18.0", "idle_timeout", 'can no longer access replication slot "s"',
     'This replication slot has been invalidated due to "idle_timeout".'),
])
def test_an_invalidated_slot_refuses_streaming_in_its_majors_words(version: str, cause: str, message: str,
                                                                    detail: str) -> None:
    state = ServerState(_scenario(version, invalidated=cause))
    c = Client(state)
    c.startup()
    err = _error(c.query(START))
    assert (err.code, err.message, err.detail) == ("55000", message, detail)
    row = _slots_row(state)
    major = int(version.split(".")[0])
    assert row["wal_status"] == "lost" and row["active"] == "f"
    assert ("conflicting" in row) == (major >= 16) and ("invalidation_reason" in row) == (major >= 17)
    if major >= 17:
        assert row["invalidation_reason"] == cause and row["inactive_since"] is not None
        assert row["conflicting"] == ("t" if cause == "rows_removed" else "f")
    elif major == 16:
        assert row["conflicting"] == "t"  # 16 says true for any cause (seen on a real 16)


def test_causes_are_checked_against_the_major() -> None:
    with pytest.raises(ScenarioError, match="idle_timeout"):
        _scenario("17.2", invalidated="idle_timeout")
    state = ServerState(_scenario("15.8"))
    with pytest.raises(ValueError, match="rows_removed"):
        state.add_fault(Fault("invalidate_slot", slot="s", reason="rows_removed"))
    with pytest.raises(ValueError, match="expected a slot of the server"):
        state.add_fault(Fault("drop_slot", slot="nope"))


def test_a_fault_invalidates_the_slot_mid_stream_and_ends_the_client() -> None:
    state = ServerState(_scenario("17.2"))
    state.add_fault(Fault("invalidate_slot", after_messages=4, reason="wal_removed"))
    c = Client(state)
    c.startup()
    out = c.query(START)
    assert len([p for p in xlog(out) if not isinstance(p, PrimaryKeepalive)]) == 4
    err = _error(out)
    assert (err.severity, err.code) == ("FATAL", "57P01") and c.closed is not None
    again = Client(state)
    again.startup()
    assert _error(again.query(START)).code == "55000"
    assert _slots_row(state)["invalidation_reason"] == "wal_removed"


def test_a_slot_dropped_behind_the_clients_back() -> None:
    state = ServerState(_scenario())
    c = Client(state)
    c.startup()
    assert any(isinstance(m, CopyBothResponse) for m in c.query(START))
    state.add_fault(Fault("drop_slot", slot="s"))  # at once, as over the control plane
    assert _error(c.pump()).code == "57P01" and c.closed is not None
    again = Client(state)
    again.startup()
    assert _error(again.query(START)).code == "42704"


def test_a_slot_stays_active_after_its_connection_ends() -> None:
    clock = Clock()
    state = ServerState(_scenario(), clock=clock)
    state.add_fault(Fault("hold_slot", after_messages=2, seconds=5))
    c = Client(state, clock.now)
    c.startup()
    c.query(START)
    assert c.closed is not None and c.closed.reset
    held = Client(state, clock.now)
    held.startup()
    err = _error(held.query(START))
    assert err.code == "55006" and f"PID {c.conn.pid}" in err.message
    assert _slots_row(state)["active_pid"] == str(c.conn.pid)
    clock.now += 5.1
    later = Client(state, clock.now)
    later.startup()
    assert any(isinstance(m, CopyBothResponse) for m in later.query(START))


def test_wal_sender_timeout_asks_at_half_then_drops_a_silent_client() -> None:
    state = ServerState(_scenario(), limits=Limits(wal_sender_timeout=4.0))
    c = Client(state)
    c.startup()
    c.query(START)
    assert c.waits[-1].deadline == pytest.approx(c.clock + 2.0)
    c.clock += 2.0
    pings = [p for p in xlog(c.pump()) if isinstance(p, PrimaryKeepalive)]
    assert [p.reply_requested for p in pings] == [True]
    c.status(0, 0)  # any reply starts the count again
    c.clock += 3.9
    assert [p.reply_requested for p in xlog(c.pump())] == [True] and c.closed is None
    c.clock += 0.2
    assert c.pump() == [] and c.closed is not None  # nothing sent: COMMERROR goes to the log
    assert state.transcript is not None
    assert any("terminating walsender process due to replication timeout" in (e.event or "")
               for e in state.transcript.entries)
