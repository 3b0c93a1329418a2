"""The system catalogs a client reads, materialised from the scenario and the server's state.

One table of facts: every catalog relation the SQL surface answers, its columns in the
server's order with their PostgreSQL type and the major that added (or dropped) each
(``src/include/catalog/pg_*.h`` and ``src/backend/catalog/system_views.sql`` of each
major). :func:`catalog_rows` fills them from a scenario's tables, the publications and the
slots; :mod:`._engine` loads them into the SQL engine.

Values are kept in their text form where PostgreSQL's is not a plain number or boolean
(``name``, ``"char"``, ``pg_lsn``, ``pg_node_tree``); ``int2vector`` and arrays are lists.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..lsn import format_lsn
from ..majors import MAJORS
from ..pgtypes import BUILTIN_TYPES, interval_text, timestamp_text, type_name
from ._catalog_layout import VIEWS, attnum, namespace_oid, relation_natts, relation_oid
from ._relsync import publication_tables
from .scenario import Scenario, Table
from .types import ColumnType

__all__ = ["CatalogColumn", "CATALOG", "catalog_relation", "engine_table", "SlotRow", "WalSenderRow", "catalog_rows", "columns_of", "format_type", "type_size", "TYPE_OIDS",
           "DATABASE_OID", "PUBLIC_OID", "PG_CATALOG_OID"]

#: OIDs of the result types the catalog uses (pg_type.dat).
TYPE_OIDS = {name: oid for name, (oid, _) in BUILTIN_TYPES.items()} | {
    "_name": 1003, "_text": 1009, "_int2": 1005, "pg_node_tree": 194, "regclass": 2205, "regtype": 2206,
    "regnamespace": 4089, "regproc": 24, "record": 2249,
    "void": 2278, "cid": 29, "_char": 1002,
}

_OTHER_TYPE_NAMES = {oid: name for name, oid in TYPE_OIDS.items() if type_name(oid) is None}

PG_CATALOG_OID, PUBLIC_OID, DATABASE_OID, BOOTSTRAP_SUPERUSER = 11, 2200, 16384, 10
#: The protocol's timestamps count from here (TimestampTz).
_PG_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.UTC)
#: OIDs of what the fake creates itself (indexes, publications, their rows) start here,
#: above any table OID a scenario is likely to use.
_GENERATED_OIDS = 90000


@dataclass(frozen=True, slots=True)
class CatalogColumn:
    name: str
    #: The PostgreSQL type, as pg_type names it (``name``, ``_name`` for name[]).
    type: str
    #: First major with the column, and the first without it (None: still there).
    since: int = 10
    until: int | None = None
    #: The type modifier a RowDescription reports (information_schema's yes_or_no is
    #: varchar(3)); -1: none.
    typmod: int = -1

    def exists(self, major: int) -> bool:
        return self.since <= major and (self.until is None or major < self.until)


def _cols(*specs: str | tuple[str, str, int] | tuple[str, str, int, int]) -> tuple[CatalogColumn, ...]:
    out = []
    for spec in specs:
        if isinstance(spec, str):
            name, typ = spec.split(":")
            out.append(CatalogColumn(name, typ))
        else:
            out.append(CatalogColumn(*spec))
    return tuple(out)


#: information_schema's domains (information_schema.sql), as the base types a
#: RowDescription names: sql_identifier is ``name`` from 12, ``varchar`` before;
#: yes_or_no is varchar(3), typmod 7.
_DOMAINS = {"cardinal_number": "int4", "character_data": "varchar", "yes_or_no": "varchar"}


def _info(*specs: str | tuple[str, str, int]) -> tuple[CatalogColumn, ...]:
    """An information_schema view's columns, typed by their domains."""
    out = []
    for spec in specs:
        name, domain, since = (*spec.split(":"), 10) if isinstance(spec, str) else spec
        if domain == "sql_identifier":
            out += [CatalogColumn(name, "varchar", since, 12), CatalogColumn(name, "name", max(since, 12))]
        else:
            out.append(CatalogColumn(name, _DOMAINS[domain], int(since), typmod=7 if domain == "yes_or_no" else -1))
    return tuple(out)


_ID, _CHAR, _YES, _NUM = "sql_identifier", "character_data", "yes_or_no", "cardinal_number"
#: The columns naming a constraint and its table (table_constraints, key_column_usage).
_CONSTRAINT = tuple(f"{name}:{_ID}" for name in ("constraint_catalog", "constraint_schema", "constraint_name",
                                                  "table_catalog", "table_schema", "table_name"))

