"""Faults, by message position and by time, per connection: each one does exactly what it
says, at exactly the place it says (driven through the sans-IO core), and the server-wide
ones through the asyncio shell."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from pgwire_spec import DecodeError, PgOutputDecoder
from pgwire_spec.replication.messages import PrimaryKeepalive, XLogData
from pgwire_spec.walsender import Fault, Scenario, ScenarioError, ServerState, SyncFakeWalsender
from pgwire_spec.walsender.faults import parse_faults
from pgwire_spec.wire import ErrorResponse, ReadyForQuery

from ._client import Client, xlog
from .scenarios import items

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def run(*faults: Fault, app: str = "app", slot: str = "s") -> tuple[Client, list[Any]]:
    st = ServerState(Scenario.from_dict(items(16, small=10, big=20, auth="trust", rollback_in_big=False)),
                     extra_faults=list(faults))
    c = Client(st)
    c.startup("replicator", application_name=app)
    c.query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = c.query(START.replace(" s ", f" {slot} "))
    return c, out


class W(bytes):
    """An XLogData as (position, payload): sendTime is the clock's, not compared."""

    data: bytes


def writes(msgs: list[Any]) -> list[Any]:
    out = []
    for p in xlog(msgs):
        if isinstance(p, XLogData):
            w = W(p.data_start.to_bytes(8, "big") + p.data)
            w.data = p.data
            out.append(w)
    return out


def baseline() -> list[Any]:
    _, out = run()
    return writes(out)


@pytest.mark.parametrize(("action", "reset"), [("disconnect", False), ("reset", True)])
def test_disconnect_after_n_messages(action: str, reset: bool) -> None:
    c, out = run(Fault(action, after_messages=7))
    assert writes(out) == baseline()[:7]
    assert c.closed is not None and c.closed.reset == reset and not c.closed.crash


def test_duplicate_corrupt_truncate_touch_exactly_one_message() -> None:
    base = baseline()
    _, out = run(Fault("duplicate", after_messages=3))
    got = writes(out)
    assert got[:4] == base[:4] and got[4] == base[3] and got[5:] == base[4:]
    _, out = run(Fault("corrupt", after_messages=2, offset=0, xor=0x20))
    got = writes(out)
    assert got[2].data[0] == base[2].data[0] ^ 0x20 and got[2].data[1:] == base[2].data[1:]
    assert [g.data for i, g in enumerate(got) if i != 2] == [b.data for i, b in enumerate(base) if i != 2]
    dec = PgOutputDecoder()
    with pytest.raises(DecodeError):
        for g in got:
            dec.decode(g.data)
    _, out = run(Fault("truncate", after_messages=4, keep=3))
    got = writes(out)
    assert got[4].data == base[4].data[:3] and len(got) == len(base)


def test_error_mid_stream_ends_the_stream_with_its_sqlstate() -> None:
    c, out = run(Fault("error", after_messages=5, sqlstate="53100", message="disk full"))
    err = [x for x in out if isinstance(x, ErrorResponse)][0]
    assert (err.code, err.message, err.severity) == ("53100", "disk full", "ERROR")
    assert out[-1] == ReadyForQuery("I") and c.closed is None and len(writes(out)) == 5
    c, out = run(Fault("error", after_messages=5, severity="FATAL", sqlstate="57P01", message="bye"))
    assert [x for x in out if isinstance(x, ErrorResponse)][0].severity == "FATAL" and c.closed is not None


def test_keepalive_with_reply_requested_before_message_n() -> None:
    _, out = run(Fault("keepalive", after_messages=6))
    payloads = xlog(out)
    ws = [i for i, p in enumerate(payloads) if isinstance(p, XLogData)]
    ka = payloads[ws[6] - 1]
    assert isinstance(ka, PrimaryKeepalive) and ka.reply_requested


def test_stall_and_delay_hold_the_stream() -> None:
    base = baseline()
    c, out = run(Fault("delay", after_messages=5, seconds=2.0))
    assert writes(out) == base[:5]
    assert c.waits[-1].deadline == pytest.approx(c.clock + 2.0)
    c.clock += 2.0
    assert writes(c.pump()) == base[5:]
    c, out = run(Fault("stall", after_messages=5))
    assert writes(out) == base[:5] and c.waits[-1].deadline is None
    c.clock += 3600
    assert writes(c.pump()) == [] and c.closed is None
    # a stalled server answers nothing, not even a status update asking for a reply
    assert xlog(c.status(0, 0, reply=True)) == []


def test_faults_by_time() -> None:
    c, out = run(Fault("reset", after_seconds=30))
    assert writes(out) == baseline() and c.closed is None
    assert c.waits[-1].deadline == pytest.approx(c.clock + 10)  # the keepalive comes first
    c.clock += 10
    c.pump()
    c.clock += 20
    c.pump()
    assert c.closed is not None and c.closed.reset


