"""Scenarios: what the fake walsender's "database" holds and what happens in it.

A scenario is declared in YAML or JSON (schema: ``spec/scenario.schema.json``; examples in
``examples/scenarios/``) or built in Python from these dataclasses::

    server: {version: "16.4", system_id: "7400000000000000001", timeline: 1, database: postgres}
    auth: {method: scram-sha-256, users: {replicator: s3cret}}
    publications: {pub: [public.accounts]}
    tables:
      public.accounts:
        replica_identity: default
        columns: [{name: id, type: int4, key: true}, {name: name, type: text}]
        rows: [{id: 1, name: alice}]
    transactions:
      - changes:
          - {insert: public.accounts, new: {id: 2, name: bob}}
          - {update: public.accounts, key: {id: 2}, new: {id: 2, name: robert}}
          - {delete: public.accounts, key: {id: 1}}

Publications take every form ``CREATE PUBLICATION`` has — column lists, row filters,
``TABLES IN SCHEMA``, ``publish``, ``publish_via_partition_root`` with partitioned tables
(``partition_by``, ``partition_of`` + ``for_values``), ``publish_generated_columns`` with
stored generated columns (``generated``): see :mod:`.publications`.

Loading checks everything a real server would have refused (an update of a row that does
not exist, a key that does not name the key columns, a value its type cannot hold …) and
reports it as a :class:`ScenarioError` with the path of the offending entry.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import majors
from ..errors import PgWireError
from ..lsn import datetime_to_timestamp, parse_lsn
from ._settings import SettingError, check_scenario_setting
from .publications import ACTIONS, GENERATED_COLUMNS, Expression, ExpressionError, Publication, PublishedTable
from .publications import parse_expression as _parse_expression
from .types import ColumnType, TypeValueError, resolve_type

__all__ = [
    "ScenarioError",
    "ServerInfo",
    "Limits",
    "AuthConfig",
    "Column",
    "Table",
    "Publication",
    "PublishedTable",
    "Slot",
    "KeepaliveConfig",
    "RowInsert",
    "RowUpdate",
    "RowDelete",
    "TableTruncate",
    "EmitMessage",
    "Subtransaction",
    "Transaction",
    "CommitPrepared",
    "RollbackPrepared",
    "RawStream",
    "Scenario",
    "Change",
    "HistoryItem",
    "load_scenario",
]


class ScenarioError(PgWireError, ValueError):
    """A scenario that is not valid. ``path`` names the entry (``transactions[0].changes[2]``)."""

    def __init__(self, path: str, expected: str, found: str) -> None:
        self.path = path
        self.expected = expected
        self.found = found
        where = f"{path}: " if path else ""
        super().__init__(f"{where}expected {expected}, found {found}")




# ------------------------------------------------------------------------------------------
# Server, auth, schema
# ------------------------------------------------------------------------------------------

#: 2025-01-01 00:00:00 UTC: the default clock of commit times (deterministic scenarios).
DEFAULT_CLOCK = datetime_to_timestamp(_dt.datetime(2025, 1, 1, tzinfo=_dt.UTC))


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may cost the server, as PostgreSQL bounds it. A client that goes past
    a limit is refused as the real server refuses it (the SQLSTATE and text in brackets)."""

    #: Connections served at once; one more gets FATAL 53300 "sorry, too many clients
    #: already" after its startup packet (backend_startup.c ProcessStartupPacket). Above
    #: PostgreSQL's default of 100 so that many-client tests fit.
    max_connections: int = 1000
    #: Seconds a client has to send its startup packet and authenticate
    #: (authentication_timeout, default 60 s); then the connection is closed without a
    #: message, FATAL 57014 "canceling authentication due to timeout" (postgres.c
    #: ProcessInterrupts sends nothing to a client still authenticating).
    authentication_timeout: float = 60.0
    #: Longest startup packet (MAX_STARTUP_PACKET_LENGTH in pqcomm.h); longer: closed,
    #: 08P01 "invalid length of startup packet".
    max_startup_packet_length: int = 10000
    #: Longest password/SASL message (PG_MAX_AUTH_TOKEN_LENGTH in auth.c); longer: closed,
    #: 08P01 "invalid message length" (pqcomm.c pq_getmessage).
    max_auth_message_length: int = 65535
    #: Longest message after authentication (PQ_LARGE_MESSAGE_LIMIT, MaxAllocSize - 1 in
    #: libpq.h); longer: closed, 08P01 "invalid message length".
    max_message_length: int = (1 << 30) - 1
    #: Seconds a streaming client may stay silent (wal_sender_timeout): at half of it the
    #: server asks for a reply (a keepalive with replyRequested), at the end it closes the
    #: connection without a message, "terminating walsender process due to replication
    #: timeout" (walsender.c WalSndKeepaliveIfNecessary, WalSndCheckTimeOut: COMMERROR, to
    #: the log only). PostgreSQL's default, 60 s (guc_tables.c); 0 turns it off, as in
    #: PostgreSQL.
    wal_sender_timeout: float = 60.0
    #: Longest plain SQL statement answered (characters); longer: 0A000 naming this cap.
    #: PostgreSQL's own bound is the message's (1 GB); the fake's is lower because its
    #: parse costs ~15 µs per character of a long list (pglast builds a Python tree). A
    #: statement over 64 Ki characters is parsed and answered off the event loop.
    max_sql_length: int = 1 << 20
    #: Seconds one statement answered off the event loop may take; then 57014 "canceling
    #: statement due to statement timeout" (as statement_timeout ends one, postgres.c
    #: ProcessInterrupts).
    sql_timeout: float = 60.0


#: Each limit: the bounds a scenario or the command line may set it to.
LIMIT_RANGES: dict[str, tuple[float, float]] = {
    "max_connections": (1, 1 << 20),
    "authentication_timeout": (0.001, 600.0),  # PostgreSQL allows 1 s … 600 s; tests want less
    "max_startup_packet_length": (8, 10000),
    "max_auth_message_length": (5, (1 << 30) - 1),
    "max_message_length": (5, (1 << 30) - 1),
    "wal_sender_timeout": (0.0, 86400.0),
    "max_sql_length": (1, 16 << 20),
    "sql_timeout": (0.001, 3600.0),
}


def limit_value(path: str, name: str, value: Any) -> float | int:
    """A limit's value, checked against :data:`LIMIT_RANGES`."""
    low, high = LIMIT_RANGES[name]
    is_int = name not in ("authentication_timeout", "wal_sender_timeout", "sql_timeout")
    if isinstance(value, str) and not is_int:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min)?\s*", value)
        if m:
            value = float(m.group(1)) * {"ms": 0.001, "s": 1.0, None: 1.0, "min": 60.0}[m.group(2)]
    ok_type = isinstance(value, int) if is_int else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not low <= value <= high:
        what = "an integer" if is_int else "a number of seconds (or '60s', '500ms')"
        raise ScenarioError(path, f"{what} from {low:g} to {high:g}", _describe(value))
    return value if is_int else float(value)


