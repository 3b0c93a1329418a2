"""The proxy in front of a real PostgreSQL 16 (npm provider), driven over its control plane:
pg_recvlogical and psycopg2 through it, a disconnect armed over HTTP in the middle of a
transaction, the clients resume from their confirmed position with nothing lost or
duplicated; every streamed connection is recorded as a session fixture that passes
verify-fixtures and replays through ``serve`` byte for byte."""

from __future__ import annotations

import select
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.capture.session_fixture import parse_session, verify_session
from pgwire_spec.control import ControlClient
from pgwire_spec.lsn import format_lsn, parse_lsn
from pgwire_spec.walsender.replay import _read_json
from tests._servers import pg_server  # noqa: F401  (the session-scoped server factory)
from tests.control._serve import running
from tests.walsender.conftest import need_program

pytestmark = [pytest.mark.live, pytest.mark.clients, pytest.mark.timeout(300)]

ROWS = 10  # per transaction
TXNS = 4


@pytest.fixture(scope="module")
def pg16(pg_server: Callable[..., Any]) -> Any:  # noqa: F811
    return pg_server(16, "npm")


@pytest.fixture
def workload(pg16: Any) -> Iterator[dict[str, Any]]:
    """A table and its publication; yields names and a function running the transactions."""
    import psycopg

    name = f"px_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg16.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text)")
        conn.execute(f"CREATE PUBLICATION {name}_pub FOR TABLE {name}")

    def run() -> int:
        with psycopg.connect(pg16.dsn, autocommit=True) as conn:
            for t in range(TXNS):
                with conn.transaction():
                    for r in range(ROWS):
                        i = t * ROWS + r + 1
                        conn.execute(f"INSERT INTO {name} VALUES (%s, %s)", (i, f"row {i}"))
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
            assert row is not None
            return parse_lsn(row[0])

    yield {"table": name, "pub": f"{name}_pub", "slot": f"{name}_slot", "run": run}
    with psycopg.connect(pg16.dsn, autocommit=True) as conn:
        conn.execute(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     f"WHERE slot_name = '{name}_slot' AND NOT active")
        conn.execute(f"DROP PUBLICATION IF EXISTS {name}_pub")
        conn.execute(f"DROP TABLE IF EXISTS {name}")


def _sessions(folder: Path) -> list[Any]:
    files = sorted(folder.glob("pg16-session-proxy-*.json.gz"), key=lambda p: int(p.name.split("-")[-1].split(".")[0]))
    return [parse_session(_read_json(f, str(f)), f) for f in files]


def _payloads(sf: Any) -> list[bytes]:
    """The XLogData payloads the server sent (and the client got) in a recorded session."""
    from pgwire_spec.replication.messages import XLogData, decode_copy_data
    from pgwire_spec.wire import CopyData, decode_message

    out = []
    for m in sf.messages:
        if m.direction == "B" and (m.copy or {}).get("type") == "XLogData":
            msg = decode_message(bytes.fromhex(m.hex), "backend")
            assert isinstance(msg, CopyData)
            x = decode_copy_data(msg.data)
            assert isinstance(x, XLogData)
            out.append(x.data)
    return out


def _committed_ids(payloads_per_connection: list[list[bytes]]) -> tuple[list[int], list[bool]]:
    """Inserted ids of the transactions that committed, over every connection in order, as a
    careful consumer applies them (a transaction whose commit it already applied is skipped:
    what was received after the last confirmed position comes again), and per connection
    whether it ended inside a transaction."""
    ids: list[int] = []
    cut: list[bool] = []
    applied = 0
    for payloads in payloads_per_connection:
        dec = PgOutputDecoder(protocol_version=1)
        txn: list[int] | None = None
        for p in payloads:
            m = dec.decode(p)
            if m.tag == "B":
                txn = [] if m.final_lsn > applied else None
            elif m.tag == "I" and txn is not None:
                txn.append(int(m.new_tuple[0]))
            elif m.tag == "C" and txn is not None:
                ids += txn
                applied = m.commit_lsn
                txn = None
        cut.append(txn is not None)
    return ids, cut


