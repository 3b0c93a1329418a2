"""One table per server major: what a PostgreSQL server of each major accepts and answers.

Every fact that changes from one major to the next lives here, once, as a named feature of
that major's :class:`Major` entry: the replication grammar (repl_scanner.l, repl_gram.y),
the slot options, pgoutput's options and protocol versions (pgoutput.c,
parse_output_parameters), the shapes of results, the error texts that changed, and
BASE_BACKUP's options and stream format (basebackup.c, basebackup_copy.c). The command
parser, the walsender personas, the physical server, the capture's option sets and the
strategies read it; none of them compares version numbers.

Each entry is written as the previous major plus what changed (the release notes' order),
so a new major is one new entry::

    MAJORS[19] = MAJORS[18].next(19, ...)

Facts about one message of the pgoutput stream (the first major that sends it) stay in the
protocol catalogue (:mod:`pgwire_spec.catalogue`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .errors import OptionError

__all__ = ["Major", "MAJORS", "major", "newest", "known"]

# The replication commands: first tokens that make a Query text a replication command
# (repl_scanner.l, replication_scanner_is_replication_command).
COMMAND_KEYWORDS = frozenset({
    "IDENTIFY_SYSTEM", "BASE_BACKUP", "START_REPLICATION", "CREATE_REPLICATION_SLOT",
    "DROP_REPLICATION_SLOT", "ALTER_REPLICATION_SLOT", "READ_REPLICATION_SLOT", "TIMELINE_HISTORY",
    "UPLOAD_MANIFEST", "SHOW",
})


@dataclass(frozen=True, slots=True)
class Major:
    """What a server of one major accepts, answers and sends."""

    major: int

    # -- the replication grammar (repl_scanner.l, repl_gram.y) ----------------------------
    #: Keywords of the scanner (upper case, case-sensitive).
    keywords: frozenset[str]
    #: Whitespace between tokens (VT from 17: 'IDENTIFY_SYSTEM\\v' is a syntax error up to 16).
    whitespace: str
    #: CREATE_REPLICATION_SLOT and BASE_BACKUP take parenthesized generic option lists
    #: (15+); before, option keywords.
    generic_options: bool
    #: First minor release whose scanner reads ``""`` inside a quoted identifier as a quote
    #: (upstream a75bd485b5ea, back-patched June 2026; seen on 15.20), None: no release does.
    doubled_quote_since: int | None

    # -- slots ---------------------------------------------------------------------------
    #: CREATE_REPLICATION_SLOT's options (parseCreateReplSlotOptions): snapshot,
    #: reserve_wal; two_phase from 15, failover from 17.
    slot_options: frozenset[str]
    #: ALTER_REPLICATION_SLOT's options (ParseAlterReplSlotOptions): failover (17),
    #: two_phase (18).
    alter_slot_options: frozenset[str]
    #: Why a slot can be invalidated, as pg_replication_slots.invalidation_reason names it
    #: (slot.c SlotInvalidationCauses): wal_removed (max_slot_wal_keep_size, 13+),
    #: rows_removed and wal_level_insufficient (16+), idle_timeout (18+).
    slot_invalidation_causes: tuple[str, ...]
    #: What START_REPLICATION and the SQL decoding functions answer (55000) on an
    #: invalidated slot: the message, the detail for wal_removed, the detail for the other
    #: causes ({slot}, {cause} filled in). Seen on real 15, 16, 17 and 18.
    invalid_slot_texts: tuple[str, str, str]
    #: The causes pg_replication_slots.conflicting is true for (16: any; 17+: a conflict
    #: with recovery only).
    conflicting_causes: frozenset[str]

    # -- pgoutput (pgoutput.c, parse_output_parameters) ----------------------------------
    #: LOGICALREP_PROTO_MAX_VERSION_NUM.
    max_proto: int
    #: The options pgoutput accepts, in the docs' order ("Logical Streaming Replication
    #: Parameters").
    pgoutput_options: tuple[str, ...]
    #: The values of ``streaming`` besides the Booleans ('parallel' from 16).
    streaming_values: tuple[str, ...]
    #: pgoutput has a Truncate callback (11+).
    truncate: bool
    #: Begin/Commit of transactions with nothing published are sent (before 15).
    sends_empty_transactions: bool
    #: A missing publication is an ERROR (before 18) or a WARNING (18).
    missing_publication_is_error: bool
    #: A missing required option reads 'option "proto_version" missing' (17+), before
    #: 'proto_version option missing'.
    quoted_missing_option: bool

    # -- result shapes and startup -------------------------------------------------------
    #: IDENTIFY_SYSTEM's timeline column type: 23 int4 (before 16) or 20 int8.
    timeline_type: int
    #: The ParameterStatus messages after AuthenticationOk, in the server's order
    #: (the GUC_REPORT variables; seen in real servers' startups).
    parameter_status: tuple[str, ...]
    #: The newest minor version of frontend/backend protocol 3 (PG_PROTOCOL_LATEST): 0 up
    #: to 17, 2 from 18 (3.1 is accepted as 3.0 was, nothing else changes). A StartupMessage
    #: asking for a newer minor, or naming ``_pq_.`` options, gets a
    #: NegotiateProtocolVersion (backend_startup.c, SendNegotiateProtocolVersion).
    protocol_minor: int
    #: The length of BackendKeyData's secret key in protocol 3.2 and later
    #: (MAX_CANCEL_KEY_LENGTH, 18: 32 bytes); 4 in older versions of the protocol.
    cancel_key_length: int

    # -- physical ------------------------------------------------------------------------
    #: BASE_BACKUP's generic option names (15+: basebackup.c parse_basebackup_options), or
    #: the old keywords lower-cased (10-14).
    backup_options: frozenset[str]
    #: BASE_BACKUP sends a backup manifest (13+).
    backup_manifest: bool
    #: The manifest names the system identifier (manifest version 2, 17+).
    manifest_system_identifier: bool
    #: BASE_BACKUP's archives as one COPY stream of typed CopyData messages ('n', 'd',
    #: 'p', 'm'; basebackup_copy.c, 15+), before one CopyOutResponse per archive.
    backup_copy_protocol: bool
    #: A replication command ends with CommandComplete naming it (13+, walsender.c
    #: EndReplicationCommand); before with CommandComplete ``SELECT`` (EndCommand; seen on
    #: 10-12).
    replication_command_tags: bool
    #: BASE_BACKUP's and TIMELINE_HISTORY's result sets come from the executor's tuple
    #: output (16+: type modifier -1, the types' own sizes), before built by hand (type
    #: modifier 0, tli's size -1; seen on 10-15).
    replication_tuple_output: bool
    #: TIMELINE_HISTORY's content column is bytea (up to 13), text from 14.
    timeline_history_bytea: bool
    #: Tar archives end with two zero blocks (15+; pg_basebackup's
    #: MINIMUM_VERSION_FOR_TERMINATED_TARFILE).
    terminated_tar: bool
    #: pg_promote() exists (12+): a standby can be promoted from SQL; from 12 too a standby
    #: is asked for by ``standby.signal`` (before, ``recovery.conf`` with standby_mode).
    promote_function: bool
    #: backup_label names the START TIMELINE (11+; xlog.c do_pg_start_backup).
    backup_label_timeline: bool
    #: backup_label's ``BACKUP FROM:`` of a backup taken on a primary: ``master`` up to
    #: 13, ``primary`` from 14 (xlog.c).
    backup_from_primary: str
    #: initdb --wal-segsize (11+; before, the WAL segment size is fixed at build time).
    initdb_wal_segsize: bool
    #: The setting that keeps WAL for standbys: wal_keep_segments (10-12), wal_keep_size (13+).
    wal_keep_setting: str
    #: pg_create_logical_replication_slot's arguments at most: name, plugin, temporary;
    #: twophase (14+); failover (17+).
    create_slot_function_args: int

    # -- publications (docs: CREATE PUBLICATION) -------------------------------------------
    #: Column lists and row filters (15+).
    publication_filters: bool
    #: pg_publication_tables.attnames names the published columns of a table without a
    #: column list too (16+; NULL on 15).
    publication_tables_attnames: bool
    #: pg_get_publication_tables takes every publication at once (16+), dropping partitions
    #: whose ancestor is listed when any publication publishes via the root
    #: (pg_publication.c, filter_partitions).
    publication_tables_variadic: bool
    #: CREATE PUBLICATION's options: publish; publish_via_partition_root (13+), schemas
    #: (TABLES IN SCHEMA, 15+), publish_generated_columns (18+: also generated columns in
    #: column lists).
    publication_options: frozenset[str]

    # -- derived -------------------------------------------------------------------------
    @property
    def commands(self) -> frozenset[str]:
        """The replication commands this major's grammar knows."""
        return self.keywords & COMMAND_KEYWORDS

    @property
    def option_keywords(self) -> frozenset[str]:
        """Keywords that may name a generic option (ident_or_keyword: all but
        READ_REPLICATION_SLOT)."""
        return self.keywords - {"READ_REPLICATION_SLOT"}

    def doubled_quote(self, minor: int | None) -> bool:
        """Whether release *minor* (None: the latest) reads ``""`` as a quote."""
        since = self.doubled_quote_since
        return since is not None and (minor is None or minor >= since)

    def invalid_slot_error(self, slot: str, cause: str) -> tuple[str, str]:
        """The message and detail of the 55000 a client starting on a slot invalidated by
        *cause* gets (logical.c CreateDecodingContext; 18: slot.c ReplicationSlotAcquire)."""
        message, removed, other = self.invalid_slot_texts
        detail = removed if cause == "wal_removed" else other
        return message.format(slot=slot, cause=cause), detail.format(slot=slot, cause=cause)

    def accepts(self, option: str) -> bool:
        """Whether pgoutput accepts *option*."""
        return option in self.pgoutput_options

    @property
    def publish_generated_columns(self) -> bool:
        """Generated columns can be published (18+)."""
        return "publish_generated_columns" in self.publication_options

    def first_with(self, field: str, member: str) -> int | None:
        """The first major of the table whose *field* holds *member* (for error messages)."""
        return min((m for m, e in MAJORS.items() if member in getattr(e, field)), default=None)

    def command_tag(self, command: str) -> str:
        """The CommandComplete tag that ends replication command *command* on this major."""
        return command if self.replication_command_tags else "SELECT"

    @property
    def incremental_backup(self) -> bool:
        """BASE_BACKUP (INCREMENTAL) after UPLOAD_MANIFEST (17+)."""
        return "incremental" in self.backup_options

    @property
    def reports_search_path(self) -> bool:
        """search_path is a reported parameter (18+): set_config answers a ParameterStatus."""
        return "search_path" in self.parameter_status

    def next(self, major: int, *, add: dict[str, Iterable[str]] | None = None,
             remove: dict[str, Iterable[str]] | None = None, **changes: Any) -> Major:
        """The entry of *major*: this one with *changes*; *add* / *remove* name set (or
        tuple) fields and the members that arrive or leave."""
        values: dict[str, Any] = dict(changes)
        for name, members in (add or {}).items():
            old = values.get(name, getattr(self, name))
            values[name] = (old | frozenset(members)) if isinstance(old, frozenset) else (*old, *members)
        for name, members in (remove or {}).items():
            old = values.get(name, getattr(self, name))
            gone = frozenset(members)
            values[name] = (old - gone) if isinstance(old, frozenset) else tuple(m for m in old if m not in gone)
        return replace(self, major=major, **values)