#: ``server.history``: ``once`` — the transactions commit once, when a client first decodes;
#: a slot created after that has its consistent point past them and receives none of them,
#: as on a real server (snapbuild.c: a new slot's consistent point is a running-xacts record
#: at the current insert position). ``per_slot`` — every new slot, also one created after a
#: stream ran, gets a consistent point before them and receives them all (and table sync
#: copies the initial rows): a harness that makes a fresh slot per test against one
#: long-running server; no real server does this.
HISTORY_MODES = ("once", "per_slot")


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Who the fake server says it is. ``version`` decides the persona (major 10 … 18)."""

    version: str = "16.4"
    system_id: str = "7400000000000000001"
    timeline: int = 1
    database: str = "postgres"
    #: WAL position of the scenario's start: slots are created here, transactions follow.
    start_lsn: int = 0x1500000
    first_xid: int = 750
    #: Commit time of the first transaction (µs since 2000-01-01); later ones add 1 ms each.
    clock: int = DEFAULT_CLOCK
    #: Transactions using more (estimated) memory are streamed when the client asks for
    #: streaming, in segments of about this size (PostgreSQL's logical_decoding_work_mem).
    logical_decoding_work_mem: int = 65536
    encoding: str = "UTF8"
    #: Extra or overriding ParameterStatus values sent at startup.
    parameters: tuple[tuple[str, str], ...] = ()
    #: Settings over the fake's own (walsender/_settings.py), as written in the scenario.
    settings: tuple[tuple[str, str], ...] = ()
    #: What one client may cost (``max_connections``, ``authentication_timeout`` …: flat
    #: keys of the ``server:`` section).
    limits: Limits = field(default_factory=Limits)
    #: Which slots receive the scenario's transactions (:data:`HISTORY_MODES`): ``once``,
    #: as a real server, or ``per_slot``, every new slot, which no real server does.
    history: str = "once"

    def __post_init__(self) -> None:
        if self.history not in HISTORY_MODES:
            raise ScenarioError("server.history", " or ".join(HISTORY_MODES), _describe(self.history))

    @property
    def major(self) -> int:
        return int(re.match(r"\d+", self.version).group())  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """``method``: trust | password | md5 | scram-sha-256. ``users``: user -> password
    (with trust: the users allowed; empty means anyone)."""

    method: str = "trust"
    users: tuple[tuple[str, str], ...] = ()

    @property
    def passwords(self) -> dict[str, str]:
        return dict(self.users)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: ColumnType
    #: Part of the replica identity (primary key or the identity index).
    key: bool = False
    #: ``GENERATED ALWAYS AS (expression) STORED`` (12+): computed, never written.
    generated: Expression | None = None


@dataclass(frozen=True, slots=True)
class Table:
    schema: str
    name: str
    oid: int
    columns: tuple[Column, ...]
    #: 'd' default, 'f' full, 'i' index, 'n' nothing (pg_class.relreplident).
    replica_identity: str = "d"
    #: Initial rows (served by COPY to table sync), as column -> value mappings.
    rows: tuple[tuple[tuple[str, Any], ...], ...] = ()
    #: A partitioned table: ``PARTITION BY`` strategy and key columns (13+ publishes them).
    partition_by: PartitionKey | None = None
    #: A partition: the qualified name of its parent and its bound (``FOR VALUES …``).
    partition_of: str | None = None
    bound: PartitionBound | None = None

    @property
    def relkind(self) -> str:
        """pg_class.relkind: 'p' partitioned table, 'r' table."""
        return "p" if self.partition_by is not None else "r"

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.key)

    def column(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    @property
    def initial_rows(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.rows]


@dataclass(frozen=True, slots=True)
class PartitionKey:
    """``PARTITION BY LIST (col)`` or ``RANGE (col, …)``."""

    strategy: str  # list | range
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionBound:
    """``FOR VALUES IN (…)``, ``FROM (…) TO (…)`` or ``DEFAULT``; values as text,
    None for MINVALUE/MAXVALUE (range) or NULL (list)."""

    text: str
    values: tuple[Any, ...] = ()
    lower: tuple[Any, ...] = ()
    upper: tuple[Any, ...] = ()
    default: bool = False


@dataclass(frozen=True, slots=True)
class Slot:
    """A replication slot that exists when the server starts."""

    name: str
    plugin: str | None = "pgoutput"
    confirmed_flush: int | None = None
    two_phase: bool = False
    temporary: bool = False
    #: Seconds the slot stays active after its connection ends (reconnects meet 55006).
    hold_after_disconnect: float = 0.0
    #: Invalidated from the start, for this cause (the persona's pg_replication_slots
    #: invalidation_reason: wal_removed, rows_removed, idle_timeout …).
    invalidated: str | None = None


@dataclass(frozen=True, slots=True)
class KeepaliveConfig:
    """Keepalives while idle: every ``interval`` seconds, ``reply_requested`` set or not,
    walEnd growing by ``advance`` bytes each time (as a busy server's WAL does)."""

    interval: float = 10.0
    reply_requested: bool = False
    advance: int = 0


# ------------------------------------------------------------------------------------------
# Changes and history
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowInsert:
    table: str
    new: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class RowUpdate:
    table: str
    #: Values of the key columns (or of every column under REPLICA IDENTITY FULL/NOTHING)
    #: naming the row to change.
    key: tuple[tuple[str, Any], ...]
    #: New values; columns left out keep their old value.
    new: tuple[tuple[str, Any], ...]
    #: Columns sent as 'u' (unchanged TOASTed value) in the new tuple.
    unchanged: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RowDelete:
    table: str
    key: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class TableTruncate:
    tables: tuple[str, ...]
    cascade: bool = False
    restart_identity: bool = False


@dataclass(frozen=True, slots=True)
class EmitMessage:
    """``pg_logical_emit_message(transactional, prefix, content)``."""

    prefix: str
    content: bytes
    transactional: bool = True


@dataclass(frozen=True, slots=True)
class Subtransaction:
    """A SAVEPOINT block: its changes, then RELEASE (``rollback=False``) or ROLLBACK TO."""

    changes: tuple[Change, ...]
    rollback: bool = False


Change = RowInsert | RowUpdate | RowDelete | TableTruncate | EmitMessage | Subtransaction


@dataclass(frozen=True, slots=True)
class Transaction:
    changes: tuple[Change, ...]
    #: ``commit`` | ``abort`` | ``prepare`` (then ``gid`` names it).
    outcome: str = "commit"
    gid: str | None = None
    #: (origin name, origin commit LSN) when the transaction was replayed from elsewhere.
    origin: tuple[str, int] | None = None
    xid: int | None = None
    commit_time: int | None = None
    #: Force streaming (True) or not (False) when the client negotiated streaming;
    #: None: decided by logical_decoding_work_mem.
    stream: bool | None = None


@dataclass(frozen=True, slots=True)
class CommitPrepared:
    gid: str
    commit_time: int | None = None


@dataclass(frozen=True, slots=True)
class RollbackPrepared:
    gid: str
    commit_time: int | None = None


HistoryItem = Transaction | CommitPrepared | RollbackPrepared | EmitMessage


@dataclass(frozen=True, slots=True)
class RawStream:
    """A recorded stream served as it is: pgoutput payloads with their write LSNs.

    ``options`` are the pgoutput options the bytes were produced with; a client that
    negotiates others still gets these bytes (it is a replay), and the server says so in a
    NoticeResponse.
    """

    payloads: tuple[bytes, ...]
    #: (dataStart, walEnd) per payload; None: assigned by the zero-LSN rule.
    lsns: tuple[tuple[int, int], ...] | None = None
    options: tuple[tuple[str, Any], ...] = ()


# ------------------------------------------------------------------------------------------
# The scenario
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    server: ServerInfo = field(default_factory=ServerInfo)
    auth: AuthConfig = field(default_factory=AuthConfig)
    publications: tuple[Publication, ...] = ()
    tables: tuple[Table, ...] = ()
    history: tuple[HistoryItem, ...] = ()
    slots: tuple[Slot, ...] = ()
    keepalive: KeepaliveConfig = field(default_factory=KeepaliveConfig)
    #: Faults (see :mod:`pgwire_spec.walsender.faults`), kept as parsed objects.
    faults: tuple[Any, ...] = ()
    #: A recorded stream to serve instead of ``history`` (replay, hypothesis streams).
    raw: RawStream | None = None
    name: str = field(default="scenario", compare=False)
    #: Physical replication served from a recording (pgwire_spec.physical.serve.PhysicalSource).
    physical: Any = None

    # -- lookups ---------------------------------------------------------------------------
    def table(self, name: str) -> Table:
        qualified = name if "." in name else f"public.{name}"
        for t in self.tables:
            if t.qualified_name == qualified:
                return t
        raise ScenarioError("", f"a table of the scenario ({', '.join(t.qualified_name for t in self.tables)})",
                            repr(name))

    def publication(self, name: str) -> Publication | None:
        for p in self.publications:
            if p.name == name:
                return p
        return None

    # -- partitions ------------------------------------------------------------------------
    def partitions(self, table: Table) -> tuple[Table, ...]:
        """The direct partitions of a partitioned table, in declaration order."""
        return tuple(t for t in self.tables if t.partition_of == table.qualified_name)

    def ancestors(self, table: Table) -> tuple[Table, ...]:
        """The partitioned tables above a partition, nearest first (empty for others)."""
        out: list[Table] = []
        t = table
        while t.partition_of is not None:
            t = self.table(t.partition_of)
            out.append(t)
        return tuple(out)

    def leaves(self, table: Table) -> tuple[Table, ...]:
        """The tables holding a (partitioned) table's rows: itself, or its leaf partitions."""
        if table.partition_by is None:
            return (table,)
        return tuple(leaf for p in self.partitions(table) for leaf in self.leaves(p))

    def route(self, table: Table, row: Mapping[str, Any]) -> Table | None:
        """The leaf partition a row of *table* goes to (the table itself if it is not
        partitioned); None when no partition accepts it."""
        return route_row({t.qualified_name: t for t in self.tables}, table, row)

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str = "scenario", base: str | Path | None = None) -> Scenario:
        """Build and check a scenario from its YAML/JSON form; relative file names (replay)
        are looked up in the current directory, then in *base*."""
        return _Loader(Path(base) if base is not None else None).scenario(data, name)

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        return load_scenario(path)

    @classmethod
    def from_payloads(
        cls,
        payloads: Sequence[bytes],
        *,
        lsns: Sequence[tuple[int, int]] | None = None,
        options: Mapping[str, Any] | None = None,
        server: ServerInfo | None = None,
        auth: AuthConfig | None = None,
        publications: Sequence[str] = ("pub",),
    ) -> Scenario:
        """A scenario that serves recorded pgoutput payloads byte for byte."""
        return cls(
            server=server or ServerInfo(),
            auth=auth or AuthConfig(),
            publications=tuple(Publication(p, None) for p in publications),
            raw=RawStream(tuple(bytes(p) for p in payloads),
                          tuple(lsns) if lsns is not None else None,
                          tuple(sorted((options or {}).items()))),
            name="replay",
        )

    @classmethod
    def from_fixture(cls, path: str | Path, group: str | None = None) -> Scenario:
        """Serve a golden fixture file's group byte for byte (see fixtures/README.md)."""
        from .replay import from_fixture, scenario_from_recording

        return scenario_from_recording(from_fixture(path, group), name=Path(path).name)

    @classmethod
    def from_session(cls, path: str | Path) -> Scenario:
        """Serve the XLogData of a walsender session capture byte for byte."""
        from .replay import from_session, scenario_from_recording

        return scenario_from_recording(from_session(path), name=Path(path).name)

    @classmethod
    def from_stream(cls, stream: Any, **kwargs: Any) -> Scenario:
        """Serve a stream drawn from ``pgwire_spec.strategies.streams``."""
        from .replay import from_stream

        return from_stream(stream, **kwargs)

    def final_rows(self, table: str, *, include_initial: bool = True) -> list[dict[str, Any]]:
        """The rows *table* holds after every committed transaction (the initial rows too,
        unless ``include_initial=False``, as a subscriber with copy_data = false sees it)."""
        from ._history import compile_history

        return compile_history(self, include_initial=include_initial).final_rows(table)


