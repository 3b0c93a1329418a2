"""BASE_BACKUP: a directory streamed as a real walsender streams a data directory.

Sans-IO. :func:`parse_backup_options` reads the command's options as the server of a major
reads them (basebackup.c, parse_basebackup_options: the same SQLSTATEs and texts, seen on
14 and 15); :func:`backup_messages` produces the protocol messages of the backup in the
shape of that major:

* 10-14 (docs, "Streaming Replication Protocol", BASE_BACKUP): two result sets (start
  position and timeline; one row per tablespace), then per tablespace a CopyOutResponse
  with the tablespace as a ustar archive *without* its two closing zero blocks, CopyDone;
  the backup manifest (13+, when asked for) in one more CopyOutResponse; the end-position
  result set; CommandComplete ``BASE_BACKUP``.
* 15+: the same two result sets, then one CopyOutResponse for everything: CopyData typed by
  their first byte, ``n`` a new archive (name, tablespace path), ``d`` archive or manifest
  data, ``p`` progress (Int64 bytes done, at least at the end of each archive), ``m`` the
  manifest follows; the archives are whole ustar files (with the closing blocks); CopyDone,
  the end-position result set, CommandComplete ``BASE_BACKUP``.

The archive holds ``backup_label`` (and ``tablespace_map`` when asked for) first, then the
directory's files (less those the docs list as excluded), ``global/pg_control`` last, then
with the WAL option the WAL segments of the backup from the recording. The manifest lists
every file sent but the WAL, with sizes, modification times and checksums (CRC32C by
default) and its own SHA-256, which pg_verifybackup checks. MAX_RATE paces the archive and
manifest bytes: :class:`Throttle` says when the next bytes may go.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import majors
from ..lsn import format_lsn, parse_lsn
from ..majors import Major
from ..replication import commands as rc
from ..replication import frames
from ..walsender.personas import ServerError
from ..wire import (
    CommandComplete,
    CopyData,
    CopyDone,
    CopyOutResponse,
    DataRow,
    FieldDescription,
    NoticeResponse,
    RowDescription,
    WireMessage,
)
from .wal import WalStore, crc32c, segment_name, segment_start

__all__ = [
    "BackupOptions",
    "BackupSource",
    "BackupFile",
    "Throttle",
    "parse_backup_options",
    "collect_files",
    "tar_header",
    "build_manifest",
    "backup_label",
    "backup_messages",
    "MAX_RATE_LOWER",
    "MAX_RATE_UPPER",
    "CHECKSUM_ALGORITHMS",
    "RecordedBackup",
    "parse_manifest_start",
]

#: basebackup.h: MAX_RATE bounds, in kB/s.
MAX_RATE_LOWER = 32
MAX_RATE_UPPER = 1048576
#: pg_checksum_type_name: the manifest's checksum algorithms.
CHECKSUM_ALGORITHMS = ("NONE", "CRC32C", "SHA224", "SHA256", "SHA384", "SHA512")
#: Archive data per CopyData (the server's bbsink buffer: 32 kB).
DATA_CHUNK = 32768
TAR_BLOCK = 512


@dataclass(frozen=True, slots=True)
class BackupOptions:
    """The options of one BASE_BACKUP, in the 15+ vocabulary (the old keywords FAST, NOWAIT
    and NOVERIFY_CHECKSUMS are ``checkpoint='fast'``, ``wait=False`` and
    ``verify_checksums=False``)."""

    label: str = "base backup"
    progress: bool = False
    checkpoint: str = "spread"
    wal: bool = False
    wait: bool = True
    #: kB/s; None: no limit.
    max_rate: int | None = None
    tablespace_map: bool = False
    verify_checksums: bool = True
    #: 'no', 'yes' or 'force-encode'.
    manifest: str = "no"
    manifest_checksums: str = "CRC32C"
    target: str = "client"
    #: 17+: an incremental backup against the manifest uploaded before (UPLOAD_MANIFEST).
    incremental: bool = False


def _bool(name: str, value: rc.OptionValue) -> bool:
    """defGetBoolean."""
    if value is None or value is True:
        return True
    if value is False:
        return False
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
    else:
        low = value.lower()
        if low in ("true", "on"):
            return True
        if low in ("false", "off"):
            return False
    raise ServerError("42601", f"{name} requires a Boolean value")


def _string(name: str, value: rc.OptionValue) -> str:
    """defGetString."""
    if value is None:
        raise ServerError("42601", f"{name} requires a parameter")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _int64(name: str, value: rc.OptionValue) -> int:
    """defGetInt64."""
    if isinstance(value, bool) or value is None:
        raise ServerError("42601", f"{name} requires a numeric value")
    if isinstance(value, int):
        return value
    try:
        return int(value, 10)
    except ValueError:
        raise ServerError("22P02", f'invalid input syntax for type bigint: "{value}"') from None


def _entry(major: int | Major) -> Major:
    return major if isinstance(major, Major) else majors.major(major)


def parse_backup_options(cmd: rc.BaseBackup, major: int | Major, *, summarize_wal: bool = False) -> BackupOptions:
    """BASE_BACKUP's options as the server of *major* reads them; raises ServerError with
    its SQLSTATE and text (seen on 14 and 15: duplicate option 42601, MAX_RATE out of range
    22003, unrecognized option / manifest option / checksum algorithm / checkpoint type
    42601, manifest checksums without a manifest 42601). *summarize_wal*: the server
    summarizes WAL (17+), else INCREMENTAL is refused."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    checksums_given = False
    table = _entry(major)
    legacy = not table.generic_options
    for name, value in cmd.options:
        # The old keywords (10-14) are the same options under other names.
        key = {"fast": "checkpoint", "nowait": "wait", "noverify_checksums": "verify_checksums"}.get(name, name) \
            if legacy else name
        if key in seen:
            raise ServerError("42601", f'duplicate option "{name}"')
        seen.add(key)
        if key == "label":
            out["label"] = _string(name, value)
        elif key == "progress":
            out["progress"] = True if legacy else _bool(name, value)
        elif key == "checkpoint":
            if legacy:
                out["checkpoint"] = "fast"
            else:
                text = _string(name, value)
                if text.lower() not in ("fast", "spread"):
                    raise ServerError("42601", f'unrecognized checkpoint type: "{text}"')
                out["checkpoint"] = text.lower()
        elif key == "wait":
            out["wait"] = False if legacy else _bool(name, value)
        elif key == "wal":
            out["wal"] = True if legacy else _bool(name, value)
        elif key == "max_rate":
            rate = _int64(name, value)
            if not MAX_RATE_LOWER <= rate <= MAX_RATE_UPPER:
                raise ServerError("22003", f'{rate} is outside the valid range for parameter "MAX_RATE" '
                                           f"({MAX_RATE_LOWER} .. {MAX_RATE_UPPER})")
            out["max_rate"] = rate
        elif key == "tablespace_map":
            out["tablespace_map"] = True if legacy else _bool(name, value)
        elif key == "verify_checksums":
            out["verify_checksums"] = False if legacy else _bool(name, value)
        elif key == "manifest" and table.backup_manifest:
            text = _string(name, value)
            low = text.lower()
            if low == "force-encode":
                out["manifest"] = "force-encode"
            elif low in ("yes", "true", "on", "1", "y", "t"):
                out["manifest"] = "yes"
            elif low in ("no", "false", "off", "0", "n", "f"):
                out["manifest"] = "no"
            else:
                raise ServerError("42601", f'unrecognized manifest option: "{text}"')
        elif key == "manifest_checksums" and table.backup_manifest:
            text = _string(name, value)
            if text.upper() not in CHECKSUM_ALGORITHMS:
                raise ServerError("42601", f'unrecognized checksum algorithm: "{text}"')
            out["manifest_checksums"] = text.upper()
            checksums_given = True
        elif key == "target" and key in table.backup_options:
            text = _string(name, value)
            if text == "server":
                raise ServerError("42601", 'target "server" requires a target detail')
            if text != "client":
                raise ServerError("0A000", f'target "{text}" is not served by the fake walsender',
                                  hint="It streams backups to the client.")
            out["target"] = text
        elif key == "compression" and key in table.backup_options:
            text = _string(name, value)
            if text.lower() != "none":
                raise ServerError("0A000", f'server-side compression "{text}" is not served by the fake walsender')
        elif key == "incremental" and key in table.backup_options:
            # basebackup.c (17+) parse_basebackup_options: INCREMENTAL needs summarize_wal,
            # off by default; the fake has summaries only when its recording holds a real
            # incremental backup.
            out["incremental"] = _bool(name, value)
            if out["incremental"] and not summarize_wal:
                raise ServerError("55000", "incremental backups cannot be taken unless WAL summarization is enabled")
        else:
            raise ServerError("42601", f'unrecognized base backup option: "{name}"')
    if checksums_given and out.get("manifest", "no") == "no":
        raise ServerError("42601", "manifest checksums require a backup manifest")
    return BackupOptions(**out)


