"""Walsender sessions: the sans-IO replication client, the recorded sessions, and a live
recording."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pgwire_spec.capture import verify_paths
from pgwire_spec.capture.fixture import load_document
from pgwire_spec.capture.options import OptionSet
from pgwire_spec.capture.session import (
    NEED_DATA,
    ReplicationClient,
    SessionError,
    capture_sessions,
    session_option_sets,
)
from pgwire_spec.capture.session_fixture import parse_session, verify_session
from pgwire_spec.replication.messages import XLogData
from pgwire_spec.servers import DsnProvider
from pgwire_spec.wire import (
    CopyBothResponse,
    ErrorResponse,
    FrontendReader,
    Query,
    ReadyForQuery,
    StartupMessage,
    encode_message,
)

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


def _client(**ctx: object) -> ReplicationClient:
    context = {"protocol_version": 4, "streaming": "parallel", "two_phase": False, "binary": False,
               "messages": True, **ctx}
    return ReplicationClient(user="postgres", dbname="app", decoder_context=context)


def _read_frontend(data: bytes) -> list[object]:
    reader = FrontendReader()
    reader.feed(data)
    return list(reader)


def test_client_commands_are_what_real_clients_send() -> None:
    c = _client()
    startup = _read_frontend(c.startup())[0]
    assert isinstance(startup, StartupMessage)
    params = dict(startup.parameters)
    assert params["replication"] == "database" and params["database"] == "app" and params["user"] == "postgres"
    c2 = _client()
    sent = c2.startup() + c2.create_slot("s", 16) + c2.create_slot("s", 14, two_phase=True) + c2.create_slot(
        "s", 15, two_phase=True) + c2.start_replication("s", {"proto_version": "4", "publication_names": "p'q"})
    queries = [m.sql for m in _read_frontend(sent) if isinstance(m, Query)]
    assert queries == [
        "CREATE_REPLICATION_SLOT \"s\" LOGICAL pgoutput (SNAPSHOT 'nothing')",
        "CREATE_REPLICATION_SLOT \"s\" LOGICAL pgoutput NOEXPORT_SNAPSHOT",
        "CREATE_REPLICATION_SLOT \"s\" LOGICAL pgoutput (SNAPSHOT 'nothing', TWO_PHASE)",
        "START_REPLICATION SLOT \"s\" LOGICAL 0/0 (\"proto_version\" '4', \"publication_names\" 'p''q')",
    ]
    assert [e.direction for e in c2.transcript] == ["F"] * 5


def _server_bytes(path: Path) -> tuple[bytes, list[dict]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    msgs = [m for m in doc["messages"] if m["dir"] == "B"]
    return b"".join(bytes.fromhex(m["hex"]) for m in msgs), msgs


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_client_reads_a_recorded_server_side_in_any_chunking(chunk: int) -> None:
    path = SESSIONS / "pg16-session-p4-parallel-messages.json.gz"
    data, msgs = _server_bytes(path)
    c = _client()
    events = []
    for i in range(0, len(data), chunk):
        c.receive_data(data[i:i + chunk])
        while (ev := c.next_event()) is not NEED_DATA:
            events.append(ev)
    assert len(events) == len(msgs)
    assert [e.data.hex() for e in c.transcript] == [m["hex"] for m in msgs]
    assert any(isinstance(e, CopyBothResponse) for e in events)
    xlog = [e for e in c.transcript if isinstance(e.copy, XLogData)]
    assert [{"in_stream": e.in_stream} for e in xlog] == [{"in_stream": m["pgoutput"]["in_stream"]}
                                                          for m in msgs if "pgoutput" in m]
    assert c.received_lsn > 0 and c.flushable_lsn <= c.received_lsn


def test_an_error_response_is_a_session_error() -> None:
    c = _client()
    c.receive_data(encode_message(ErrorResponse((("S", "ERROR"), ("C", "42704"), ("M", "replication slot \"s\" does not exist")))))
    with pytest.raises(SessionError, match='42704: replication slot "s" does not exist'):
        c.next_event()
    c.receive_data(encode_message(ReadyForQuery("I")))
    assert isinstance(c.next_event(), ReadyForQuery)
    c.receive_data(b"")
    with pytest.raises(SessionError, match="closed the connection"):
        c.next_event()


def test_session_core_touches_no_socket() -> None:
    import pgwire_spec.capture.session as session

    # the client class does its work without I/O: socket use is confined to _Conn
    src = Path(session.__file__).read_text()
    client_src = src[src.index("class ReplicationClient"):src.index("class _Conn")]
    assert "socket." not in client_src and "select." not in client_src


def test_recorded_sessions_cover_every_major_and_verify() -> None:
    files = sorted(SESSIONS.glob("*.json.gz"))
    majors = {parse_session(load_document(p), p).major for p in files}
    assert majors == set(range(10, 19))
    report = verify_paths(files)
    assert report.ok, report.mismatches[:5]
    flags = {f for p in files for m in parse_session(load_document(p), p).messages for f in m.flags}
    assert {"xlogdata-zero-position", "copy-both-response", "copy-done-server", "standby-status-update",
            "stream-abort-parallel-tail", "stream-abort-no-tail-with-streaming-on"} <= flags


def test_a_planted_session_mismatch_is_reported(tmp_path: Path) -> None:
    src = SESSIONS / "pg15-session-p3-on-messages.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    msg = next(m for m in doc["messages"] if m.get("pgoutput", {}).get("expected", {}).get("type") == "Insert")
    msg["pgoutput"]["expected"]["new_tuple"][0]["text"] = "999"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    n, mismatches = verify_session(parse_session(load_document(bad), bad))
    assert n == len(doc["messages"])
    assert [(m.case_id, m.check, m.field) for m in mismatches] == [(msg["id"], "json", "Insert.new_tuple[0].text")]


def test_session_option_sets() -> None:
    assert [o.name for o in session_option_sets(12, "p")] == ["p1"]
    assert [o.name for o in session_option_sets(16, "p")] == ["p4-parallel-messages", "p4-streaming-messages"]


@pytest.mark.live
def test_record_a_live_session(pg_server: Callable) -> None:
    server = pg_server(15)
    files = capture_sessions(DsnProvider(server.dsn))
    assert [f.option_set for f in files] == ["session-p3-on-messages"]
    sf = files[0]
    n, mismatches = verify_session(sf)
    assert mismatches == [] and n == len(sf.messages)
    kinds = [m.expected["type"] for m in sf.messages]
    assert kinds[:2] == ["StartupMessage", "AuthenticationOk"] and kinds[-1] == "Terminate"
    copies = [m.copy["type"] for m in sf.messages if m.copy]
    assert "XLogData" in copies and "StandbyStatusUpdate" in copies
    tags = {m.pgoutput["expected"]["tag"] for m in sf.messages if m.pgoutput}
    assert tags >= {"B", "R", "I", "U", "D", "C", "M", "S", "E", "A", "c", "T"}
    with psycopg.connect(server.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone() == (0,)


@pytest.mark.live
def test_a_server_that_is_not_there_is_a_clear_session_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from pgwire_spec.capture.session import record_session
    from pgwire_spec.servers import Server

    ghost = Server("dsn", "127.0.0.1", port, "postgres", "postgres", "16", 16)
    with pytest.raises(SessionError, match=f"cannot connect to 127.0.0.1:{port}"):
        record_session(ghost, OptionSet("p1", 1, "p"), lambda: None, timeout=2)
