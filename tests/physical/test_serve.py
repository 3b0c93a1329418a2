"""The fake walsender's physical side, sans-IO: the recorded conversations answered as the
real server answered them, the end-of-timeline handshake, slots, feedback, errors, faults."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.lsn import format_lsn, parse_lsn
from pgwire_spec.physical.scenario import load_physical
from pgwire_spec.physical.serve import physical_server
from pgwire_spec.physical.wal import MAX_SEND_SIZE, XLOG_BLCKSZ
from pgwire_spec.replication.messages import HotStandbyFeedback, PrimaryKeepalive, XLogData
from pgwire_spec.walsender import Fault, ScenarioError
from pgwire_spec.walsender.core import ServerState
from pgwire_spec.wire import (
    BackendReader,
    CommandComplete,
    CopyBothResponse,
    CopyDone,
    DataRow,
    ErrorResponse,
    FrontendReader,
    Query,
    ReadyForQuery,
    RowDescription,
    WireMessage,
)

from .harness import RECORDING, Clock, connect, fields, kinds, scenario, without_keepalives, xlogdata

SWITCH = RECORDING.history.switchpoint(1)[0]
FLUSH = RECORDING.flush_lsn


def server(faults: tuple[Fault, ...] = (), **physical: Any) -> tuple[ServerState, Clock]:
    clock = Clock()
    return ServerState(scenario(**physical), clock=clock, extra_faults=list(faults)), clock


# -- the recorded conversations, replayed against the fake ------------------------------------


def _recorded(conversation: str) -> list[tuple[str, WireMessage]]:
    """(direction, message) of a recorded conversation, XLogData rebuilt."""
    from pgwire_spec.physical.recording import message_bytes

    conv = next(c for c in RECORDING.conversations if c.name == conversation)
    readers: dict[str, Any] = {"F": FrontendReader(), "B": BackendReader()}
    out = []
    for m in conv.messages:
        r = readers[m.direction]
        r.feed(message_bytes(RECORDING, m))
        out.append((m.direction, r.next_event()))
    return out


def _comparable(msg: Any) -> Any:
    """What must agree between the real server and the fake: message kind and content, less
    clocks, PIDs and the error's source location (F, L, R)."""
    from pgwire_spec.replication.messages import decode_copy_data

    if isinstance(msg, (ErrorResponse,)):
        return ("Error", tuple((c, v) for c, v in msg.fields if c in "SVCMDH"))
    if isinstance(msg, XLogData):
        return ("w", msg.data_start, msg.wal_end, msg.data)
    if type(msg).__name__ == "CopyData":
        return _comparable(decode_copy_data(msg.data))
    if isinstance(msg, PrimaryKeepalive):
        return None
    return msg


def _answers(recorded: list[tuple[str, WireMessage]]) -> list[tuple[str, list[Any]]]:
    """Each client query of the recording with the server messages that followed it."""
    out: list[tuple[str, list[Any]]] = []
    for direction, msg in recorded:
        if direction == "F" and isinstance(msg, Query):
            out.append((msg.sql, []))
        elif direction == "B" and out:
            c = _comparable(msg)
            if c is not None:
                out[-1][1].append(c)
    return out


def test_the_promoted_servers_conversation_is_answered_as_recorded() -> None:
    """Every command the recording sent to the promoted PostgreSQL 15 — IDENTIFY_SYSTEM,
    TIMELINE_HISTORY 2 and 3, READ_REPLICATION_SLOT, the requests refused, the old
    timeline streamed to its end with the handshake, the request at its very end — gets
    from the fake the messages the real server sent (clocks and source lines aside)."""
    state, clock = server(slots={"pgws_physical": "0/80F830"})
    pair = connect(state, clock)
    answers = _answers(_recorded("promoted"))
    assert len(answers) >= 9
    checked = 0
    for sql, expected in answers:
        if sql.startswith("START_REPLICATION") and "TIMELINE 2" in sql:
            break  # the live stream of timeline 2: compared below
        got = [_comparable(m) for m in pair.query(sql)]
        if "TIMELINE 1" in sql and any(isinstance(m, CopyBothResponse) for m in got):
            got += [_comparable(m) for m in pair.pump(pair.client.copy_done())]
            # what the recording's client sent in between (a status update) made no answer
            expected = [m for m in expected]
        got = [g for g in got if g is not None]
        if not isinstance(got[-1], ReadyForQuery):
            got += [g for g in map(_comparable, pair.pump()) if g is not None]
        if sql == "IDENTIFY_SYSTEM":
            # xlogpos: the real server's flush position then; the fake's is the recording's end
            assert got[1].values[2] == format_lsn(FLUSH).encode()
            got[1] = expected[1]
        assert got == expected, sql
        checked += 1
    assert checked >= 8


