"""BASE_BACKUP, sans-IO: options read as real servers read them, ustar as PostgreSQL writes
it, the manifest pg_verifybackup checks, both protocol shapes, MAX_RATE pacing."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.physical.backup import (
    BackupFile,
    BackupOptions,
    backup_messages,
    build_manifest,
    collect_files,
    parse_backup_options,
    tar_header,
)
from pgwire_spec.replication import commands as rc
from pgwire_spec.walsender import Fault
from pgwire_spec.walsender.core import ServerState
from pgwire_spec.walsender.personas import ServerError
from pgwire_spec.wire import CommandComplete, CopyData, CopyDone, CopyOutResponse, DataRow, ErrorResponse

from .harness import RECORDING, Clock, connect, fields, kinds, scenario

# The header a real PostgreSQL 15.20 sent for its backup_label (size 206, mtime 15300466747).
REAL_BACKUP_LABEL_HEADER = bytes.fromhex(
    "6261636b75705f6c6162656c000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000003030303036303020303030303134352030303030313530203030303030303030333136203135333030343636"
    "373437203030313535333520300000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000007573746172003030706f737467726573000000000000000000000000000000"
    "000000000000000000706f73746772657300000000000000000000000000000000000000000000000030303030303030"
    "203030303030303020000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
)


def _options(text: str, major: int) -> BackupOptions:
    cmd = rc.parse_command(text, server_major=major)
    assert isinstance(cmd, rc.BaseBackup)
    return parse_backup_options(cmd, major)


def test_options_in_both_vocabularies_mean_the_same() -> None:
    new = _options("BASE_BACKUP (LABEL 'x', PROGRESS, CHECKPOINT 'fast', WAL, WAIT 0, MAX_RATE 32, "
                   "TABLESPACE_MAP, VERIFY_CHECKSUMS 0, MANIFEST 'yes', MANIFEST_CHECKSUMS 'sha256')", 15)
    old = _options("BASE_BACKUP LABEL 'x' PROGRESS FAST WAL NOWAIT MAX_RATE 32 TABLESPACE_MAP "
                   "NOVERIFY_CHECKSUMS MANIFEST 'yes' MANIFEST_CHECKSUMS 'SHA256'", 14)
    assert new == old == BackupOptions("x", True, "fast", True, False, 32, True, False, "yes", "SHA256")
    assert _options("BASE_BACKUP", 15) == BackupOptions()
    assert _options("BASE_BACKUP (INCREMENTAL false)", 17) == _options("BASE_BACKUP (INCREMENTAL 0)", 18) == BackupOptions()


@pytest.mark.parametrize(("text", "major", "code", "message"), [
    # each seen on a real server (14.23 or 15.20)
    ("BASE_BACKUP LABEL 'x' MAX_RATE 31", 14, "22003", '31 is outside the valid range for parameter "MAX_RATE" (32 .. 1048576)'),
    ("BASE_BACKUP (MAX_RATE 0)", 15, "22003", '0 is outside the valid range for parameter "MAX_RATE" (32 .. 1048576)'),
    ("BASE_BACKUP (MAX_RATE 1048577)", 15, "22003", '1048577 is outside the valid range for parameter "MAX_RATE" (32 .. 1048576)'),
    ("BASE_BACKUP LABEL 'x' LABEL 'y'", 14, "42601", 'duplicate option "label"'),
    ("BASE_BACKUP (LABEL 'a', LABEL 'b')", 15, "42601", 'duplicate option "label"'),
    ("BASE_BACKUP MANIFEST 'maybe'", 14, "42601", 'unrecognized manifest option: "maybe"'),
    ("BASE_BACKUP MANIFEST_CHECKSUMS 'md5'", 14, "42601", 'unrecognized checksum algorithm: "md5"'),
    ("BASE_BACKUP (CHECKPOINT 'slow')", 15, "42601", 'unrecognized checkpoint type: "slow"'),
    ("BASE_BACKUP (FOO)", 15, "42601", 'unrecognized base backup option: "foo"'),
    ("BASE_BACKUP (MANIFEST 'no', MANIFEST_CHECKSUMS 'sha256')", 15, "42601", "manifest checksums require a backup manifest"),
    ("BASE_BACKUP (TARGET 'server')", 15, "42601", 'target "server" requires a target detail'),
    ("BASE_BACKUP (PROGRESS 'maybe')", 15, "42601", "progress requires a Boolean value"),
    # INCREMENTAL: unknown before 17; on 17 and 18 a Boolean that needs summarize_wal (off; seen on 17.10 and 18)
    ("BASE_BACKUP (INCREMENTAL)", 16, "42601", 'unrecognized base backup option: "incremental"'),
    ("BASE_BACKUP (INCREMENTAL)", 17, "55000", "incremental backups cannot be taken unless WAL summarization is enabled"),
    ("BASE_BACKUP (INCREMENTAL true)", 18, "55000", "incremental backups cannot be taken unless WAL summarization is enabled"),
    ("BASE_BACKUP (INCREMENTAL 'maybe')", 17, "42601", "incremental requires a Boolean value"),
    ("BASE_BACKUP (INCREMENTAL false, INCREMENTAL false)", 17, "42601", 'duplicate option "incremental"'),
    ("BASE_BACKUP (INCREMENTAL false, MAX_RATE 0)", 18, "22003", '0 is outside the valid range for parameter "MAX_RATE" (32 .. 1048576)'),
])
def test_refused_options_say_what_the_server_says(text: str, major: int, code: str, message: str) -> None:
    with pytest.raises(ServerError) as exc:
        _options(text, major)
    assert (exc.value.sqlstate, exc.value.message) == (code, message)


def test_a_tar_header_is_byte_for_byte_the_servers() -> None:
    assert len(REAL_BACKUP_LABEL_HEADER) == 512
    assert tar_header("backup_label", size=206, mode=0o600, mtime=0o15300466747) == REAL_BACKUP_LABEL_HEADER


def test_tar_headers_read_back_with_tarfile() -> None:
    data = (tar_header("base", size=0, mode=0o700, mtime=1, directory=True)
            + tar_header("base/f", size=3, mode=0o600, mtime=2) + b"abc" + bytes(509) + bytes(1024))
    members = tarfile.open(fileobj=io.BytesIO(data)).getmembers()
    assert [(m.name, m.isdir(), m.size, m.mode, m.uname) for m in members] == [
        ("base", True, 0, 0o700, "postgres"), ("base/f", False, 3, 0o600, "postgres")]
    with pytest.raises(ServerError, match="too long"):
        tar_header("x" * 100, size=0, mode=0o600, mtime=0)


def test_the_manifest_checksum_covers_everything_before_its_line() -> None:
    files = [BackupFile("PG_VERSION", 1_700_000_000, b"15\n"), BackupFile("base", 0), BackupFile("a b/é", 5, b"")]
    text = build_manifest(files, algorithm="CRC32C", timeline=2, start=0x80F8A8, end=0x817E38)
    assert text.endswith(b"}\n")
    head, last = text[:-1].rsplit(b"\n", 1)
    assert last.startswith(b'"Manifest-Checksum": "')
    assert json.loads(last[:-1].split(b": ")[1]) == hashlib.sha256(head + b"\n").hexdigest()
    doc = json.loads(text)
    assert doc["PostgreSQL-Backup-Manifest-Version"] == 1
    # CRC-32C of "15\n" as a real server wrote it in its manifest
    assert doc["Files"][0] == {"Path": "PG_VERSION", "Size": 3, "Last-Modified": "2023-11-14 22:13:20 GMT",
                               "Checksum-Algorithm": "CRC32C", "Checksum": "8a744722"}
    assert [f["Path"] for f in doc["Files"]] == ["PG_VERSION", "a b/é"]  # no directories
    assert doc["WAL-Ranges"] == [{"Timeline": 2, "Start-LSN": "0/80F8A8", "End-LSN": "0/817E38"}]
    lines = text.decode().split("\n")
    assert lines[0] == '{ "PostgreSQL-Backup-Manifest-Version": 1,' and lines[1] == '"Files": ['
    encoded = json.loads(build_manifest(files, algorithm="SHA256", timeline=1, start=0, end=0, force_encode=True))
    assert encoded["Files"][0]["Encoded-Path"] == b"PG_VERSION".hex()
    assert encoded["Files"][0]["Checksum"] == hashlib.sha256(b"15\n").hexdigest()
    assert "Checksum" not in json.loads(build_manifest(files, algorithm="NONE", timeline=1, start=0, end=0))["Files"][0]


def _datadir(root: Path) -> Path:
    d = root / "data"
    if d.exists():
        return d
    for sub in ("global", "base/1", "pg_wal/archive_status", "pg_replslot/old", "pg_stat_tmp"):
        (d / sub).mkdir(parents=True)
    (d / "PG_VERSION").write_text("15\n")
    (d / "global" / "pg_control").write_bytes(bytes(range(256)) * 32)
    (d / "base" / "1" / "1259").write_bytes(b"\x01" * 20000)
    (d / "postgresql.conf").write_text("# served\n")
    (d / "postmaster.pid").write_text("4242\n")
    (d / "pg_replslot" / "old" / "state").write_text("x")
    (d / "pg_wal" / "000000010000000000000001").write_bytes(b"w")
    (d / "base" / "1" / "pgsql_tmp123").write_text("t")
    return d


def test_collected_files_leave_out_what_the_docs_exclude(tmp_path: Path) -> None:
    names = [(f.path, f.is_dir) for f in collect_files(_datadir(tmp_path))]
    assert names == [("PG_VERSION", False), ("base", True), ("base/1", True), ("base/1/1259", False),
                     ("global", True), ("pg_replslot", True), ("pg_stat_tmp", True), ("pg_wal", True),
                     ("postgresql.conf", False), ("global/pg_control", False)]


def _run(major: int, opts: BackupOptions, files: list[BackupFile]) -> list[Any]:
    return [m for m, _ in backup_messages(opts, major=major, files=files, store=RECORDING.store, timeline=2,
                                          start=0x80F8A8, end=0x817E38, checkpoint=0x80F8A8, started=1_700_000_000)]


def _archives(msgs: list[Any], major: int) -> tuple[bytes, bytes]:
    tar, manifest, target = bytearray(), bytearray(), "tar"
    for m in msgs:
        if isinstance(m, CopyOutResponse) and major < 15 and tar:
            target = "manifest"
        if isinstance(m, CopyData):
            data = m.data
            if major >= 15:
                kind, data = data[:1], data[1:]
                if kind == b"m":
                    target = "manifest"
                if kind != b"d":
                    continue
            (manifest if target == "manifest" else tar).extend(data)
    return bytes(tar), bytes(manifest)


@pytest.mark.parametrize("major", [14, 15])
def test_both_shapes_carry_the_directory_and_a_manifest(tmp_path: Path, major: int) -> None:
    files = collect_files(_datadir(tmp_path))
    msgs = _run(major, BackupOptions(label="t", manifest="yes", progress=True, tablespace_map=True), files)
    names = kinds(msgs)
    assert names[:6] == ["RowDescription", "DataRow", "CommandComplete"] * 2
    assert msgs[1].values == (b"0/80F8A8", b"2") and msgs[4].values[:2] == (None, None)
    assert names[-5:] == ["CopyDone", "RowDescription", "DataRow", "CommandComplete", "CommandComplete"]
    assert msgs[-3].values == (b"0/817E38", b"2") and msgs[-1].command_tag == "BASE_BACKUP"
    assert [m.command_tag for m in msgs if isinstance(m, CommandComplete)] == ["SELECT", "SELECT", "SELECT",
                                                                                "BASE_BACKUP"]
    copy_outs = names.count("CopyOutResponse")
    tar, manifest = _archives(msgs, major)
    if major >= 15:
        assert copy_outs == 1 and names.count("CopyDone") == 1
        typed = [m.data[:1] for m in msgs if isinstance(m, CopyData)]
        assert typed[0] == b"n" and msgs[7].data == b"nbase.tar\x00\x00"
        assert b"p" in typed and b"m" in typed and typed.index(b"p") < typed.index(b"m")
        (done,) = struct.unpack("!q", next(m.data[1:] for m in msgs if isinstance(m, CopyData) and m.data[:1] == b"p"))
        assert done == len(tar)
        assert tar.endswith(bytes(1024))  # 15+: the archive is a whole tar file
    else:
        assert copy_outs == 2 and names.count("CopyDone") == 2
        tar += bytes(1024)  # 10-14 leave the closing blocks to the client
    members = tarfile.open(fileobj=io.BytesIO(tar)).getmembers()
    assert [m.name for m in members][:2] == ["backup_label", "tablespace_map"]
    assert members[-1].name == "global/pg_control"
    archive = tarfile.open(fileobj=io.BytesIO(tar))
    label = archive.extractfile("backup_label").read().decode()  # type: ignore[union-attr]
    assert "START WAL LOCATION: 0/80F8A8 (file 000000020000000000000008)\n" in label
    assert "LABEL: t\n" in label and "START TIMELINE: 2\n" in label
    assert archive.extractfile("base/1/1259").read() == b"\x01" * 20000  # type: ignore[union-attr]
    doc = json.loads(manifest)
    assert [f["Path"] for f in doc["Files"]] == [m.name for m in members if m.isfile()]
    size_kb = int(msgs[4].values[2])
    assert size_kb == (len(tar) - (1024 if major < 15 else 0) + 1023) // 1024 or size_kb > 0


def test_the_wal_option_adds_the_backups_segments(tmp_path: Path) -> None:
    msgs = _run(15, BackupOptions(wal=True), collect_files(_datadir(tmp_path)))
    tar, manifest = _archives(msgs, 15)
    archive = tarfile.open(fileobj=io.BytesIO(tar))
    seg = archive.extractfile("pg_wal/000000020000000000000008").read()  # type: ignore[union-attr]
    assert seg == RECORDING.store.segment(2, 0x800000)
    assert manifest == b""  # MANIFEST 'no' is the default


def _backup_pair(tmp_path: Path, version: str = "15.20", faults: tuple[Fault, ...] = ()) -> tuple[Any, Clock, ServerState]:
    sc = scenario(version=version, backup={"directory": str(_datadir(tmp_path))})
    clock = Clock()
    state = ServerState(sc, clock=clock, extra_faults=list(faults))
    return connect(state, clock), clock, state


def test_max_rate_paces_the_archive(tmp_path: Path) -> None:
    pair, clock, _ = _backup_pair(tmp_path)
    t0 = clock.now
    events = pair.query("BASE_BACKUP (MAX_RATE 32, MANIFEST 'yes')")
    waits = 0
    while not events or kinds(events)[-1] != "ReadyForQuery":
        deadline = pair.waits[-1]
        assert deadline is not None and deadline > clock.now
        clock.now = deadline
        waits += 1
        events += pair.pump()
    data = sum(len(e.data) - 1 for e in events if isinstance(e, CopyData) and e.data[:1] == b"d")
    elapsed = clock.now - t0
    assert waits > 3
    # never faster than 32 kB/s; the last bytes go as soon as they may
    assert data / (32 * 1024) - 1.0 <= elapsed <= data / (32 * 1024) + 0.01


def test_a_backup_without_a_directory_or_on_a_bad_fault(tmp_path: Path) -> None:
    state = ServerState(scenario(), clock=Clock())
    pair = connect(state, state.clock)  # type: ignore[arg-type]
    err = pair.query("BASE_BACKUP")
    assert kinds(err) == ["ErrorResponse", "ReadyForQuery"] and "directory" in fields(err[0])["M"]
    pair, clock, state = _backup_pair(tmp_path, faults=(Fault("error", after_messages=8, message="disk gone"),))
    events = pair.query("BASE_BACKUP (MANIFEST 'yes')")
    assert kinds(events)[-2:] == ["ErrorResponse", "ReadyForQuery"]
    assert isinstance(events[-2], ErrorResponse) and fields(events[-2])["M"] == "disk gone"
    pair, clock, state = _backup_pair(tmp_path, faults=(Fault("disconnect", after_messages=9),))
    events = pair.query("BASE_BACKUP")
    assert pair.closed is not None and not any(isinstance(e, CopyDone) for e in events)
    assert any(isinstance(e, DataRow) for e in events)


def test_progress_reports_during_a_slow_archive(tmp_path: Path) -> None:
    """15+: besides the report at the end of the archive, one every 64 kB at most once a
    second (bbsink_copystream); at 32 kB/s a 100 kB archive gets reports in between."""
    d = _datadir(tmp_path)
    (d / "base" / "1" / "big").write_bytes(b"\x02" * 100_000)
    pair, clock, _ = _backup_pair(tmp_path)
    events = pair.query("BASE_BACKUP (MAX_RATE 32)")
    while kinds(events)[-1] != "ReadyForQuery":
        clock.now = pair.waits[-1]
        events += pair.pump()
    typed = [e.data for e in events if isinstance(e, CopyData)]
    reports = [struct.unpack("!q", t[1:])[0] for t in typed if t[:1] == b"p"]
    archive = sum(len(t) - 1 for t in typed if t[:1] == b"d")
    assert len(reports) >= 2 and reports == sorted(reports) and reports[-1] == archive
    assert all(b - a >= 65536 for a, b in zip([0] + reports[:-1], reports[:-1]))


def test_manifest_version_2_names_the_system_from_17() -> None:
    files = [BackupFile("PG_VERSION", 0, b"17\n")]
    v1 = json.loads(build_manifest(files, algorithm="CRC32C", timeline=1, start=0, end=0))
    v2 = json.loads(build_manifest(files, algorithm="CRC32C", timeline=1, start=0, end=0,
                                   system_id=RECORDING.system_id))
    assert v1["PostgreSQL-Backup-Manifest-Version"] == 1 and "System-Identifier" not in v1
    assert v2["PostgreSQL-Backup-Manifest-Version"] == 2 and v2["System-Identifier"] == int(RECORDING.system_id)
    msgs = [m for m, _ in backup_messages(BackupOptions(manifest="yes"), major=17, files=files,
                                          store=RECORDING.store, timeline=2, start=0x80F8A8, end=0x817E38,
                                          checkpoint=0x80F8A8, started=0, system_id=RECORDING.system_id)]
    _, manifest = _archives(msgs, 17)
    assert json.loads(manifest)["PostgreSQL-Backup-Manifest-Version"] == 2