#: The catalog relations answered, their columns in the server's order; information_schema's
#: views under their qualified names.
CATALOG: dict[str, tuple[CatalogColumn, ...]] = {
    "pg_namespace": _cols("oid:oid", "nspname:name", "nspowner:oid"),
    "pg_class": _cols(
        "oid:oid", "relname:name", "relnamespace:oid", "reltype:oid", "reloftype:oid", "relowner:oid",
        "relam:oid", "relfilenode:oid", "reltablespace:oid", "relpages:int4", "reltuples:float4",
        "relallvisible:int4", "reltoastrelid:oid", "relhasindex:bool", "relisshared:bool",
        "relpersistence:char", "relkind:char", "relnatts:int2", "relchecks:int2", "relhasrules:bool",
        "relhastriggers:bool", "relhassubclass:bool", "relrowsecurity:bool", "relforcerowsecurity:bool",
        "relispopulated:bool", "relreplident:char", "relispartition:bool", ("relrewrite", "oid", 11),
        "relfrozenxid:xid", "relminmxid:xid"),
    "pg_attribute": _cols(
        "attrelid:oid", "attname:name", "atttypid:oid", "attlen:int2", "attnum:int2", "atttypmod:int4",
        # attndims and attinhcount: int4 up to 15, int2 from 16 (pg_attribute.h)
        ("attndims", "int4", 10, 16), ("attndims", "int2", 16), "attbyval:bool", "attalign:char", "attstorage:char", "attnotnull:bool",
        "atthasdef:bool", ("atthasmissing", "bool", 11), "attidentity:char", ("attgenerated", "char", 12),
        "attisdropped:bool", "attislocal:bool", ("attinhcount", "int4", 10, 16),
        ("attinhcount", "int2", 16), "attcollation:oid"),
    "pg_type": _cols(
        "oid:oid", "typname:name", "typnamespace:oid", "typowner:oid", "typlen:int2", "typbyval:bool",
        "typtype:char", "typcategory:char", "typispreferred:bool", "typisdefined:bool", "typdelim:char",
        "typrelid:oid", ("typsubscript", "regproc", 14), "typelem:oid", "typarray:oid", "typinput:regproc",
        "typoutput:regproc", "typnotnull:bool",
        "typbasetype:oid", "typtypmod:int4", "typndims:int4", "typcollation:oid"),
    # Column defaults: none (a scenario's columns have none); pgjdbc's result metadata reads it.
    "pg_attrdef": _cols("oid:oid", "adrelid:oid", "adnum:int2", "adbin:pg_node_tree", ("adsrc", "text", 10, 12)),
    "pg_index": _cols(
        "indexrelid:oid", "indrelid:oid", "indnatts:int2", ("indnkeyatts", "int2", 11), "indisunique:bool",
        ("indnullsnotdistinct", "bool", 15), "indisprimary:bool", "indisexclusion:bool", "indimmediate:bool",
        "indisclustered:bool", "indisvalid:bool", "indcheckxmin:bool", "indisready:bool", "indislive:bool",
        "indisreplident:bool", "indkey:int2vector"),
    "pg_database": _cols("oid:oid", "datname:name", "datdba:oid", "encoding:int4"),
    # Roles: every user the scenario names or that is connected, each a superuser that may
    # log in and replicate (the fake reports is_superuser = on); no memberships.
    "pg_roles": _cols(
        "rolname:name", "rolsuper:bool", "rolinherit:bool", "rolcreaterole:bool", "rolcreatedb:bool",
        "rolcanlogin:bool", "rolreplication:bool", "rolconnlimit:int4", "rolpassword:text",
        "rolvaliduntil:timestamptz", "rolbypassrls:bool", "rolconfig:_text", "oid:oid"),
    "pg_auth_members": _cols(
        ("oid", "oid", 16), "roleid:oid", "member:oid", "grantor:oid", "admin_option:bool",
        ("inherit_option", "bool", 16), ("set_option", "bool", 16)),
    # Enum labels: those of the scenario's enum types (``enum:`` on a column's type).
    "pg_enum": _cols("oid:oid", "enumtypid:oid", "enumsortorder:float4", "enumlabel:name"),
    "pg_publication": _cols(
        "oid:oid", "pubname:name", "pubowner:oid", "puballtables:bool", "pubinsert:bool", "pubupdate:bool",
        "pubdelete:bool", ("pubtruncate", "bool", 11), ("pubviaroot", "bool", 13), ("pubgencols", "char", 18)),
    "pg_publication_rel": _cols(
        "oid:oid", "prpubid:oid", "prrelid:oid", ("prqual", "pg_node_tree", 15), ("prattrs", "int2vector", 15)),
    "pg_publication_namespace": _cols(("oid", "oid", 15), ("pnpubid", "oid", 15), ("pnnspid", "oid", 15)),
    "pg_publication_tables": _cols(
        "pubname:name", "schemaname:name", "tablename:name", ("attnames", "_name", 15), ("rowfilter", "text", 15)),
    "pg_replication_slots": _cols(
        "slot_name:name", "plugin:name", "slot_type:text", "datoid:oid", "database:name",
        ("temporary", "bool", 10), "active:bool", "active_pid:int4", "xmin:xid", "catalog_xmin:xid",
        "restart_lsn:pg_lsn", "confirmed_flush_lsn:pg_lsn", ("wal_status", "text", 13),
        ("safe_wal_size", "int8", 13), ("two_phase", "bool", 14), ("two_phase_at", "pg_lsn", 18),
        ("inactive_since", "timestamptz", 17), ("conflicting", "bool", 16),
        ("invalidation_reason", "text", 17), ("failover", "bool", 17), ("synced", "bool", 17)),
    # The settings (system_views.sql: pg_show_all_settings()), from walsender/_settings.py.
    "pg_settings": _cols(
        "name:text", "setting:text", "unit:text", "category:text", "short_desc:text", "extra_desc:text",
        "context:text", "vartype:text", "source:text", "min_val:text", "max_val:text", "enumvals:_text",
        "boot_val:text", "reset_val:text", "sourcefile:text", "sourceline:int4", "pending_restart:bool"),
    # The fake's own walsenders streaming now (system_views.sql: pg_stat_get_wal_senders).
    "pg_stat_replication": _cols(
        "pid:int4", "usesysid:oid", "usename:name", "application_name:text", "client_addr:inet",
        "client_hostname:text", "client_port:int4", "backend_start:timestamptz", "backend_xmin:xid", "state:text",
        "sent_lsn:pg_lsn", "write_lsn:pg_lsn", "flush_lsn:pg_lsn", "replay_lsn:pg_lsn", "write_lag:interval",
        "flush_lag:interval", "replay_lag:interval", "sync_priority:int4", "sync_state:text",
        ("reply_time", "timestamptz", 12)),
    # information_schema (information_schema.sql of each major): the scenario's tables only.
    "information_schema.tables": _info(
        f"table_catalog:{_ID}", f"table_schema:{_ID}", f"table_name:{_ID}", f"table_type:{_CHAR}",
        f"self_referencing_column_name:{_ID}", f"reference_generation:{_CHAR}", f"user_defined_type_catalog:{_ID}",
        f"user_defined_type_schema:{_ID}", f"user_defined_type_name:{_ID}", f"is_insertable_into:{_YES}",
        f"is_typed:{_YES}", f"commit_action:{_CHAR}"),
    "information_schema.columns": _info(
        f"table_catalog:{_ID}", f"table_schema:{_ID}", f"table_name:{_ID}", f"column_name:{_ID}",
        f"ordinal_position:{_NUM}", f"column_default:{_CHAR}", f"is_nullable:{_YES}", f"data_type:{_CHAR}",
        f"character_maximum_length:{_NUM}", f"character_octet_length:{_NUM}", f"numeric_precision:{_NUM}",
        f"numeric_precision_radix:{_NUM}", f"numeric_scale:{_NUM}", f"datetime_precision:{_NUM}",
        f"interval_type:{_CHAR}", f"interval_precision:{_NUM}", f"character_set_catalog:{_ID}",
        f"character_set_schema:{_ID}", f"character_set_name:{_ID}", f"collation_catalog:{_ID}",
        f"collation_schema:{_ID}", f"collation_name:{_ID}", f"domain_catalog:{_ID}", f"domain_schema:{_ID}",
        f"domain_name:{_ID}", f"udt_catalog:{_ID}", f"udt_schema:{_ID}", f"udt_name:{_ID}", f"scope_catalog:{_ID}",
        f"scope_schema:{_ID}", f"scope_name:{_ID}", f"maximum_cardinality:{_NUM}", f"dtd_identifier:{_ID}",
        f"is_self_referencing:{_YES}", f"is_identity:{_YES}", f"identity_generation:{_CHAR}",
        f"identity_start:{_CHAR}", f"identity_increment:{_CHAR}", f"identity_maximum:{_CHAR}",
        f"identity_minimum:{_CHAR}", f"identity_cycle:{_YES}", f"is_generated:{_CHAR}",
        f"generation_expression:{_CHAR}", f"is_updatable:{_YES}"),
    "information_schema.table_constraints": _info(
        *_CONSTRAINT, f"constraint_type:{_CHAR}", f"is_deferrable:{_YES}", f"initially_deferred:{_YES}",
        ("enforced", _YES, 11), ("nulls_distinct", _YES, 15)),
    "information_schema.key_column_usage": _info(
        *_CONSTRAINT, f"column_name:{_ID}", f"ordinal_position:{_NUM}", f"position_in_unique_constraint:{_NUM}"),
}

