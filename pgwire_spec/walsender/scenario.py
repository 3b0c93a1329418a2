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

Loading checks everything a real server would have refused (an update of a row that does
not exist, a key that does not name the key columns, a value its type cannot hold …) and
reports it as a :class:`ScenarioError` with the path of the offending entry.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PgWireError
from ..lsn import datetime_to_timestamp, parse_lsn
from .types import ColumnType, TypeValueError, resolve_type

__all__ = [
    "ScenarioError",
    "ServerInfo",
    "Limits",
    "AuthConfig",
    "Column",
    "Table",
    "Publication",
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


#: Each limit: the bounds a scenario or the command line may set it to.
LIMIT_RANGES: dict[str, tuple[float, float]] = {
    "max_connections": (1, 1 << 20),
    "authentication_timeout": (0.001, 600.0),  # PostgreSQL allows 1 s … 600 s; tests want less
    "max_startup_packet_length": (8, 10000),
    "max_auth_message_length": (5, (1 << 30) - 1),
    "max_message_length": (5, (1 << 30) - 1),
}


def limit_value(path: str, name: str, value: Any) -> float | int:
    """A limit's value, checked against :data:`LIMIT_RANGES`."""
    low, high = LIMIT_RANGES[name]
    is_int = name != "authentication_timeout"
    if isinstance(value, str) and not is_int:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min)?\s*", value)
        if m:
            value = float(m.group(1)) * {"ms": 0.001, "s": 1.0, None: 1.0, "min": 60.0}[m.group(2)]
    ok_type = isinstance(value, int) if is_int else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not low <= value <= high:
        what = "an integer" if is_int else "a number of seconds (or '60s', '500ms')"
        raise ScenarioError(path, f"{what} from {low:g} to {high:g}", _describe(value))
    return value if is_int else float(value)


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
    #: SHOW values beyond the built-in ones.
    settings: tuple[tuple[str, str], ...] = ()
    #: What one client may cost (``max_connections``, ``authentication_timeout`` …: flat
    #: keys of the ``server:`` section).
    limits: Limits = field(default_factory=Limits)

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
class Publication:
    name: str
    #: Qualified table names; None for FOR ALL TABLES.
    tables: tuple[str, ...] | None
    actions: frozenset[str] = frozenset({"insert", "update", "delete", "truncate"})

    def publishes(self, table: str, action: str) -> bool:
        return action in self.actions and (self.tables is None or table in self.tables)


@dataclass(frozen=True, slots=True)
class Slot:
    """A replication slot that exists when the server starts."""

    name: str
    plugin: str | None = "pgoutput"
    confirmed_flush: int | None = None
    two_phase: bool = False
    temporary: bool = False


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


def load_scenario(source: str | Path | Mapping[str, Any]) -> Scenario:
    """A scenario from a YAML/JSON file path, a YAML/JSON text, or a mapping."""
    if isinstance(source, Mapping):
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
                                "a directory" if is_dir else "no such file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(str(path), "a readable UTF-8 YAML or JSON file", str(exc)) from None
        name = path.stem
        base = path.resolve().parent
    where = str(source) if base is not None else name
    data = _parse_text(text, where)
    if not isinstance(data, Mapping):
        raise ScenarioError(where, "a mapping at the top level", type(data).__name__)
    if base is None:
        return Scenario.from_dict(data, name=name, base=base)
    try:
        return Scenario.from_dict(data, name=name, base=base)
    except ScenarioError as err:  # name the file, then the entry inside it
        raise ScenarioError(f"{where}: {err.path}" if err.path else where, err.expected, err.found) from None