def _confirmed(sf: Any) -> int:
    """The last flush position the client confirmed in a recorded session."""
    flushes = [int(parse_lsn(m.copy["flush_lsn"])) if isinstance(m.copy["flush_lsn"], str) else m.copy["flush_lsn"]
               for m in sf.messages if m.direction == "F" and (m.copy or {}).get("type") == "StandbyStatusUpdate"]
    return max(flushes, default=0)


def _first_begin(payloads: list[bytes]) -> int:
    dec = PgOutputDecoder(protocol_version=1)
    return next(m.final_lsn for m in map(dec.decode, payloads) if m.tag == "B")


def _first_difference(written: bytes, payloads: list[list[bytes]]) -> str:
    """Where what the client wrote leaves what went through, message by message."""
    sent = [(n, i, p + b"\n") for n, ps in enumerate(payloads, 1) for i, p in enumerate(ps)]
    pos = 0
    for n, i, line in sent:
        if written[pos:pos + len(line)] != line:
            return (f"connection {n}, payload {i}: expected {line[:40]!r}, found {written[pos:pos + 40]!r} "
                    f"(byte {pos} of {len(written)} written, {sum(len(x) for _, _, x in sent)} went through)")
        pos += len(line)
    return f"{len(written) - pos} bytes written after all that went through: {written[pos:pos + 40]!r}"