#: pg_get_publication_tables(): one text argument returning (relid, attrs, qual) in 15,
#: VARIADIC text[] returning (pubid, relid, attrs, qual) from 16 (pg_proc.dat).
PUBLICATION_TABLES_FUNCTION = _cols(
    ("pubid", "oid", 16), "relid:oid", ("attrs", "int2vector", 15), ("qual", "pg_node_tree", 15))


def columns_of(relation: str, major: int) -> tuple[CatalogColumn, ...]:
    return tuple(c for c in CATALOG[relation] if c.exists(major))


def catalog_relation(schema: str | None, name: str) -> str | None:
    """The :data:`CATALOG` key of a relation a query names, or None: pg_catalog's by name
    (the search path starts with pg_catalog), information_schema's qualified only."""
    if schema == "information_schema":
        key = f"information_schema.{name}"
        return key if key in CATALOG else None
    if schema in (None, "pg_catalog") and name in CATALOG:
        return name
    return None


def engine_table(relation: str) -> str:
    """The SQL engine's table holding a :data:`CATALOG` relation (a name without a dot)."""
    return relation.replace(".", "__")


# ------------------------------------------------------------------------------------------
# What the catalogs are made of
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WalSenderRow:
    """A connection streaming a logical slot: who, and the positions (sent: the walEnd sent;
    write/flush/apply: the client's last status update)."""

    pid: int
    user: str
    application_name: str | None
    client_addr: str
    sent_lsn: int | None
    write_lsn: int
    flush_lsn: int
    apply_lsn: int
    #: The client's TCP port (None: not over TCP) and when it connected (Unix seconds).
    client_port: int | None = None
    backend_start: float | None = None
    #: write_lag, flush_lag, replay_lag in seconds (None: NULL, none measured yet).
    lags: tuple[float | None, ...] = (None, None, None)
    #: The sendTime of the client's last status update (µs since 2000-01-01), or None.
    reply_time: int | None = None