#: Bounds of what a scenario file may make the loader do (files from pull requests are
#: served in shared CI): the file's size, nesting depth, nodes after YAML alias expansion
#: (a "billion laughs" file is refused while it is parsed), one string's length, one
#: list's or mapping's entries.
MAX_SCENARIO_BYTES = 256 << 20
MAX_DEPTH = 64
MAX_NODES = 10_000_000
MAX_STRING = 16 << 20
MAX_ITEMS = 2_000_000


def load_scenario(source: str | Path | Mapping[str, Any], *, allow_paths: Sequence[str | Path] = ()) -> Scenario:
    """A scenario from a YAML/JSON file path, a YAML/JSON text, or a mapping.

    Files a scenario file names (``replay:``) must lie under its folder, the shipped corpus,
    or one of *allow_paths*."""
    if isinstance(source, Mapping):
        check_bounds(source, "scenario")
        return Scenario.from_dict(source)
    name = "scenario"
    base: Path | None = None
    text: str | None = None
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith(("{", "server:", "---"))):
        text = source
    else:
        path = Path(source)
        try:
            is_file, is_dir = path.is_file(), path.is_dir()
        except OSError:
            is_file = is_dir = False
        if not is_file:
            raise ScenarioError(str(source), "a scenario file (YAML or JSON)",
                                "a directory" if is_dir else "no such file or not a regular file")
        try:
            size = path.stat().st_size
            if size > MAX_SCENARIO_BYTES:
                raise ScenarioError(str(path), f"a scenario file of at most {MAX_SCENARIO_BYTES >> 20} MiB",
                                    f"{size:,} bytes")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(str(path), "a readable UTF-8 YAML or JSON file", str(exc)) from None
        name = path.stem
        base = path.resolve().parent
    where = str(source) if base is not None else name
    if len(text) > MAX_SCENARIO_BYTES:
        raise ScenarioError(where, f"a scenario of at most {MAX_SCENARIO_BYTES >> 20} MiB", f"{len(text):,} characters")
    data = _parse_text(text, where)
    if not isinstance(data, Mapping):
        raise ScenarioError(where, "a mapping at the top level", type(data).__name__)
    check_bounds(data, where)
    allow = tuple(Path(p).resolve() for p in allow_paths)
    if base is None:
        return Scenario.from_dict(data, name=name, base=base)
    try:
        return _Loader(base, allow).scenario(data, name)
    except ScenarioError as err:  # name the file, then the entry inside it
        raise ScenarioError(f"{where}: {err.path}" if err.path else where, err.expected, err.found) from None


def check_bounds(data: Any, where: str) -> None:
    """Refuse a parsed scenario deeper than MAX_DEPTH, with more than MAX_NODES nodes
    (aliases counted each time they are used), a string longer than MAX_STRING or a
    collection of more than MAX_ITEMS entries; iterative, so bounded in time and stack."""
    nodes = 0
    stack: list[tuple[Any, int, Any, Any]] = [(data, 0, None, None)]
    while stack:
        entry = stack.pop()
        value, depth, _, _ = entry
        nodes += 1
        if nodes > MAX_NODES:
            raise ScenarioError(where, f"at most {MAX_NODES:,} values (YAML aliases counted where used)",
                                f"more, at {_entry_path(entry)}")
        if isinstance(value, (str, bytes)):
            if len(value) > MAX_STRING:
                raise ScenarioError(f"{where}: {_entry_path(entry)}", f"a string of at most {MAX_STRING:,} characters",
                                    f"{len(value):,}")
            continue
        if isinstance(value, (Mapping, list, tuple)):
            if depth >= MAX_DEPTH:
                raise ScenarioError(f"{where}: {_entry_path(entry)}", f"nesting at most {MAX_DEPTH} levels deep",
                                    "deeper nesting")
            if len(value) > MAX_ITEMS:
                raise ScenarioError(f"{where}: {_entry_path(entry)}", f"at most {MAX_ITEMS:,} entries",
                                    f"{len(value):,}")
            children = value.items() if isinstance(value, Mapping) else enumerate(value)
            for k, v in children:
                if isinstance(v, (str, bytes, Mapping, list, tuple)):
                    stack.append((v, depth + 1, entry, k))
                else:
                    nodes += 1


def _entry_path(entry: tuple[Any, int, Any, Any]) -> str:
    parts: list[str] = []
    while entry[2] is not None:
        key = entry[3]
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
        entry = entry[2]
    return "".join(reversed(parts)).lstrip(".") or "the top level"


