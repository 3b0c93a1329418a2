"""The sans-IO core: the conversation, replication commands and their errors, streaming,
keepalives and status updates, malformed input — driven without sockets."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pgwire_spec.pgoutput import messages as m
from pgwire_spec.replication.messages import PrimaryKeepalive, XLogData
from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.walsender.core import CHUNK
from pgwire_spec.wire import (
    PROTOCOL_3_0,
    PROTOCOL_3_2,
    CancelRequest,
    CommandComplete,
    CopyBothResponse,
    DataRow,
    ErrorResponse,
    GSSENCRequest,
    NoticeResponse,
    ReadyForQuery,
    RowDescription,
    SSLRequest,
)

from ._client import Client, xlog
from .scenarios import accounts, items

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def state(major: int = 16, **kw: Any) -> ServerState:
    data = accounts(major)
    data["auth"] = {"method": "trust"}
    data.update(kw)
    return ServerState(Scenario.from_dict(data))


def errors(msgs: list[Any]) -> list[tuple[str | None, str | None]]:
    return [(e.code, e.message) for e in msgs if isinstance(e, ErrorResponse)]


def test_core_imports_no_io_modules() -> None:
    code = ("import sys\nimport pgwire_spec.walsender.core, pgwire_spec.walsender._render, "
            "pgwire_spec.walsender._sql, pgwire_spec.walsender._auth\n"
            "print([m for m in ('socket', 'asyncio', 'selectors', 'ssl', 'subprocess') "
            "if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_startup_ssl_gssenc_and_welcome() -> None:
    c = Client(state())
    c.expect_byte_answer = True
    c.send(SSLRequest())
    assert c.pump() == ["N"]
    c.expect_byte_answer = True
    c.send(GSSENCRequest())
    assert c.pump() == ["N"]
    out = c.startup("replicator", application_name="app", client_encoding="UTF8")
    names = [type(x).__name__ for x in out]
    assert names[0] == "AuthenticationOk" and names[-2:] == ["BackendKeyData", "ReadyForQuery"]
    params = {x.name: x.value for x in out if type(x).__name__ == "ParameterStatus"}
    assert params["server_version"] == "16.4" and params["application_name"] == "app"
    assert params["integer_datetimes"] == "on" and params["session_authorization"] == "replicator"


@pytest.mark.parametrize(("params", "code"), [
    ({"database": "nope"}, "3D000"), ({"replication": "maybe"}, "22023"),
])
def test_startup_refusals_are_fatal(params: dict[str, str], code: str) -> None:
    c = Client(state())
    replication = params.pop("replication", "database")
    out = c.startup("replicator", replication=replication, **params)
    assert errors(out)[0][0] == code and c.closed is not None


def test_identify_system_shapes_by_major() -> None:
    for major, tli_type in ((15, 23), (16, 20)):
        c = Client(state(major))
        c.startup()
        out = c.query("IDENTIFY_SYSTEM")
        rd = out[0]
        assert isinstance(rd, RowDescription)
        assert [(f.name, f.type_oid) for f in rd.fields] == [("systemid", 25), ("timeline", tli_type),
                                                             ("xlogpos", 25), ("dbname", 25)]
        assert isinstance(out[1], DataRow) and out[1].values[0] == b"7400000000000000001"
        assert isinstance(out[2], CommandComplete) and out[2].command_tag == "IDENTIFY_SYSTEM"


def test_slot_commands_and_their_errors() -> None:
    st = state(17)
    c = Client(st)
    c.startup()
    out = c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing', FAILOVER)")
    assert isinstance(out[1], DataRow) and out[1].values[0] == b"s" and out[1].values[2] is None
    assert st.slots["s"].failover
    assert errors(c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput"))[0] == (
        "42710", 'replication slot "s" already exists')
    assert errors(c.query('CREATE_REPLICATION_SLOT "Bad" LOGICAL pgoutput'))[0][0] == "42602"
    assert errors(c.query("CREATE_REPLICATION_SLOT t LOGICAL test_decoding"))[0][0] == "58P01"
    assert errors(c.query("CREATE_REPLICATION_SLOT t LOGICAL pgoutput (SNAPSHOT 'use')"))[0][0] == "25001"
    assert errors(c.query("DROP_REPLICATION_SLOT nope"))[0] == ("42704", 'replication slot "nope" does not exist')
    assert errors(c.query("READ_REPLICATION_SLOT s"))[0][0] == "0A000"
    out = c.query("ALTER_REPLICATION_SLOT s (FAILOVER false)")
    assert isinstance(out[0], CommandComplete) and not st.slots["s"].failover
    # old syntax: export snapshot by default (psycopg2)
    out = c.query('CREATE_REPLICATION_SLOT "ps" LOGICAL "pgoutput"')
    assert out[1].values[2] is not None
    # physical slots exist; streaming them is not served
    out = c.query("CREATE_REPLICATION_SLOT phys PHYSICAL RESERVE_WAL")
    assert out[1].values[3] is None and out[1].values[1] is not None
    assert errors(c.query("START_REPLICATION SLOT phys PHYSICAL 0/0"))[0][0] == "0A000"
    out = c.query("DROP_REPLICATION_SLOT s WAIT")
    assert isinstance(out[0], CommandComplete) and "s" not in st.slots
    # commands a major does not know are syntax errors there
    c16 = Client(state(16))
    c16.startup()
    assert errors(c16.query("ALTER_REPLICATION_SLOT s (FAILOVER)"))  # SQL for 16: not answered
    assert errors(c16.query("CREATE_REPLICATION_SLOT x LOGICAL pgoutput (FAILOVER)"))[0][0] == "42601"


def test_errors_inside_a_transaction_block_and_after() -> None:
    c = Client(state())
    c.startup()
    assert c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")[-1] == ReadyForQuery("T")
    out = c.query("SELECT nonsense FROM nowhere")
    assert errors(out)[0][0] == "42P01" and out[-1] == ReadyForQuery("E")
    assert errors(c.query("SELECT 1"))[0][0] == "25P02"
    out = c.query("COMMIT")
    assert out[0] == CommandComplete("ROLLBACK") and out[-1] == ReadyForQuery("I")
    assert c.query("SELECT 1")[1] == DataRow((b"1",))


@pytest.mark.parametrize(("major", "tag"), [(12, "SELECT"), (13, "CREATE_REPLICATION_SLOT")])
def test_replication_commands_end_with_their_name_from_13(major: int, tag: str) -> None:
    # walsender.c: EndCommand("SELECT") up to 12, EndReplicationCommand(name) from 13; the
    # physical side is compared with real 10-18 answers in tests/physical
    c = Client(state(major))
    c.startup()
    for command, name in (("IDENTIFY_SYSTEM", "IDENTIFY_SYSTEM"), ("CREATE_REPLICATION_SLOT s LOGICAL pgoutput",
                                                              "CREATE_REPLICATION_SLOT"),
                          ("DROP_REPLICATION_SLOT s", "DROP_REPLICATION_SLOT")):
        done = [x.command_tag for x in c.query(command) if isinstance(x, CommandComplete)]
        assert done == [name if tag != "SELECT" else "SELECT"], command


def test_streaming_keepalives_status_updates_and_copy_done() -> None:
    st = state()
    c = Client(st)
    c.startup()
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    consistent_point = st.slots["s"].confirmed_flush
    assert consistent_point <= st.scenario.server.start_lsn
    out = c.query(START)
    assert isinstance(out[0], CopyBothResponse)
    payloads = xlog(out)
    assert isinstance(payloads[0], PrimaryKeepalive) and payloads[0].wal_end == consistent_point
    w = [p for p in payloads if isinstance(p, XLogData)]
    assert [chr(p.data[0]) for p in w] == ["B", "R", "I", "U", "D", "C"]
    end = w[-1].data_start
    assert isinstance(payloads[-1], PrimaryKeepalive) and payloads[-1].wal_end == end
    # next keepalive at the configured interval, with replyRequested as configured
    assert c.waits[-1].deadline == c.clock + st.scenario.keepalive.interval
    c.clock += st.scenario.keepalive.interval
    (ka,) = xlog(c.pump())
    assert isinstance(ka, PrimaryKeepalive) and not ka.reply_requested
    # a status update asking for a reply gets a keepalive; its flush moves the slot
    (ka,) = xlog(c.status(end, end, 0, reply=True))
    assert isinstance(ka, PrimaryKeepalive)
    assert st.slots["s"].confirmed_flush == end and st.slots["s"].active == c.conn.id
    out = c.copy_done()
    assert [type(x).__name__ for x in out] == ["CopyDone", "CommandComplete", "CommandComplete", "ReadyForQuery"]
    assert [x.command_tag for x in out if isinstance(x, CommandComplete)] == ["COPY 0", "START_REPLICATION"]
    assert st.slots["s"].active is None
    # restarting from the confirmed position: nothing left but the keepalives
    out = c.query(START)
    assert not [p for p in xlog(out) if isinstance(p, XLogData)]


def test_start_replication_errors_come_before_copy_both() -> None:
    c = Client(state(15))
    c.startup()
    assert errors(c.query(START))[0] == ("42704", 'replication slot "s" does not exist')
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = c.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '4', publication_names 'pub')")
    assert errors(out)[0][0] == "0A000" and not any(isinstance(x, CopyBothResponse) for x in out)
    other = Client(c.state)
    other.startup()
    other.query(START)
    assert errors(c.query(START))[0][0] == "55006"  # active for another PID


def test_drop_replication_slot_wait_waits_for_the_active_connection() -> None:
    st = state(16)
    streamer = Client(st)
    streamer.startup()
    streamer.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    streamer.query(START)
    dropper = Client(st)
    dropper.startup()
    assert errors(dropper.query("DROP_REPLICATION_SLOT s"))[0][0] == "55006"  # without WAIT: at once
    assert dropper.query("DROP_REPLICATION_SLOT s WAIT") == []  # waits: no answer yet
    assert dropper.waits[-1].deadline is not None and "s" in st.slots
    streamer.copy_done()  # the stream ends, the slot is released
    out = dropper.pump()
    assert [type(x).__name__ for x in out] == ["CommandComplete", "ReadyForQuery"] and "s" not in st.slots
    # a slot dropped by someone else while waiting: the real server's error
    streamer.query("CREATE_REPLICATION_SLOT t LOGICAL pgoutput (SNAPSHOT 'nothing')")
    streamer.query(START.replace("SLOT s", "SLOT t"))
    assert dropper.query("DROP_REPLICATION_SLOT t WAIT") == []
    del st.slots["t"]
    assert errors(dropper.pump())[0] == ("42704", 'replication slot "t" does not exist')


def test_streaming_hands_out_bounded_chunks() -> None:
    st = ServerState(Scenario.from_dict(items(16, small=2, big=3000, rollback_in_big=False, auth="trust")))
    c = Client(st)
    c.startup("replicator")
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    from pgwire_spec.wire import Query, encode_message

    c.conn.receive_data(encode_message(Query(START)))
    sizes = []
    while True:
        action = c.conn.next_action(c.clock)
        if not hasattr(action, "data"):
            break
        sizes.append(len(action.data))
    assert len(sizes) > 5 and max(sizes) <= CHUNK + 1024


def test_the_stream_starts_before_the_plan_is_rendered() -> None:
    """A cold plan renders while it streams: when the first XLogData goes out, only a
    little past it is rendered; the whole stream still arrives, identical to a complete
    render's."""
    from pgwire_spec.walsender._render import render
    from pgwire_spec.walsender._streaming import RENDER_AHEAD
    from pgwire_spec.wire import Query, encode_message

    sc = Scenario.from_dict({
        "server": {"version": "16.4"}, "publications": {"pub": ["t"]},
        "tables": {"t": {"columns": [{"name": "id", "type": "int4", "key": True}]}},
        "transactions": [{"changes": [{"insert": "t", "new": {"id": i}}]} for i in range(3000)]})
    st = ServerState(sc)
    c = Client(st)
    c.startup("replicator")
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    c.conn.receive_data(encode_message(Query(START)))
    first = None
    while first is None:
        action = c.conn.next_action(c.clock)
        assert hasattr(action, "data")
        c.reader.feed(action.data)
        first = next((x for x in xlog(list(c.reader)) if isinstance(x, XLogData)), None)
    stream = c.conn.stream
    assert stream is not None
    rendered = len(stream.plan.items)
    whole = render(st.history, st.persona, stream.options, 0)
    assert not stream.plan.done and rendered <= RENDER_AHEAD + 3 < len(whole.items) == 3 * 3000 + 1
    c.pump()
    assert stream.plan.done and [w.payload for w in stream.plan.items] == [w.payload for w in whole.items]