@dataclass(frozen=True, slots=True)
class SlotRow:
    name: str
    plugin: str | None
    kind: str
    database: str | None
    temporary: bool
    active_pid: int | None
    restart_lsn: int
    confirmed_flush: int | None
    two_phase: bool
    failover: bool
    #: The invalidation cause, or None.
    invalidated: str | None = None
    #: When the slot was released (Unix seconds), None while active.
    inactive_since: float | None = None


# Sizes and categories of the built-in types (pg_type.dat: typlen, typbyval, typcategory).
_FIXED = {"bool": 1, "char": 1, "name": 64, "int8": 8, "int2": 2, "int4": 4, "oid": 4, "tid": 6, "xid": 4,
          "cid": 4, "float4": 4, "float8": 8, "money": 8, "macaddr": 6, "point": 16, "date": 4, "time": 8,
          "timestamp": 8, "timestamptz": 8, "interval": 16, "timetz": 12, "uuid": 16, "pg_lsn": 8,
          "regclass": 4, "regtype": 4, "regnamespace": 4, "regproc": 4, "void": 4}
_BYVAL = {"bool", "char", "int8", "int2", "int4", "oid", "xid", "cid", "float4", "float8", "money", "date",
          "time", "timestamp", "timestamptz", "pg_lsn"}
_CATEGORY = {"bool": "B", "int2": "N", "int4": "N", "int8": "N", "oid": "N", "float4": "N", "float8": "N",
             "numeric": "N", "money": "N", "text": "S", "varchar": "S", "bpchar": "S", "name": "S", "char": "Z",
             "date": "D", "time": "D", "timestamp": "D", "timestamptz": "D", "timetz": "D", "interval": "T",
             "inet": "I", "cidr": "I", "bit": "V", "varbit": "V", "point": "G", "int2vector": "A"}

#: format_type's names (format_type.c).
_SQL_NAMES = {"bool": "boolean", "int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
              "float8": "double precision", "varchar": "character varying", "bpchar": "character",
              "timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone",
              "time": "time without time zone", "timetz": "time with time zone", "varbit": "bit varying",
              "char": '"char"'}


def type_size(oid: int) -> int:
    """pg_type.typlen of a built-in type (RowDescription's data type size); -1 if variable."""
    name = type_name(oid) or _OTHER_TYPE_NAMES.get(oid)
    return _FIXED.get(name or "", -1)


def format_type(oid: int | None, typmod: int | None, user_types: Mapping[int, ColumnType] = {}) -> str | None:
    """``format_type(oid, typmod)`` as format_type.c writes it; '???' for an unknown OID."""
    if oid is None:
        return None
    mod = -1 if typmod is None else typmod
    name = type_name(oid) or _OTHER_TYPE_NAMES.get(oid)
    if name is None:
        user = user_types.get(oid)
        if user is None:
            return "???"
        base = user.name if user.namespace in ("public", "pg_catalog") else f"{user.namespace}.{user.name}"
        return base + ("[]" if user.is_array and not base.endswith("[]") else "")
    if name.startswith("_"):
        inner = format_type(BUILTIN_TYPES[name[1:]][0], mod, user_types)
        return f"{inner}[]"
    sql = _SQL_NAMES.get(name, name)
    if mod < 0:
        return sql
    if name in ("varchar", "bpchar"):
        return f"{sql}({mod - 4})"
    if name == "numeric":
        m = mod - 4
        return f"numeric({(m >> 16) & 0xFFFF},{m & 0xFFFF})"
    if name in ("timestamp", "timestamptz", "time", "timetz"):
        head, _, tail = sql.partition(" ")
        return f"{head}({mod}) {tail}"
    if name in ("bit", "varbit"):
        return f"{sql}({mod})"
    return sql


def _index_oid(t: Table) -> int:
    return _GENERATED_OIDS + 2 * (t.oid % 40000) + 1


