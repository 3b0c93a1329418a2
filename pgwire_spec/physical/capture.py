"""Record a real server's physical replication, across a timeline switch.

:func:`record_physical` initialises a cluster with small WAL segments
(``initdb --wal-segsize=1``), streams its WAL with START_REPLICATION … PHYSICAL while a
workload runs (both directions: XLogData with their positions, keepalives, standby status
updates, hot standby feedback), then stops it, restores a copy of its data directory as a
standby (``standby.signal``), promotes it (timeline 2) and records from the promoted server:
its timeline history (TIMELINE_HISTORY), the old timeline's stream up to the switch point
with the end-of-timeline handshake, the request at the very end of the old timeline (no
COPY mode), and the new timeline's stream. Errors the real server gives to requests a
client may make (a position ahead of the flush position, a timeline not in the history, a
position past the switch point) are recorded too.

The socket loop is the session capture's (:class:`pgwire_spec.capture.session._Conn`);
the conversation logic is the sans-IO :class:`~.client.PhysicalClient`.
"""

from __future__ import annotations

import datetime as _dt
import io
import os
import signal
import subprocess
import tarfile
import time
from collections.abc import Callable
from typing import Any

import psycopg

from .. import majors
from ..capture.live import CaptureError
from ..capture.session import Replicated, SessionError, _Conn
from ..lsn import format_lsn, parse_lsn
from ..replication.messages import PrimaryKeepalive
from ..servers import Provider, Server
from ..servers._base import (
    ClusterProvider,
    LocalCluster,
    describe_server,
    new_root,
    server_user,
)
from ..servers.system import SystemProvider
from ..wire import (
    AuthenticationOk,
    CopyBothResponse,
    CopyData,
    CopyInResponse,
    CopyOutResponse,
    DataRow,
    ErrorResponse,
    ReadyForQuery,
    RowDescription,
    WireMessage,
)
from .backup import BackupFile, RecordedBackup
from .client import PhysicalClient
from .recording import Conversation, PhysicalRecording, RecordedMessage, conversation_from
from .wal import segment_start

__all__ = ["CaptureError", "record_physical", "PHYSICAL_SETTINGS", "WORKLOAD"]

Progress = Callable[[str], None]

#: What the recorded servers run with (on top of the providers' capture settings; the
#: setting that keeps WAL is the major's, see :func:`physical_settings`).
PHYSICAL_SETTINGS: dict[str, str] = {
    "wal_level": "replica",
    "hot_standby": "on",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    "checkpoint_timeout": "1h",
    "wal_sender_timeout": "60s",
}

#: The recorded workload, by phase (``physical-v1``).
WORKLOAD: dict[str, tuple[str, ...]] = {
    "primary": (
        "CREATE TABLE pgws_wal (id int PRIMARY KEY, note text)",
        "INSERT INTO pgws_wal SELECT g, repeat('x', 40) || g FROM generate_series(1, 300) g",
        # A switch: the rest of the segment is sent, and the segment completes.
        "SELECT pg_switch_wal()",
        "INSERT INTO pgws_wal SELECT g, 'second segment ' || g FROM generate_series(301, 600) g",
        "UPDATE pgws_wal SET note = note || '!' WHERE id % 10 = 0",
        "DELETE FROM pgws_wal WHERE id % 7 = 0",
    ),
    "promoted": (
        "INSERT INTO pgws_wal SELECT g, 'timeline 2 ' || g FROM generate_series(601, 800) g",
        "UPDATE pgws_wal SET note = 'after promotion' WHERE id % 25 = 0",
    ),
}
WORKLOAD_NAME = "physical-v1"
SLOT = "pgws_physical"
#: Statements that leave one database (postgres): the recorded base backups stay small.
TINY_CLUSTER = (
    "ALTER DATABASE template0 IS_TEMPLATE false", "DROP DATABASE template0",
    "ALTER DATABASE template1 IS_TEMPLATE false", "DROP DATABASE template1",
)
#: The label pg_basebackup gives a backup (pg_basebackup.c, default --label).
BACKUP_LABEL = "pg_basebackup base backup"