# -- the directory -------------------------------------------------------------------------

#: Directories whose contents are not sent (the docs' list; basebackup.c excludeDirContents).
EXCLUDED_DIR_CONTENTS = frozenset({"pg_stat_tmp", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial",
                                   "pg_snapshots", "pg_subtrans", "pg_wal"})
#: Files never sent (basebackup.c excludeFiles): the server writes its own backup_label.
EXCLUDED_FILES = frozenset({"postmaster.pid", "postmaster.opts", "pg_internal.init", "backup_label",
                            "tablespace_map", "backup_manifest", "current_logfiles",
                            "postgresql.auto.conf.tmp"})
_CONTROL_FILE = "global/pg_control"


@dataclass(frozen=True, slots=True)
class BackupFile:
    """One archive member: a regular file (``content``) or a directory."""

    path: str
    mtime: int
    content: bytes | None = None
    mode: int = 0o600

    @property
    def is_dir(self) -> bool:
        return self.content is None


def collect_files(directory: Path) -> list[BackupFile]:
    """The members of the base archive from *directory*: directories before their
    contents, names sorted, excluded files left out, ``global/pg_control`` last."""
    root = Path(directory)
    if not root.is_dir():
        raise ServerError("58P01", f'could not open directory "{root}": No such file or directory')
    out: list[BackupFile] = []
    control: BackupFile | None = None

    def walk(rel: str, path: Path) -> None:
        nonlocal control
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name in EXCLUDED_FILES or entry.name.startswith("pgsql_tmp"):
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                out.append(BackupFile(name, int(st.st_mtime), None, 0o700))
                if entry.name not in EXCLUDED_DIR_CONTENTS:
                    walk(name, Path(entry.path))
            elif stat.S_ISREG(st.st_mode):
                member = BackupFile(name, int(st.st_mtime), Path(entry.path).read_bytes(), 0o600)
                if name == _CONTROL_FILE:
                    control = member
                else:
                    out.append(member)
            # anything else (sockets, symlinks outside pg_tblspc) is skipped, as the server does

    walk("", root)
    if control is not None:
        out.append(control)
    return out


