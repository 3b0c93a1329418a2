"""Where each catalog relation the SQL surface answers sits in a real server: its OID and the
attribute number of each answered column, per major (RowDescription's table OID and column
attribute number for a result column read from it: parse_target.c markTargetListOrigin).

Captured from real PostgreSQL 10-18 (``pg_class.oid`` of the relation in ``pg_catalog``,
``pg_attribute.attnum``). The tables' OIDs are fixed in their catalog headers
(``src/include/catalog/pg_class.h`` … ``CATALOG(pg_class,1259,…)``); a system view's is
assigned by initdb as it runs system_views.sql, the same for every install of one major.
information_schema (its schema and views) is created after initdb imports the system's
collations, so its OIDs differ between installs of one major: these are one install's
(PostgreSQL's npm builds); the attribute numbers hold for all.
Each fact is a step function of the major: ``((first major, value), …)``; a value of None:
the relation or column does not exist in that major. Up to 11 ``oid`` is a system column
(WITH OIDS), attribute number -2 (ObjectIdAttributeNumber, sysattr.h).
"""

from __future__ import annotations

__all__ = ["RELATION_OIDS", "RELATION_NATTS", "VIEWS", "ATTNUMS", "NAMESPACE_OIDS", "relation_oid", "relation_natts",
           "attnum", "namespace_oid"]

Steps = tuple[tuple[int, int | None], ...]

#: Catalog relation -> its OID by major.
RELATION_OIDS: dict[str, Steps] = {
    "pg_namespace": ((10, 2615),),
    "pg_class": ((10, 1259),),
    "pg_attribute": ((10, 1249),),
    "pg_type": ((10, 1247),),
    "pg_attrdef": ((10, 2604),),
    "pg_index": ((10, 2610),),
    "pg_database": ((10, 1262),),
    "pg_roles": ((10, 11527), (11, 11595), (12, 12089), (13, 12087), (14, 12217), (15, 12000)),
    "pg_auth_members": ((10, 1261),),
    "pg_enum": ((10, 3501),),
    "pg_publication": ((10, 6104),),
    "pg_publication_rel": ((10, 6106),),
    "pg_publication_namespace": ((10, None), (15, 6237)),
    "pg_publication_tables": ((10, 11573), (11, 11641), (12, 12139), (13, 12137), (14, 12285), (15, 12068)),
    "pg_replication_slots": ((10, 11699), (11, 11767), (12, 12268), (13, 12273), (14, 12466), (15, 12257), (18, 12261)),
    "pg_settings": ((10, 11600), (11, 11668), (12, 12166), (13, 12165), (14, 12321), (15, 12104)),
    "pg_stat_replication": ((10, 11686), (11, 11754), (12, 12252), (13, 12254), (14, 12440), (15, 12227), (18, 12231)),
    "information_schema.tables": ((10, 12821), (11, 12971), (12, 13277), (13, 13264), (14, 13547), (15, 13342), (16, 13345), (17, 13351), (18, 13361)),
    "information_schema.columns": ((10, 12715), (11, 12865), (12, 13171), (13, 13173), (14, 13417), (15, 13212), (16, 13215), (17, 13222), (18, 13232)),
    "information_schema.table_constraints": ((10, 12810), (11, 12960), (12, 13266), (13, 13253), (14, 13533), (15, 13328), (16, 13331), (17, 13337), (18, 13347)),
    "information_schema.key_column_usage": ((10, 12742), (11, 12892), (12, 13198), (13, 13200), (14, 13451), (15, 13246), (16, 13249), (17, 13255), (18, 13265)),
}

#: Catalog relation -> its number of columns (pg_class.relnatts) by major.
RELATION_NATTS: dict[str, Steps] = {
    "pg_namespace": ((10, 3), (12, 4)),
    "pg_class": ((10, 33), (18, 34)),
    "pg_attribute": ((10, 22), (11, 24), (12, 25), (14, 26), (18, 25)),
    "pg_type": ((10, 30), (12, 31), (14, 32)),
    "pg_attrdef": ((10, 4),),
    "pg_index": ((10, 19), (11, 20), (15, 21)),
    "pg_database": ((10, 13), (12, 14), (15, 16), (16, 17), (17, 18)),
    "pg_roles": ((10, 13),),
    "pg_auth_members": ((10, 4), (16, 7)),
    "pg_enum": ((10, 3), (12, 4)),
    "pg_publication": ((10, 6), (11, 7), (12, 8), (13, 9), (18, 10)),
    "pg_publication_rel": ((10, 2), (12, 3), (15, 5)),
    "pg_publication_namespace": ((10, None), (15, 3)),
    "pg_publication_tables": ((10, 3), (15, 5)),
    "pg_replication_slots": ((10, 12), (13, 14), (14, 15), (16, 16), (17, 20), (18, 21)),
    "pg_settings": ((10, 17),),
    "pg_stat_replication": ((10, 19), (12, 20)),
    "information_schema.tables": ((10, 12),),
    "information_schema.columns": ((10, 44),),
    "information_schema.table_constraints": ((10, 9), (11, 10), (15, 11)),
    "information_schema.key_column_usage": ((10, 9),),
}