def test_selectors_connection_ordinal_application_name_slot_and_times() -> None:
    st = ServerState(Scenario.from_dict(items(16, small=3, big=5, auth="trust", rollback_in_big=False)),
                     extra_faults=[Fault("disconnect", after_messages=2, connection=2, times=None),
                                   Fault("reset", after_messages=1, application_name="victim")])
    runs = [("a", "s1"), ("a", "s2"), ("victim", "s3"), ("victim", "s4"), ("a", "s5")]
    # every slot is made before the first stream, as a real server needs for each to receive
    # the transactions (a slot made after them starts past them)
    setup = Client(st)
    setup.startup("replicator", application_name="setup")
    for _, slot in runs:
        setup.query(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'nothing')")
    results = []
    for app, slot in runs:
        c = Client(st)
        c.startup("replicator", application_name=app)
        out = c.query(START.replace(" s ", f" {slot} "))
        results.append((len(writes(out)), None if c.closed is None else c.closed.reset))
    full = results[0][0]
    # the 2nd streaming connection is cut after 2 messages; the first "victim" after 1,
    # the second victim is spared (times = 1)
    assert results == [(full, None), (2, False), (1, True), (full, None), (full, None)]


def test_parse_faults_errors() -> None:
    assert parse_faults([{"action": "stall", "after_messages": 3}]) == [Fault("stall", after_messages=3)]
    for bad in ([{"action": "stall"}], [{"action": "boom", "after_messages": 1}],
                [{"action": "reset", "after_messages": -1}], [{"action": "reset", "when": 1}],
                [{"action": "error", "after_messages": 1, "sqlstate": "x"}], "nope"):
        with pytest.raises(ScenarioError):
            parse_faults(bad)


def _replication_client(host: str, port: int, slot: str) -> socket.socket:
    """A client streaming from *slot*, made beforehand (:func:`_create_slots`)."""
    from pgwire_spec.wire import Query, StartupMessage, encode_message

    s = socket.create_connection((host, port), timeout=10)
    s.sendall(encode_message(StartupMessage(parameters=(("user", "replicator"), ("database", "postgres"),
                                                         ("replication", "database")))))
    s.sendall(encode_message(Query(START.replace(" s ", f" {slot} "))))
    return s