_BASE_KEYWORDS = frozenset({
    "BASE_BACKUP", "IDENTIFY_SYSTEM", "SHOW", "TIMELINE", "START_REPLICATION", "CREATE_REPLICATION_SLOT",
    "DROP_REPLICATION_SLOT", "TIMELINE_HISTORY", "PHYSICAL", "RESERVE_WAL", "LOGICAL", "SLOT", "TEMPORARY",
    "EXPORT_SNAPSHOT", "NOEXPORT_SNAPSHOT", "USE_SNAPSHOT", "WAIT",
})
#: BASE_BACKUP's old option keywords (10-14), gone with the old syntax in 15.
_OLD_BACKUP_KEYWORDS = ("LABEL", "PROGRESS", "FAST", "WAL", "NOWAIT", "MAX_RATE", "TABLESPACE_MAP")

_PARAMETERS_10 = (
    "application_name", "client_encoding", "DateStyle", "integer_datetimes", "IntervalStyle",
    "is_superuser", "server_encoding", "server_version", "session_authorization",
    "standard_conforming_strings", "TimeZone",
)

_10 = Major(
    major=10,
    keywords=_BASE_KEYWORDS | frozenset(_OLD_BACKUP_KEYWORDS),
    whitespace=" \t\n\r\f",
    generic_options=False,
    doubled_quote_since=None,
    slot_options=frozenset({"snapshot", "reserve_wal"}),
    alter_slot_options=frozenset(),
    slot_invalidation_causes=(),
    invalid_slot_texts=('cannot read from logical replication slot "{slot}"',
                        "This slot has been invalidated because it exceeded the maximum reserved size.",
                        "This slot has been invalidated because it exceeded the maximum reserved size."),
    conflicting_causes=frozenset(),
    max_proto=1,
    pgoutput_options=("proto_version", "publication_names"),
    streaming_values=(),
    truncate=False,
    sends_empty_transactions=True,
    missing_publication_is_error=True,
    quoted_missing_option=False,
    timeline_type=23,
    # 10-13: alphabetical (the GUC_REPORT variables in guc.c's order).
    parameter_status=_PARAMETERS_10,
    protocol_minor=0,
    cancel_key_length=4,
    backup_options=frozenset(k.lower() for k in _OLD_BACKUP_KEYWORDS),
    backup_manifest=False,
    manifest_system_identifier=False,
    backup_copy_protocol=False,
    replication_tuple_output=False,
    timeline_history_bytea=True,
    replication_command_tags=False,
    terminated_tar=False,
    promote_function=False,
    backup_label_timeline=False,
    backup_from_primary="master",
    initdb_wal_segsize=False,
    wal_keep_setting="wal_keep_segments",
    create_slot_function_args=3,
    publication_filters=False,
    publication_tables_attnames=False,
    publication_tables_variadic=False,
    publication_options=frozenset({"publish"}),
)
# 11: pgoutput's Truncate; BASE_BACKUP NOVERIFY_CHECKSUMS; START TIMELINE in backup_label;
# initdb --wal-segsize.
_11 = _10.next(11, truncate=True, backup_label_timeline=True, initdb_wal_segsize=True, add={"keywords": ["NOVERIFY_CHECKSUMS"], "backup_options": ["noverify_checksums"]})
# 12: pg_promote().
_12 = _11.next(12, promote_function=True)
# 13: backup manifests; publish_via_partition_root; max_slot_wal_keep_size invalidates slots;
# wal_keep_size; CommandComplete named after the replication command.
_13 = _12.next(13, backup_manifest=True, slot_invalidation_causes=("wal_removed",),
               wal_keep_setting="wal_keep_size", replication_command_tags=True,
               add={"keywords": ["MANIFEST", "MANIFEST_CHECKSUMS"],
                    "backup_options": ["manifest", "manifest_checksums"],
                    "publication_options": ["publish_via_partition_root"]})