def catalog_rows(scenario: Scenario, major: int, oids: Mapping[str, int],
                 slots: Iterable[SlotRow], users: Iterable[str] = (),
                 walsenders: Iterable[WalSenderRow] = (),
                 settings: Iterable[dict[str, Any]] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of every relation of :data:`CATALOG` for *major* (its columns only); the
    publications are the scenario's, *oids* their OIDs by name, *users* the connected ones,
    *walsenders* the connections streaming, *settings* pg_settings' rows."""
    pubs = list(scenario.publications)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in CATALOG}
    rows["pg_settings"] = list(settings)
    namespaces = {"pg_catalog": PG_CATALOG_OID, "public": PUBLIC_OID}
    for t in scenario.tables:
        namespaces.setdefault(t.schema, _GENERATED_OIDS - 1000 + len(namespaces))
    namespaces.setdefault("information_schema", namespace_oid("information_schema", major))
    for name, oid in namespaces.items():
        rows["pg_namespace"].append({"oid": oid, "nspname": name, "nspowner": BOOTSTRAP_SUPERUSER})
    rows["pg_database"].append({"oid": DATABASE_OID, "datname": scenario.server.database,
                                "datdba": BOOTSTRAP_SUPERUSER, "encoding": 6})
    for i, user in enumerate(sorted({*users, *scenario.auth.passwords})):
        rows["pg_roles"].append({
            "rolname": user, "rolsuper": True, "rolinherit": True, "rolcreaterole": True, "rolcreatedb": True,
            "rolcanlogin": True, "rolreplication": True, "rolconnlimit": -1, "rolpassword": "********",
            "rolvaliduntil": None, "rolbypassrls": True, "rolconfig": None,
            "oid": BOOTSTRAP_SUPERUSER if i == 0 else _GENERATED_OIDS - 2000 + i})

    user_types: dict[int, ColumnType] = {}
    for t in scenario.tables:
        has_key = bool(t.key_columns)
        rows["pg_class"].append(_pg_class(t.oid, t.name, namespaces[t.schema], "r", len(t.columns),
                                          t.replica_identity, has_key))
        for i, c in enumerate(t.columns):
            if c.type.is_user_type:
                user_types[c.type.oid] = c.type
            base = type_name(c.type.oid) or ("oid" if c.type.labels else "")  # an enum: 4 bytes by value
            rows["pg_attribute"].append({
                "attrelid": t.oid, "attname": c.name, "atttypid": c.type.oid,
                "attlen": _FIXED.get(base, -1), "attnum": i + 1, "atttypmod": c.type.typmod,
                "attndims": 1 if c.type.is_array else 0, "attbyval": base in _BYVAL,
                "attalign": "i", "attstorage": "p" if base in _FIXED else "x", "attnotnull": c.key,
                "atthasdef": False, "atthasmissing": False, "attidentity": "", "attgenerated": "",
                "attisdropped": False, "attislocal": True, "attinhcount": 0,
                "attcollation": 100 if base in ("text", "varchar", "bpchar") else 0})
        for num, (name, typ) in enumerate((("tableoid", "oid"), ("cmax", "cid"), ("xmax", "xid"),
                                           ("cmin", "cid"), ("xmin", "xid"), ("ctid", "tid"))):
            rows["pg_attribute"].append({
                "attrelid": t.oid, "attname": name, "atttypid": TYPE_OIDS[typ], "attlen": _FIXED[typ],
                "attnum": num - 6, "atttypmod": -1, "attndims": 0, "attbyval": typ != "tid",
                "attalign": "s" if typ == "tid" else "i", "attstorage": "p", "attnotnull": True,
                "atthasdef": False, "atthasmissing": False, "attidentity": "", "attgenerated": "",
                "attisdropped": False, "attislocal": True, "attinhcount": 0, "attcollation": 0})
        if has_key:
            idx = _index_oid(t)
            keys = [i + 1 for i, c in enumerate(t.columns) if c.key]
            rows["pg_class"].append(_pg_class(idx, _pkey_name(t), namespaces[t.schema], "i", len(keys),
                                              "n", False))
            rows["pg_index"].append({
                "indexrelid": idx, "indrelid": t.oid, "indnatts": len(keys), "indnkeyatts": len(keys),
                "indisunique": True, "indnullsnotdistinct": False, "indisprimary": True,
                "indisexclusion": False, "indimmediate": True, "indisclustered": False, "indisvalid": True,
                "indcheckxmin": False, "indisready": True, "indislive": True,
                "indisreplident": t.replica_identity == "i", "indkey": keys})

    _information_schema(rows, scenario, major, namespaces)
    _catalog_relations(rows, major)

    for name, (oid, array_oid) in BUILTIN_TYPES.items():
        rows["pg_type"].append(_pg_type(oid, name, _FIXED.get(name, -1), name in _BYVAL, "b",
                                        _CATEGORY.get(name, "U"), 0, array_oid))
        rows["pg_type"].append(_pg_type(array_oid, "_" + name, -1, False, "b", "A", oid, 0))
    for oid, ct in sorted(user_types.items()):
        # An enum is 4 bytes passed by value (pg_enum.c, typcache); its labels in pg_enum,
        # enumsortorder 1, 2, … in label order (EnumValuesCreate).
        rows["pg_type"].append(_pg_type(oid, ct.name, 4 if ct.labels else -1, bool(ct.labels),
                                        "e" if not ct.is_array else "b",
                                        "A" if ct.is_array else "E", ct.element.oid if ct.element else 0, 0,
                                        namespace=namespaces.get(ct.namespace, PUBLIC_OID)))
        for order, (label, label_oid) in enumerate(zip(ct.labels, ct.label_oids, strict=True), 1):
            rows["pg_enum"].append({"oid": label_oid, "enumtypid": oid, "enumsortorder": float(order),
                                    "enumlabel": label})

    by_name = {t.qualified_name: t for t in scenario.tables}
    for p in pubs:
        oid = oids[p.name]
        rows["pg_publication"].append({
            "oid": oid, "pubname": p.name, "pubowner": BOOTSTRAP_SUPERUSER, "puballtables": p.all_tables,
            "pubinsert": "insert" in p.actions, "pubupdate": "update" in p.actions,
            "pubdelete": "delete" in p.actions, "pubtruncate": "truncate" in p.actions,
            "pubviaroot": p.via_root, "pubgencols": "s" if p.generated_columns == "stored" else "n"})
        for i, name in enumerate(p.tables or ()):
            t = by_name.get(name)
            if t is None:
                continue
            entry = p.entry(name)
            attrs = None if entry is None or entry.columns is None else [
                i + 1 for i, c in enumerate(t.columns) if c.name in entry.columns]
            rows["pg_publication_rel"].append({
                "oid": oid + 1 + i, "prpubid": oid, "prrelid": t.oid, "prattrs": attrs,
                "prqual": entry.where.deparsed if entry is not None and entry.where is not None else None})
        for i, schema in enumerate(p.schemas):
            rows["pg_publication_namespace"].append({
                "oid": oid + 500 + i, "pnpubid": oid, "pnnspid": namespaces.get(schema, 0)})
        for pt in publication_tables(scenario, p, major):
            t = pt.table
            names = [c.name for i, c in enumerate(t.columns) if pt.attrs is None or i + 1 in pt.attrs]
            rows["pg_publication_tables"].append({
                "pubname": p.name, "schemaname": t.schema, "tablename": t.name, "attnames": names,
                "rowfilter": pt.where.deparsed if pt.where is not None else None})

    entry = MAJORS[major]
    for s in slots:
        # An invalidated slot (as real 15-18 show one): wal_status 'lost' whatever the cause
        # (slotfuncs.c pg_get_replication_slots: WALAVAIL_REMOVED), restart_lsn NULL once
        # its WAL is removed; conflicting per major; the cause (17+).
        lost = s.invalidated is not None
        rows["pg_replication_slots"].append({
            "slot_name": s.name, "plugin": s.plugin, "slot_type": s.kind,
            "datoid": DATABASE_OID if s.database else None, "database": s.database, "temporary": s.temporary,
            "active": s.active_pid is not None, "active_pid": s.active_pid, "xmin": None,
            "catalog_xmin": None, "restart_lsn": format_lsn(s.restart_lsn) if s.restart_lsn else None,
            "confirmed_flush_lsn": None if s.confirmed_flush is None else format_lsn(s.confirmed_flush),
            "wal_status": "lost" if lost else "reserved" if s.restart_lsn else None, "safe_wal_size": None,
            "two_phase": s.two_phase, "two_phase_at": None,
            "inactive_since": None if s.active_pid is not None or s.inactive_since is None
            else _dt.datetime.fromtimestamp(s.inactive_since, _dt.UTC).isoformat(),
            "conflicting": None if s.kind == "physical" else s.invalidated in entry.conflicting_causes,
            "invalidation_reason": s.invalidated, "failover": s.failover, "synced": False})

    role_oids = {r["rolname"]: r["oid"] for r in rows["pg_roles"]}
    for w in walsenders:
        # an invalid (0) position shows as NULL (walsender.c pg_stat_get_wal_senders)
        lsn = [format_lsn(p) if p else None for p in (w.sent_lsn, w.write_lsn, w.flush_lsn, w.apply_lsn)]
        # a client not over TCP: no address, port -1 (pgstatfuncs.c pg_stat_get_activity)
        tcp = w.client_port is not None
        lags = [None if lag is None else interval_text(round(lag * 1_000_000)) for lag in w.lags]
        rows["pg_stat_replication"].append({
            "pid": w.pid, "usesysid": role_oids.get(w.user), "usename": w.user,
            "application_name": w.application_name or "", "client_addr": w.client_addr if tcp else None,
            "client_hostname": None, "client_port": w.client_port if tcp else -1,
            "backend_start": None if w.backend_start is None
            else timestamp_text(_dt.datetime.fromtimestamp(w.backend_start, _dt.UTC), True),
            "backend_xmin": None, "state": "streaming",
            "sent_lsn": lsn[0], "write_lsn": lsn[1], "flush_lsn": lsn[2], "replay_lsn": lsn[3],
            "write_lag": lags[0], "flush_lag": lags[1], "replay_lag": lags[2], "sync_priority": 0,
            "sync_state": "async", "reply_time": None if w.reply_time is None
            else timestamp_text(_PG_EPOCH + _dt.timedelta(microseconds=w.reply_time), True)})

    return {name: [tuple(r.get(c.name) for c in columns_of(name, major)) for r in rs]
            for name, rs in rows.items()}


