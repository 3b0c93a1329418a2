"""A real PostgreSQL 15 standby replays WAL from the fake walsender: the standby is a real
base backup of a real primary; the fake serves that primary's WAL as it was recorded
minutes before; the standby's walreceiver streams it, replays it (the rows written after
the backup appear), and reports its positions and hot standby feedback."""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from pgwire_spec import majors
from pgwire_spec.lsn import format_lsn, parse_lsn
from pgwire_spec.physical.capture import _Cluster, _flush_lsn, _Recorder, _sql, physical_settings
from pgwire_spec.physical.recording import PhysicalRecording
from pgwire_spec.physical.serve import physical_server
from pgwire_spec.physical.wal import segment_start
from pgwire_spec.servers import ProviderError
from pgwire_spec.servers._base import describe_server, server_user
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.walsender import SyncFakeWalsender

SETTINGS_15 = physical_settings(majors.major(15))

pytestmark = [pytest.mark.live, pytest.mark.clients]

try:
    BIN: Path | None = find_system_bin_dir(15)
except ProviderError:
    BIN = None


@pytest.mark.skipif(BIN is None, reason="needs Debian's postgresql-15 (apt-get install postgresql-15; "
                                        ".ci/install does it)")
def test_a_real_standby_replays_the_fakes_wal(tmp_path: Path) -> None:
    assert BIN is not None
    seg = 1 << 20
    primary = _Cluster(BIN, settings=SETTINGS_15, initdb_args=("--wal-segsize=1",))
    standby = _Cluster(BIN, settings={**SETTINGS_15, "hot_standby_feedback": "on",
                                      "wal_receiver_status_interval": "1s"})
    try:
        host, port = primary.start()
        server = describe_server("system", host, port, "postgres", "postgres", BIN)
        _sql(server, "CREATE TABLE t (id int PRIMARY KEY, v text)",
             "INSERT INTO t SELECT g, 'before' FROM generate_series(1, 100) g")
        # A real base backup (no WAL in it: the standby gets all of it from the fake).
        standby.root = Path(tempfile.mkdtemp(prefix="pgwire-spec-pg-"))
        standby.root.chmod(0o755)
        data = standby.root / "data"
        user = server_user()
        run_as = {"user": user[1], "group": user[2], "extra_groups": []} if user else {}
        if user is not None:
            os.chown(standby.root, user[1], user[2])
        proc = subprocess.run([str(BIN / "pg_basebackup"), "-d", server.dsn, "-D", str(data), "-X", "none",
                               "-c", "fast", "--no-sync"], capture_output=True, text=True, **run_as)
        assert proc.returncode == 0, proc.stderr
        label = (data / "backup_label").read_text()
        start = parse_lsn(label.split("START WAL LOCATION: ")[1].split()[0])
        # Record the primary's WAL from the backup's first segment, rows written meanwhile.
        rec = _Recorder(server, seg, "primary")
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            rec.stream(segment_start(start, seg), 1, until=lambda: _flush_lsn(server), steps=(
                lambda: conn.execute("INSERT INTO t SELECT g, 'after' FROM generate_series(101, 300) g") and None,
                lambda: conn.execute("UPDATE t SET v = 'changed' WHERE id <= 10") and None,
            ))
        conversation = rec.close()
        sysid = str(_sql(server, "SELECT system_identifier::text FROM pg_control_system()")[0][0])
        want = _sql(server, "SELECT count(*), count(*) FILTER (WHERE v = 'changed') FROM t")[0]
        recording = PhysicalRecording.build(
            server_version=server.version, major=15, provider="system", workload="standby-test",
            captured_on=_dt.date.today().isoformat(), system_id=sysid, segment_size=seg,
            conversations=(conversation,))
        end = recording.flush_lsn
        primary.stop()  # from here on the fake is the only source of WAL

        with SyncFakeWalsender({"physical": {"recording": recording}}) as fake:
            (data / "standby.signal").touch()
            with open(data / "postgresql.auto.conf", "a") as f:
                f.write(f"primary_conninfo = 'host={fake.host} port={fake.port} user=postgres "
                        "application_name=standby1'\n")
            if user is not None:
                os.chown(data / "standby.signal", user[1], user[2])
            shost, sport = standby.launch(data)
            replica = describe_server("system", shost, sport, "postgres", "postgres", BIN)
            deadline = time.monotonic() + 60
            replayed = 0
            while time.monotonic() < deadline:
                replayed = parse_lsn(str(_sql(replica, "SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text")[0][0]))
                if replayed >= end and fake.transcript.status_updates():
                    break
                time.sleep(0.2)
            assert replayed >= end, f"replayed {format_lsn(replayed)}, expected {format_lsn(end)}"
            got = _sql(replica, "SELECT count(*), count(*) FILTER (WHERE v = 'changed') FROM t")[0]
            assert got == want == (300, 10)
            status = _sql(replica, "SELECT status, sender_port FROM pg_stat_wal_receiver")[0]
            assert status == ("streaming", fake.port)
            queries = fake.transcript.queries()
            assert "IDENTIFY_SYSTEM" in queries
            assert any(q.startswith("START_REPLICATION") and "TIMELINE 1" in q for q in queries)
            # the walreceiver reports its positions and, with hot_standby_feedback, its xmin
            flushed = max(u.flush_lsn for u in fake.transcript.status_updates())
            assert flushed >= end - seg
            deadline = time.monotonic() + 10
            while not physical_server(fake.state).feedback and time.monotonic() < deadline:
                time.sleep(0.2)
            assert physical_server(fake.state).feedback
    finally:
        standby.stop()
        primary.stop()