def test_the_live_stream_of_timeline_2_is_cut_as_recorded() -> None:
    """With ``split: recorded`` the fake cuts the WAL where the live server did."""
    state, clock = server(split="recorded", slots={"pgws_physical": "0/80F830"})
    pair = connect(state, clock)
    recorded = [m for m in _recorded("promoted") if m[0] == "B"]
    want = [(x.data_start, x.wal_end, x.data) for _, m in recorded
            if type(m).__name__ == "CopyData" and m.data[:1] == b"w"
            for x in [__import__("pgwire_spec").decode_copy_data(m.data)] if x.data_start >= 0x800000
            and x.wal_end > SWITCH]
    events = pair.query('START_REPLICATION SLOT "pgws_physical" 0/800000 TIMELINE 2')
    got = [(x.data_start, x.wal_end, x.data) for x in xlogdata(events)]
    assert got == want and len(got) == 4


def test_the_primarys_stream_is_served_from_its_start_with_the_same_bytes() -> None:
    state, clock = server(split="recorded")
    pair = connect(state, clock)
    rec = [_comparable(m) for d, m in _recorded("primary") if d == "B"]
    rec_w = [c for c in rec if isinstance(c, tuple) and c[0] == "w"]
    events = pair.query("START_REPLICATION 0/700000 TIMELINE 1")
    got = [_comparable(x) for x in xlogdata(events)]
    # the fake's timeline 1 is historic (it ends at the switch point): same cuts and bytes up
    # to where the primary's recording stopped, then the rest of the timeline
    assert got[:len(rec_w)] == rec_w
    assert len(got) > len(rec_w) and xlogdata(events)[-1].data_start + len(xlogdata(events)[-1].data) == SWITCH
    assert isinstance(events[-1], CopyDone)


# -- START_REPLICATION from anywhere ------------------------------------------------------------


@pytest.mark.parametrize("start", ["0/700000", "0/7003A0", "0/72E001", "0/80F8A7"])
def test_an_old_timeline_from_any_position_then_the_handshake(start: str) -> None:
    state, clock = server()
    pair = connect(state, clock)
    events = pair.query(f"START_REPLICATION {start} TIMELINE 1")
    assert isinstance(events[0], CopyBothResponse)
    wal = xlogdata(events)
    pos = parse_lsn(start)
    for x in wal:
        assert x.data_start == pos and x.wal_end == SWITCH
        assert len(x.data) <= MAX_SEND_SIZE
        assert x.data == RECORDING.store.read(1, pos, pos + len(x.data))
        pos += len(x.data)
        assert pos == SWITCH or pos % XLOG_BLCKSZ == 0
    assert pos == SWITCH
    assert kinds(events)[-1] == "CopyDone"  # the server ends its side at the switch point
    after = pair.pump(pair.client.copy_done())
    assert kinds(after) == ["RowDescription", "DataRow", "CommandComplete", "CommandComplete", "ReadyForQuery"]
    assert [(f.name, f.type_oid) for f in after[0].fields] == [("next_tli", 20), ("next_tli_startpos", 25)]
    assert after[1].values == (b"2", format_lsn(SWITCH).encode())
    assert [m.command_tag for m in after[2:4]] == ["START_STREAMING", "START_REPLICATION"]