def physical_settings(table: majors.Major) -> dict[str, str]:
    """The settings of a recorded server of that major: every segment of the recording kept
    (the promoted copy streams the old timeline too), and on 17+ WAL summarization, which
    incremental backups need."""
    keep = {"wal_keep_size": "64MB"} if table.wal_keep_setting == "wal_keep_size" else {"wal_keep_segments": "64"}
    summaries = {"summarize_wal": "on"} if table.incremental_backup else {}
    return {**PHYSICAL_SETTINGS, **keep, **summaries}


def backup_command(table: majors.Major, *, incremental: bool = False) -> str:
    """BASE_BACKUP as that major's ``pg_basebackup -X stream --checkpoint=fast`` sends it
    (pg_basebackup.c BaseBackup: the option keywords up to 14, a parenthesised list from
    15; a manifest from 13; INCREMENTAL after UPLOAD_MANIFEST from 17)."""
    if table.generic_options:
        opts = [f"LABEL '{BACKUP_LABEL}'", "PROGRESS", "CHECKPOINT 'fast'", "WAIT 0", "MANIFEST 'yes'",
                "TARGET 'client'"] + (["INCREMENTAL"] if incremental else [])
        return "BASE_BACKUP ( " + ",  ".join(opts) + ")"
    opts = [f"LABEL '{BACKUP_LABEL}'", "PROGRESS", "FAST", "NOWAIT"] + (["MANIFEST 'yes'"] if table.backup_manifest
                                                                        else [])
    return "BASE_BACKUP " + " ".join(opts)


def _archive_members(tar_bytes: bytes, where: str) -> tuple[bytes, tuple[BackupFile, ...]]:
    """(backup_label, the other members in order) of a base archive as the server sent it
    (10-14 leave out the two closing zero blocks)."""
    label = b""
    members: list[BackupFile] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            for m in tar:
                if m.name == "backup_label":
                    f = tar.extractfile(m)
                    label = f.read() if f is not None else b""
                elif m.name == "tablespace_map":
                    continue
                elif m.isdir():
                    members.append(BackupFile(m.name, int(m.mtime), None, m.mode))
                elif m.isreg():
                    f = tar.extractfile(m)
                    members.append(BackupFile(m.name, int(m.mtime), f.read() if f is not None else b"", m.mode))
    except tarfile.TarError as exc:
        raise CaptureError(f"{where}: the base archive does not read as tar: {exc}") from None
    if not label:
        raise CaptureError(f"{where}: the base archive has no backup_label")
    return label, tuple(members)


def _position(row: tuple[bytes | None, ...]) -> tuple[int, int]:
    return parse_lsn(bytes(row[0] or b"").decode()), int(bytes(row[1] or b"0").decode())


class _Cluster(LocalCluster):
    """A local cluster whose data directory can be copied and started as a standby."""

    def stop_keep(self) -> None:
        """Stop postgres (fast shutdown) and keep the data directory."""
        self._kill()


def _sql(server: Server, *statements: str) -> list[Any]:
    out = []
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as conn:
        for sql in statements:
            cur = conn.execute(sql)
            out.append(cur.fetchone() if cur.description else None)
    return out