# -- ustar (src/port/tar.c, tarCreateHeader) -----------------------------------------------

def _tar_number(value: int, width: int) -> bytes:
    """print_tar_number: octal with a trailing space, base-256 when too large."""
    if value < 1 << ((width - 1) * 3):
        return f"{value:0{width - 1}o} ".encode()
    out = bytearray(width)
    for i in range(width - 1, 0, -1):
        out[i] = value & 0xFF
        value >>= 8
    out[0] = 0x80
    return bytes(out)


def tar_header(name: str, *, size: int, mode: int, mtime: int, directory: bool = False) -> bytes:
    """A 512-byte ustar header as PostgreSQL writes it (owner and group ``postgres``,
    directories named with a trailing ``/``)."""
    raw = name.encode()
    if len(raw) > 99:
        raise ServerError("0A000", f'file name too long for tar format: "{name}"')
    h = bytearray(TAR_BLOCK)
    if directory:
        raw += b"/"
    h[0:len(raw)] = raw
    h[100:108] = _tar_number(mode & 0o7777, 8)
    h[108:116] = _tar_number(0o145, 8)
    h[116:124] = _tar_number(0o150, 8)
    h[124:136] = _tar_number(0 if directory else size, 12)
    h[136:148] = _tar_number(mtime, 12)
    h[156] = ord("5" if directory else "0")
    h[257:263] = b"ustar\x00"
    h[263:265] = b"00"
    h[265:273] = b"postgres"
    h[297:305] = b"postgres"
    h[329:337] = _tar_number(0, 8)
    h[337:345] = _tar_number(0, 8)
    h[148:156] = b" " * 8
    h[148:156] = _tar_number(sum(h), 8)
    return bytes(h)


