"""Recorded base backups and incremental backups (17+), sans-IO: the shipped 17 and 18
recordings hold a real full backup and a real incremental one taken after it; the fake
serves the full one to BASE_BACKUP and, once UPLOAD_MANIFEST brought the full one's
manifest, the incremental one to BASE_BACKUP (INCREMENTAL); other manifests get the
server's errors."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import replace
from typing import Any

import pytest

from pgwire_spec.lsn import format_lsn
from pgwire_spec.physical import read_recording
from pgwire_spec.physical.backup import BackupFile, RecordedBackup, backup_label, parse_manifest_start
from pgwire_spec.physical.recording import parse_recording, render_recording, verify_recording
from pgwire_spec.physical.scenario import FIXTURES
from pgwire_spec.walsender import Scenario
from pgwire_spec.walsender.core import ServerState
from pgwire_spec.walsender.personas import ServerError
from pgwire_spec.wire import (
    CommandComplete,
    CopyData,
    CopyFail,
    CopyInResponse,
    ErrorResponse,
    ReadyForQuery,
    encode_message,
)

from .harness import Clock, connect, fields, kinds

SHIPPED = {major: FIXTURES / f"pg{major}-timeline-switch.json.gz" for major in (17, 18)}


@pytest.fixture(scope="module", params=sorted(SHIPPED), ids=lambda m: f"pg{m}")
def recording(request: pytest.FixtureRequest) -> Any:
    return read_recording(SHIPPED[request.param])


def _backups(rec: Any) -> tuple[RecordedBackup, RecordedBackup]:
    full, incr = rec.backup("full"), rec.backup("incremental")
    assert full is not None and incr is not None
    return full, incr


def test_the_shipped_recordings_hold_a_full_and_an_incremental_backup(recording: Any) -> None:
    full, incr = _backups(recording)
    assert incr.incremental_from == (full.start_lsn, full.timeline)
    assert full.incremental_from is None
    assert "INCREMENTAL" in incr.command and "INCREMENTAL" not in full.command
    names = {f.path for f in incr.files}
    assert any("/INCREMENTAL." in n for n in names)
    # a real backup of a real cluster, taken on the current timeline, inside the recorded WAL
    assert {f.path for f in full.files} >= {"PG_VERSION", "global/pg_control", "postgresql.conf"}
    assert full.timeline == incr.timeline == recording.timeline
    first, last = recording.store.range(full.timeline)
    assert first <= full.start_lsn < full.end_lsn <= incr.start_lsn < incr.end_lsn <= last
    assert json.loads(full.manifest or b"")["PostgreSQL-Backup-Manifest-Version"] == 2


def test_a_recording_with_backups_reads_back_as_written(recording: Any) -> None:
    again = parse_recording(json.loads(render_recording(recording)), recording.path)
    assert again.backups == recording.backups
    assert again == recording


def test_backup_label_is_the_servers_but_its_start_time(recording: Any) -> None:
    for b in _backups(recording):
        ours = backup_label(start=b.start_lsn, checkpoint=b.checkpoint_lsn, timeline=b.timeline,
                            label="pg_basebackup base backup", started=0, segment_size=recording.segment_size,
                            incremental_from=b.incremental_from)
        assert [x for x in ours.decode().splitlines() if not x.startswith("START TIME")] == \
            [x for x in b.label.decode().splitlines() if not x.startswith("START TIME")]


def test_a_manifest_without_its_checksum_version_2_or_json_is_refused(recording: Any) -> None:
    full, _ = _backups(recording)
    assert full.manifest is not None
    assert parse_manifest_start(full.manifest) == (full.timeline, full.start_lsn, int(recording.system_id))
    cases = {
        full.manifest.replace(b'"Size": ', b'"Size":  ', 1): "manifest checksum mismatch",
        full.manifest.replace(b'"PostgreSQL-Backup-Manifest-Version": 2', b'"PostgreSQL-Backup-Manifest-Version": 1'):
            "backup manifest version 1 does not support incremental backup",
        b"not json": "could not parse backup manifest",
        b"": "could not parse backup manifest",
    }
    for data, message in cases.items():
        with pytest.raises(ServerError) as err:
            parse_manifest_start(data)
        assert err.value.sqlstate == "XX000" and message in err.value.message


# -- over the fake's core --------------------------------------------------------------------

def _pair(recording: Any, version: str | None = None) -> Any:
    data: dict[str, Any] = {"physical": {"recording": recording}}
    if version is not None:
        data["server"] = {"version": version}
    state = ServerState(Scenario.from_dict(data))
    return connect(state, Clock())


def _upload(pair: Any, manifest: bytes) -> list[Any]:
    events = pair.query("UPLOAD_MANIFEST")
    assert kinds(events) == ["CopyInResponse"] and isinstance(events[0], CopyInResponse)
    out: list[Any] = []
    for i in range(0, len(manifest), 10000):
        out += pair.pump(pair.client.copy_data(manifest[i:i + 10000]))
    return out + pair.pump(pair.client.copy_done())


def _archive(events: list[Any]) -> dict[str, bytes]:
    """The base archive of a 15+ BASE_BACKUP: 'd' CopyData after 'n' up to the next 'p'/'m'."""
    data = bytearray()
    inside = False
    for e in events:
        if isinstance(e, CopyData):
            kind = e.data[:1]
            if kind == b"n":
                inside = True
            elif kind in (b"p", b"m"):
                inside = False
            elif kind == b"d" and inside:
                data += e.data[1:]
    with tarfile.open(fileobj=io.BytesIO(bytes(data))) as tar:
        return {m.name: (f.read() if (f := tar.extractfile(m)) else b"") for m in tar if m.isreg()}


def _error(events: list[Any]) -> dict[str, str]:
    errors = [e for e in events if isinstance(e, ErrorResponse)]
    assert errors, kinds(events)
    assert isinstance(events[-1], ReadyForQuery)
    return fields(errors[0])


INCREMENTAL = "BASE_BACKUP (LABEL 'x', MANIFEST 'yes', INCREMENTAL)"


def test_incremental_needs_an_uploaded_manifest_first(recording: Any) -> None:
    err = _error(_pair(recording).query(INCREMENTAL))
    assert (err["C"], err["M"]) == ("55000", "must UPLOAD_MANIFEST before performing an incremental BASE_BACKUP")


def test_upload_manifest_then_incremental_serves_the_recorded_incremental_backup(recording: Any) -> None:
    full, incr = _backups(recording)
    pair = _pair(recording)
    done = _upload(pair, full.manifest or b"")
    assert [e for e in done if isinstance(e, CommandComplete)] == [CommandComplete("UPLOAD_MANIFEST")]
    assert isinstance(done[-1], ReadyForQuery)
    files = _archive(pair.query(INCREMENTAL))
    for f in incr.files:
        if isinstance(f, BackupFile) and f.content is not None:
            assert files[f.path] == f.content, f.path
    label = files["backup_label"].decode()
    assert f"INCREMENTAL FROM LSN: {format_lsn(full.start_lsn)}\nINCREMENTAL FROM TLI: {full.timeline}\n" in label
    # a full backup on the same connection ignores the uploaded manifest (basebackup.c)
    files = _archive(pair.query("BASE_BACKUP (LABEL 'x')"))
    assert not any("INCREMENTAL." in name for name in files)
    assert "INCREMENTAL FROM" not in files["backup_label"].decode()


def _resigned(manifest: bytes, old: bytes, new: bytes) -> bytes:
    """*manifest* with *old* replaced by *new* and its checksum recomputed."""
    body = manifest.replace(old, new).rstrip(b"\n").rpartition(b"\n")[0] + b"\n"
    return body + b'"Manifest-Checksum": "' + hashlib.sha256(body).hexdigest().encode() + b'"}\n'


def test_uploads_the_server_refuses(recording: Any) -> None:
    full, incr = _backups(recording)
    assert full.manifest is not None and incr.manifest is not None
    # A later backup's manifest is read, but the fake has WAL summaries from the full
    # backup's start only.
    pair = _pair(recording)
    assert isinstance(_upload(pair, incr.manifest)[-1], ReadyForQuery)
    err = _error(pair.query(INCREMENTAL))
    assert err["C"] == "55000" and err["M"].startswith(
        f"WAL summaries are required on timeline {incr.timeline} from {format_lsn(incr.start_lsn)}")
    # another cluster's manifest is refused when it arrives
    other = _resigned(full.manifest, f'"System-Identifier": {recording.system_id}'.encode(), b'"System-Identifier": 1')
    err = _error(_upload(_pair(recording), other))
    assert err["C"] == "XX000" and err["M"] == (f"system identifier in backup manifest is 1, but database system "
                                                f"identifier is {recording.system_id}")


def test_copy_fail_during_upload_manifest(recording: Any) -> None:
    pair = _pair(recording)
    pair.query("UPLOAD_MANIFEST")
    err = _error(pair.pump(encode_message(CopyFail("client gave up"))))
    assert (err["C"], err["M"]) == ("57014", "COPY from stdin failed: client gave up")
    # nothing was kept: INCREMENTAL still needs an upload
    err = _error(pair.query(INCREMENTAL))
    assert err["M"] == "must UPLOAD_MANIFEST before performing an incremental BASE_BACKUP"


def test_before_17_upload_manifest_is_not_a_command(recording: Any) -> None:
    # Not a replication command of 16's grammar: SQL, which a physical walsender refuses.
    err = _error(_pair(recording, "16.4").query("UPLOAD_MANIFEST"))
    assert (err["C"], err["M"]) == ("08P01", "cannot execute SQL commands in WAL sender for physical replication")


def test_verify_recording_checks_the_backups(recording: Any) -> None:
    full, incr = _backups(recording)
    assert verify_recording(recording)[1] == []
    cut = replace(full, files=tuple(replace(f, content=f.content[:-1]) if f.path == "PG_VERSION" else f
                                    for f in full.files))
    moved = replace(incr, label=incr.label.replace(b"INCREMENTAL FROM LSN: ", b"INCREMENTAL FROM LSN: 1"))
    problems = verify_recording(replace(recording, backups=(cut, moved)))[1]
    assert any("backups/full: the manifest and the recorded files differ" in p and "PG_VERSION" in p
               for p in problems), problems
    assert any("backups/incremental: incremental from" in p for p in problems), problems