def _yaml_loader() -> Any:
    """A safe YAML loader (no object construction) that refuses, while composing, nesting
    deeper than MAX_DEPTH and documents whose aliases expand past MAX_NODES nodes."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._depth = 0
            self._sizes: dict[int, int] = {}

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nesting deeper than {MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            sizes = self._sizes
            if id(node) not in sizes:
                if isinstance(node, yaml.MappingNode):
                    size = 1 + sum(sizes.get(id(k), 1) + sizes.get(id(v), 1) for k, v in node.value)
                elif isinstance(node, yaml.SequenceNode):
                    size = 1 + sum(sizes.get(id(v), 1) for v in node.value)
                else:
                    size = 1
                if size > MAX_NODES:
                    raise yaml.composer.ComposerError(
                        None, None, f"more than {MAX_NODES:,} values once aliases are expanded", node.start_mark)
                sizes[id(node)] = size
            return node

    return BoundedLoader


def _parse_text(text: str, where: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
        except RecursionError:
            raise ScenarioError(where, f"nesting at most {MAX_DEPTH} levels deep", "deeper nesting") from None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise ScenarioError(where, "valid JSON", str(exc)[:200]) from None
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        raise ScenarioError(at, "valid YAML or JSON", f"{problem}" + (f" ({context})" if context else "")) from None
    except RecursionError:
        raise ScenarioError(where, f"nesting at most {MAX_DEPTH} levels deep", "deeper nesting") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise ScenarioError(where, "valid YAML or JSON", str(exc)[:200]) from None


# ------------------------------------------------------------------------------------------
# Loading from the YAML/JSON form
# ------------------------------------------------------------------------------------------

_IDENTITY = {"default": "d", "full": "f", "index": "i", "nothing": "n", "d": "d", "f": "f", "i": "i", "n": "n"}
_AUTH_METHODS = ("trust", "password", "md5", "scram-sha-256")
_ACTIONS = ACTIONS


#: The largest LSN (XLogRecPtr) and the largest xid, timeline or OID (32-bit).
MAX_U64 = (1 << 64) - 1
MAX_U32 = (1 << 32) - 1


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _accepts(bound: PartitionBound, key: PartitionKey, table: Table, row: Mapping[str, Any]) -> bool:
    from .publications import typed

    def val(i: int, v: Any) -> Any:
        col = table.column(key.columns[i])
        assert col is not None
        return typed(col.type.name, v)

    if key.strategy == "list":
        v = row.get(key.columns[0])
        return any((v is None and b is None) or (v is not None and b is not None and val(0, b) == val(0, v))
                   for b in bound.values)
    values = [row.get(c) for c in key.columns]
    if any(v is None for v in values):
        return False  # NULLs go to the default partition of a RANGE table
    typed_row = tuple(val(i, v) for i, v in enumerate(values))

    def cmp(ends: tuple[Any, ...], low: bool) -> int:
        # row compared with a range end (MINVALUE/MAXVALUE as None), column by column
        for i, b in enumerate(ends):
            if b is None:
                return 1 if low else -1
            x = val(i, b)
            if typed_row[i] != x:
                return 1 if typed_row[i] > x else -1
        return 0

    return cmp(bound.lower, True) >= 0 and cmp(bound.upper, False) < 0


def route_row(tables: Mapping[str, Table], table: Table, row: Mapping[str, Any]) -> Table | None:
    """The leaf partition of *table* a row goes to (PostgreSQL's tuple routing), or None."""
    if table.partition_by is None:
        return table
    children = [t for t in tables.values() if t.partition_of == table.qualified_name]
    default = None
    for child in children:
        assert child.bound is not None
        if child.bound.default:
            default = child
        elif _accepts(child.bound, table.partition_by, table, row):
            return route_row(tables, child, row)
    return route_row(tables, default, row) if default is not None else None


def lsn_value(path: str, value: Any) -> int:
    """An LSN of a scenario at *path*: a non-negative integer or the text form ``X/X``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_U64:
        return value
    if isinstance(value, str):
        try:
            return parse_lsn(value)
        except ValueError:
            pass
    raise ScenarioError(path, "an LSN like '0/1500000' (or an integer from 0 to 2^64-1)", _describe(value))


class _Loader:
    def __init__(self, base: Path | None = None, allow: tuple[Path, ...] | None = None) -> None:
        self.tables: dict[str, Table] = {}
        self.base = base
        #: Folders a scenario file's replay may read beyond its own (None: no restriction,
        #: a scenario built in code).
        self.allow = allow

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def keys(path: str, data: Any, allowed: Sequence[str], required: Sequence[str] = ()) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise ScenarioError(path, f"a mapping with keys {', '.join(allowed)}", _describe(data))
        unknown = [k for k in data if k not in allowed]
        if unknown:
            raise ScenarioError(path, f"keys among {', '.join(allowed)}", f"unknown key {unknown[0]!r}")
        for k in required:
            if k not in data:
                raise ScenarioError(path, f"the key {k!r}", "it missing")
        return data

    lsn = staticmethod(lsn_value)

    @staticmethod
    def time(path: str, value: Any) -> int:
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=_dt.UTC)
            return datetime_to_timestamp(value)
        if isinstance(value, _dt.date):
            return datetime_to_timestamp(_dt.datetime(value.year, value.month, value.day, tzinfo=_dt.UTC))
        if isinstance(value, str):
            try:
                parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise ScenarioError(path, "a time like 2025-01-01T00:00:00Z", _describe(value)) from None
            return _Loader.time(path, parsed)
        if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 63:
            return value  # a TimestampTz: microseconds since 2000-01-01, 64-bit
        raise ScenarioError(path, "a time like 2025-01-01T00:00:00Z (or µs since 2000-01-01, 64-bit)",
                            _describe(value))

    @staticmethod
    def integer(path: str, value: Any, minimum: int = 0, maximum: int = MAX_U32) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise ScenarioError(path, f"an integer from {minimum} to {maximum}", _describe(value))
        return value

    @staticmethod
    def seconds(path: str, value: Any, maximum: float = 86400.0) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= maximum:
            raise ScenarioError(path, f"a number of seconds from 0 to {maximum:g}", _describe(value))
        return float(value)

    @staticmethod
    def boolean(path: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ScenarioError(path, "true or false", _describe(value))
        return value

    @staticmethod
    def string(path: str, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ScenarioError(path, "a string", _describe(value))
        return str(value)

    def table_name(self, path: str, value: Any) -> str:
        name = self.string(path, value)
        qualified = name if "." in name else f"public.{name}"
        if qualified not in self.tables:
            known = ", ".join(self.tables) or "none"
            raise ScenarioError(path, f"a table declared under tables ({known})", repr(name))
        return qualified

    def routed(self, tables: list[Table]) -> list[Table]:
        """Initial rows of partitioned tables moved to the partitions that hold them."""
        extra: dict[str, list[tuple[tuple[str, Any], ...]]] = {}
        out = []
        for t in tables:
            if t.partition_by is None or not t.rows:
                out.append(t)
                continue
            for i, r in enumerate(t.rows):
                leaf = route_row(self.tables, t, dict(r))
                if leaf is None:
                    # ERROR: no partition of relation "…" found for row
                    raise ScenarioError(f"tables[{t.qualified_name!r}].rows[{i}]",
                                        f"a row some partition of {t.qualified_name} accepts", "no partition for it")
                extra.setdefault(leaf.qualified_name, []).append(r)
            out.append(replace(t, rows=()))
        final = []
        for t in out:
            if t.qualified_name in extra:
                t = replace(t, rows=t.rows + tuple(extra[t.qualified_name]))
            if t.bound is not None and t.partition_of is not None and not t.bound.default:
                parent = self.tables[t.partition_of]
                assert parent.partition_by is not None
                for i, r in enumerate(t.rows):
                    if not _accepts(t.bound, parent.partition_by, parent, dict(r)):
                        # ERROR: new row for relation "…" violates partition constraint
                        raise ScenarioError(f"tables[{t.qualified_name!r}].rows[{i}]",
                                            f"a row within the partition's bound ({t.bound.text})",
                                            _describe(dict(r)))
            self.tables[t.qualified_name] = t
            final.append(t)
        return final

    # -- sections --------------------------------------------------------------------------
    def scenario(self, data: Mapping[str, Any], name: str) -> Scenario:
        from .faults import check_slot_fault, parse_faults

        self.keys("", data, ("name", "server", "auth", "publications", "tables", "transactions",
                             "slots", "keepalive", "faults", "replay", "physical"))
        rec = None
        server_data = data.get("server") or {}
        if data.get("replay") is not None:
            from .replay import load_replay

            roots = None if self.allow is None or self.base is None else (self.base, *self.allow)
            rec = load_replay(data["replay"], "replay", base=self.base, roots=roots)
            if isinstance(server_data, Mapping):
                defaults: dict[str, Any] = {}
                if rec.version:
                    defaults["version"] = rec.version.split()[0]
                if rec.system_id:
                    defaults["system_id"] = rec.system_id
                if rec.database:
                    defaults["database"] = rec.database
                starts = [a for a, _ in (rec.stream.lsns or ()) if a]
                if starts:
                    # just before the first recorded write, so the slot starts before it
                    defaults["start_lsn"] = max(0, (min(starts) - 8) & ~7)
                server_data = {**defaults, **server_data}
        physical = None
        if data.get("physical") is not None:
            from ..physical.scenario import load_physical

            roots = None if self.allow is None or self.base is None else (self.base, *self.allow)
            physical = load_physical(data["physical"], "physical", base=self.base, roots=roots)
            if isinstance(server_data, Mapping):
                server_data = {**physical.server_defaults(), **server_data}
        server = self.server(server_data)
        auth = self.auth(data.get("auth") or {})
        tables_data = data.get("tables") or {}
        if not isinstance(tables_data, Mapping):
            raise ScenarioError("tables", "a mapping of table name to table", _describe(tables_data))
        next_oid = 16384
        tables: list[Table] = []
        for tname, tdata in tables_data.items():
            table = self.table(f"tables[{tname!r}]", str(tname), tdata, next_oid)
            if table.qualified_name in self.tables:
                raise ScenarioError(f"tables[{tname!r}]", "each table once", "a duplicate")
            next_oid = max(next_oid, table.oid) + 1
            self.tables[table.qualified_name] = table
            tables.append(table)
        tables = self.routed(tables)
        self.one_type_per_oid(tables)
        publications = self.publications(data.get("publications") or {}, server.major)
        history = tuple(self.history(data.get("transactions") or []))
        slots = self.slots(data.get("slots") or [], server.major)
        keepalive = self.keepalive(data.get("keepalive") or {})
        faults = tuple(parse_faults(data.get("faults") or [], "faults"))
        for i, f in enumerate(faults):
            try:
                check_slot_fault(f, server.major)
            except ValueError as exc:
                raise ScenarioError(f"faults[{i}].reason", "a valid fault", str(exc)) from None
        raw = None
        if rec is not None:
            raw = rec.stream
            if not publications:
                publications = tuple(Publication(p, None) for p in rec.publications)
            if not slots and rec.slot:
                slots = (Slot(rec.slot),)
        scenario = Scenario(
            server=server, auth=auth, publications=publications, tables=tuple(tables),
            history=history, slots=slots, keepalive=keepalive, faults=faults, raw=raw,
            name=str(data.get("name") or name), physical=physical,
        )
        # Simulate once: an update of a missing row, a prepared gid never prepared … fail here.
        from ._history import compile_history

        compile_history(scenario)
        return scenario

    def server(self, data: Any) -> ServerInfo:
        d = self.keys("server", data, ("version", "system_id", "timeline", "database", "start_lsn",
                                       "first_xid", "clock", "logical_decoding_work_mem", "encoding",
                                       "parameters", "settings", "history", *LIMIT_RANGES))
        kw: dict[str, Any] = {}
        limits = {name: limit_value(f"server.{name}", name, d[name]) for name in LIMIT_RANGES if name in d}
        if limits:
            kw["limits"] = Limits(**limits)  # type: ignore[arg-type]
        if "version" in d:
            version = str(d["version"])
            m = re.match(r"(\d+)(?:\.(\d+))?", version)
            if not m or int(m.group(1)) not in majors.MAJORS:
                span = majors.known()
                raise ScenarioError("server.version", f"a PostgreSQL version {span[0]} … {span[-1]} like '16.4'",
                                    _describe(d["version"]))
            kw["version"] = version if m.group(2) else f"{m.group(1)}.0"
        if "system_id" in d:
            sid = str(d["system_id"])
            if not sid.isdigit() or int(sid) >= 1 << 64:
                raise ScenarioError("server.system_id", "a 64-bit unsigned integer in decimal", _describe(d["system_id"]))
            kw["system_id"] = sid
        if "timeline" in d:
            kw["timeline"] = self.integer("server.timeline", d["timeline"], 1)
        if "database" in d:
            kw["database"] = self.string("server.database", d["database"])
        if "start_lsn" in d:
            kw["start_lsn"] = self.lsn("server.start_lsn", d["start_lsn"])
        if "first_xid" in d:
            kw["first_xid"] = self.integer("server.first_xid", d["first_xid"], 3)
        if "clock" in d:
            kw["clock"] = self.time("server.clock", d["clock"])
        if "logical_decoding_work_mem" in d:
            kw["logical_decoding_work_mem"] = self.memory("server.logical_decoding_work_mem",
                                                          d["logical_decoding_work_mem"])
        if "encoding" in d:
            kw["encoding"] = self.string("server.encoding", d["encoding"])
        if "history" in d:
            kw["history"] = d["history"]  # checked by ServerInfo
        for key in ("parameters", "settings"):
            if key in d:
                value = d[key]
                if not isinstance(value, Mapping):
                    raise ScenarioError(f"server.{key}", "a mapping of name to value", _describe(value))
                kw[key] = tuple((str(k), str(v)) for k, v in value.items())
        info = ServerInfo(**kw)
        for name, raw in d.get("settings", {}).items():
            try:
                check_scenario_setting(str(name), raw, info.major)
            except SettingError as exc:
                raise ScenarioError(f"server.settings.{name}", exc.expected, exc.found) from None
        return info

    def memory(self, path: str, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+)\s*(kB|MB|GB|B)?\s*", value)
            if m:
                return int(m.group(1)) * {"B": 1, None: 1024, "kB": 1024, "MB": 1 << 20, "GB": 1 << 30}[m.group(2)]
        raise ScenarioError(path, "a size like 65536 or '64kB'", _describe(value))

    def auth(self, data: Any) -> AuthConfig:
        d = self.keys("auth", data, ("method", "users"))
        method = str(d.get("method", "trust"))
        if method not in _AUTH_METHODS:
            raise ScenarioError("auth.method", f"one of {', '.join(_AUTH_METHODS)}", _describe(method))
        users = d.get("users") or {}
        if not isinstance(users, Mapping):
            raise ScenarioError("auth.users", "a mapping of user name to password", _describe(users))
        if method != "trust" and not users:
            raise ScenarioError("auth.users", f"at least one user for method {method}", "none")
        return AuthConfig(method, tuple((str(u), str(p)) for u, p in users.items()))

    def table(self, path: str, name: str, data: Any, oid: int) -> Table:
        d = self.keys(path, data, ("columns", "rows", "replica_identity", "oid", "partition_by",
                                   "partition_of", "for_values"))
        schema, _, rel = name.rpartition(".")
        schema = schema or "public"
        if not rel:
            raise ScenarioError(path, "a table name like public.accounts", repr(name))
        if "oid" in d:
            oid = self.integer(f"{path}.oid", d["oid"], 1)
        parent: Table | None = None
        if "partition_of" in d:
            parent_name = self.table_name(f"{path}.partition_of", d["partition_of"])
            parent = self.tables[parent_name]
            if parent.partition_by is None:
                raise ScenarioError(f"{path}.partition_of", "a partitioned table (one with partition_by)",
                                    repr(parent_name))
            if "for_values" not in d:
                raise ScenarioError(path, "the key 'for_values' (like \"IN ('eu')\" or 'FROM (1) TO (100)')",
                                    "it missing")
        elif "for_values" in d:
            raise ScenarioError(f"{path}.for_values", "partition_of beside it", "for_values alone")
        identity = str(d.get("replica_identity", "default"))
        if identity not in _IDENTITY:
            raise ScenarioError(f"{path}.replica_identity", "default, full, index or nothing", _describe(identity))
        if parent is not None and "columns" not in d:
            columns = list(parent.columns)
            if "replica_identity" not in d:
                identity = {v: k for k, v in _IDENTITY.items() if len(k) > 1}[parent.replica_identity]
        else:
            if "columns" not in d:
                raise ScenarioError(path, "the key 'columns'", "it missing")
            columns = self.columns(path, d["columns"])
        ident = _IDENTITY[identity]
        if ident in ("d", "i") and not any(c.key for c in columns) and identity == "index":
            raise ScenarioError(f"{path}.columns", "key: true on the identity index's columns", "no key column")
        key = None
        if "partition_by" in d:
            key = self.partition_key(f"{path}.partition_by", d["partition_by"], columns)
        bound = None
        if parent is not None:
            if [c.name for c in columns] != [c.name for c in parent.columns]:
                raise ScenarioError(f"{path}.columns", f"the columns of {parent.qualified_name}",
                                    ", ".join(c.name for c in columns))
            assert parent.partition_by is not None
            bound = self.partition_bound(f"{path}.for_values", d["for_values"], parent.partition_by)
        table = Table(schema, rel, oid, tuple(columns), ident, (), key,
                      parent.qualified_name if parent else None, bound)
        rows_data = d.get("rows") or []
        if not isinstance(rows_data, list):
            raise ScenarioError(f"{path}.rows", "a list of rows", _describe(rows_data))
        rows = tuple(self.row(f"{path}.rows[{i}]", table, r, full=False) for i, r in enumerate(rows_data))
        return Table(schema, rel, oid, tuple(columns), ident, rows, key,
                     parent.qualified_name if parent else None, bound)

    @staticmethod
    def one_type_per_oid(tables: list[Table]) -> None:
        """An enum is one type: every column naming its OID gives the same labels."""
        seen: dict[int, tuple[str, tuple[Any, ...]]] = {}
        for t in tables:
            for i, c in enumerate(t.columns):
                if not c.type.is_user_type:
                    continue
                path = f"tables[{t.qualified_name!r}].columns[{i}].type"
                facts = (c.type.labels, c.type.label_oids)
                first = seen.setdefault(c.type.oid, (path, facts))
                if first[1] != facts:
                    raise ScenarioError(path, f"the type declared at {first[0]} (OID {c.type.oid})",
                                        f"{c.type.name} with labels {list(c.type.labels)}")

    def columns(self, path: str, cols_data: Any) -> list[Column]:
        if not isinstance(cols_data, list) or not cols_data:
            raise ScenarioError(f"{path}.columns", "a non-empty list of columns", _describe(cols_data))
        columns: list[Column] = []
        for i, cdata in enumerate(cols_data):
            cpath = f"{path}.columns[{i}]"
            c = self.keys(cpath, cdata, ("name", "type", "key", "generated"), ("name", "type"))
            try:
                ctype = resolve_type(c["type"])
            except ValueError as exc:
                raise ScenarioError(f"{cpath}.type", "a type", str(exc)) from None
            cname = self.string(f"{cpath}.name", c["name"])
            if any(col.name == cname for col in columns):
                raise ScenarioError(f"{cpath}.name", "distinct column names", f"{cname!r} twice")
            columns.append(Column(cname, ctype, self.boolean(f"{cpath}.key", c.get("key", False))))
        # generation expressions read the other (non-generated) columns of the row
        types = {c.name: c.type.name for c in columns}
        for i, cdata in enumerate(cols_data):
            if "generated" not in cdata:
                continue
            gpath = f"{path}.columns[{i}].generated"
            expr = self.expression(gpath, cdata["generated"], types)
            gen_cols = {c.name for j, c in enumerate(columns) if "generated" in cols_data[j]}
            if expr.columns & gen_cols:
                raise ScenarioError(gpath, "an expression over columns that are not generated",
                                    f"it reads {', '.join(sorted(expr.columns & gen_cols))}")
            if columns[i].key:
                raise ScenarioError(gpath, "a column that is not part of the key", "key: true")
            c0 = columns[i]
            columns[i] = Column(c0.name, c0.type, c0.key, expr)
        return columns

    def expression(self, path: str, text: Any, types: Mapping[str, str]) -> Expression:
        if not isinstance(text, str):
            raise ScenarioError(path, "a SQL expression", _describe(text))
        try:
            return _parse_expression(text, types)
        except ExpressionError as exc:
            raise ScenarioError(path, exc.expected, exc.found) from None

    def partition_key(self, path: str, text: Any, columns: list[Column]) -> PartitionKey:
        from pglast import parse_sql
        from pglast.parser import ParseError

        if not isinstance(text, str):
            raise ScenarioError(path, "a partition key like 'LIST (region)' or 'RANGE (id)'", _describe(text))
        try:
            spec = parse_sql(f"CREATE TABLE x (a int) PARTITION BY {text}")[0].stmt.partspec
        except (ParseError, IndexError, AttributeError):
            spec = None
        strategy = str(getattr(spec, "strategy", "")) if spec is not None else ""
        strategy = {"l": "list", "r": "range"}.get(strategy[-1:] if strategy else "", "")
        names = [getattr(p, "name", None) for p in (spec.partParams if spec is not None else ())]
        if not strategy or not names or any(n is None for n in names) or (strategy == "list" and len(names) != 1):
            raise ScenarioError(path, "a partition key like 'LIST (region)' or 'RANGE (id)' on columns",
                                _describe(text))
        known = {c.name for c in columns}
        for n in names:
            if n not in known:
                raise ScenarioError(path, f"key columns of the table ({', '.join(sorted(known))})", repr(n))
        return PartitionKey(strategy, tuple(str(n) for n in names))

    def partition_bound(self, path: str, text: Any, key: PartitionKey) -> PartitionBound:
        from pglast import ast, parse_sql
        from pglast.parser import ParseError

        if not isinstance(text, str):
            raise ScenarioError(path, "a bound like \"IN ('eu')\", 'FROM (1) TO (100)' or 'DEFAULT'", _describe(text))
        sql = f"CREATE TABLE x PARTITION OF y {text}" if text.strip().upper() == "DEFAULT" \
            else f"CREATE TABLE x PARTITION OF y FOR VALUES {text}"
        try:
            spec = parse_sql(sql)[0].stmt.partbound
        except (ParseError, IndexError, AttributeError):
            raise ScenarioError(path, "a bound like \"IN ('eu')\", 'FROM (1) TO (100)' or 'DEFAULT'",
                                _describe(text)) from None

        def datum(node: Any) -> Any:
            if isinstance(node, ast.A_Const):
                if node.isnull:
                    return None
                v = node.val
                return str(getattr(v, "ival", getattr(v, "fval", getattr(v, "sval", getattr(v, "boolval", "")))))
            if isinstance(node, ast.ColumnRef):  # MINVALUE / MAXVALUE
                return None
            if isinstance(node, ast.TypeCast):
                return datum(node.arg)
            raise ScenarioError(path, "constants in the bound", _describe(text))

        if spec.is_default:
            return PartitionBound(text, default=True)
        if spec.strategy == "l" and key.strategy == "list":
            return PartitionBound(text, values=tuple(datum(n) for n in spec.listdatums))
        if spec.strategy == "r" and key.strategy == "range":
            lower = tuple(datum(n) for n in spec.lowerdatums)
            upper = tuple(datum(n) for n in spec.upperdatums)
            if len(lower) != len(key.columns) or len(upper) != len(key.columns):
                raise ScenarioError(path, f"{len(key.columns)} value(s) per range end", _describe(text))
            return PartitionBound(text, lower=lower, upper=upper)
        raise ScenarioError(path, f"a bound of a {key.strategy.upper()} partitioned table", _describe(text))

    def row(self, path: str, table: Table, data: Any, *, full: bool,
            key: bool = False) -> tuple[tuple[str, Any], ...]:
        if not isinstance(data, Mapping):
            raise ScenarioError(path, "a mapping of column to value", _describe(data))
        out = []
        for cname, value in data.items():
            col = table.column(str(cname))
            if col is None:
                raise ScenarioError(path, f"columns of {table.qualified_name} ({', '.join(c.name for c in table.columns)})",
                                    repr(cname))
            if col.generated is not None and not key:
                # the server: cannot insert a non-DEFAULT value into column (a generated one)
                raise ScenarioError(f"{path}.{cname}", "no value for a generated column (it is computed)",
                                    _describe(value))
            try:
                col.type.text(value)
            except (TypeValueError, ValueError) as exc:
                what, _, _found = str(exc).removeprefix("expected ").partition(", found ")
                raise ScenarioError(f"{path}.{cname}", f"a value of type {col.type.name} ({what})",
                                    _describe(value)) from None
            out.append((col.name, value))
        return tuple(out)

    def publications(self, data: Any, major: int) -> tuple[Publication, ...]:
        if not isinstance(data, Mapping):
            raise ScenarioError("publications", "a mapping of publication name to tables", _describe(data))
        pubs = []
        for pname, pdata in data.items():
            path = f"publications[{pname!r}]"
            if isinstance(pdata, Mapping):
                pubs.append(self.publication(path, str(pname), pdata, major))
            elif pdata == "all" or pdata == "all_tables":
                pubs.append(Publication(str(pname), None))
            elif isinstance(pdata, list):
                pubs.append(self.publication(path, str(pname), {"tables": pdata}, major, tables_path=path))
            else:
                raise ScenarioError(path, "a list of tables, 'all', or {tables, schemas, publish, …}",
                                    _describe(pdata))
        return tuple(pubs)

    def publication(self, path: str, name: str, d: Mapping[str, Any], major: int,
                    tables_path: str | None = None) -> Publication:
        self.keys(path, d, ("tables", "all_tables", "schemas", "publish", "publish_via_partition_root",
                            "publish_generated_columns"))

        table = majors.major(major)

        def since(key: str) -> None:
            # the server of the scenario's major refuses the option (the docs' CREATE PUBLICATION)
            if key not in table.publication_options:
                first = table.first_with("publication_options", key)
                raise ScenarioError(f"{path}.{key}", f"a server of {first}+ (the scenario's is {major})",
                                    f"{key}")

        actions = _ACTIONS
        if "publish" in d:
            items = d["publish"]
            if isinstance(items, str):
                items = [s.strip() for s in items.split(",") if s.strip()]
            if not isinstance(items, list) or not set(items) <= _ACTIONS:
                raise ScenarioError(f"{path}.publish", "actions among insert, update, delete, truncate",
                                    _describe(d["publish"]))
            actions = frozenset(items)
        all_tables = self.boolean(f"{path}.all_tables", d.get("all_tables", False))
        schemas: list[str] = []
        for i, sname in enumerate(d.get("schemas") or []):
            since("schemas")
            sch = self.string(f"{path}.schemas[{i}]", sname)
            if not any(t.schema == sch for t in self.tables.values()):
                raise ScenarioError(f"{path}.schemas[{i}]", "a schema of the scenario's tables "
                                    f"({', '.join(sorted({t.schema for t in self.tables.values()}))})", repr(sch))
            schemas.append(sch)
        tables: list[str] = []
        entries: list[PublishedTable] = []
        raw_tables = d.get("tables") or []
        if not isinstance(raw_tables, list):
            raise ScenarioError(f"{path}.tables", "a list of tables", _describe(raw_tables))
        for i, item in enumerate(raw_tables):
            ipath = f"{tables_path or path + '.tables'}[{i}]"
            if isinstance(item, Mapping):
                td = self.keys(ipath, item, ("table", "columns", "where"), ("table",))
                tname = self.table_name(f"{ipath}.table", td["table"])
                entries.append(self.published_table(ipath, tname, td, major))
            else:
                tname = self.table_name(ipath, item)
            if tname in tables:
                # CREATE PUBLICATION: 'table "…" specified more than once'
                raise ScenarioError(ipath, "each table once", f"{tname} twice")
            tables.append(tname)
        if all_tables and (tables or schemas):
            raise ScenarioError(path, "all_tables, or tables and schemas", "both")
        via_root = False
        if "publish_via_partition_root" in d:
            since("publish_via_partition_root")
            via_root = self.boolean(f"{path}.publish_via_partition_root", d["publish_via_partition_root"])
        for e in entries:
            if self.tables[e.table].relkind == "p" and not via_root and (e.where or e.columns):
                # CREATE PUBLICATION: cannot use publication WHERE clause / column list for a
                # partitioned table when publish_via_partition_root is false
                what = "WHERE clause" if e.where else "column list"
                raise ScenarioError(f"{path}.tables", f"publish_via_partition_root: true for a {what} on "
                                    f"the partitioned table {e.table}", "false")
        generated = "none"
        if "publish_generated_columns" in d:
            since("publish_generated_columns")
            value = d["publish_generated_columns"]
            generated = {True: "stored", False: "none"}.get(value, value) if isinstance(value, bool) else value
            if generated not in GENERATED_COLUMNS:
                raise ScenarioError(f"{path}.publish_generated_columns", "none or stored", _describe(value))
        return Publication(name, None if all_tables else tuple(tables), actions, tuple(schemas),
                           tuple(entries), via_root, str(generated))

    def published_table(self, path: str, tname: str, td: Mapping[str, Any], major: int) -> PublishedTable:
        table = self.tables[tname]
        columns: tuple[str, ...] | None = None
        if "columns" in td:
            if not majors.major(major).publication_filters:
                raise ScenarioError(f"{path}.columns", f"a server of 15+ (the scenario's is {major})", "a column list")
            cl = td["columns"]
            if not isinstance(cl, list) or not cl:
                raise ScenarioError(f"{path}.columns", "a non-empty list of column names", _describe(cl))
            names = []
            for j, cname in enumerate(cl):
                col = table.column(str(cname))
                if col is None:
                    raise ScenarioError(f"{path}.columns[{j}]", f"a column of {tname} "
                                        f"({', '.join(c.name for c in table.columns)})", repr(cname))
                if col.generated is not None and not majors.major(major).publish_generated_columns:
                    # 15-17: cannot use generated column "…" in publication column list
                    raise ScenarioError(f"{path}.columns[{j}]", "a column that is not generated (before 18)",
                                        repr(cname))
                if col.name in names:
                    raise ScenarioError(f"{path}.columns[{j}]", "each column once", f"{cname!r} twice")
                names.append(col.name)
            columns = tuple(names)
        where = None
        if "where" in td:
            if not majors.major(major).publication_filters:
                raise ScenarioError(f"{path}.where", f"a server of 15+ (the scenario's is {major})", "a row filter")
            where = self.expression(f"{path}.where", td["where"], {c.name: c.type.name for c in table.columns})
        return PublishedTable(tname, columns, where)

    def slots(self, data: Any, major: int = 16) -> tuple[Slot, ...]:
        if isinstance(data, Mapping):
            data = [{"name": k, **(v or {})} for k, v in data.items()]
        if not isinstance(data, list):
            raise ScenarioError("slots", "a list of slots", _describe(data))
        out = []
        for i, sd in enumerate(data):
            path = f"slots[{i}]"
            if isinstance(sd, str):
                sd = {"name": sd}
            d = self.keys(path, sd, ("name", "plugin", "confirmed_flush", "two_phase", "temporary",
                                     "hold_after_disconnect", "invalidated"), ("name",))
            causes = majors.MAJORS[major].slot_invalidation_causes
            cause = d.get("invalidated")
            if cause is not None and cause not in causes:
                raise ScenarioError(f"{path}.invalidated", f"a cause PostgreSQL {major} invalidates slots for "
                                    f"({', '.join(causes) or 'none'})", _describe(cause))
            out.append(Slot(
                self.string(f"{path}.name", d["name"]),
                None if d.get("plugin", "pgoutput") is None else str(d.get("plugin", "pgoutput")),
                self.lsn(f"{path}.confirmed_flush", d["confirmed_flush"]) if "confirmed_flush" in d else None,
                self.boolean(f"{path}.two_phase", d.get("two_phase", False)),
                self.boolean(f"{path}.temporary", d.get("temporary", False)),
                self.seconds(f"{path}.hold_after_disconnect", d.get("hold_after_disconnect", 0)),
                cause,
            ))
        return tuple(out)

    def keepalive(self, data: Any) -> KeepaliveConfig:
        d = self.keys("keepalive", data, ("interval", "reply_requested", "advance"))
        interval = d.get("interval", 10.0)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval <= 86400:
            raise ScenarioError("keepalive.interval", "a number of seconds > 0, at most 86400", _describe(interval))
        return KeepaliveConfig(
            float(interval),
            self.boolean("keepalive.reply_requested", d.get("reply_requested", False)),
            self.integer("keepalive.advance", d.get("advance", 0), 0, MAX_U64),
        )

    # -- history ---------------------------------------------------------------------------
    def history(self, data: Any) -> list[HistoryItem]:
        if not isinstance(data, list):
            raise ScenarioError("transactions", "a list of transactions", _describe(data))
        return [self.item(f"transactions[{i}]", d) for i, d in enumerate(data)]

    def item(self, path: str, data: Any) -> HistoryItem:
        if isinstance(data, Mapping) and "commit_prepared" in data:
            d = self.keys(path, data, ("commit_prepared", "commit_time"))
            return CommitPrepared(self.string(f"{path}.commit_prepared", d["commit_prepared"]),
                                  self.time(f"{path}.commit_time", d["commit_time"]) if "commit_time" in d else None)
        if isinstance(data, Mapping) and "rollback_prepared" in data:
            d = self.keys(path, data, ("rollback_prepared", "commit_time"))
            return RollbackPrepared(self.string(f"{path}.rollback_prepared", d["rollback_prepared"]),
                                    self.time(f"{path}.commit_time", d["commit_time"]) if "commit_time" in d else None)
        if isinstance(data, Mapping) and "message" in data:
            msg = self.message(path, data)
            if msg.transactional:
                raise ScenarioError(f"{path}.transactional", "false for a message outside a transaction "
                                    "(put transactional messages under changes)", "true")
            return msg
        d = self.keys(path, data, ("changes", "abort", "prepare", "origin", "xid", "commit_time", "stream"))
        changes = d.get("changes") or []
        if not isinstance(changes, list):
            raise ScenarioError(f"{path}.changes", "a list of changes", _describe(changes))
        outcome, gid = "commit", None
        if d.get("abort"):
            outcome = "abort"
        if "prepare" in d:
            if outcome == "abort":
                raise ScenarioError(path, "either abort or prepare", "both")
            outcome, gid = "prepare", self.string(f"{path}.prepare", d["prepare"])
        origin = None
        if "origin" in d:
            o = d["origin"]
            if isinstance(o, str):
                origin = (o, 0)
            else:
                od = self.keys(f"{path}.origin", o, ("name", "lsn"), ("name",))
                origin = (self.string(f"{path}.origin.name", od["name"]),
                          self.lsn(f"{path}.origin.lsn", od.get("lsn", 0)))
        stream = d.get("stream")
        if stream is not None:
            stream = self.boolean(f"{path}.stream", stream)
        return Transaction(
            changes=tuple(self.change(f"{path}.changes[{i}]", c) for i, c in enumerate(changes)),
            outcome=outcome, gid=gid, origin=origin,
            xid=self.integer(f"{path}.xid", d["xid"], 3) if "xid" in d else None,
            commit_time=self.time(f"{path}.commit_time", d["commit_time"]) if "commit_time" in d else None,
            stream=stream,
        )

    def message(self, path: str, data: Mapping[str, Any]) -> EmitMessage:
        d = self.keys(path, data, ("message", "content", "content_hex", "transactional"), ("message",))
        if "content" in d and "content_hex" in d:
            raise ScenarioError(path, "content or content_hex", "both")
        if "content_hex" in d:
            try:
                content = bytes.fromhex(str(d["content_hex"]))
            except ValueError:
                raise ScenarioError(f"{path}.content_hex", "hex digits", _describe(d["content_hex"])) from None
        else:
            raw = d.get("content", "")
            content = raw if isinstance(raw, bytes) else (raw if isinstance(raw, str) else json.dumps(raw)).encode()
        return EmitMessage(self.string(f"{path}.message", d["message"]), content,
                           self.boolean(f"{path}.transactional", d.get("transactional", True)))

    def change(self, path: str, data: Any) -> Change:
        if not isinstance(data, Mapping):
            raise ScenarioError(path, "a change (insert, update, delete, truncate, message, subtransaction)",
                                _describe(data))
        if "insert" in data:
            d = self.keys(path, data, ("insert", "new"), ("new",))
            t = self.table_name(f"{path}.insert", d["insert"])
            return RowInsert(t, self.row(f"{path}.new", self.tables[t], d["new"], full=True))
        if "update" in data:
            d = self.keys(path, data, ("update", "key", "new", "unchanged"), ("key", "new"))
            t = self.table_name(f"{path}.update", d["update"])
            unchanged = d.get("unchanged") or []
            if not isinstance(unchanged, list) or any(self.tables[t].column(str(c)) is None for c in unchanged):
                raise ScenarioError(f"{path}.unchanged", f"a list of columns of {t}", _describe(unchanged))
            return RowUpdate(t, self.row(f"{path}.key", self.tables[t], d["key"], full=False, key=True),
                             self.row(f"{path}.new", self.tables[t], d["new"], full=False),
                             tuple(str(c) for c in unchanged))
        if "delete" in data:
            d = self.keys(path, data, ("delete", "key"), ("key",))
            t = self.table_name(f"{path}.delete", d["delete"])
            return RowDelete(t, self.row(f"{path}.key", self.tables[t], d["key"], full=False, key=True))
        if "truncate" in data:
            d = self.keys(path, data, ("truncate", "cascade", "restart_identity"))
            names = d["truncate"] if isinstance(d["truncate"], list) else [d["truncate"]]
            return TableTruncate(tuple(self.table_name(f"{path}.truncate", n) for n in names),
                                 self.boolean(f"{path}.cascade", d.get("cascade", False)),
                                 self.boolean(f"{path}.restart_identity", d.get("restart_identity", False)))
        if "message" in data:
            return self.message(path, data)
        if "subtransaction" in data:
            d = self.keys(path, data, ("subtransaction", "rollback"))
            inner = d["subtransaction"]
            if not isinstance(inner, list):
                raise ScenarioError(f"{path}.subtransaction", "a list of changes", _describe(inner))
            return Subtransaction(tuple(self.change(f"{path}.subtransaction[{i}]", c) for i, c in enumerate(inner)),
                                  self.boolean(f"{path}.rollback", d.get("rollback", False)))
        raise ScenarioError(path, "a change (insert, update, delete, truncate, message, subtransaction)",
                            _describe(data))