@pytest.mark.skipif(BIN is None, reason="needs Debian's postgresql-15 (apt-get install postgresql-15; "
                                        ".ci/install does it)")
def test_a_real_standby_follows_the_recorded_timeline_switch(tmp_path: Path) -> None:
    """A base backup of the primary, taken as the recording starts, follows the fake from
    timeline 1 over the switch point to timeline 2 (TIMELINE_HISTORY, the end-of-timeline
    handshake, START_REPLICATION on the new timeline), as it would follow a promoted server."""
    from pgwire_spec.physical.capture import record_physical
    from pgwire_spec.servers.system import SystemProvider

    assert BIN is not None
    standby = _Cluster(BIN, settings={**SETTINGS_15, "wal_receiver_status_interval": "1s"})
    standby.root = Path(tempfile.mkdtemp(prefix="pgwire-spec-pg-"))
    standby.root.chmod(0o755)
    data = standby.root / "data"
    user = server_user()
    run_as = {"user": user[1], "group": user[2], "extra_groups": []} if user else {}
    if user is not None:
        os.chown(standby.root, user[1], user[2])

    def backup(server: object, start: int) -> None:
        proc = subprocess.run([str(BIN / "pg_basebackup"), "-d", server.dsn, "-D", str(data),  # type: ignore[attr-defined]
                               "-X", "none", "-c", "fast", "--no-sync"], capture_output=True, text=True, **run_as)
        assert proc.returncode == 0, proc.stderr

    try:
        recording = record_physical(SystemProvider(15), on_start=backup)
        switch = recording.history.switchpoint(1)[0]
        assert switch is not None
        with SyncFakeWalsender({"physical": {"recording": recording}}) as fake:
            (data / "standby.signal").touch()
            with open(data / "postgresql.auto.conf", "a") as f:
                f.write(f"primary_conninfo = 'host={fake.host} port={fake.port} user=postgres'\n"
                        "recovery_target_timeline = 'latest'\n")
            if user is not None:
                os.chown(data / "standby.signal", user[1], user[2])
            shost, sport = standby.launch(data)
            replica = describe_server("system", shost, sport, "postgres", "postgres", BIN)
            deadline = time.monotonic() + 60
            state = None
            while time.monotonic() < deadline:
                state = _sql(replica, "SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text, "
                                      "(SELECT received_tli FROM pg_stat_wal_receiver)")[0]
                if parse_lsn(state[0]) >= recording.flush_lsn and state[1] == 2:
                    break
                time.sleep(0.2)
            assert state is not None and parse_lsn(state[0]) >= recording.flush_lsn and state[1] == 2, state
            rows = _sql(replica, "SELECT count(*), count(*) FILTER (WHERE note = 'after promotion') FROM pgws_wal")[0]
            assert rows[0] > 600 and rows[1] > 0  # the rows written on timeline 2
            queries = fake.transcript.queries()
            assert "TIMELINE_HISTORY 2" in queries
            starts = [q for q in queries if q.startswith("START_REPLICATION")]
            assert any(q.endswith("TIMELINE 1") for q in starts) and any(q.endswith("TIMELINE 2") for q in starts)
            handshake = [m for m in fake.transcript.backend() if type(m.message).__name__ == "DataRow"
                         and m.message.values == (b"2", format_lsn(switch).encode())]
            assert handshake  # the next-timeline result set went out
    finally:
        standby.stop()