def _verify_cli(folder: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "verify-fixtures", *map(str, folder.glob("*.json.gz"))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "all match" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_pg_recvlogical_through_the_proxy_resumes_after_a_disconnect_mid_transaction(
        pg16: Any, workload: dict[str, Any], tmp_path: Path) -> None:
    recvlogical = need_program("pg_recvlogical")
    rec = tmp_path / "rec"
    out = tmp_path / "stream.bin"
    slot = workload["slot"]
    with running(["proxy", "--upstream", pg16.dsn, "--record", str(rec)], tmp_path) as info:
        ctl = ControlClient(info["control"])
        assert ctl.status()["kind"] == "proxy"
        # in the middle of the 2nd transaction: after 15 Inserts
        ctl.add_fault({"action": "disconnect", "kind": "Insert", "after_messages": 15})
        base = [recvlogical, "-d", info["dsn"], "-S", slot, "--no-loop"]
        subprocess.run(base + ["--create-slot", "-P", "pgoutput"], check=True, timeout=60, capture_output=True)
        end = workload["run"]()
        start = base + ["--start", "-o", "proto_version=1", "-o", f"publication_names={workload['pub']}",
                        "-E", format_lsn(end), "-f", str(out)]
        first = subprocess.run(start, timeout=60, capture_output=True, text=True)
        assert first.returncode != 0  # cut
        for _ in range(50):
            # the server may not have seen the cut connection go yet: its slot is still active
            second = subprocess.run(start, timeout=60, capture_output=True, text=True)
            if "is active for PID" not in second.stderr:
                break
            time.sleep(0.2)
        assert second.returncode == 0, second.stderr
        assert ctl.faults()[0]["fired"] == 1
        assert ctl.violations() == []
        # the transcript, paged from the proxy's spools: odd pages join up to one read
        transcript = list(ctl.iter_transcript(page=37))
        assert transcript == ctl.transcript(0, 10_000)[0] and len(transcript) < 10_000
        ctl.stop()
        assert info["process"].wait(30) == 0
    sessions = _sessions(rec)
    for n, sf in zip((2, 3), sessions, strict=True):
        mine = [e for e in transcript if e["connection"] == n]
        assert [e["direction"] for e in mine] == [m.direction for m in sf.messages]
        assert [e["message"]["type"] for e in mine] == [m.expected["type"] for m in sf.messages]
    assert len(sessions) == 2  # the two streaming connections (creating the slot streams nothing)
    payloads = [_payloads(sf) for sf in sessions]
    ids, cut = _committed_ids(payloads)
    assert ids == list(range(1, TXNS * ROWS + 1))  # every row once, in order: nothing lost or duplicated
    assert cut == [True, False]  # the first connection was cut inside a transaction
    # the server resumed at the position the client confirmed: nothing confirmed came again
    assert _first_begin(payloads[1]) > _confirmed(sessions[0])
    # the proxy cut the first connection right after the 15th Insert, and recorded exactly
    # what it had forwarded up to there
    dec = PgOutputDecoder(protocol_version=1)
    tags = [dec.decode(p).tag for p in payloads[0]]
    assert tags.count("I") == 15 and tags[-1] == "I", tags
    # pg_recvlogical wrote what went through, each payload and a newline: all of the resumed
    # connection, and of the cut one what it read before the close took the connection down
    # (bytes in flight when the client's own write meets the closed socket are not read)
    written = out.read_bytes()
    second = b"".join(p + b"\n" for p in payloads[1])
    assert written.endswith(second), _first_difference(written, payloads)
    lines = [p + b"\n" for p in payloads[0]]
    prefixes = {b"".join(lines[:k]): k for k in range(1, len(lines) + 1)}
    head = written[:len(written) - len(second)]
    assert head in prefixes, _first_difference(written, payloads)
    assert tags[:prefixes[head]].count("C") >= 1  # the first transaction at least, which came at once
    for sf in sessions:
        assert verify_session(sf)[1] == []
    _verify_cli(rec)

    # the resumed session served by the fake: pg_recvlogical writes the same bytes
    replay = rec / f"replay-{sessions[1].option_set}.yaml"
    out2 = tmp_path / "replayed.bin"
    with running(["serve", str(replay)], tmp_path) as fake:
        proc = subprocess.run([recvlogical, "-d", fake["dsn"], "-S", slot, "--no-loop", "--start", "-o",
                               "proto_version=1", "-o", f"publication_names={workload['pub']}",
                               "-E", format_lsn(end), "-f", str(out2)], timeout=60, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert out2.read_bytes() == b"".join(p + b"\n" for p in payloads[1])


def test_psycopg2_through_the_proxy_resumes_after_a_disconnect_mid_transaction(
        pg16: Any, workload: dict[str, Any], tmp_path: Path) -> None:
    extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")
    import psycopg2
    import psycopg2.errors

    rec = tmp_path / "rec"
    slot = workload["slot"]
    with running(["proxy", "--upstream", pg16.dsn, "--record", str(rec)], tmp_path) as info:
        ctl = ControlClient(info["control"])
        conn = extras.LogicalReplicationConnection(info["dsn"])
        conn.cursor().create_replication_slot(slot, output_plugin="pgoutput")
        conn.close()
        workload["run"]()
        ctl.add_fault({"action": "disconnect", "kind": "Insert", "after_messages": 25, "slot": slot})
        ids: list[int] = []
        last_commit = 0
        connections = 0
        deadline = time.monotonic() + 60
        while len(ids) < TXNS * ROWS and time.monotonic() < deadline:
            connections += 1
            conn = extras.LogicalReplicationConnection(info["dsn"])
            cur = conn.cursor()
            try:
                cur.start_replication(slot_name=slot, decode=False,
                                      options={"proto_version": "1", "publication_names": workload["pub"]})
            except psycopg2.errors.ObjectInUse:  # the server has not yet seen the cut connection go
                conn.close()
                connections -= 1
                time.sleep(0.2)
                continue
            dec = PgOutputDecoder(protocol_version=1)
            txn: list[int] = []
            skip = False
            try:
                while time.monotonic() < deadline:
                    msg = cur.read_message()
                    if msg is None:
                        if len(ids) >= TXNS * ROWS:
                            break
                        select.select([cur], [], [], 0.2)
                        continue
                    m = dec.decode(msg.payload)
                    if m.tag == "B":
                        skip = m.final_lsn <= last_commit  # applied before the cut, not yet confirmed
                        txn = []
                    elif m.tag == "I":
                        txn.append(int(m.new_tuple[0]))
                    elif m.tag == "C":
                        if not skip:
                            ids += txn
                        last_commit = max(last_commit, m.commit_lsn)
                        cur.send_feedback(flush_lsn=msg.data_start, force=True)
            except psycopg2.DatabaseError:  # the proxy cut the connection
                pass
            finally:
                conn.close()
        assert connections == 2
        assert ctl.faults()[0]["fired"] == 1 and ctl.violations() == []
    assert ids == list(range(1, TXNS * ROWS + 1))
    sessions = _sessions(rec)
    assert len(sessions) == 2
    payloads = [_payloads(sf) for sf in sessions]
    assert _committed_ids(payloads) == (list(range(1, TXNS * ROWS + 1)), [True, False])
    assert _first_begin(payloads[1]) > _confirmed(sessions[0])
    for sf in sessions:
        assert verify_session(sf)[1] == []