def _pkey_name(t: Table) -> str:
    """The primary key's name (index.c ChooseRelationName: ``<table>_pkey``)."""
    return f"{t.name}_pkey"


#: pg_encoding_max_length (wchar.c pg_wchar_table): the bytes of a character, by encoding;
#: the single-byte encodings (LATIN1, WIN1252 …) are 1.
_ENCODING_MAX_LENGTH = {"UTF8": 4, "EUC_JP": 3, "EUC_CN": 3, "EUC_KR": 3, "EUC_TW": 4, "EUC_JIS_2004": 3,
                        "MULE_INTERNAL": 4, "JOHAB": 3, "SJIS": 2, "SHIFT_JIS_2004": 2, "BIG5": 2, "GBK": 2,
                        "UHC": 2, "GB18030": 4}


def _column_facts(ct: ColumnType, encoding: str) -> dict[str, Any]:
    """information_schema.columns' type columns of a column (information_schema.sql:
    data_type, _pg_char_max_length, _pg_char_octet_length, _pg_numeric_precision,
    _pg_numeric_precision_radix, _pg_numeric_scale, _pg_datetime_precision)."""
    name = type_name(ct.oid) or ""
    mod = ct.typmod
    array = ct.is_array
    if array:
        data_type = "ARRAY"
    elif ct.is_user_type:
        data_type = "USER-DEFINED"
    else:
        data_type = format_type(ct.oid, -1)
    base = "" if array or ct.is_user_type else name
    chars = mod - 4 if base in ("varchar", "bpchar") and mod >= 0 else mod if base in ("bit", "varbit") and mod >= 0 \
        else None
    octets = None
    if base in ("text", "varchar", "bpchar"):
        octets = 1 << 30 if mod < 0 else (chars or 0) * _ENCODING_MAX_LENGTH.get(encoding.upper(), 1)
    precision = {"int2": 16, "int4": 32, "int8": 64, "float4": 24, "float8": 53}.get(base)
    scale = 0 if base in ("int2", "int4", "int8") else None
    if base == "numeric" and mod >= 0:
        precision, scale = ((mod - 4) >> 16) & 0xFFFF, (mod - 4) & 0xFFFF
    radix = 2 if base in ("int2", "int4", "int8", "float4", "float8") else 10 if base == "numeric" else None
    datetime = 0 if base == "date" else (6 if mod < 0 else mod) if base in ("time", "timestamp", "timestamptz",
                                                                              "timetz") \
        else (6 if mod < 0 or mod & 0xFFFF == 0xFFFF else mod & 0xFFFF) if base == "interval" else None
    if ct.is_user_type:
        udt_schema = ct.namespace
        udt_name = "_" + ct.name.removesuffix("[]") if array and not ct.name.startswith("_") else ct.name
    else:
        udt_schema, udt_name = "pg_catalog", name or "???"
    return {"data_type": data_type, "character_maximum_length": chars, "character_octet_length": octets,
            "numeric_precision": precision, "numeric_precision_radix": radix, "numeric_scale": scale,
            "datetime_precision": datetime, "udt_schema": udt_schema, "udt_name": udt_name}