def test_the_current_timeline_streams_to_the_flush_position_then_keepalives() -> None:
    state, clock = server()
    pair = connect(state, clock)
    events = pair.query("START_REPLICATION 0/800000")  # no TIMELINE: the current one
    wal = xlogdata(events)
    assert wal[0].data_start == 0x800000 and wal[-1].data_start + len(wal[-1].data) == FLUSH
    assert all(x.wal_end == FLUSH for x in wal)
    assert not any(isinstance(e, CopyDone) for e in events)
    assert pair.waits[-1] == clock.now + 10.0  # the scenario's keepalive interval
    clock.now += 10.0
    ka = pair.pump()
    assert len(ka) == 1 and isinstance(ka[0], PrimaryKeepalive) and ka[0].wal_end == FLUSH
    # an 'r' with replyRequested gets a keepalive at once
    ka = pair.pump(pair.client.status_update(reply_requested=True))
    assert isinstance(ka[0], PrimaryKeepalive) and not ka[0].reply_requested
    end = pair.pump(pair.client.copy_done())
    assert kinds(end) == ["CopyDone", "CommandComplete", "CommandComplete", "ReadyForQuery"]
    assert [m.command_tag for m in end[1:3]] == ["START_STREAMING", "START_REPLICATION"]


def test_status_updates_move_a_physical_slot_and_feedback_is_tracked() -> None:
    state, clock = server(slots={"standby": "0/700000"})
    pair = connect(state, clock)
    pair.query('START_REPLICATION SLOT "standby" 0/800000 TIMELINE 2')
    slot = state.slots["standby"]
    assert slot.active == pair.conn.id
    pair.pump(pair.client.status_update(write=0x810000, flush=0x80F000, apply=0x80E000))
    pair.pump(pair.client.hot_standby_feedback(742, epoch=1, catalog_xmin=0))
    assert slot.restart_lsn == 0x80F000
    assert pair.conn.positions == (0x810000, 0x80F000, 0x80E000)
    fb = physical_server(state).feedback["standby"]
    assert isinstance(fb, HotStandbyFeedback) and (fb.xmin, fb.xmin_epoch) == (742, 1)
    # the slot is busy for others while streaming
    other = connect(state, clock)
    err = other.query('START_REPLICATION SLOT "standby" 0/800000 TIMELINE 2')
    assert fields(err[0])["C"] == "55006"
    pair.pump(pair.client.copy_done())
    assert slot.active is None
    got = other.query('READ_REPLICATION_SLOT "standby"')
    assert got[1].values == (b"physical", b"0/80F000", b"1")  # before the switch point


def test_read_replication_slot_names_the_timeline_of_the_restart_position() -> None:
    state, clock = server(slots={"old": "0/7A0000", "new": format_lsn(SWITCH), "none": None})
    pair = connect(state, clock)
    assert pair.query('READ_REPLICATION_SLOT "old"')[1].values == (b"physical", b"0/7A0000", b"1")
    assert pair.query('READ_REPLICATION_SLOT "new"')[1].values == (b"physical", format_lsn(SWITCH).encode(), b"2")
    assert pair.query('READ_REPLICATION_SLOT "gone"')[1].values == (None, None, None)


def test_create_replication_slot_physical() -> None:
    state, clock = server()
    pair = connect(state, clock)
    got = pair.query('CREATE_REPLICATION_SLOT "s1" PHYSICAL (RESERVE_WAL)')
    assert kinds(got) == ["RowDescription", "DataRow", "CommandComplete", "ReadyForQuery"]
    assert got[1].values == (b"s1", b"0/0", None, None)  # consistent_point 0/0, as 15 answers
    assert state.slots["s1"].restart_lsn == 0x700000
    got = pair.query('CREATE_REPLICATION_SLOT "s2" TEMPORARY PHYSICAL')
    assert state.slots["s2"].restart_lsn == 0 and state.slots["s2"].temporary
    for sql, code, text in (
        ('CREATE_REPLICATION_SLOT "s1" PHYSICAL', "42710", 'replication slot "s1" already exists'),
        ("CREATE_REPLICATION_SLOT s3 PHYSICAL (SNAPSHOT 'nothing')", "42601", "conflicting or redundant options"),
        ("CREATE_REPLICATION_SLOT s3 PHYSICAL (TWO_PHASE)", "42601", "conflicting or redundant options"),
        ('CREATE_REPLICATION_SLOT "Bad" PHYSICAL', "42602", None),
    ):
        err = pair.query(sql)
        assert kinds(err) == ["ErrorResponse", "ReadyForQuery"], sql
        assert fields(err[0])["C"] == code and (text is None or fields(err[0])["M"] == text)
    # a temporary slot goes with its connection
    pair.pump(pair.client.terminate())
    assert "s2" not in state.slots and "s1" in state.slots


