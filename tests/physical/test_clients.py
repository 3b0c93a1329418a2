"""Real tools against the fake walsender (Debian's postgresql-15 client programs):
pg_receivewal follows the recorded timeline switch and writes segment files byte-identical
to the recording; pg_basebackup receives the served directory in plain and tar format, in
the 15+ and the 10-14 shapes; pg_verifybackup accepts the result."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.lsn import format_lsn
from pgwire_spec.physical.wal import parse_segment_name
from pgwire_spec.replication.commands import (
    ReadReplicationSlot,
    StartReplication,
    TimelineHistory,
    parse_command,
)
from pgwire_spec.servers import ProviderError
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.walsender import Fault, SyncFakeWalsender

from .harness import RECORDING, RECORDING_PATH

pytestmark = pytest.mark.clients

try:
    BIN: Path | None = find_system_bin_dir(15)
except ProviderError:
    BIN = None

needs_pg15 = pytest.mark.skipif(
    BIN is None, reason="needs Debian's postgresql-15 client programs (apt-get install postgresql-15; .ci/install does it)")

FLUSH = RECORDING.flush_lsn


def run(program: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    assert BIN is not None
    return subprocess.run([str(BIN / program), *args], capture_output=True, text=True, timeout=timeout)


def dsn(server: Any) -> str:
    return f"host={server.host} port={server.port} user=postgres"


def datadir(root: Path) -> Path:
    d = root / "served"
    for sub in ("global", "base/1", "base/5", "pg_wal", "pg_replslot/gone", "pg_tblspc"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "PG_VERSION").write_text("15\n")
    (d / "global" / "pg_control").write_bytes(bytes(range(256)) * 32)
    (d / "base" / "1" / "1259").write_bytes(bytes(range(7, 250)) * 100)
    (d / "base" / "5" / "16384").write_bytes(b"\xaa" * 70000)
    (d / "postgresql.conf").write_text("shared_buffers = 16MB\n")
    (d / "postmaster.pid").write_text("4242\n")
    (d / "pg_replslot" / "gone" / "state").write_text("x")
    return d


def served_files(d: Path) -> dict[str, bytes]:
    skip = {"postmaster.pid"}
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file() and p.name not in skip and "pg_replslot/" not in str(p.relative_to(d))}


def check_segments(directory: Path) -> list[str]:
    """Every WAL file pg_receivewal wrote equals the recording's segment (zero-padded past
    what was received); the names of the files checked."""
    names = []
    for f in sorted(directory.iterdir()):
        if f.name.endswith(".history"):
            assert f.read_bytes() == RECORDING.history.file(int(f.name[:8], 16))
        else:
            tli, start = parse_segment_name(f.name, RECORDING.segment_size)
            assert f.read_bytes() == RECORDING.store.segment(tli, start), f.name
        names.append(f.name)
    return names


# -- pg_receivewal --------------------------------------------------------------------------------


@needs_pg15
def test_pg_receivewal_follows_the_timeline_switch_byte_for_byte(tmp_path: Path) -> None:
    sc = {"physical": {"recording": str(RECORDING_PATH), "slots": {"archiver": "0/700000"}}}
    out = tmp_path / "wal"
    out.mkdir()
    with SyncFakeWalsender(sc) as server:
        # --endpos: stop once past this position (pg_receivewal stops when it is exceeded)
        proc = run("pg_receivewal", "-d", dsn(server), "-D", str(out), "--slot", "archiver",
                   "--endpos", format_lsn(FLUSH - 1), "--no-loop", "--no-sync", "-v")
        transcript = server.transcript
        assert proc.returncode == 0, proc.stderr
        assert "switched to timeline 2 at 0/80F8A8" in proc.stderr
        # Compared as parsed commands: how a client spells them (quoted or not) changes
        # between minor releases (15.18 sends READ_REPLICATION_SLOT archiver, 15.20 quotes it).
        commands = [parse_command(q) for q in transcript.queries()]
        assert ReadReplicationSlot("archiver") in commands
        assert StartReplication("physical", "archiver", 0x700000, 1) in commands
        assert TimelineHistory(2) in commands
        assert StartReplication("physical", "archiver", 0x800000, 2) in commands
        assert transcript.status_updates()  # pg_receivewal reports its position
        assert server.slots["archiver"].restart_lsn >= 0x800000  # the slot followed its flush
    assert check_segments(out) == ["000000010000000000000007", "000000010000000000000008.partial",
                                   "00000002.history", "000000020000000000000008.partial"]


@needs_pg15
def test_pg_receivewal_resumes_after_a_disconnect_mid_segment(tmp_path: Path) -> None:
    sc = {"physical": {"recording": str(RECORDING_PATH), "slots": {"archiver": "0/700000"}},
          "faults": [{"action": "disconnect", "after_messages": 4, "connection": 1}]}
    out = tmp_path / "wal"
    out.mkdir()
    with SyncFakeWalsender(sc) as server:
        first = run("pg_receivewal", "-d", dsn(server), "-D", str(out), "--slot", "archiver",
                    "--endpos", format_lsn(FLUSH - 1), "--no-loop", "--no-sync")
        assert first.returncode != 0
        partial = out / "000000010000000000000007.partial"
        received = 4 * 0x20000
        assert partial.read_bytes()[:received] == RECORDING.store.read(1, 0x700000, 0x700000 + received)
        second = run("pg_receivewal", "-d", dsn(server), "-D", str(out), "--slot", "archiver",
                     "--endpos", format_lsn(FLUSH - 1), "--no-loop", "--no-sync")
        assert second.returncode == 0, second.stderr
        assert "fault:disconnect" in server.transcript.events()
    assert check_segments(out)[-1] == "000000020000000000000008.partial"
    assert (out / "000000010000000000000007").exists()


# -- pg_basebackup and pg_verifybackup --------------------------------------------------------------


def _basebackup(tmp_path: Path, version: str, fmt: str, *extra: str) -> tuple[Path, Any, subprocess.CompletedProcess[str]]:
    sc = {"server": {"version": version},
          "physical": {"recording": str(RECORDING_PATH), "backup": {"directory": str(datadir(tmp_path))}}}
    out = tmp_path / f"backup-{fmt}-{version}-{len(list(tmp_path.iterdir()))}"
    with SyncFakeWalsender(sc) as server:
        proc = run("pg_basebackup", "-d", dsn(server), "-D", str(out), "-F", fmt, "--no-sync", "-v", *extra)
        transcript = server.transcript
    return out, transcript, proc


@needs_pg15
@pytest.mark.parametrize("version", ["15.20", "14.11"])
def test_pg_basebackup_plain_and_pg_verifybackup(tmp_path: Path, version: str) -> None:
    out, transcript, proc = _basebackup(tmp_path, version, "p")
    assert proc.returncode == 0, proc.stderr
    base = [q for q in transcript.queries() if q.startswith("BASE_BACKUP")]
    # pg_basebackup speaks each version's syntax: options in parentheses from 15
    assert base and base[0].split()[1] == ("(" if version.startswith("15") else "LABEL")
    got = served_files(out)
    want = served_files(tmp_path / "served")
    for name, data in want.items():
        assert got[name] == data, name
    assert "backup_label" in got and "backup_manifest" in got
    assert not (out / "postmaster.pid").exists() and list((out / "pg_replslot").iterdir()) == []
    # -X stream (the default): the WAL of the backup came over START_REPLICATION on timeline 2
    assert (out / "pg_wal" / "000000020000000000000008").read_bytes()[:FLUSH - 0x800000] == \
        RECORDING.store.read(2, 0x800000, FLUSH)
    verify = run("pg_verifybackup", str(out))
    assert verify.returncode == 0, verify.stderr
    assert "backup successfully verified" in verify.stdout


@needs_pg15
@pytest.mark.parametrize("version", ["15.20", "14.11"])
def test_pg_basebackup_tar_format(tmp_path: Path, version: str) -> None:
    out, transcript, proc = _basebackup(tmp_path, version, "t")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["backup_manifest", "base.tar", "pg_wal.tar"]
    with tarfile.open(out / "base.tar") as tar:
        names = tar.getnames()
        assert names[:2] == ["backup_label", "tablespace_map"] and names[-1] == "global/pg_control"
        member = tar.extractfile("base/5/16384")
        assert member is not None and member.read() == b"\xaa" * 70000
    base = [q for q in transcript.queries() if q.startswith("BASE_BACKUP")][0]
    assert "TABLESPACE_MAP" in base
    # the plain-format check of the same manifest: extract and verify
    plain = tmp_path / "extracted"
    with tarfile.open(out / "base.tar") as tar:
        tar.extractall(plain, filter="tar")
    (plain / "pg_wal").mkdir(exist_ok=True)
    with tarfile.open(out / "pg_wal.tar") as tar:
        tar.extractall(plain / "pg_wal", filter="tar")
    (plain / "backup_manifest").write_bytes((out / "backup_manifest").read_bytes())
    verify = run("pg_verifybackup", str(plain))
    assert verify.returncode == 0, verify.stderr


@needs_pg15
def test_pg_basebackup_fetch_wal_sha256_and_max_rate(tmp_path: Path) -> None:
    out, transcript, proc = _basebackup(tmp_path, "15.20", "p", "-X", "none", "--max-rate=32k",
                                        "--manifest-checksums=SHA256")
    assert proc.returncode == 0, proc.stderr
    base = [q for q in transcript.queries() if q.startswith("BASE_BACKUP")][0]
    assert "MAX_RATE 32" in base and "MANIFEST_CHECKSUMS 'SHA256'" in base
    assert '"Checksum-Algorithm": "SHA256"' in (out / "backup_manifest").read_text()
    # -X none: no WAL in the backup, so only the manifest and the files are checked
    verify = run("pg_verifybackup", "--no-parse-wal", str(out))
    assert verify.returncode == 0, verify.stderr

    out, transcript, proc = _basebackup(tmp_path, "15.20", "p", "-X", "fetch")
    assert proc.returncode == 0, proc.stderr
    assert (out / "pg_wal" / "000000020000000000000008").read_bytes() == RECORDING.store.segment(2, 0x800000)
    assert run("pg_verifybackup", str(out)).returncode == 0


@needs_pg15
def test_pg_basebackup_reports_a_server_error_mid_backup(tmp_path: Path) -> None:
    sc = {"physical": {"recording": str(RECORDING_PATH), "backup": {"directory": str(datadir(tmp_path))}},
          "faults": [Fault("error", after_messages=10, sqlstate="58030", message="could not read file")]}
    with SyncFakeWalsender(sc) as server:
        proc = run("pg_basebackup", "-d", dsn(server), "-D", str(tmp_path / "b"), "-X", "none", "--no-sync")
    assert proc.returncode != 0
    assert "could not read file" in proc.stderr


@needs_pg15
def test_the_example_scenario_serves_both_tools(tmp_path: Path) -> None:
    example = RECORDING_PATH.parent / "pg15-timeline-switch.yaml"
    with SyncFakeWalsender(str(example)) as server:
        (tmp_path / "wal").mkdir()
        proc = run("pg_receivewal", "-d", dsn(server), "-D", str(tmp_path / "wal"), "--slot", "archiver",
                   "--endpos", format_lsn(FLUSH - 1), "--no-loop")
        assert proc.returncode == 0, proc.stderr
        proc = run("pg_basebackup", "-d", dsn(server), "-D", str(tmp_path / "backup"))
        assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
    assert len(check_segments(tmp_path / "wal")) == 4
    verify = run("pg_verifybackup", str(tmp_path / "backup"))
    assert verify.returncode == 0, verify.stderr
    assert (tmp_path / "backup" / "pg_hba.conf").read_bytes() == \
        (RECORDING_PATH.parent / "datadir" / "pg_hba.conf").read_bytes()


@needs_pg15
@pytest.mark.parametrize("version", ["10.23", "11.22", "12.20", "13.16"])
def test_pg_basebackup_against_older_servers(tmp_path: Path, version: str) -> None:
    """pg_basebackup 15 speaks the old protocol to 10-14; a manifest only from 13."""
    out, transcript, proc = _basebackup(tmp_path, version, "p", "-X", "fetch")
    assert proc.returncode == 0, proc.stderr
    base = [q for q in transcript.queries() if q.startswith("BASE_BACKUP")][0]
    assert ("MANIFEST 'yes'" in base) == (version >= "13")
    assert (out / "backup_manifest").exists() == (version >= "13")
    assert served_files(out)["base/5/16384"] == b"\xaa" * 70000
    if version >= "13":
        verify = run("pg_verifybackup", str(out))
        assert verify.returncode == 0, verify.stderr