def _information_schema(rows: dict[str, list[dict[str, Any]]], scenario: Scenario, major: int,
                        namespaces: Mapping[str, int]) -> None:
    """information_schema's tables, columns, table_constraints and key_column_usage of the
    scenario's tables (information_schema.sql), as their owner reads them."""
    db = scenario.server.database
    for t in scenario.tables:
        rows["information_schema.tables"].append({
            "table_catalog": db, "table_schema": t.schema, "table_name": t.name, "table_type": "BASE TABLE",
            "is_insertable_into": "YES", "is_typed": "NO"})
        where = {"table_catalog": db, "table_schema": t.schema, "table_name": t.name}
        for num, c in enumerate(t.columns, 1):
            rows["information_schema.columns"].append({
                **where, "column_name": c.name, "ordinal_position": num, "is_nullable": "NO" if c.key else "YES",
                **_column_facts(c.type, scenario.server.encoding), "udt_catalog": db, "dtd_identifier": str(num),
                "is_self_referencing": "NO", "is_identity": "NO", "identity_cycle": "NO",
                "is_generated": "NEVER" if c.generated is None else "ALWAYS",
                "generation_expression": None if c.generated is None else c.generated.deparsed,
                "is_updatable": "YES"})
        keys = [c for c in t.columns if c.key]
        constraint = {"constraint_catalog": db, "constraint_schema": t.schema, **where}
        if keys:
            rows["information_schema.table_constraints"].append({
                **constraint, "constraint_name": _pkey_name(t), "constraint_type": "PRIMARY KEY",
                "is_deferrable": "NO", "initially_deferred": "NO", "enforced": "YES", "nulls_distinct": None})
            for position, c in enumerate(keys, 1):
                rows["information_schema.key_column_usage"].append({
                    **constraint, "constraint_name": _pkey_name(t), "column_name": c.name,
                    "ordinal_position": position, "position_in_unique_constraint": None})
        for num, c in enumerate(t.columns, 1):
            if c.key:
                # NOT NULL: a pg_constraint row named <table>_<column>_not_null from 18;
                # before, made up from the namespace's and table's OIDs and attnum.
                name = (f"{t.name}_{c.name}_not_null" if major >= 18
                        else f"{namespaces[t.schema]}_{t.oid}_{num}_not_null")
                rows["information_schema.table_constraints"].append({
                    **constraint, "constraint_name": name, "constraint_type": "CHECK", "is_deferrable": "NO",
                    "initially_deferred": "NO", "enforced": "YES", "nulls_distinct": None})