#: A schema other than pg_catalog holding catalog relations -> its OID by major.
NAMESPACE_OIDS: dict[str, Steps] = {
    "information_schema": ((10, 12649), (11, 12794), (12, 13096), (13, 13099), (14, 13329), (15, 13124), (16, 13127), (17, 13134), (18, 13144)),
}

#: The relations that are views (system_views.sql); the others are tables.
VIEWS = frozenset(('pg_publication_tables', 'pg_replication_slots', 'pg_roles', 'pg_settings',
                   'pg_stat_replication', 'information_schema.tables', 'information_schema.columns', 'information_schema.table_constraints', 'information_schema.key_column_usage'))

#: Catalog relation -> column -> its attribute number by major.
ATTNUMS: dict[str, dict[str, Steps]] = {
    "pg_namespace": {
        "oid": ((10, -2), (12, 1)),
        "nspname": ((10, 1), (12, 2)),
        "nspowner": ((10, 2), (12, 3)),
    },
    "pg_class": {
        "oid": ((10, -2), (12, 1)),
        "relname": ((10, 1), (12, 2)),
        "relnamespace": ((10, 2), (12, 3)),
        "reltype": ((10, 3), (12, 4)),
        "reloftype": ((10, 4), (12, 5)),
        "relowner": ((10, 5), (12, 6)),
        "relam": ((10, 6), (12, 7)),
        "relfilenode": ((10, 7), (12, 8)),
        "reltablespace": ((10, 8), (12, 9)),
        "relpages": ((10, 9), (12, 10)),
        "reltuples": ((10, 10), (12, 11)),
        "relallvisible": ((10, 11), (12, 12)),
        "reltoastrelid": ((10, 12), (12, 13), (18, 14)),
        "relhasindex": ((10, 13), (12, 14), (18, 15)),
        "relisshared": ((10, 14), (12, 15), (18, 16)),
        "relpersistence": ((10, 15), (12, 16), (18, 17)),
        "relkind": ((10, 16), (12, 17), (18, 18)),
        "relnatts": ((10, 17), (12, 18), (18, 19)),
        "relchecks": ((10, 18), (12, 19), (18, 20)),
        "relhasrules": ((10, 21), (11, 20), (18, 21)),
        "relhastriggers": ((10, 22), (11, 21), (18, 22)),
        "relhassubclass": ((10, 23), (11, 22), (18, 23)),
        "relrowsecurity": ((10, 24), (11, 23), (18, 24)),
        "relforcerowsecurity": ((10, 25), (11, 24), (18, 25)),
        "relispopulated": ((10, 26), (11, 25), (18, 26)),
        "relreplident": ((10, 27), (11, 26), (18, 27)),
        "relispartition": ((10, 28), (11, 27), (18, 28)),
        "relrewrite": ((10, None), (11, 28), (18, 29)),
        "relfrozenxid": ((10, 29), (18, 30)),
        "relminmxid": ((10, 30), (18, 31)),
    },
    "pg_attribute": {
        "attrelid": ((10, 1),),
        "attname": ((10, 2),),
        "atttypid": ((10, 3),),
        "attlen": ((10, 5), (16, 4)),
        "attnum": ((10, 6), (16, 5)),
        "atttypmod": ((10, 9), (16, 7), (18, 6)),
        "attndims": ((10, 7), (16, 8), (18, 7)),
        "attbyval": ((10, 10), (16, 9), (18, 8)),
        "attalign": ((10, 12), (14, 11), (16, 10), (18, 9)),
        "attstorage": ((10, 11), (14, 12), (16, 11), (18, 10)),
        "attnotnull": ((10, 13), (14, 14), (16, 13), (18, 12)),
        "atthasdef": ((10, 14), (14, 15), (16, 14), (18, 13)),
        "atthasmissing": ((10, None), (11, 15), (14, 16), (16, 15), (18, 14)),
        "attidentity": ((10, 15), (11, 16), (14, 17), (16, 16), (18, 15)),
        "attgenerated": ((10, None), (12, 17), (14, 18), (16, 17), (18, 16)),
        "attisdropped": ((10, 16), (11, 17), (12, 18), (14, 19), (16, 18), (18, 17)),
        "attislocal": ((10, 17), (11, 18), (12, 19), (14, 20), (16, 19), (18, 18)),
        "attinhcount": ((10, 18), (11, 19), (12, 20), (14, 21), (16, 20), (18, 19)),
        "attcollation": ((10, 19), (11, 20), (12, 21), (14, 22), (17, 21), (18, 20)),
    },
    "pg_type": {
        "oid": ((10, -2), (12, 1)),
        "typname": ((10, 1), (12, 2)),
        "typnamespace": ((10, 2), (12, 3)),
        "typowner": ((10, 3), (12, 4)),
        "typlen": ((10, 4), (12, 5)),
        "typbyval": ((10, 5), (12, 6)),
        "typtype": ((10, 6), (12, 7)),
        "typcategory": ((10, 7), (12, 8)),
        "typispreferred": ((10, 8), (12, 9)),
        "typisdefined": ((10, 9), (12, 10)),
        "typdelim": ((10, 10), (12, 11)),
        "typrelid": ((10, 11), (12, 12)),
        "typsubscript": ((10, None), (14, 13)),
        "typelem": ((10, 12), (12, 13), (14, 14)),
        "typarray": ((10, 13), (12, 14), (14, 15)),
        "typinput": ((10, 14), (12, 15), (14, 16)),
        "typoutput": ((10, 15), (12, 16), (14, 17)),
        "typnotnull": ((10, 23), (12, 24), (14, 25)),
        "typbasetype": ((10, 24), (12, 25), (14, 26)),
        "typtypmod": ((10, 25), (12, 26), (14, 27)),
        "typndims": ((10, 26), (12, 27), (14, 28)),
        "typcollation": ((10, 27), (12, 28), (14, 29)),
    },
    "pg_attrdef": {
        "oid": ((10, -2), (12, 1)),
        "adrelid": ((10, 1), (12, 2)),
        "adnum": ((10, 2), (12, 3)),
        "adbin": ((10, 3), (12, 4)),
        "adsrc": ((10, 4), (12, None)),
    },
    "pg_index": {
        "indexrelid": ((10, 1),),
        "indrelid": ((10, 2),),
        "indnatts": ((10, 3),),
        "indnkeyatts": ((10, None), (11, 4)),
        "indisunique": ((10, 4), (11, 5)),
        "indnullsnotdistinct": ((10, None), (15, 6)),
        "indisprimary": ((10, 5), (11, 6), (15, 7)),
        "indisexclusion": ((10, 6), (11, 7), (15, 8)),
        "indimmediate": ((10, 7), (11, 8), (15, 9)),
        "indisclustered": ((10, 8), (11, 9), (15, 10)),
        "indisvalid": ((10, 9), (11, 10), (15, 11)),
        "indcheckxmin": ((10, 10), (11, 11), (15, 12)),
        "indisready": ((10, 11), (11, 12), (15, 13)),
        "indislive": ((10, 12), (11, 13), (15, 14)),
        "indisreplident": ((10, 13), (11, 14), (15, 15)),
        "indkey": ((10, 14), (11, 15), (15, 16)),
    },
    "pg_database": {
        "oid": ((10, -2), (12, 1)),
        "datname": ((10, 1), (12, 2)),
        "datdba": ((10, 2), (12, 3)),
        "encoding": ((10, 3), (12, 4)),
    },
    "pg_roles": {
        "rolname": ((10, 1),),
        "rolsuper": ((10, 2),),
        "rolinherit": ((10, 3),),
        "rolcreaterole": ((10, 4),),
        "rolcreatedb": ((10, 5),),
        "rolcanlogin": ((10, 6),),
        "rolreplication": ((10, 7),),
        "rolconnlimit": ((10, 8),),
        "rolpassword": ((10, 9),),
        "rolvaliduntil": ((10, 10),),
        "rolbypassrls": ((10, 11),),
        "rolconfig": ((10, 12),),
        "oid": ((10, 13),),
    },
    "pg_auth_members": {
        "oid": ((10, None), (16, 1)),
        "roleid": ((10, 1), (16, 2)),
        "member": ((10, 2), (16, 3)),
        "grantor": ((10, 3), (16, 4)),
        "admin_option": ((10, 4), (16, 5)),
        "inherit_option": ((10, None), (16, 6)),
        "set_option": ((10, None), (16, 7)),
    },
    "pg_enum": {
        "oid": ((10, -2), (12, 1)),
        "enumtypid": ((10, 1), (12, 2)),
        "enumsortorder": ((10, 2), (12, 3)),
        "enumlabel": ((10, 3), (12, 4)),
    },
    "pg_publication": {
        "oid": ((10, -2), (12, 1)),
        "pubname": ((10, 1), (12, 2)),
        "pubowner": ((10, 2), (12, 3)),
        "puballtables": ((10, 3), (12, 4)),
        "pubinsert": ((10, 4), (12, 5)),
        "pubupdate": ((10, 5), (12, 6)),
        "pubdelete": ((10, 6), (12, 7)),
        "pubtruncate": ((10, None), (11, 7), (12, 8)),
        "pubviaroot": ((10, None), (13, 9)),
        "pubgencols": ((10, None), (18, 10)),
    },
    "pg_publication_rel": {
        "oid": ((10, -2), (12, 1)),
        "prpubid": ((10, 1), (12, 2)),
        "prrelid": ((10, 2), (12, 3)),
        "prqual": ((10, None), (15, 4)),
        "prattrs": ((10, None), (15, 5)),
    },
    "pg_publication_namespace": {
        "oid": ((10, None), (15, 1)),
        "pnpubid": ((10, None), (15, 2)),
        "pnnspid": ((10, None), (15, 3)),
    },
    "pg_publication_tables": {
        "pubname": ((10, 1),),
        "schemaname": ((10, 2),),
        "tablename": ((10, 3),),
        "attnames": ((10, None), (15, 4)),
        "rowfilter": ((10, None), (15, 5)),
    },
    "pg_replication_slots": {
        "slot_name": ((10, 1),),
        "plugin": ((10, 2),),
        "slot_type": ((10, 3),),
        "datoid": ((10, 4),),
        "database": ((10, 5),),
        "temporary": ((10, 6),),
        "active": ((10, 7),),
        "active_pid": ((10, 8),),
        "xmin": ((10, 9),),
        "catalog_xmin": ((10, 10),),
        "restart_lsn": ((10, 11),),
        "confirmed_flush_lsn": ((10, 12),),
        "wal_status": ((10, None), (13, 13)),
        "safe_wal_size": ((10, None), (13, 14)),
        "two_phase": ((10, None), (14, 15)),
        "two_phase_at": ((10, None), (18, 16)),
        "inactive_since": ((10, None), (17, 16), (18, 17)),
        "conflicting": ((10, None), (16, 16), (17, 17), (18, 18)),
        "invalidation_reason": ((10, None), (17, 18), (18, 19)),
        "failover": ((10, None), (17, 19), (18, 20)),
        "synced": ((10, None), (17, 20), (18, 21)),
    },
    "pg_settings": {
        "name": ((10, 1),),
        "setting": ((10, 2),),
        "unit": ((10, 3),),
        "category": ((10, 4),),
        "short_desc": ((10, 5),),
        "extra_desc": ((10, 6),),
        "context": ((10, 7),),
        "vartype": ((10, 8),),
        "source": ((10, 9),),
        "min_val": ((10, 10),),
        "max_val": ((10, 11),),
        "enumvals": ((10, 12),),
        "boot_val": ((10, 13),),
        "reset_val": ((10, 14),),
        "sourcefile": ((10, 15),),
        "sourceline": ((10, 16),),
        "pending_restart": ((10, 17),),
    },
    "pg_stat_replication": {
        "pid": ((10, 1),),
        "usesysid": ((10, 2),),
        "usename": ((10, 3),),
        "application_name": ((10, 4),),
        "client_addr": ((10, 5),),
        "client_hostname": ((10, 6),),
        "client_port": ((10, 7),),
        "backend_start": ((10, 8),),
        "backend_xmin": ((10, 9),),
        "state": ((10, 10),),
        "sent_lsn": ((10, 11),),
        "write_lsn": ((10, 12),),
        "flush_lsn": ((10, 13),),
        "replay_lsn": ((10, 14),),
        "write_lag": ((10, 15),),
        "flush_lag": ((10, 16),),
        "replay_lag": ((10, 17),),
        "sync_priority": ((10, 18),),
        "sync_state": ((10, 19),),
        "reply_time": ((10, None), (12, 20)),
    },
    "information_schema.tables": {
        "table_catalog": ((10, 1),),
        "table_schema": ((10, 2),),
        "table_name": ((10, 3),),
        "table_type": ((10, 4),),
        "self_referencing_column_name": ((10, 5),),
        "reference_generation": ((10, 6),),
        "user_defined_type_catalog": ((10, 7),),
        "user_defined_type_schema": ((10, 8),),
        "user_defined_type_name": ((10, 9),),
        "is_insertable_into": ((10, 10),),
        "is_typed": ((10, 11),),
        "commit_action": ((10, 12),),
    },
    "information_schema.columns": {
        "table_catalog": ((10, 1),),
        "table_schema": ((10, 2),),
        "table_name": ((10, 3),),
        "column_name": ((10, 4),),
        "ordinal_position": ((10, 5),),
        "column_default": ((10, 6),),
        "is_nullable": ((10, 7),),
        "data_type": ((10, 8),),
        "character_maximum_length": ((10, 9),),
        "character_octet_length": ((10, 10),),
        "numeric_precision": ((10, 11),),
        "numeric_precision_radix": ((10, 12),),
        "numeric_scale": ((10, 13),),
        "datetime_precision": ((10, 14),),
        "interval_type": ((10, 15),),
        "interval_precision": ((10, 16),),
        "character_set_catalog": ((10, 17),),
        "character_set_schema": ((10, 18),),
        "character_set_name": ((10, 19),),
        "collation_catalog": ((10, 20),),
        "collation_schema": ((10, 21),),
        "collation_name": ((10, 22),),
        "domain_catalog": ((10, 23),),
        "domain_schema": ((10, 24),),
        "domain_name": ((10, 25),),
        "udt_catalog": ((10, 26),),
        "udt_schema": ((10, 27),),
        "udt_name": ((10, 28),),
        "scope_catalog": ((10, 29),),
        "scope_schema": ((10, 30),),
        "scope_name": ((10, 31),),
        "maximum_cardinality": ((10, 32),),
        "dtd_identifier": ((10, 33),),
        "is_self_referencing": ((10, 34),),
        "is_identity": ((10, 35),),
        "identity_generation": ((10, 36),),
        "identity_start": ((10, 37),),
        "identity_increment": ((10, 38),),
        "identity_maximum": ((10, 39),),
        "identity_minimum": ((10, 40),),
        "identity_cycle": ((10, 41),),
        "is_generated": ((10, 42),),
        "generation_expression": ((10, 43),),
        "is_updatable": ((10, 44),),
    },
    "information_schema.table_constraints": {
        "constraint_catalog": ((10, 1),),
        "constraint_schema": ((10, 2),),
        "constraint_name": ((10, 3),),
        "table_catalog": ((10, 4),),
        "table_schema": ((10, 5),),
        "table_name": ((10, 6),),
        "constraint_type": ((10, 7),),
        "is_deferrable": ((10, 8),),
        "initially_deferred": ((10, 9),),
        "enforced": ((10, None), (11, 10)),
        "nulls_distinct": ((10, None), (15, 11)),
    },
    "information_schema.key_column_usage": {
        "constraint_catalog": ((10, 1),),
        "constraint_schema": ((10, 2),),
        "constraint_name": ((10, 3),),
        "table_catalog": ((10, 4),),
        "table_schema": ((10, 5),),
        "table_name": ((10, 6),),
        "column_name": ((10, 7),),
        "ordinal_position": ((10, 8),),
        "position_in_unique_constraint": ((10, 9),),
    },
}


def _at(steps: Steps, major: int) -> int | None:
    value = None
    for since, v in steps:
        if major < since:
            break
        value = v
    return value


def relation_oid(relation: str, major: int) -> int:
    """The OID of a catalog relation in *major* (0 if it has none there)."""
    return _at(RELATION_OIDS.get(relation, ()), major) or 0


def attnum(relation: str, column: str, major: int) -> int:
    """The attribute number of a catalog relation's column in *major* (0 if none)."""
    return _at(ATTNUMS.get(relation, {}).get(column, ()), major) or 0


def relation_natts(relation: str, major: int) -> int:
    """pg_class.relnatts of a catalog relation in *major*."""
    return _at(RELATION_NATTS.get(relation, ()), major) or 0


def namespace_oid(schema: str, major: int) -> int:
    """The OID of pg_catalog or of another schema of :data:`NAMESPACE_OIDS` in *major*."""
    return 11 if schema == "pg_catalog" else _at(NAMESPACE_OIDS.get(schema, ()), major) or 0