def _padding(size: int) -> bytes:
    return bytes(-size % TAR_BLOCK)


# -- backup_label and the manifest ---------------------------------------------------------

def _pg_time(ts: int) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def backup_label(*, start: int, checkpoint: int, timeline: int, label: str, started: int,
                 segment_size: int, start_timeline_line: bool = True, backup_from: str = "primary",
                 incremental_from: tuple[int, int] | None = None) -> bytes:
    """The backup_label the server writes into the archive (xlog.c do_pg_backup_start; 17+
    xlogbackup.c build_backup_content): *backup_from* ``master`` up to 13, ``START
    TIMELINE`` from 11, the ``INCREMENTAL
    FROM`` lines of an incremental backup (17+, *incremental_from*: the prior backup's
    start position and timeline)."""
    text = (f"START WAL LOCATION: {format_lsn(start)} (file {segment_name(timeline, start, segment_size)})\n"
            f"CHECKPOINT LOCATION: {format_lsn(checkpoint)}\n"
            "BACKUP METHOD: streamed\n"
            f"BACKUP FROM: {backup_from}\n"
            f"START TIME: {_pg_time(started)} UTC\n"
            f"LABEL: {label}\n")
    if start_timeline_line:
        text += f"START TIMELINE: {timeline}\n"
    if incremental_from is not None:
        text += f"INCREMENTAL FROM LSN: {format_lsn(incremental_from[0])}\nINCREMENTAL FROM TLI: {incremental_from[1]}\n"
    return text.encode()


def _checksum(algorithm: str, data: bytes) -> str | None:
    if algorithm == "NONE":
        return None
    if algorithm == "CRC32C":
        # pg_checksum_final stores the CRC in memory order: little-endian bytes, in hex.
        return struct.pack("<I", crc32c(data)).hex()
    return hashlib.new(algorithm.lower(), data).hexdigest()


def build_manifest(files: list[BackupFile], *, algorithm: str, timeline: int, start: int, end: int,
                   force_encode: bool = False, system_id: str | None = None) -> bytes:
    """The backup manifest (backup_manifest.c): one line per file, the WAL range, and the
    SHA-256 of everything before the last line. Version 1 (13-16), or with *system_id*
    version 2 (17+, which names the cluster's system identifier)."""
    if system_id is None:
        lines = ['{ "PostgreSQL-Backup-Manifest-Version": 1,\n"Files": [']
    else:
        lines = ['{ "PostgreSQL-Backup-Manifest-Version": 2,\n'
                 f'"System-Identifier": {int(system_id)},\n"Files": [']
    entries = []
    for f in files:
        if f.is_dir:
            continue
        assert f.content is not None
        raw = f.path.encode()
        if force_encode:
            where = f'"Encoded-Path": "{raw.hex()}"'
        else:
            where = '"Path": ' + json.dumps(f.path, ensure_ascii=False)
        entry = f'{{ {where}, "Size": {len(f.content)}, "Last-Modified": "{_pg_time(f.mtime)} GMT"'
        digest = _checksum(algorithm, f.content)
        if digest is not None:
            entry += f', "Checksum-Algorithm": "{algorithm}", "Checksum": "{digest}"'
        entries.append(entry + " }")
    text = lines[0] + "\n" + ",\n".join(entries) + "\n],\n"
    text += ('"WAL-Ranges": [\n'
             f'{{ "Timeline": {timeline}, "Start-LSN": "{format_lsn(start)}", "End-LSN": "{format_lsn(end)}" }}'
             "\n],\n")
    body = text.encode()
    return body + f'"Manifest-Checksum": "{hashlib.sha256(body).hexdigest()}"}}\n'.encode()


# -- pacing ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Throttle:
    """MAX_RATE: *rate* kB/s from *started* on; :meth:`not_before` is the earliest time the
    bytes after the first *done* may go (basebackup_throttle.c keeps the same average, in
    steps of 1/8 s)."""

    rate: int
    started: float

    def not_before(self, done: int) -> float:
        return self.started + done / (self.rate * 1024)