# 14: protocol 2 (streaming), binary and messages; + default_transaction_read_only, in_hot_standby;
# backup_label says BACKUP FROM: primary; TIMELINE_HISTORY's content is text.
_14 = _13.next(
    14, max_proto=2, streaming_values=("on",),
    add={"pgoutput_options": ["binary", "messages", "streaming"]},
    doubled_quote_since=24, create_slot_function_args=4, backup_from_primary="primary",
    timeline_history_bytea=False,
    parameter_status=(
        "application_name", "client_encoding", "DateStyle", "default_transaction_read_only",
        "in_hot_standby", "integer_datetimes", "IntervalStyle", "is_superuser", "server_encoding",
        "server_version", "session_authorization", "standard_conforming_strings", "TimeZone",
    ),
)
# 15: protocol 3 (two-phase); generic option lists; READ_REPLICATION_SLOT; no empty
# transactions; BASE_BACKUP's COPY protocol, targets and server-side compression;
# publications' column lists, row filters and TABLES IN SCHEMA.
_15 = _14.next(
    15, max_proto=3, generic_options=True, sends_empty_transactions=False, doubled_quote_since=19,
    backup_copy_protocol=True, terminated_tar=True, publication_filters=True,
    add={"keywords": ["READ_REPLICATION_SLOT", "TWO_PHASE"], "slot_options": ["two_phase"],
         "pgoutput_options": ["two_phase"], "publication_options": ["schemas"]},
    remove={"keywords": [*_OLD_BACKUP_KEYWORDS, "NOVERIFY_CHECKSUMS", "MANIFEST", "MANIFEST_CHECKSUMS"]},
    backup_options=frozenset({"label", "progress", "checkpoint", "wait", "wal", "max_rate", "tablespace_map",
                              "verify_checksums", "manifest", "manifest_checksums", "target", "compression"}),
)
# 16: protocol 4 (parallel streaming), origin; int8 timelines; + scram_iterations, hash order;
# BASE_BACKUP's and TIMELINE_HISTORY's result sets by the tuple output; pg_publication_tables.attnames for every table; slots invalidated by conflicts with recovery
# (pg_replication_slots.conflicting) and a new text for using one.
_16 = _15.next(
    16, max_proto=4,
    add={"pgoutput_options": ["origin"], "slot_invalidation_causes": ["rows_removed", "wal_level_insufficient"]},
    invalid_slot_texts=('can no longer get changes from replication slot "{slot}"',
                        "This slot has been invalidated because it exceeded the maximum reserved size.",
                        "This slot has been invalidated because it was conflicting with recovery."),
    conflicting_causes=frozenset({"wal_removed", "rows_removed", "wal_level_insufficient"}),
    timeline_type=20, streaming_values=("on", "parallel"), doubled_quote_since=15, replication_tuple_output=True,
    publication_tables_attnames=True, publication_tables_variadic=True,
    parameter_status=(
        "in_hot_standby", "integer_datetimes", "TimeZone", "IntervalStyle", "is_superuser",
        "application_name", "default_transaction_read_only", "scram_iterations", "DateStyle",
        "standard_conforming_strings", "session_authorization", "client_encoding", "server_version",
        "server_encoding",
    ),
)
# 17: failover slots, ALTER_REPLICATION_SLOT, UPLOAD_MANIFEST (incremental backups); VT is
# whitespace; manifest version 2; the new missing-option text; invalidation_reason,
# inactive_since, and conflicting only for conflicts with recovery.
_17 = _16.next(
    17, conflicting_causes=frozenset({"rows_removed", "wal_level_insufficient"}),
    whitespace=" \t\n\r\f\v", manifest_system_identifier=True, quoted_missing_option=True,
    doubled_quote_since=11, create_slot_function_args=5,
    add={"keywords": ["ALTER_REPLICATION_SLOT", "UPLOAD_MANIFEST"], "slot_options": ["failover"],
         "alter_slot_options": ["failover"], "backup_options": ["incremental"]},
)
# 18: ALTER_REPLICATION_SLOT two_phase; a missing publication is a WARNING; + search_path;
# publish_generated_columns; idle_replication_slot_timeout and the slot-acquire text naming
# the cause (slot.c ReplicationSlotAcquire); wire protocol 3.2 (32-byte cancel keys).
_18 = _17.next(
    18, missing_publication_is_error=False, doubled_quote_since=5, protocol_minor=2, cancel_key_length=32,
    invalid_slot_texts=('can no longer access replication slot "{slot}"',
                        'This replication slot has been invalidated due to "{cause}".',
                        'This replication slot has been invalidated due to "{cause}".'),
    add={"alter_slot_options": ["two_phase"], "publication_options": ["publish_generated_columns"],
         "slot_invalidation_causes": ["idle_timeout"]},
    parameter_status=(
        "in_hot_standby", "integer_datetimes", "TimeZone", "IntervalStyle", "search_path", "is_superuser",
        "application_name", "default_transaction_read_only", "scram_iterations", "DateStyle",
        "standard_conforming_strings", "session_authorization", "client_encoding", "server_version",
        "server_encoding",
    ),
)

#: The table: server major -> its entry.
MAJORS: dict[int, Major] = {m.major: m for m in (_10, _11, _12, _13, _14, _15, _16, _17, _18)}


def known() -> range:
    """The server majors of the table, oldest to newest."""
    return range(min(MAJORS), max(MAJORS) + 1)


def newest() -> Major:
    return MAJORS[max(MAJORS)]


def major(value: object) -> Major:
    """The entry of server major *value*; OptionError for a major the table lacks."""
    if not isinstance(value, bool) and isinstance(value, int) and value in MAJORS:
        return MAJORS[value]
    span = known()
    raise OptionError(f"expected a server major from {span[0]} to {span[-1]}, found {value!r}")