def test_malformed_input_errors_and_the_connection_goes_on_or_ends() -> None:
    st = state()
    # protocol 0.0 instead of a startup packet: FATAL, closed (as a real 15 answers)
    c = Client(st)
    c.send(b"\x00\x00\x00\x08\x00\x00\x00\x00")
    out = c.pump()
    assert errors(out)[0] == ("0A000", "unsupported frontend protocol 0.0: server supports 3.0 to 3.0")
    assert c.closed is not None
    # unknown message tag after startup: FATAL, closed
    c = Client(st)
    c.startup()
    c.send(b"?\x00\x00\x00\x04")
    assert errors(c.pump())[0][0] == "08P01" and c.closed is not None
    # a Query whose string lacks its NUL: ERROR, and the connection goes on
    c = Client(st)
    c.startup()
    c.send(b"Q\x00\x00\x00\x08abcd")
    out = c.pump()
    assert errors(out)[0][0] == "08P01" and c.closed is None and out[-1] == ReadyForQuery("I")
    assert c.query("SELECT 1")[1] == DataRow((b"1",))
    # a replication command that does not parse
    assert errors(c.query("START_REPLICATION SLOT"))[0][0] == "42601"
    # a standby message that is not one: FATAL
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    c.query(START)
    from pgwire_spec.wire import CopyData

    c.send(CopyData(b"zzz"))
    assert errors(c.pump())[0][0] == "08P01" and c.closed is not None