# -- the conversation ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackupSource:
    """What a scenario's BASE_BACKUP serves: a directory, and the WAL range the backup
    claims (default: the newest timeline of the recording, from its first record to its
    end)."""

    directory: Path
    start_lsn: int | None = None
    end_lsn: int | None = None
    timeline: int | None = None
    checkpoint_lsn: int | None = None
    files: tuple[BackupFile, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class RecordedBackup:
    """A base backup a real server sent during a capture (``pgwire-spec capture
    --physical``): the BASE_BACKUP command, its WAL range, backup_label and manifest as the
    server wrote them, and the archive's members after backup_label in the server's order
    (directories, files, ``global/pg_control`` last). An incremental one (17+) names the
    prior backup's start position and timeline, and holds ``INCREMENTAL.*`` files."""

    name: str
    command: str
    timeline: int
    start_lsn: int
    end_lsn: int
    label: bytes
    files: tuple[BackupFile, ...] = field(repr=False)
    manifest: bytes | None = field(default=None, repr=False)

    def label_field(self, key: str) -> str | None:
        """A ``KEY: value`` line of the recorded backup_label."""
        for line in self.label.decode(errors="replace").splitlines():
            if line.startswith(key + ": "):
                return line[len(key) + 2:]
        return None

    @property
    def checkpoint_lsn(self) -> int:
        value = self.label_field("CHECKPOINT LOCATION")
        return parse_lsn(value) if value else self.start_lsn

    @property
    def incremental_from(self) -> tuple[int, int] | None:
        """(start position, timeline) of the backup this one is incremental to."""
        lsn, tli = self.label_field("INCREMENTAL FROM LSN"), self.label_field("INCREMENTAL FROM TLI")
        return (parse_lsn(lsn), int(tli)) if lsn and tli else None


#: What an uploaded manifest may weigh (the fake's bound; a manifest lists every file of a
#: cluster: ~150 bytes a file).
MAX_MANIFEST_BYTES = 64 << 20


def parse_manifest_start(data: bytes) -> tuple[int, int, int | None]:
    """(timeline, start position, system identifier or None) of the backup an uploaded
    manifest describes: its oldest WAL range's start. ServerError (XX000, the texts of
    basebackup_incremental.c and parse_manifest.c) when the text is not a manifest of
    version 2 whose checksum checks out."""
    body, sep, _last = data.rstrip(b"\n").rpartition(b"\n")
    try:
        doc = json.loads(data)
        if doc["PostgreSQL-Backup-Manifest-Version"] == 1:
            raise ServerError("XX000", "backup manifest version 1 does not support incremental backup")
        # parse_manifest.c verify_manifest_checksum: SHA-256 of everything up to the
        # line that holds the checksum.
        if not sep or hashlib.sha256(body + sep).hexdigest() != doc["Manifest-Checksum"]:
            raise ServerError("XX000", "manifest checksum mismatch")
        ranges = doc["WAL-Ranges"]
        first = min(ranges, key=lambda r: parse_lsn(r["Start-LSN"]))
        sysid = doc.get("System-Identifier")
        return int(first["Timeline"]), parse_lsn(first["Start-LSN"]), int(sysid) if sysid is not None else None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = str(exc)[:120]
        raise ServerError("XX000", f"could not parse backup manifest: {detail or type(exc).__name__}") from None


#: The sizes the tuple output gives (typlen): oid 4, int8 8, text -1.
_TYPE_SIZES = {26: 4, 20: 8}


def _result(columns: tuple[tuple[str, int, int], ...], rows: list[tuple[bytes | None, ...]],
            tag: str, table: Major) -> list[WireMessage]:
    """A result set as basebackup.c sends it: up to 15 built by hand (type modifier 0,
    sizes as given; seen on 14 and 15), from 16 through the tuple output (type modifier
    -1, the types' sizes; seen on 16, 17 and 18)."""
    if table.replication_tuple_output:
        fields = tuple(FieldDescription(name, 0, 0, oid, _TYPE_SIZES.get(oid, -1), -1, 0) for name, oid, _ in columns)
    else:
        fields = tuple(FieldDescription(name, 0, 0, oid, size, 0, 0) for name, oid, size in columns)
    return [RowDescription(fields), *(DataRow(row) for row in rows), CommandComplete(tag)]


def _position(lsn: int, tli: int, table: Major) -> list[WireMessage]:
    """SendXlogRecPtrResult: recptr text, tli int8 (by hand its size given as -1), then
    CommandComplete SELECT."""
    return _result((("recptr", 25, -1), ("tli", 20, -1)), [(format_lsn(lsn).encode(), str(tli).encode())],
                   "SELECT", table)


#: do_pg_backup_stop, waiting for archiving on a server that does not archive (seen on 14, 15).
NO_ARCHIVING = NoticeResponse((
    ("S", "NOTICE"), ("V", "NOTICE"), ("C", "00000"),
    ("M", "WAL archiving is not enabled; you must ensure that all required WAL segments are copied through "
          "other means to complete the backup")))


def backup_messages(opts: BackupOptions, *, major: int | Major, files: list[BackupFile], store: WalStore,
                    timeline: int, start: int, end: int, checkpoint: int, started: int,
                    system_id: str = "0", incremental_from: tuple[int, int] | None = None,
                    ) -> Iterator[tuple[WireMessage, int]]:
    """The server's messages for one BASE_BACKUP, each with the number of archive or
    manifest bytes it carries (what MAX_RATE paces)."""
    table = _entry(major)
    label = backup_label(start=start, checkpoint=checkpoint, timeline=timeline, label=opts.label,
                         started=started, segment_size=store.segment_size,
                         start_timeline_line=table.backup_label_timeline, backup_from=table.backup_from_primary,
                         incremental_from=incremental_from)
    members = [BackupFile("backup_label", started, label)]
    if opts.tablespace_map:
        members.append(BackupFile("tablespace_map", started, b""))
    members += files
    wal: list[BackupFile] = []
    if opts.wal:
        seg = segment_start(start, store.segment_size)
        while seg <= end - 1 or seg == segment_start(start, store.segment_size):
            wal.append(BackupFile(f"pg_wal/{segment_name(timeline, seg, store.segment_size)}", started,
                                  store.segment(timeline, seg)))
            seg += store.segment_size
    archive_size = sum(TAR_BLOCK + len(m.content or b"") + len(_padding(len(m.content or b"")))
                       for m in members + wal)
    yield from ((m, 0) for m in _position(start, timeline, table))
    size = str((archive_size + 1023) // 1024).encode() if opts.progress else None
    yield from ((m, 0) for m in _result((("spcoid", 26, 4), ("spclocation", 25, -1), ("size", 20, 8)),
                                        [(None, None, size)], "SELECT", table))
    new = table.backup_copy_protocol
    if new:
        yield CopyOutResponse(0, ()), 0
        yield CopyData(b"n" + b"base.tar\x00" + b"\x00"), 0
    else:
        yield CopyOutResponse(0, ()), 0
    prefix = b"d" if new else b""
    done = 0
    for member in members + wal:
        content = member.content or b""
        head = tar_header(member.path, size=len(content), mode=member.mode, mtime=member.mtime,
                          directory=member.is_dir)
        yield CopyData(prefix + head), len(head)
        done += len(head)
        body = content + _padding(len(content))
        for i in range(0, len(body), DATA_CHUNK):
            part = body[i:i + DATA_CHUNK]
            yield CopyData(prefix + part), len(part)
            done += len(part)
    if table.terminated_tar:
        trailer = bytes(2 * TAR_BLOCK)
        yield CopyData(prefix + trailer), len(trailer)
        done += len(trailer)
    if new:
        yield CopyData(frames.backup_progress(done)), 0
    else:
        yield CopyDone(), 0
    if opts.wait:
        # The backup stops here (the manifest follows); without NOWAIT a server that does
        # not archive WAL says so.
        yield NO_ARCHIVING, 0
    if opts.manifest != "no" and table.backup_manifest:
        manifest = build_manifest(members, algorithm=opts.manifest_checksums, timeline=timeline,
                                  start=start, end=end, force_encode=opts.manifest == "force-encode",
                                  system_id=system_id if table.manifest_system_identifier else None)
        if new:
            yield CopyData(b"m"), 0
        else:
            yield CopyOutResponse(0, ()), 0
        for i in range(0, len(manifest), DATA_CHUNK):
            part = manifest[i:i + DATA_CHUNK]
            yield CopyData(prefix + part), len(part)
        if not new:
            yield CopyDone(), 0
    if new:
        yield CopyDone(), 0
    yield from ((m, 0) for m in _position(end, timeline, table))
    yield CommandComplete("BASE_BACKUP" if table.replication_command_tags else "SELECT"), 0