#: Catalog columns that may be NULL: every view's, and these of tables (the others are NOT
#: NULL: fixed-width or BKI_FORCE_NOT_NULL, genbki.pl; pg_attrdef.adbin from 12).
_NULLABLE = {("pg_publication_rel", "prqual"), ("pg_publication_rel", "prattrs"), ("pg_attrdef", "adsrc")}
#: Catalogs shared by every database (pg_database.h, pg_auth_members.h: BKI_SHARED_RELATION).
_SHARED = {"pg_database", "pg_auth_members"}


def _catalog_relations(rows: dict[str, list[dict[str, Any]]], major: int) -> None:
    """pg_class and pg_attribute rows of the catalog relations answered, with their OIDs and
    their columns' numbers in *major* (so a client can look up the relation a result
    column's RowDescription names, as pgjdbc's ResultSetMetaData does)."""
    for rel in CATALOG:
        oid = relation_oid(rel, major)
        if not oid:
            continue
        view = rel in VIEWS
        schema, _, name = rel.rpartition(".")
        rows["pg_class"].append(_pg_class(oid, name, namespace_oid(schema or "pg_catalog", major), "v" if view else "r",
                                          relation_natts(rel, major), "n", not view, shared=rel in _SHARED))
        for c in columns_of(rel, major):
            num = attnum(rel, c.name, major)
            typ = c.type.removeprefix("_")
            rows["pg_attribute"].append({
                "attrelid": oid, "attname": c.name, "atttypid": TYPE_OIDS[c.type], "attlen": _FIXED.get(c.type, -1),
                "attnum": num, "atttypmod": c.typmod, "attndims": 1 if c.type.startswith("_") else 0,
                "attbyval": c.type in _BYVAL, "attalign": "i", "attstorage": "p" if c.type in _FIXED else "x",
                "attnotnull": num < 0 or not (view or (rel, c.name) in _NULLABLE
                                              or (rel, c.name) == ("pg_attrdef", "adbin") and major < 12),
                "atthasdef": False, "atthasmissing": False, "attidentity": "", "attgenerated": "",
                "attisdropped": False, "attislocal": True, "attinhcount": 0,
                "attcollation": 950 if typ == "name" else 100 if typ == "text" else 0})


def _pg_class(oid: int, name: str, nsp: int, kind: str, natts: int, replident: str, has_index: bool,
              shared: bool = False) -> dict[str, Any]:
    table = kind in ("r", "i")
    return {"oid": oid, "relname": name, "relnamespace": nsp, "reltype": 0, "reloftype": 0,
            "relowner": BOOTSTRAP_SUPERUSER, "relam": 403 if kind == "i" else 2 if table else 0,
            "relfilenode": oid if table else 0,
            "reltablespace": 0, "relpages": 0, "reltuples": -1.0, "relallvisible": 0, "reltoastrelid": 0,
            "relhasindex": has_index, "relisshared": shared, "relpersistence": "p", "relkind": kind,
            "relnatts": natts, "relchecks": 0, "relhasrules": False, "relhastriggers": False,
            "relhassubclass": False, "relrowsecurity": False, "relforcerowsecurity": False,
            "relispopulated": True, "relreplident": replident, "relispartition": False, "relrewrite": 0,
            "relfrozenxid": 730 if kind == "r" else 0, "relminmxid": 1 if kind == "r" else 0}


#: Built-in types whose input/output functions are named NAME_in/NAME_out (pg_type.dat);
#: the others' are NAMEin/NAMEout.
_UNDERSCORE_IO = {"date", "time", "timetz", "timestamp", "timestamptz", "interval", "numeric", "uuid", "json",
                  "jsonb", "pg_lsn", "inet", "cidr", "macaddr", "macaddr8", "bit", "varbit", "record", "void",
                  "cash", "xml"}


def _io_function(name: str, kind: str, category: str, direction: str) -> str:
    """pg_type.typinput / typoutput (pg_type.dat): array_in, enum_in, int4in, numeric_in …"""
    if category == "A":
        return f"array_{direction}"
    if kind == "e":
        return f"enum_{direction}"
    return f"{name}_{direction}" if name in _UNDERSCORE_IO else f"{name}{direction}"


def _pg_type(oid: int, name: str, length: int, byval: bool, kind: str, category: str, elem: int, array: int,
             namespace: int = PG_CATALOG_OID) -> dict[str, Any]:
    return {"oid": oid, "typname": name, "typnamespace": namespace, "typowner": BOOTSTRAP_SUPERUSER,
            "typlen": length, "typbyval": byval, "typtype": kind, "typcategory": category,
            "typispreferred": False, "typisdefined": True, "typdelim": ",", "typrelid": 0,
            "typsubscript": "array_subscript_handler" if category == "A" else "-", "typelem": elem,
            "typarray": array, "typinput": _io_function(name, kind, category, "in"),
            "typoutput": _io_function(name, kind, category, "out"), "typnotnull": False, "typbasetype": 0, "typtypmod": -1, "typndims": 0,
            "typcollation": 100 if name in ("text", "varchar", "bpchar") else 0}