@pytest.mark.parametrize(("major", "protocol", "key_length"), [(16, PROTOCOL_3_0, 4), (18, PROTOCOL_3_2, 32)])
def test_cancel_request_stops_a_stream(major: int, protocol: int, key_length: int) -> None:
    """Protocol 3.2 (18): the key is 32 bytes and the CancelRequest carries it whole."""
    st = state(major)
    c = Client(st)
    out = c.startup(protocol=protocol)
    key = next(x for x in out if type(x).__name__ == "BackendKeyData")
    assert len(key.secret_key) == key_length
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    c.query(START)
    wrong = Client(st)  # the key's first bytes alone do not cancel
    wrong.send(CancelRequest(key.process_id, key.secret_key[:3]))
    wrong.pump()
    assert not errors(c.pump())
    canceller = Client(st)
    canceller.send(CancelRequest(key.process_id, key.secret_key))
    canceller.pump()
    assert canceller.closed is not None
    out = c.pump()
    assert errors(out)[0][0] == "57014" and out[-1] == ReadyForQuery("I")


def test_missing_publication_is_an_error_mid_stream_before_18() -> None:
    st = state(17)
    c = Client(st)
    c.startup()
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = c.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'nope')")
    assert errors(out)[0] == ("42704", 'publication "nope" does not exist') and out[-1] == ReadyForQuery("I")
    st18 = state(18)
    c = Client(st18)
    c.startup()
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = c.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub,nope')")
    notices = [x for x in out if isinstance(x, NoticeResponse)]
    assert notices and notices[0].severity == "WARNING" and not errors(out)