def _flush_lsn(server: Server) -> int:
    row = _sql(server, "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                       "ELSE pg_current_wal_flush_lsn() END::text")[0]
    return parse_lsn(str(row[0]))


class _Recorder:
    """One replication connection and its conversation."""

    def __init__(self, server: Server, segment_size: int, name: str, timeout: float = 30.0) -> None:
        self.server = server
        self.name = name
        self.client = PhysicalClient(user=server.user, segment_size=segment_size)
        self.conn = _Conn(server, self.client, timeout)  # type: ignore[arg-type]  # same interface
        self.conn.send(self.client.startup())
        ev = self.conn.event()
        if not isinstance(ev, AuthenticationOk):
            raise CaptureError(f"physical capture needs trust authentication, the server asked for {type(ev).__name__}")
        self.conn.until(ReadyForQuery)

    def command(self, sql: str) -> list[WireMessage]:
        """Send a command, read up to ReadyForQuery; the messages read."""
        self.conn.send(self.client.query(sql))
        return self._until_ready()

    def _until_ready(self) -> list[WireMessage]:
        out: list[WireMessage] = []
        while True:
            ev = self.conn.event()
            if isinstance(ev, WireMessage):
                out.append(ev)
                if isinstance(ev, ReadyForQuery):
                    return out

    def stream(self, lsn: int, timeline: int, *, slot: str | None = None, until: Callable[[], int] | None = None,
               steps: tuple[Callable[[], None], ...] = (), feedback_xmin: int | None = None) -> list[WireMessage]:
        """START_REPLICATION; run *steps* while streaming; stop when the server ends the
        copy (end of a historic timeline) or, when *until* is given, once the WAL it
        returns was received; returns the messages after the copy."""
        self.conn.send(self.client.start_replication(lsn, timeline, slot))
        first = self.conn.event()
        if not isinstance(first, CopyBothResponse):
            if isinstance(first, ReadyForQuery):
                return [first]
            return [first, *self._until_ready()] if isinstance(first, WireMessage) else self._until_ready()
        pending = list(steps)
        target: int | None = None
        asked = 0.0
        sent_feedback = False
        while True:
            ev = self.conn.event(wait=0.2)
            if isinstance(ev, Replicated) and isinstance(ev.payload, PrimaryKeepalive) and ev.payload.reply_requested:
                self.conn.send(self.client.status_update())
            if isinstance(ev, WireMessage) and not isinstance(ev, Replicated):
                if self.client.server_done:
                    break  # end of a historic timeline: the server sent CopyDone
                raise CaptureError(f"{self.name}: unexpected {type(ev).__name__} while streaming: {ev!r}")
            if pending and ev is None:
                pending.pop(0)()
                continue
            if not pending and until is not None:
                if target is None:
                    target = until()
                    # Ask for a keepalive once: the server answers an 'r' with replyRequested.
                    self.conn.send(self.client.status_update(reply_requested=True))
                    if feedback_xmin is not None and not sent_feedback:
                        self.conn.send(self.client.hot_standby_feedback(feedback_xmin))
                        sent_feedback = True
                    asked = time.monotonic()
                if self.client.received >= target:
                    break
                if time.monotonic() - asked > 20:
                    raise CaptureError(f"{self.name}: streaming stalled at {format_lsn(self.client.received)}, "
                                       f"expected {format_lsn(target)}")
        self.conn.send(self.client.status_update())
        self.conn.send(self.client.copy_done())
        return self._until_ready()

    def backup(self, name: str, table: majors.Major, *, manifest: bytes | None = None) -> RecordedBackup:
        """Take a base backup (after UPLOAD_MANIFEST of *manifest*: an incremental one) and
        keep what the server sent: positions, backup_label, manifest, archive members."""
        if manifest is not None:
            self.conn.send(self.client.query("UPLOAD_MANIFEST"))
            first = self.conn.event()
            if not isinstance(first, CopyInResponse):
                raise CaptureError(f"{self.name}: UPLOAD_MANIFEST answered {first!r}, expected CopyInResponse")
            for i in range(0, len(manifest), 65536):
                self.conn.send(self.client.copy_data(manifest[i:i + 65536]))
            self.conn.send(self.client.copy_done())
            errors = _errors(self._until_ready())
            if errors:
                raise CaptureError(f"{self.name}: UPLOAD_MANIFEST: {errors[0]}")
        command = backup_command(table, incremental=manifest is not None)
        messages = self.command(command)
        if _errors(messages):
            raise CaptureError(f"{self.name}: {command}: {_errors(messages)[0]}")
        results: list[list[tuple[bytes | None, ...]]] = []
        archives: list[bytearray] = []
        for m in messages:
            if isinstance(m, RowDescription):
                results.append([])
            elif isinstance(m, DataRow) and results:
                results[-1].append(tuple(m.values))
            elif isinstance(m, CopyOutResponse) and not table.backup_copy_protocol:
                archives.append(bytearray())  # 10-14: one COPY per archive, one for the manifest
            elif isinstance(m, CopyData):
                if not table.backup_copy_protocol:
                    archives[-1] += m.data
                elif m.data[:1] in (b"n", b"m"):
                    archives.append(bytearray())  # 15+: a new archive, or the manifest
                elif m.data[:1] == b"d":
                    archives[-1] += m.data[1:]
        if len(results) < 3 or not archives:
            raise CaptureError(f"{self.name}: {command}: expected start, tablespaces, archive and end, "
                               f"found {len(results)} result sets and {len(archives)} archives")
        start, tli = _position(results[0][0])
        end, _ = _position(results[-1][0])
        label, files = _archive_members(bytes(archives[0]), f"{self.name}: {command}")
        got_manifest = bytes(archives[1]) if table.backup_manifest and len(archives) > 1 else None
        return RecordedBackup(name, command, tli, start, end, label, files, got_manifest)

    def close(self) -> Conversation:
        try:
            self.conn.send(self.client.terminate())
        finally:
            self.conn.close()
        return conversation_from(self.name, self.client.transcript)


def _without_archive_data(conv: Conversation, table: majors.Major) -> Conversation:
    """A backup connection's conversation less the archive and manifest bytes (the
    recording's ``backups`` hold them): on 15+ the typed CopyData 'n', 'm' and 'p' stay,
    before 15 every CopyData goes."""
    def keep(m: RecordedMessage) -> bool:
        if m.direction != "B" or m.expected.get("type") != "CopyData" or m.hex is None:
            return True
        return table.backup_copy_protocol and bytes.fromhex(m.hex[10:12]) in (b"n", b"m", b"p")
    return Conversation(conv.name, tuple(m for m in conv.messages if keep(m)))


def _promote(server: Server, cluster: _Cluster, table: majors.Major) -> None:
    """Promote a standby: pg_promote() (12+), before that the signal file pg_ctl promote
    writes (``promote`` in the data directory) and SIGUSR1 to the postmaster
    (xlog.c CheckPromoteSignal), then wait until recovery ended."""
    if table.promote_function:
        _sql(server, "SELECT pg_promote(true, 60)")
        return
    assert cluster.root is not None and cluster.process is not None
    promote = cluster.root / "data" / "promote"
    promote.write_text("")
    user = server_user()
    if user is not None:
        os.chown(promote, user[1], user[2])
    os.kill(cluster.process.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 60
    while _sql(server, "SELECT pg_is_in_recovery()")[0][0]:
        if time.monotonic() > deadline:
            raise CaptureError("the standby did not leave recovery in 60 s after the promote signal")
        time.sleep(0.1)


def _steps(conn: psycopg.Connection[Any], statements: tuple[str, ...]) -> tuple[Callable[[], None], ...]:
    """One callable per workload statement, run between reads of the stream."""
    def step(sql: str) -> Callable[[], None]:
        def run() -> None:
            conn.execute(sql.encode())
        return run
    return tuple(step(sql) for sql in statements)


def _errors(messages: list[WireMessage]) -> list[str]:
    return [f"{m.code} {m.message}" for m in messages if isinstance(m, ErrorResponse)]


def record_physical(prov: Provider | None = None, *, progress: Progress | None = None,
                    segment_size_mb: int = 1,
                    on_start: Callable[[Server, int], None] | None = None) -> PhysicalRecording:
    """Record the physical streams of a real server across a promotion (see the module
    docstring). *prov*: a provider that runs local binaries (``system``, ``npm``,
    ``wheel``); default Debian's postgresql-15 (``system``, major 15). *on_start* is called
    with the primary and the first recorded position before anything is recorded (a test
    takes its base backup there)."""
    say = progress or (lambda _m: None)
    prov = prov if prov is not None else SystemProvider(15)
    if not isinstance(prov, ClusterProvider):
        raise CaptureError(f"physical capture runs the server itself (initdb, a restored copy, promotion); "
                           f"expected a provider among system, npm, wheel, found {prov.name}")
    bin_path, lib_dir = prov.locate()
    seg = segment_size_mb << 20
    primary = _Cluster(bin_path, settings=PHYSICAL_SETTINGS, lib_dir=lib_dir)
    standby: _Cluster | None = None
    conversations: list[Conversation] = []
    backups: list[RecordedBackup] = []
    try:
        major = primary.binary_major()
        table = majors.MAJORS.get(major)
        if table is None:
            raise CaptureError(f"physical capture knows PostgreSQL {min(majors.MAJORS)}-{max(majors.MAJORS)}, "
                               f"found {major}")
        primary.settings.update(physical_settings(table))
        if table.initdb_wal_segsize:
            primary.initdb_args = (f"--wal-segsize={segment_size_mb}",)
        else:
            seg = 16 << 20  # 10: the segment size is fixed when PostgreSQL is built (16 MB)
        host, port = primary.start()
        server = describe_server(prov.name, host, port, "postgres", "postgres", bin_path)
        say(f"primary: PostgreSQL {server.version} on {host}:{port}, {seg >> 20} MB WAL segments")
        sysid = str(_sql(server, "SELECT system_identifier::text FROM pg_control_system()")[0][0])
        # A tiny cluster: the template databases go (one database left, ~8 MB to back up).
        _sql(server, *TINY_CLUSTER)
        _sql(server, "CHECKPOINT", "SELECT pg_switch_wal()")
        start = segment_start(_flush_lsn(server), seg)
        if on_start is not None:
            on_start(server, start)

        rec = _Recorder(server, seg, "primary")
        for cmd in ("IDENTIFY_SYSTEM", "SHOW wal_segment_size", "SHOW data_directory_mode", "TIMELINE_HISTORY 1",
                    f'CREATE_REPLICATION_SLOT "{SLOT}" PHYSICAL ' + ("(RESERVE_WAL)" if table.generic_options else "RESERVE_WAL"),
                    f'READ_REPLICATION_SLOT "{SLOT}"',
                    'READ_REPLICATION_SLOT "pgws_missing"', "START_REPLICATION 0/FFFFFF00 TIMELINE 1",
                    "START_REPLICATION 0/1000000 TIMELINE 2"):
            rec.command(cmd)
        sql_conn = psycopg.connect(server.dsn, autocommit=True, connect_timeout=10)

        with sql_conn:
            steps = _steps(sql_conn, WORKLOAD["primary"])
            xmin = int(_sql(server, "SELECT txid_current()::text::bigint")[0][0]) & 0xFFFFFFFF
            rec.stream(start, 1, slot=SLOT, steps=steps, until=lambda: _flush_lsn(server), feedback_xmin=xmin)
        rec.command(f'READ_REPLICATION_SLOT "{SLOT}"')
        conversations.append(rec.close())
        primary_end = rec.client.received
        say(f"primary: streamed {format_lsn(start)} to {format_lsn(primary_end)} on timeline 1")

        # Restore a copy as a standby and promote it: timeline 2.
        primary.stop_keep()
        assert primary.root is not None
        standby = _Cluster(bin_path, settings=physical_settings(table), lib_dir=lib_dir)
        standby.root = new_root()
        standby.root.chmod(0o755)
        user = server_user()
        data = standby.root / "data"
        subprocess.run(["cp", "-a", str(primary.root / "data"), str(data)], check=True)
        # 12+: standby.signal; before, recovery.conf with standby_mode (docs: "Hot Standby").
        signal_file = data / ("standby.signal" if table.promote_function else "recovery.conf")
        signal_file.write_text("" if table.promote_function else "standby_mode = 'on'\n")
        (data / "postmaster.pid").unlink(missing_ok=True)
        if user is not None:
            os.chown(standby.root, user[1], user[2])
            os.chown(signal_file, user[1], user[2])
        host, port = standby.launch(data)
        promoted = describe_server("system", host, port, "postgres", "postgres", bin_path)
        _promote(promoted, standby, table)
        say(f"restored copy promoted on {host}:{port}")
        # End-of-recovery checkpoint written; a few inserts on the new timeline first.
        _sql(promoted, "INSERT INTO pgws_wal VALUES (0, 'first on timeline 2')")

        rec = _Recorder(promoted, seg, "promoted")
        identify = rec.command("IDENTIFY_SYSTEM")
        history = rec.command("TIMELINE_HISTORY 2")
        if _errors(identify + history):
            raise CaptureError(f"promoted server: {_errors(identify + history)}")
        content = bytes(rec.client.rows[0][1] or b"")
        switch = parse_lsn(content.decode().split("\t")[1])
        rec.command(f'READ_REPLICATION_SLOT "{SLOT}"')
        for cmd in ("TIMELINE_HISTORY 3", "START_REPLICATION 0/1000000 TIMELINE 3",
                    f"START_REPLICATION {format_lsn(switch + 0x100000)} TIMELINE 1"):
            rec.command(cmd)
        rec.stream(start, 1)  # the whole old timeline, then the end-of-timeline handshake
        rec.stream(switch, 1)  # at the very end of the old timeline: no COPY mode
        sql_conn = psycopg.connect(promoted.dsn, autocommit=True, connect_timeout=10)

        def take(name: str, incremental: bool = False) -> Callable[[], None]:
            # A base backup on its own replication connection while the stream of the
            # current timeline runs (a real backup's timeline is the server's); on 17+ an
            # incremental one against the full backup's manifest after more writes.
            def run() -> None:
                r = _Recorder(promoted, seg, f"backup-{name}")
                try:
                    backups.append(r.backup(name, table, manifest=backups[-1].manifest if incremental else None))
                finally:
                    conversations.append(_without_archive_data(r.close(), table))
                say(f"promoted: {name} base backup {format_lsn(backups[-1].start_lsn)} to "
                    f"{format_lsn(backups[-1].end_lsn)}, {len(backups[-1].files)} members")
            return run

        with sql_conn:
            work = WORKLOAD["promoted"]
            steps = (*_steps(sql_conn, work[:1]), take("full"), *_steps(sql_conn, work[1:]),
                     *((take("incremental", True),) if table.incremental_backup else ()))
            rec.stream(segment_start(switch, seg), 2, slot=SLOT, steps=steps, until=lambda: _flush_lsn(promoted))
        conversations.append(rec.close())
        say(f"promoted: timeline 1 ends at {format_lsn(switch)}; streamed timeline 2 to "
            f"{format_lsn(rec.client.received)}")
        return PhysicalRecording.build(
            server_version=server.version, major=server.major, provider=prov.describe() if prov.name != "system" else f"system {bin_path}",
            workload=WORKLOAD_NAME, captured_on=_dt.date.today().isoformat(), system_id=sysid,
            segment_size=seg, conversations=tuple(conversations), backups=tuple(backups),
        )
    except (psycopg.Error, SessionError, OSError, subprocess.CalledProcessError) as exc:
        raise CaptureError(f"physical capture failed: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}") from None
    finally:
        primary.stop()
        if standby is not None:
            standby.stop()