def test_identify_system_on_a_physical_connection_has_no_database() -> None:
    state, clock = server()
    pair = connect(state, clock)
    got = pair.query("IDENTIFY_SYSTEM")
    assert got[1].values == (RECORDING.system_id.encode(), b"2", format_lsn(FLUSH).encode(), None)
    assert [f.type_oid for f in got[0].fields] == [25, 23, 25, 25]
    got = pair.query("SHOW wal_segment_size")
    assert got[1].values == (b"1MB",)
    state16, clock16 = server(version="16.4")
    assert [f.type_oid for f in connect(state16, clock16).query("IDENTIFY_SYSTEM")[0].fields][1] == 20


@pytest.mark.parametrize(("sql", "after_copy_both", "code", "message"), [
    ("START_REPLICATION 0/900000", True, "XX000",
     "requested starting point 0/900000 is ahead of the WAL flush position of this server 0/817E38"),
    ("START_REPLICATION 0/600000 TIMELINE 1", True, "58P01",
     "requested WAL segment 000000010000000000000006 has already been removed"),
    ("START_REPLICATION 0/700000 TIMELINE 2", True, "58P01",
     "requested WAL segment 000000020000000000000007 has already been removed"),
    ("START_REPLICATION 0/1000000 TIMELINE 3", False, "XX000", "requested timeline 3 is not in this server's history"),
    ('START_REPLICATION SLOT "nope" 0/800000', False, "42704", 'replication slot "nope" does not exist'),
    ("TIMELINE_HISTORY 1", "RowDescription", "58P01",
     'could not open file "pg_wal/00000001.history": No such file or directory'),
])
def test_refused_requests(sql: str, after_copy_both: Any, code: str, message: str) -> None:
    state, clock = server()
    pair = connect(state, clock)
    got = pair.query(sql)
    lead = {True: ["CopyBothResponse"], False: [], "RowDescription": ["RowDescription"]}[after_copy_both]
    assert kinds(got) == lead + ["ErrorResponse", "ReadyForQuery"]
    f = fields(got[-2])
    assert (f["C"], f["M"]) == (code, message)
    # the connection goes on
    assert kinds(pair.query("IDENTIFY_SYSTEM"))[-1] == "ReadyForQuery"


def test_a_logical_slot_cannot_stream_physical_wal() -> None:
    state, clock = server()
    from pgwire_spec.walsender.core import SlotState

    state.slots["lg"] = SlotState("lg", "logical", "pgoutput", "postgres", 0, 0)
    pair = connect(state, clock)
    err = pair.query('START_REPLICATION SLOT "lg" PHYSICAL 0/800000')
    assert fields(err[0])["C"] == "55000"
    err = pair.query('READ_REPLICATION_SLOT "lg"')
    assert fields(err[0])["M"] == "cannot use READ_REPLICATION_SLOT with a logical replication slot"


def test_sql_is_refused_on_a_physical_connection() -> None:
    state, clock = server()
    pair = connect(state, clock)
    err = pair.query("SELECT 1")
    assert fields(err[0])["M"] == "cannot execute SQL commands in WAL sender for physical replication"


# -- faults -----------------------------------------------------------------------------------


def test_disconnect_mid_segment() -> None:
    state, clock = server(faults=(Fault("disconnect", after_messages=3),))
    pair = connect(state, clock)
    events = pair.query("START_REPLICATION 0/700000 TIMELINE 1")
    wal = xlogdata(events)
    assert len(wal) == 3 and pair.closed is not None and not pair.closed.reset
    assert (wal[-1].data_start + len(wal[-1].data)) % RECORDING.segment_size != 0
    assert "fault:disconnect" in state.transcript.events()  # type: ignore[union-attr]


