"""``pgwire-spec serve``: prints where it listens, serves, stops cleanly on SIGTERM/SIGINT/SIGHUP;
a user's mistake is one line on stderr."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .scenarios import ACCOUNTS


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pgwire_spec", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_serve_prints_the_address_and_stops_on_a_signal(sig: int, tmp_path: Path) -> None:
    import psycopg

    transcript = tmp_path / "t.jsonl"
    proc = _serve(str(ACCOUNTS), "--transcript", str(transcript))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:")
        dsn = line.split("dsn: ", 1)[1].strip()
        with psycopg.connect(dsn + " replication=database", autocommit=True) as conn:
            row = conn.execute("IDENTIFY_SYSTEM").fetchone()
            assert row is not None and row[0] == "7400000000000000001"
        proc.send_signal(sig)
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
    entries = [json.loads(x) for x in transcript.read_text().splitlines()]
    assert any((e.get("message") or {}).get("sql") == "IDENTIFY_SYSTEM" for e in entries)


def test_serve_reports_a_bad_scenario_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: {version: '8.4'}\n")
    for args in ([str(bad)], [str(tmp_path / "missing.yaml")], [str(ACCOUNTS), "--port", "70000"],
                 [str(ACCOUNTS), "--history", "every"]):
        proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "serve", *args], capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pgwire-spec serve: error:") and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("history", "second"), [(None, 0), ("per_slot", 1)])
def test_serve_history_says_which_slots_receive_the_scenario(history: str | None, second: int) -> None:
    """By default a slot made after a client decoded the scenario receives none of it, as on
    a real server; ``--history per_slot`` gives it to every new slot."""
    import psycopg

    proc = _serve(str(ACCOUNTS), *(["--history", history] if history else []))
    try:
        assert proc.stdout is not None
        dsn = proc.stdout.readline().split("dsn: ", 1)[1].strip()
        commits = []
        with psycopg.connect(dsn, autocommit=True) as conn:
            for slot in ("a", "b"):
                conn.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")
                rows = conn.execute(f"SELECT data FROM pg_logical_slot_get_binary_changes('{slot}', NULL, NULL, "
                                    "'proto_version', '1', 'publication_names', 'pub')").fetchall()
                commits.append(sum(1 for (data,) in rows if bytes(data)[:1] == b"C"))
        assert commits == [1, second]
    finally:
        proc.terminate()
        proc.wait(15)