def test_copy_to_stdout_text_and_binary() -> None:
    st = state(16)
    c = Client(st)
    c.startup()
    c.query("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")
    out = c.query("COPY public.accounts (id, name, amount) TO STDOUT")
    names = [type(x).__name__ for x in out]
    assert names == ["CopyOutResponse", "CopyData", "CopyDone", "CommandComplete", "ReadyForQuery"]
    assert out[1].data == b"1\talice\t10.50\n" and out[3].command_tag == "COPY 1"
    out = c.query("COPY public.accounts (id, amount) TO STDOUT WITH (FORMAT binary)")
    assert out[0].format == 1 and out[0].column_formats == (1, 1)
    data = b"".join(x.data for x in out if type(x).__name__ == "CopyData")
    assert data.startswith(b"PGCOPY\n\xff\r\n\x00") and data.endswith(b"\xff\xff")
    assert b"\x00\x02\x00\x00\x00\x04\x00\x00\x00\x01" in data  # 2 fields, int4 1
    assert errors(c.query("COPY public.nope TO STDOUT"))[0][0] == "42P01"


def test_pgoutput_of_the_stream_matches_the_scenario() -> None:
    st = state()
    c = Client(st)
    c.startup()
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    c.query(START)
    msgs = st.transcript.pgoutput() if st.transcript else []
    assert isinstance(msgs[2], m.Insert) and msgs[2].new_tuple == ("2", "bob", "3")