def test_corrupt_bytes_stall_and_error() -> None:
    state, clock = server(faults=(Fault("corrupt", after_messages=2, offset=100, xor=0xFF),))
    pair = connect(state, clock)
    wal = xlogdata(pair.query("START_REPLICATION 0/700000 TIMELINE 1"))
    good = RECORDING.store.read(1, wal[2].data_start, wal[2].data_start + len(wal[2].data))
    assert wal[2].data != good and wal[2].data[100] == good[100] ^ 0xFF
    assert [w.data for i, w in enumerate(wal) if i != 2] == [
        RECORDING.store.read(1, w.data_start, w.data_start + len(w.data)) for i, w in enumerate(wal) if i != 2]

    state, clock = server(faults=(Fault("stall", after_messages=1, seconds=5.0),))
    pair = connect(state, clock)
    assert len(xlogdata(pair.query("START_REPLICATION 0/700000 TIMELINE 1"))) == 1
    assert pair.waits[-1] == clock.now + 5.0
    assert pair.pump() == []
    clock.now += 5.0
    assert len(xlogdata(pair.pump())) > 1

    state, clock = server(faults=(Fault("error", after_messages=2, sqlstate="XX001", message="boom"),))
    pair = connect(state, clock)
    events = pair.query("START_REPLICATION 0/700000 TIMELINE 1")
    assert kinds(events)[-2:] == ["ErrorResponse", "ReadyForQuery"] and len(xlogdata(events)) == 2
    assert fields(events[-2])["M"] == "boom"
    assert kinds(pair.query("IDENTIFY_SYSTEM"))[-1] == "ReadyForQuery"


def test_truncate_and_duplicate() -> None:
    state, clock = server(faults=(Fault("truncate", after_messages=0, keep=10), Fault("duplicate", after_messages=1)))
    pair = connect(state, clock)
    wal = xlogdata(pair.query("START_REPLICATION 0/700000 TIMELINE 1"))
    assert len(wal[0].data) == 10
    assert wal[1] == wal[2]


# -- the scenario section ---------------------------------------------------------------------


def test_scenario_section_errors_name_their_path(tmp_path: Any) -> None:
    for data, path in (
        ({"split": "x", "recording": RECORDING}, "physical.split"),
        ({"recording": RECORDING, "bogus": 1}, "physical"),
        ({"recording": str(tmp_path / "missing.json.gz")}, "physical.recording"),
        ({"recording": RECORDING, "backup": {"directory": str(tmp_path / "nope")}}, "physical.backup.directory"),
        ({"recording": RECORDING, "backup": {"directory": str(tmp_path), "start_lsn": "0/100"}},
         "physical.backup.start_lsn"),
        ({"recording": RECORDING, "slots": {"s": "xyz"}}, "physical.slots.s"),
    ):
        with pytest.raises(ScenarioError) as exc:
            load_physical(data)
        assert exc.value.path == path, data


def test_the_scenario_takes_the_recordings_server_identity() -> None:
    sc = scenario()
    assert sc.server.version == RECORDING.server_version.split()[0]
    assert sc.server.system_id == RECORDING.system_id and sc.server.timeline == 2
    assert scenario(version="14.11").server.version == "14.11"


def test_row_values_are_the_recorded_history(tmp_path: Any) -> None:
    state, clock = server()
    pair = connect(state, clock)
    got = pair.query("TIMELINE_HISTORY 2")
    assert isinstance(got[0], RowDescription) and isinstance(got[1], DataRow)
    assert got[1].values == (b"00000002.history", RECORDING.history.file(2))
    assert isinstance(got[2], CommandComplete) and got[2].command_tag == "TIMELINE_HISTORY"
    assert without_keepalives(got) == got


def test_bad_client_input_during_a_physical_stream_ends_the_connection_clearly() -> None:
    from pgwire_spec.wire import CopyData as WireCopyData
    from pgwire_spec.wire import encode_message

    for payload, text in ((b"x" + bytes(8), 'unexpected message type "x"'), (b"r\x00\x01", "invalid standby message")):
        state, clock = server(slots={"s": "0/800000"})
        pair = connect(state, clock)
        pair.query('START_REPLICATION SLOT "s" 0/800000 TIMELINE 2')
        got = pair.pump(encode_message(WireCopyData(payload)))
        errors = [e for e in got if isinstance(e, ErrorResponse)]
        assert len(errors) == 1 and errors[0].severity == "FATAL" and text in (errors[0].message or "")
        assert pair.closed is not None
        assert state.slots["s"].active is None  # the slot is free again