def _create_slots(dsn: str, *slots: str) -> None:
    """Make the slots before any client streams: on a real server a slot made after the
    transactions committed receives none of them (snapbuild.c)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for slot in slots:
            conn.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")


def _read_until_closed(s: socket.socket, timeout: float = 10) -> tuple[bytes, str]:
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data, "fin"
            data += chunk
    except ConnectionResetError:
        return data, "rst"
    except TimeoutError:
        return data, "open"


def test_crash_drops_every_connection_and_refuses_new_ones_for_a_while() -> None:
    data = items(16, small=200, big=5, auth="trust", rollback_in_big=False)
    with SyncFakeWalsender(data, faults=[Fault("crash", after_messages=50, slot="victim", seconds=1.0)]) as fake:
        # two idle streams that already got everything, then the victim crashes the server
        _create_slots(fake.dsn, "b0", "b1", "victim")
        bystanders = [_replication_client(fake.host, fake.port, f"b{i}") for i in range(2)]
        time.sleep(0.5)
        victim = _replication_client(fake.host, fake.port, "victim")
        outcomes = [_read_until_closed(s)[1] for s in [victim, *bystanders]]
        assert outcomes == ["rst", "rst", "rst"]
        # down for a second: the next connection is refused with 57P03
        import psycopg

        with pytest.raises(psycopg.OperationalError, match="starting up"):
            psycopg.connect(fake.dsn)
        time.sleep(1.1)
        with psycopg.connect(fake.dsn, autocommit=True) as conn:
            conn.execute("SELECT 1")
        assert "fault:crash" in fake.transcript.events()


def test_shutdown_ends_the_copy_from_the_server_side() -> None:
    from pgwire_spec.wire import CommandComplete, CopyDone

    c, out = run(Fault("shutdown", after_messages=4))
    assert len(writes(out)) == 4 and isinstance(out[-1], CopyDone)
    c.clock += 3600
    assert c.pump() == [] and c.closed is None  # nothing more, not even keepalives
    out = c.copy_done()
    assert out == [CommandComplete("COPY 0")] and c.closed is not None and not c.closed.reset


def test_a_fault_by_kind_fires_right_after_the_nth_message_of_that_kind() -> None:
    base = baseline()
    commits = [i for i, w in enumerate(base) if w.data[:1] == b"C"]
    c, out = run(Fault("disconnect", kind="Commit", after_messages=3))
    assert writes(out) == base[:commits[2] + 1]
    assert c.closed is not None and not c.closed.reset
    for bad in ({"action": "reset", "kind": "Comit", "after_messages": 1}, {"action": "reset", "kind": "Commit",
                                                                           "after_seconds": 1}):
        with pytest.raises(ScenarioError, match="kind"):
            parse_faults([bad])


def test_faults_added_while_streaming_count_from_then_and_can_be_removed() -> None:
    st = ServerState(Scenario.from_dict(items(16, small=10, big=20, auth="trust", rollback_in_big=False)),
                     extra_faults=[Fault("delay", after_messages=5, seconds=1.0)])
    c = Client(st)
    c.startup("replicator", application_name="app")
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = writes(c.query(START))
    assert len(out) == 5
    # during the delay: one duplicate for this connection, counted from now (the next
    # message), and a disconnect two Commits from now, removed again before it fires
    dup = st.add_fault(Fault("duplicate", after_messages=0), connection=c.conn.id, now=c.clock)
    gone = st.add_fault(Fault("disconnect", kind="Commit", after_messages=2), now=c.clock)
    assert c.conn.status().faults == (dup, gone)
    st.remove_fault(gone)
    c.clock += 1.0
    rest = writes(c.pump())
    base = baseline()
    assert rest[0] == rest[1] == base[5] and rest[2:] == base[6:] and c.closed is None
    # a fault for one connection is not offered to later ones
    assert st.faults.for_connection({"application_name": "app"}, "stream", "s") == []
    with pytest.raises(KeyError):
        st.add_fault(Fault("reset", after_messages=0), connection=99)


def test_a_fault_by_kind_far_ahead_of_what_is_rendered_fires_in_place() -> None:
    # the plan renders a slice ahead of what is sent; the 400th Commit lies past the first slice
    st = ServerState(Scenario.from_dict(items(16, small=600, big=2, auth="trust", rollback_in_big=False)),
                     extra_faults=[Fault("reset", kind="Commit", after_messages=400)])
    c = Client(st)
    c.startup("replicator")
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = writes(c.query(START))
    assert sum(w.data[:1] == b"C" for w in out) == 400 and out[-1].data[:1] == b"C"
    assert c.closed is not None and c.closed.reset


@pytest.mark.parametrize(("version", "streaming"), [(1, "off"), (2, "on"), (4, "parallel")])
def test_stray_stream_abort_between_transactions_as_18_sends_it(version: int, streaming: str) -> None:
    """PostgreSQL 18's unsolicited Stream Abort (erratum E-PG18-STRAY-STREAM-ABORT): right
    after the 2nd Commit, (first_xid - 2, first_xid - 1) at the Commit's end, 9 bytes
    without streaming = parallel, 25 with; every other message as without the fault; the
    reference decoder accepts the stream with one stray-stream-abort warning."""
    def stream(*faults: Fault) -> list[Any]:
        st = ServerState(Scenario.from_dict(items(18, small=10, big=20, auth="trust", rollback_in_big=False)),
                         extra_faults=list(faults))
        c = Client(st)
        c.startup("replicator")
        c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
        extra = "" if streaming == "off" else f", streaming '{streaming}'"
        return writes(c.query(f"START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '{version}', "
                              f"publication_names 'pub'{extra})"))

    base = stream()
    got = stream(Fault("stray_stream_abort", kind="Commit", after_messages=2))
    commits = [i for i, w in enumerate(base) if w.data[:1] == b"C"]
    at = commits[1] + 1
    assert got[:at] == base[:at] and got[at + 1:] == base[at:]
    stray = got[at]
    first = Scenario.from_dict(items(18)).server.first_xid
    commit_end = int.from_bytes(base[at - 1].data[10:18], "big")
    assert stray[:8] == commit_end.to_bytes(8, "big")  # dataStart: where the abort was decoded
    want = b"A" + (first - 2).to_bytes(4, "big") + (first - 1).to_bytes(4, "big")
    tail = streaming == "parallel"
    assert stray.data[:9] == want and len(stray.data) == (25 if tail else 9)
    if tail:
        assert stray.data[9:17] == stray[:8]  # the abort LSN
    dec = PgOutputDecoder(protocol_version=version, streaming=streaming)  # strict
    for w in got:
        dec.decode(w.data)
    dec.finish()
    assert [w.rule for w in dec.warnings] == ["stray-stream-abort"]
    explicit = stream(Fault("stray_stream_abort", kind="Commit", after_messages=2, xid=4000))
    assert explicit[at].data[1:9] == (4000).to_bytes(4, "big") + (4001).to_bytes(4, "big")


def test_stray_stream_abort_is_placed_between_transactions() -> None:
    """Only where a server sends it: after a message ending a transaction (or before the
    stream's first); a scenario saying otherwise is refused with what was expected."""
    (f,) = parse_faults([{"action": "stray_stream_abort", "kind": "StreamCommit", "after_messages": 1, "xid": 900}])
    assert (f.kind, f.xid) == ("StreamCommit", 900)
    parse_faults([{"action": "stray_stream_abort", "after_messages": 0}])
    for bad, says in [({"after_messages": 3}, "after_messages: 3"), ({"kind": "Insert", "after_messages": 1}, "kind Insert"),
                      ({"after_seconds": 1.0}, "after_seconds: 1.0")]:
        with pytest.raises(ScenarioError, match="between transactions.*found " + says):
            parse_faults([{"action": "stray_stream_abort", **bad}])
    with pytest.raises(ScenarioError, match="xid is for stray_stream_abort"):
        parse_faults([{"action": "keepalive", "after_messages": 1, "xid": 900}])