def _parse_text(text: str, where: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        raise ScenarioError(at, "valid YAML or JSON", f"{problem}" + (f" ({context})" if context else "")) from None


# ------------------------------------------------------------------------------------------
# Loading from the YAML/JSON form
# ------------------------------------------------------------------------------------------

_IDENTITY = {"default": "d", "full": "f", "index": "i", "nothing": "n", "d": "d", "f": "f", "i": "i", "n": "n"}
_AUTH_METHODS = ("trust", "password", "md5", "scram-sha-256")
_ACTIONS = frozenset({"insert", "update", "delete", "truncate"})


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def lsn_value(path: str, value: Any) -> int:
    """An LSN of a scenario at *path*: a non-negative integer or the text form ``X/X``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            return parse_lsn(value)
        except ValueError:
            pass
    raise ScenarioError(path, "an LSN like '0/1500000'", _describe(value))


class _Loader:
    def __init__(self, base: Path | None = None) -> None:
        self.tables: dict[str, Table] = {}
        self.base = base

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
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ScenarioError(path, "a time like 2025-01-01T00:00:00Z", _describe(value))

    @staticmethod
    def integer(path: str, value: Any, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ScenarioError(path, f"an integer >= {minimum}", _describe(value))
        return value

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

    # -- sections --------------------------------------------------------------------------
    def scenario(self, data: Mapping[str, Any], name: str) -> Scenario:
        from .faults import parse_faults

        self.keys("", data, ("name", "server", "auth", "publications", "tables", "transactions",
                             "slots", "keepalive", "faults", "replay", "physical"))
        rec = None
        server_data = data.get("server") or {}
        if data.get("replay") is not None:
            from .replay import load_replay

            rec = load_replay(data["replay"], "replay", base=self.base)
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

            physical = load_physical(data["physical"], "physical")
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
        publications = self.publications(data.get("publications") or {})
        history = tuple(self.history(data.get("transactions") or []))
        slots = self.slots(data.get("slots") or [])
        keepalive = self.keepalive(data.get("keepalive") or {})
        faults = tuple(parse_faults(data.get("faults") or [], "faults"))
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
                                       "parameters", "settings", *LIMIT_RANGES))
        kw: dict[str, Any] = {}
        limits = {name: limit_value(f"server.{name}", name, d[name]) for name in LIMIT_RANGES if name in d}
        if limits:
            kw["limits"] = Limits(**limits)  # type: ignore[arg-type]
        if "version" in d:
            version = str(d["version"])
            m = re.match(r"(\d+)(?:\.(\d+))?", version)
            if not m or not 10 <= int(m.group(1)) <= 18:
                raise ScenarioError("server.version", "a PostgreSQL version 10 … 18 like '16.4'", _describe(d["version"]))
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
        for key in ("parameters", "settings"):
            if key in d:
                value = d[key]
                if not isinstance(value, Mapping):
                    raise ScenarioError(f"server.{key}", "a mapping of name to value", _describe(value))
                kw[key] = tuple((str(k), str(v)) for k, v in value.items())
        return ServerInfo(**kw)

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
        d = self.keys(path, data, ("columns", "rows", "replica_identity", "oid"), ("columns",))
        schema, _, rel = name.rpartition(".")
        schema = schema or "public"
        if not rel:
            raise ScenarioError(path, "a table name like public.accounts", repr(name))
        if "oid" in d:
            oid = self.integer(f"{path}.oid", d["oid"], 1)
        identity = str(d.get("replica_identity", "default"))
        if identity not in _IDENTITY:
            raise ScenarioError(f"{path}.replica_identity", "default, full, index or nothing", _describe(identity))
        cols_data = d["columns"]
        if not isinstance(cols_data, list) or not cols_data:
            raise ScenarioError(f"{path}.columns", "a non-empty list of columns", _describe(cols_data))
        columns: list[Column] = []
        for i, cdata in enumerate(cols_data):
            cpath = f"{path}.columns[{i}]"
            c = self.keys(cpath, cdata, ("name", "type", "key"), ("name", "type"))
            try:
                ctype = resolve_type(c["type"])
            except ValueError as exc:
                raise ScenarioError(f"{cpath}.type", "a type", str(exc)) from None
            cname = self.string(f"{cpath}.name", c["name"])
            if any(col.name == cname for col in columns):
                raise ScenarioError(f"{cpath}.name", "distinct column names", f"{cname!r} twice")
            columns.append(Column(cname, ctype, self.boolean(f"{cpath}.key", c.get("key", False))))
        ident = _IDENTITY[identity]
        if ident in ("d", "i") and not any(c.key for c in columns) and identity == "index":
            raise ScenarioError(f"{path}.columns", "key: true on the identity index's columns", "no key column")
        table = Table(schema, rel, oid, tuple(columns), ident, ())
        rows_data = d.get("rows") or []
        if not isinstance(rows_data, list):
            raise ScenarioError(f"{path}.rows", "a list of rows", _describe(rows_data))
        rows = tuple(self.row(f"{path}.rows[{i}]", table, r, full=False) for i, r in enumerate(rows_data))
        return Table(schema, rel, oid, tuple(columns), ident, rows)

    def row(self, path: str, table: Table, data: Any, *, full: bool) -> tuple[tuple[str, Any], ...]:
        if not isinstance(data, Mapping):
            raise ScenarioError(path, "a mapping of column to value", _describe(data))
        out = []
        for cname, value in data.items():
            col = table.column(str(cname))
            if col is None:
                raise ScenarioError(path, f"columns of {table.qualified_name} ({', '.join(c.name for c in table.columns)})",
                                    repr(cname))
            try:
                col.type.text(value)
            except (TypeValueError, ValueError) as exc:
                what, _, _found = str(exc).removeprefix("expected ").partition(", found ")
                raise ScenarioError(f"{path}.{cname}", f"a value of type {col.type.name} ({what})",
                                    _describe(value)) from None
            out.append((col.name, value))
        return tuple(out)

    def publications(self, data: Any) -> tuple[Publication, ...]:
        if not isinstance(data, Mapping):
            raise ScenarioError("publications", "a mapping of publication name to tables", _describe(data))
        pubs = []
        for pname, pdata in data.items():
            path = f"publications[{pname!r}]"
            actions = _ACTIONS
            if isinstance(pdata, Mapping):
                d = self.keys(path, pdata, ("tables", "all_tables", "publish"))
                if d.get("all_tables"):
                    tables = None
                else:
                    tables = tuple(self.table_name(f"{path}.tables", t) for t in (d.get("tables") or []))
                if "publish" in d:
                    items = d["publish"]
                    if isinstance(items, str):
                        items = [s.strip() for s in items.split(",") if s.strip()]
                    if not isinstance(items, list) or not set(items) <= _ACTIONS:
                        raise ScenarioError(f"{path}.publish", "actions among insert, update, delete, truncate",
                                            _describe(d["publish"]))
                    actions = frozenset(items)
            elif pdata == "all" or pdata == "all_tables":
                tables = None
            elif isinstance(pdata, list):
                tables = tuple(self.table_name(f"{path}[{i}]", t) for i, t in enumerate(pdata))
            else:
                raise ScenarioError(path, "a list of tables, 'all', or {tables, publish}", _describe(pdata))
            pubs.append(Publication(str(pname), tables, actions))
        return tuple(pubs)

    def slots(self, data: Any) -> tuple[Slot, ...]:
        if isinstance(data, Mapping):
            data = [{"name": k, **(v or {})} for k, v in data.items()]
        if not isinstance(data, list):
            raise ScenarioError("slots", "a list of slots", _describe(data))
        out = []
        for i, sd in enumerate(data):
            path = f"slots[{i}]"
            if isinstance(sd, str):
                sd = {"name": sd}
            d = self.keys(path, sd, ("name", "plugin", "confirmed_flush", "two_phase", "temporary"), ("name",))
            out.append(Slot(
                self.string(f"{path}.name", d["name"]),
                None if d.get("plugin", "pgoutput") is None else str(d.get("plugin", "pgoutput")),
                self.lsn(f"{path}.confirmed_flush", d["confirmed_flush"]) if "confirmed_flush" in d else None,
                self.boolean(f"{path}.two_phase", d.get("two_phase", False)),
                self.boolean(f"{path}.temporary", d.get("temporary", False)),
            ))
        return tuple(out)

    def keepalive(self, data: Any) -> KeepaliveConfig:
        d = self.keys("keepalive", data, ("interval", "reply_requested", "advance"))
        interval = d.get("interval", 10.0)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ScenarioError("keepalive.interval", "a number of seconds > 0", _describe(interval))
        return KeepaliveConfig(
            float(interval),
            self.boolean("keepalive.reply_requested", d.get("reply_requested", False)),
            self.integer("keepalive.advance", d.get("advance", 0)),
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
            return RowUpdate(t, self.row(f"{path}.key", self.tables[t], d["key"], full=False),
                             self.row(f"{path}.new", self.tables[t], d["new"], full=False),
                             tuple(str(c) for c in unchanged))
        if "delete" in data:
            d = self.keys(path, data, ("delete", "key"), ("key",))
            t = self.table_name(f"{path}.delete", d["delete"])
            return RowDelete(t, self.row(f"{path}.key", self.tables[t], d["key"], full=False))
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
