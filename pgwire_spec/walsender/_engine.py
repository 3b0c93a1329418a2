"""The SQL surface over the scenario's catalog: PostgreSQL's parser, an embedded SQL engine.

Statements are parsed by PostgreSQL's own parser (pglast, libpg_query), so what a real
server rejects as a syntax error is rejected here with its message. Then:

- ``SELECT`` runs in DuckDB, in process, over the catalogs of :mod:`._catalog` materialised
  from the scenario, the publications and the slots. The parse tree is rewritten before it
  runs: catalog relations to the materialised tables, the PostgreSQL-only functions
  (``format_type``, ``pg_get_expr``, ``current_setting``, ``pg_current_wal_lsn`` …) to the
  engine's own, ``reg*`` casts resolved, and the slot functions with side effects
  (``pg_create_logical_replication_slot``, ``pg_drop_replication_slot``,
  ``pg_logical_slot_get_binary_changes`` …) run on the server first, their rows handed to
  the query. Result columns are named and typed as PostgreSQL names and types them
  (FigureColname in parse_target.c; the catalog column's type, the function's result type),
  values written in PostgreSQL's text form.
- Publication DDL (``CREATE``/``ALTER``/``DROP PUBLICATION``, sql-createpublication.html)
  changes the server's publications: the next stream publishes what they say.
- Anything else is a clear 0A000 naming the statement.

DuckDB is opened on the first statement the engine answers (the exact-shape answers of
:mod:`._sql` need none of it).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pglast import ast, parse_sql, visitors
from pglast.enums import AlterPublicationAction, ObjectType, PublicationObjSpecType
from pglast.parser import ParseError, scan
from pglast.stream import RawStream

from .. import majors
from ..lsn import format_lsn, parse_lsn
from ..pgoutput import messages as m
from ..pgtypes import type_name
from ..replication.commands import downcase_identifier, truncate_identifier
from ._base import SlotState
from ._catalog import (
    CATALOG,
    PUBLICATION_TABLES_FUNCTION,
    TYPE_OIDS,
    CatalogColumn,
    SlotRow,
    WalSenderRow,
    catalog_relation,
    catalog_rows,
    columns_of,
    engine_table,
    format_type,
)
from ._catalog_layout import attnum, relation_oid
from ._relsync import publication_tables
from ._render import Write
from ._settings import settings_rows
from ._sql import DEFAULT_FIELD, Answer, Command, FieldInfo, Result, setting
from .personas import ServerError
from .publications import ACTIONS, ExpressionError, Publication, PublishedTable, parse_expression
from .scenario import Table
from .types import ColumnType

if TYPE_CHECKING:
    from .core import Connection, ServerState

__all__ = ["SqlEngine", "unsupported", "parse_one", "parameter_types", "bind_parameters", "returns_rows",
           "slot_function_called"]

_SCHEMA = "pgw"

#: PostgreSQL type -> the engine's column type.
_ENGINE_TYPES = {"bool": "BOOLEAN", "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "oid": "BIGINT",
                 "xid": "BIGINT", "cid": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE", "int2vector": "SMALLINT[]",
                 "_name": "VARCHAR[]", "_text": "VARCHAR[]", "_int2": "SMALLINT[]", "bytea": "BLOB"}

#: Casts to PostgreSQL types the engine spells otherwise.
_CAST_TYPES = {"name": "VARCHAR", "text": "VARCHAR", "char": "VARCHAR", "bpchar": "VARCHAR", "varchar": "VARCHAR",
               "oid": "BIGINT", "xid": "BIGINT", "pg_lsn": "VARCHAR", "regproc": "VARCHAR",
               "pg_node_tree": "VARCHAR", "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]"}

#: The engine's result types -> PostgreSQL's, for expressions the parse tree does not type.
_FROM_ENGINE = {"VARCHAR": 25, "INTEGER": 23, "BIGINT": 20, "SMALLINT": 21, "BOOLEAN": 16, "DOUBLE": 701,
                "FLOAT": 700, "HUGEINT": 1700, "UBIGINT": 1700, "UINTEGER": 20, "BLOB": 17, "NULL": 25,
                "SMALLINT[]": 1005, "INTEGER[]": 1007, "BIGINT[]": 1016, "VARCHAR[]": 1009, "BOOLEAN[]": 1000,
                "DATE": 1082, "TIMESTAMP": 1114, "TIMESTAMP WITH TIME ZONE": 1184}


@dataclass(frozen=True, slots=True)
class _Function:
    """A PostgreSQL function the engine provides: its result type (pg_proc.dat) and how
    many arguments it takes."""

    result: str
    arities: tuple[int, ...]
    since: int = 10


#: The PostgreSQL-only functions provided (scalar; evaluated by the engine).
_FUNCTIONS = {
    "format_type": _Function("text", (2,)),
    "pg_get_expr": _Function("text", (2, 3)),
    "current_setting": _Function("text", (1, 2)),
    "version": _Function("text", (0,)),
    "current_database": _Function("name", (0,)),
    "current_schema": _Function("name", (0,)),
    "pg_is_in_recovery": _Function("bool", (0,)),
    "pg_current_wal_lsn": _Function("pg_lsn", (0,)),
    "pg_current_wal_flush_lsn": _Function("pg_lsn", (0,)),
    "pg_current_wal_insert_lsn": _Function("pg_lsn", (0,)),
    "pg_backend_pid": _Function("int4", (0,)),
    "to_regclass": _Function("regclass", (1,)),
    "pg_encoding_to_char": _Function("name", (1,)),
    "obj_description": _Function("text", (1, 2)),
    "pg_get_publication_tables": _Function("record", (1,)),
    # pgjdbc's type lookups (TypeInfoCache: the search path's schemas, in order)
    "current_schemas": _Function("_name", (1,)),
    "array_upper": _Function("int4", (2,)),
}

#: Functions with side effects on the server (slots), run before the query; result columns.
_SLOT_FUNCTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "pg_create_logical_replication_slot": (("slot_name", "name"), ("lsn", "pg_lsn")),
    "pg_create_physical_replication_slot": (("slot_name", "name"), ("lsn", "pg_lsn")),
    "pg_drop_replication_slot": (("pg_drop_replication_slot", "void"),),
    "pg_replication_slot_advance": (("slot_name", "name"), ("end_lsn", "pg_lsn")),
    "pg_logical_slot_get_binary_changes": (("lsn", "pg_lsn"), ("xid", "xid"), ("data", "bytea")),
    "pg_logical_slot_peek_binary_changes": (("lsn", "pg_lsn"), ("xid", "xid"), ("data", "bytea")),
    "pg_logical_slot_get_changes": (("lsn", "pg_lsn"), ("xid", "xid"), ("data", "text")),
    "pg_logical_slot_peek_changes": (("lsn", "pg_lsn"), ("xid", "xid"), ("data", "text")),
}

#: Casts to reg* types: the OID of a named object, written back as its name.
_REG_TYPES = {"regclass", "regtype", "regnamespace"}

_SETTINGS_NAMES = {"current_user", "session_user", "user", "current_role"}


def truncated_identifiers(sql: str) -> list[tuple[str, str]]:
    """The identifiers of *sql* longer than NAMEDATALEN-1 bytes: (as written, lower-cased
    unless quoted; as cut). scan.l cuts each with a NOTICE 42622 (scansup.c
    truncate_identifier(…, warn=true)); a text the scanner refuses has none here (its
    syntax error is the parser's)."""
    if len(sql) < 16:  # 64 bytes are at least 16 characters
        return []
    try:
        tokens = scan(sql)
    except (ParseError, ValueError):  # ValueError: text UTF-8 cannot hold (a lone surrogate)
        return []
    out = []
    for tok in tokens:
        if tok.name != "IDENT" or tok.end - tok.start < 15:  # positions: characters, end included
            continue
        raw = sql[tok.start:tok.end + 1]
        # quoted: "" is a quote; unquoted: ASCII letters lower-cased (downcase_identifier)
        name = raw[1:-1].replace('""', '"') if raw.startswith('"') else downcase_identifier(raw)
        cut = truncate_identifier(name)
        if cut != name:
            out.append((name, cut))
    return out


def _no_checkpoint() -> None:
    pass


#: Lists of more constants than this are stood in for while a tree is rewritten and printed.
_CONDENSE_OVER = 64


def _constant_text(node: Any) -> str | None:
    """A constant as pglast's RawStream prints it (printers/dml.py a_const, integer, float,
    string, boolean); None for anything else."""
    if not isinstance(node, ast.A_Const):
        return None
    if node.isnull:
        return "NULL"
    v = node.val
    if isinstance(v, ast.Integer):
        return str(v.ival)
    if isinstance(v, ast.Float):
        return str(v.fval)
    if isinstance(v, ast.String):
        return "'" + v.sval.replace("'", "''") + "'"
    if isinstance(v, ast.Boolean):
        return "TRUE" if v.boolval else "FALSE"
    return None


class _Condensed:
    """The long lists of constants of a parse tree (``IN (<50,000 values>)``), each stood in
    for by one marker constant while the tree is rewritten and printed: pglast's visitor and
    printer cost ~40 µs a node, and nothing in such a list needs rewriting. ``expand``
    puts them back in the printed text."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self._tag = secrets.token_hex(8)

    def stand_in(self, values: Sequence[str]) -> Any:
        marker = f"pgw-list-{self._tag}-{len(self.texts)}"
        self.texts["'" + marker + "'"] = ", ".join(values)
        return ast.A_Const(isnull=False, val=ast.String(sval=marker))

    def expand(self, sql: str) -> str:
        for marker, text in self.texts.items():
            sql = sql.replace(marker, text, 1)
        return sql


def _condense(tree: Any) -> _Condensed:
    """Stand in for *tree*'s long lists of constants (in place); see :class:`_Condensed`."""
    out = _Condensed()
    stack = [tree]
    while stack:
        node = stack.pop()
        for name in node:
            value = getattr(node, name)
            if isinstance(value, ast.Node):
                stack.append(value)
            elif isinstance(value, tuple):
                texts = [_constant_text(v) for v in value] if len(value) > _CONDENSE_OVER else [None]
                if all(t is not None for t in texts):
                    setattr(node, name, (out.stand_in(texts),))  # type: ignore[arg-type]
                    continue
                for item in value:
                    if isinstance(item, ast.Node):
                        stack.append(item)
                    elif isinstance(item, tuple):  # SelectStmt.valuesLists: a tuple of tuples
                        stack.extend(v for v in item if isinstance(v, ast.Node))
    return out


def unsupported(sql: str) -> ServerError:
    """The 0A000 for a statement outside the surface, naming it."""
    words = re.findall(r"[A-Za-z_]+", sql.strip())[:2]
    name = " ".join(words).upper() or "this statement"
    return ServerError("0A000", f"the fake walsender does not run {name}",
                       detail=f"Statement: {sql.strip()[:200]}",
                       hint="It answers SELECT on the system catalogs, SHOW, the slot functions and publication "
                            "DDL; see the README's SQL surface.")


def _names(nodes: Sequence[Any] | None) -> list[str]:
    return [n.sval for n in nodes or () if isinstance(n, ast.String)]


def _const(node: Any) -> Any:
    """The value of a constant argument (a literal, a cast literal, NULL)."""
    if isinstance(node, ast.TypeCast):
        return _const(node.arg)
    if isinstance(node, ast.A_Const):
        if node.isnull:
            return None
        v = node.val
        if isinstance(v, ast.Integer):
            return v.ival
        if isinstance(v, ast.Float):
            return Decimal(v.fval)
        if isinstance(v, ast.Boolean):
            return v.boolval
        if isinstance(v, ast.String):
            return v.sval
    if isinstance(node, ast.A_ArrayExpr):
        return [_const(e) for e in node.elements or ()]
    if isinstance(node, ast.String):  # an option's value (DefElem)
        return node.sval
    if isinstance(node, (ast.Integer, ast.Boolean)):
        return node.ival if isinstance(node, ast.Integer) else node.boolval
    raise ServerError("0A000", "the fake walsender runs the slot functions with constant arguments only")


def _bool(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    text = str(value).lower()
    if text in ("t", "true", "on", "yes", "1", "y"):
        return True
    if text in ("f", "false", "off", "no", "0", "n"):
        return False
    raise ServerError("22P02", f'invalid input syntax for type boolean: "{value}"')


# ------------------------------------------------------------------------------------------
# Text output (the types' output functions)
# ------------------------------------------------------------------------------------------


def _array_item(v: Any) -> str:
    if v is None:
        return "NULL"
    s = _text(v, 0)
    if s == "" or re.search(r'[{},"\\\s]', s) or s.upper() == "NULL":
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def _text(v: Any, oid: int) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "t" if v else "f"
    if oid in (22, 30):  # int2vector, oidvector
        return " ".join(str(x) for x in v)
    if isinstance(v, (list, tuple)):
        return "{" + ",".join(_array_item(x) for x in v) + "}"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    if isinstance(v, float):
        return repr(v).removesuffix(".0") if v == int(v) and abs(v) < 1e15 else repr(v)
    return str(v)


# ------------------------------------------------------------------------------------------
# Naming and typing result columns as PostgreSQL does
# ------------------------------------------------------------------------------------------


def _column_name(node: Any) -> str | None:
    """FigureColnameInternal (parse_target.c)."""
    if isinstance(node, ast.ColumnRef):
        last = node.fields[-1]
        return last.sval if isinstance(last, ast.String) else None
    if isinstance(node, ast.A_Indirection):
        for ind in reversed(node.indirection or ()):
            if isinstance(ind, ast.String):
                return ind.sval
        return _column_name(node.arg)
    if isinstance(node, ast.FuncCall):
        return node.funcname[-1].sval
    if isinstance(node, ast.TypeCast):
        inner = _column_name(node.arg)
        return inner if inner is not None else node.typeName.names[-1].sval
    if isinstance(node, ast.CaseExpr):
        return _column_name(node.defresult) or "case"
    if isinstance(node, ast.CoalesceExpr):
        return "coalesce"
    if isinstance(node, ast.A_ArrayExpr):
        return "array"
    if isinstance(node, ast.RowExpr):
        return "row"
    if isinstance(node, ast.SQLValueFunction):
        return node.op.name.removeprefix("SVFOP_").lower().removesuffix("_n")
    if isinstance(node, ast.SubLink):
        if node.subLinkType.name == "EXISTS_SUBLINK":
            return "exists"
        if node.subLinkType.name == "ARRAY_SUBLINK":
            return "array"
        if node.subLinkType.name == "EXPR_SUBLINK" and isinstance(node.subselect, ast.SelectStmt):
            targets = node.subselect.targetList or ()
            if targets:
                return targets[0].name or _column_name(targets[0].val)
    return None


def _type_of_name(type_name: ast.TypeName) -> int | None:
    name = type_name.names[-1].sval
    name = {"int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "boolean": "bool",
            "float": "float8", "real": "float4", "bpchar": "bpchar"}.get(name, name)
    oid = TYPE_OIDS.get(name)
    if oid is None:
        return None
    if type_name.arrayBounds:
        from_array = {v: k for k, v in TYPE_OIDS.items()}
        return TYPE_OIDS.get("_" + from_array.get(oid, ""), None)
    return oid


class _Scope:
    """The relations of a FROM clause, by the name a column reference qualifies them with."""

    def __init__(self, major: int, tables: Sequence[Table] = (), ctes: Mapping[str, Any] | None = None) -> None:
        self.major = major
        self.tables = tables
        #: the WITH queries in scope by name (``CommonTableExpr``), the innermost's
        self.ctes: Mapping[str, Any] = ctes or {}
        self.relations: list[tuple[str, tuple[CatalogColumn, ...]]] = []
        #: (relation, column) -> what RowDescription says of it: the type modifier of a
        #: scenario table's column or a catalog column's, the relation's OID and the column's number for a table's
        #: or a catalog relation's, a subquery's column's own (markTargetListOrigin).
        self.fields: dict[tuple[str, str], FieldInfo] = {}
        #: (relation, column) -> the type OID of a scenario column of a user type (enum …).
        self.user_types: dict[tuple[str, str], int] = {}
        #: Columns of JOIN … USING that are the join's own: an unqualified reference to one
        #: has no origin.
        self.merged: set[str] = set()

    def add_from(self, items: Sequence[Any] | None) -> None:
        for item in items or ():
            if isinstance(item, ast.RangeVar) and item.schemaname is None and item.relname in self.ctes:
                # a WITH query: its columns as a subquery's, renamed by its column list
                # (parse_relation.c addRangeTableEntryForCTE; markTargetListOrigin follows
                # a non-recursive one into its query)
                cte = self.ctes[item.relname]
                inner = {k: v for k, v in self.ctes.items() if k != item.relname}
                if isinstance(cte.ctequery, ast.SelectStmt):
                    self._add_query(item.alias.aliasname if item.alias else item.relname, cte.ctequery,
                                    _names(cte.aliascolnames), inner)
            elif isinstance(item, ast.RangeVar):
                name = item.alias.aliasname if item.alias else item.relname
                relation = catalog_relation(item.schemaname, item.relname)
                if relation is not None:
                    columns = columns_of(relation, self.major)
                    self.relations.append((name, columns))
                    oid = relation_oid(relation, self.major)
                    self.fields.update(((name, c.name), FieldInfo(c.typmod, oid, attnum(relation, c.name, self.major)))
                                       for c in columns)
                elif (table := _user_table(self.tables, item)) is not None:
                    self.relations.append((name, tuple(CatalogColumn(c.name, type_name(c.type.oid) or "text")
                                                       for c in table.columns)))
                    for i, c in enumerate(table.columns):
                        self.fields[name, c.name] = FieldInfo(c.type.typmod, table.oid, i + 1,
                                                              _user_type_size(c.type))
                        if c.type.is_user_type:
                            self.user_types[name, c.name] = c.type.oid
            elif isinstance(item, ast.JoinExpr):
                self.add_from([item.larg, item.rarg])
                # A JOIN USING column is the left input's (the right's for RIGHT JOIN) from 13;
                # a FULL JOIN's, and every one before 13, is the join's own (parse_relation.c,
                # buildMergedJoinVar; markTargetListOrigin reports no join column).
                if item.jointype.name == "JOIN_FULL" or self.major < 13:
                    self.merged.update(_names(item.usingClause))
            elif isinstance(item, ast.RangeSubselect) and item.alias and isinstance(item.subquery, ast.SelectStmt):
                # a subquery in FROM: its result columns, typed as the query would type them,
                # with their origins (markTargetListOrigin copies them up)
                self._add_query(item.alias.aliasname, item.subquery, _names(item.alias.colnames), self.ctes)
            elif isinstance(item, ast.RangeFunction):
                call = item.functions[0][0] if item.functions and item.functions[0] else None
                if isinstance(call, ast.FuncCall):
                    fname = call.funcname[-1].sval
                    alias = item.alias.aliasname if item.alias else fname
                    if fname == "pg_get_publication_tables":
                        cols = tuple(c for c in PUBLICATION_TABLES_FUNCTION if c.exists(self.major))
                        self.relations.append((alias, cols))
                    elif fname in _SLOT_FUNCTIONS:
                        self.relations.append((alias, tuple(CatalogColumn(n, t) for n, t in _SLOT_FUNCTIONS[fname])))
                    elif fname in _FUNCTIONS:
                        colnames = item.alias.colnames if item.alias and item.alias.colnames else None
                        column = colnames[0].sval if colnames else alias
                        self.relations.append((alias, (CatalogColumn(column, _FUNCTIONS[fname].result),)))

    def _add_query(self, alias: str, query: ast.SelectStmt, renamed: list[str], ctes: Mapping[str, Any]) -> None:
        """A relation that is a query's result (a subquery in FROM, a WITH query): its
        columns, the first ones renamed by *renamed*, typed as the query types them."""
        names = {oid: name for name, oid in TYPE_OIDS.items()}
        fields: list[FieldInfo] = []
        columns = _result_columns(query, self.major, self.tables, fields, ctes) or []
        columns = [(renamed[i] if i < len(renamed) else name, oid) for i, (name, oid) in enumerate(columns)]
        self.relations.append((alias, tuple(CatalogColumn(name, names.get(oid or 0, "")) for name, oid in columns)))
        if len(fields) == len(columns):
            self.fields.update(((alias, name), info) for (name, _), info in zip(columns, fields, strict=True))
        self.user_types.update(((alias, name), oid) for name, oid in columns if oid is not None and oid not in names)

    def column(self, fields: Sequence[Any]) -> int | None:
        names = _names(fields)
        if len(names) != len(fields):
            return None
        col = names[-1]
        for rel, cols in self.relations:
            if len(names) > 1 and names[-2] != rel:
                continue
            for c in cols:
                if c.name == col:
                    return self.user_types.get((rel, col)) or TYPE_OIDS.get(c.type)
        return None

    def field(self, fields: Sequence[Any]) -> FieldInfo:
        """What RowDescription says of a column reference besides its name and type."""
        names = _names(fields)
        if len(names) == 1 and names[0] in self.merged:
            return DEFAULT_FIELD  # a merged JOIN USING column is no table's (markTargetListOrigin)
        for rel, cols in self.relations:
            if len(names) > 1 and names[-2] != rel:
                continue
            if any(c.name == names[-1] for c in cols):
                return self.fields.get((rel, names[-1]), DEFAULT_FIELD)
        return DEFAULT_FIELD

    def star_fields(self, qualifier: str | None) -> list[FieldInfo]:
        return [self.fields.get((rel, c.name), DEFAULT_FIELD) for rel, cols in self.relations
                if qualifier is None or qualifier == rel for c in cols]

    def star(self, qualifier: str | None) -> list[tuple[str, int | None]]:
        out: list[tuple[str, int | None]] = []
        for rel, cols in self.relations:
            if qualifier is None or qualifier == rel:
                out.extend((c.name, self.user_types.get((rel, c.name)) or TYPE_OIDS.get(c.type)) for c in cols)
        return out


def _user_type_size(ct: ColumnType) -> int | None:
    """RowDescription's size of a scenario column of a user type: an enum's 4 (pg_enum.c),
    -1 for any other (None: a built-in type's own)."""
    if not ct.is_user_type:
        return None
    return 4 if ct.labels else -1


def _expr_type(node: Any, scope: _Scope) -> int | None:
    if isinstance(node, ast.ColumnRef):
        return scope.column(node.fields)
    if isinstance(node, ast.TypeCast):
        return _type_of_name(node.typeName)
    if isinstance(node, ast.FuncCall):
        name = node.funcname[-1].sval
        if name in _FUNCTIONS:
            return TYPE_OIDS.get(_FUNCTIONS[name].result)
        if name in _SLOT_FUNCTIONS:
            cols = _SLOT_FUNCTIONS[name]
            return TYPE_OIDS["record"] if len(cols) > 1 else TYPE_OIDS.get(cols[0][1])
        if name == "count":
            return 20
        if name in ("min", "max") and node.args:
            return _expr_type(node.args[0], scope)
        if name == "array_agg" and node.args:
            inner = _expr_type(node.args[0], scope)
            by_oid = {v: k for k, v in TYPE_OIDS.items()}
            return TYPE_OIDS.get("_" + by_oid.get(inner or 0, ""), None) if inner else None
        return None
    if isinstance(node, ast.A_Const):
        if node.isnull:
            return 25
        return {ast.Integer: 23, ast.Float: 1700, ast.String: 25, ast.Boolean: 16}.get(type(node.val))
    if isinstance(node, ast.CaseExpr):
        for candidate in [*(w.result for w in node.args or ()), node.defresult]:
            if candidate is not None and not (isinstance(candidate, ast.A_Const) and candidate.isnull):
                return _expr_type(candidate, scope)
        return 25
    if isinstance(node, ast.CoalesceExpr) and node.args:
        return _expr_type(node.args[0], scope)
    if isinstance(node, (ast.BoolExpr, ast.NullTest, ast.BooleanTest)):
        return 16
    if isinstance(node, ast.A_Expr) and node.name and _names(node.name)[-1:] in (
            ["="], ["<>"], ["<"], [">"], ["<="], [">="], ["~"], ["!="]):
        return 16
    if isinstance(node, ast.SQLValueFunction):
        return 19 if "USER" in node.op.name or "ROLE" in node.op.name or "CATALOG" in node.op.name else None
    if isinstance(node, ast.SubLink) and node.subLinkType.name == "EXISTS_SUBLINK":
        return 16
    return None


# ------------------------------------------------------------------------------------------
# The engine
# ------------------------------------------------------------------------------------------


class SqlEngine:
    """One per server: the embedded database holding the catalogs, and the statements
    it answers."""

    def __init__(self, server: ServerState) -> None:
        self.server = server
        self.major = server.persona.major
        self._db: Any = None
        self._loaded: dict[str, list[tuple[Any, ...]]] = {}
        self._temp = 0

    # -- the database ----------------------------------------------------------------------
    def _open(self) -> Any:
        if self._db is None:
            import duckdb  # opened on first use: a server most clients never ask SQL of pays nothing

            # no extension fetched or loaded behind a query's back (DuckDB would download
            # one for an inet or json value): what the engine lacks is a clear error
            db = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                                    "autoload_known_extensions": False})
            db.execute(f"CREATE SCHEMA {_SCHEMA}")
            for rel in CATALOG:
                if not columns_of(rel, self.major):
                    continue  # not in this major (pg_publication_namespace before 15)
                cols = ", ".join(f'"{c.name}" {_ENGINE_TYPES.get(c.type, "VARCHAR")}'
                                 for c in columns_of(rel, self.major))
                db.execute(f"CREATE TABLE {_SCHEMA}.{engine_table(rel)} ({cols})")
            cols = ", ".join(f'"{c.name}" {_ENGINE_TYPES.get(c.type, "VARCHAR")}'
                             for c in PUBLICATION_TABLES_FUNCTION if c.exists(self.major))
            db.execute(f"CREATE TABLE {_SCHEMA}._publication_tables (pubname VARCHAR, {cols})")
            self._functions(db)
            self._db = db
        return self._db

    def _functions(self, db: Any) -> None:
        from duckdb import list_type
        from duckdb.sqltypes import BIGINT, BOOLEAN, INTEGER, VARCHAR

        server = self.server
        user_types = {c.type.oid: c.type for t in server.scenario.tables for c in t.columns if c.type.is_user_type}

        def add(name: str, fn: Callable[..., Any], params: list[Any], result: Any) -> None:
            db.create_function(f"pgw_{name}_{len(params)}", fn, params, result, null_handling="special",
                               side_effects=True)

        add("format_type", lambda oid, mod: format_type(oid, mod, user_types), [BIGINT, BIGINT], VARCHAR)
        add("pg_get_expr", lambda expr, rel: expr, [VARCHAR, BIGINT], VARCHAR)
        add("pg_get_expr", lambda expr, rel, pretty: expr, [VARCHAR, BIGINT, BOOLEAN], VARCHAR)
        add("current_setting", lambda name: self._setting(name, False), [VARCHAR], VARCHAR)
        add("current_setting", lambda name, missing_ok: self._setting(name, bool(missing_ok)), [VARCHAR, BOOLEAN],
            VARCHAR)
        add("version", lambda: f"PostgreSQL {server.version} (pgwire-spec fake walsender)", [], VARCHAR)
        add("current_database", lambda: server.scenario.server.database, [], VARCHAR)
        add("current_schema", lambda: "public", [], VARCHAR)
        add("pg_is_in_recovery", lambda: False, [], BOOLEAN)
        for name in ("pg_current_wal_lsn", "pg_current_wal_flush_lsn", "pg_current_wal_insert_lsn"):
            add(name, lambda: format_lsn(server.wal_position()), [], VARCHAR)
        add("pg_backend_pid", lambda: self._pid, [], INTEGER)
        add("to_regclass", lambda name: self._regclass(name, missing_ok=True), [VARCHAR], BIGINT)
        add("pg_encoding_to_char", lambda n: "UTF8" if n == 6 else "", [INTEGER], VARCHAR)
        add("current_schemas", lambda implicit: ["pg_catalog", "public"] if implicit else ["public"], [BOOLEAN],
            list_type(VARCHAR))
        add("array_upper", lambda arr, dim: len(arr) if arr and dim == 1 else None, [list_type(VARCHAR), INTEGER],
            INTEGER)
        add("obj_description", lambda oid: None, [BIGINT], VARCHAR)
        add("obj_description", lambda oid, cat: None, [BIGINT, VARCHAR], VARCHAR)
        add("regclass_name", lambda oid: self._reg_name("regclass", oid), [BIGINT], VARCHAR)
        add("regtype_name", lambda oid: self._reg_name("regtype", oid), [BIGINT], VARCHAR)
        add("regnamespace_name", lambda oid: self._reg_name("regnamespace", oid), [BIGINT], VARCHAR)
        self._pid = 0

    def _setting(self, name: str | None, missing_ok: bool) -> str | None:
        if name is None:
            return None
        value = setting(self.server.scenario, self.server.persona, self.server.version, name, self.server.limits)
        if value is None and not missing_ok:
            raise ServerError("42704", f'unrecognized configuration parameter "{name}"')
        return value

    def _refresh(self) -> None:
        server = self.server
        slots = [SlotRow(s.name, s.plugin, s.kind, s.database, s.temporary, server.slot_user(s),
                         s.restart_lsn, s.confirmed_flush if s.kind == "logical" else None, s.two_phase,
                         s.failover, s.invalidated, s.inactive_since) for s in list(server.slots.values())]
        # Copies first (list() of a dict is one step): a worker may run this while the loop
        # adds a connection or a slot.
        connections = list(server.connections.values())
        users = [c.user for c in connections if c.user]
        walsenders = [WalSenderRow(c.pid, c.user, c.params.get("application_name"), c.peer, c.stream.wal_end,
                                   *c.positions, c.port, c.backend_start, tuple(c.stream.lag.lags),
                                   c.stream.reply_time or None)
                      for c in connections if c.stream is not None]
        rows = catalog_rows(server.scenario, self.major, server.publication_oids, slots, users, walsenders,
                            settings_rows(server.scenario.server, server.version, server.limits))
        gpt: list[tuple[Any, ...]] = []
        for p in server.scenario.publications:
            for pt in publication_tables(server.scenario, p, self.major):
                full = {"pubid": server.publication_oids[p.name], "relid": pt.table.oid,
                        "attrs": None if pt.attrs is None else list(pt.attrs),
                        "qual": pt.where.deparsed if pt.where is not None else None}
                gpt.append((p.name, *(full[c.name] for c in PUBLICATION_TABLES_FUNCTION if c.exists(self.major))))
        rows["_publication_tables"] = gpt
        db = self._open()
        for rel, values in rows.items():
            if self._loaded.get(rel) == values or (rel in CATALOG and not columns_of(rel, self.major)):
                continue
            db.execute(f"DELETE FROM {_SCHEMA}.{engine_table(rel)}")
            if values:
                marks = ", ".join("?" for _ in values[0])
                db.executemany(f"INSERT INTO {_SCHEMA}.{engine_table(rel)} VALUES ({marks})",
                               [list(v) for v in values])
            self._loaded[rel] = values

    # -- names ------------------------------------------------------------------------------
    def _tables(self) -> list[Table]:
        return list(self.server.scenario.tables)

    def _find_table(self, schema: str | None, name: str) -> Table:
        for t in self._tables():
            if t.name == name and (schema is None or schema == t.schema) and (schema is not None or t.schema == "public"):
                return t
        qualified = f"{schema}.{name}" if schema else name
        raise ServerError("42P01", f'relation "{qualified}" does not exist')

    def _regclass(self, text: str | None, missing_ok: bool = False) -> int | None:
        if text is None:
            return None
        parts = [p.strip('"') if p.startswith('"') else downcase_identifier(p) for p in text.split(".")]
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[-1])
        try:
            return self._find_table(schema, name).oid
        except ServerError:
            oid = relation_oid(name, self.major) if schema in (None, "pg_catalog") else 0
            if oid:
                return oid  # a catalog relation answered (its OID in this major)
            if missing_ok:
                return None
            raise

    def _nspname(self, oid: int) -> str:
        for row in self._loaded.get("pg_namespace", ()):
            if row[0] == oid:
                return str(row[1])
        return str(oid)

    def _reg_oid(self, kind: str, text: str) -> int:
        if text.isdigit():
            return int(text)
        if kind == "regclass":
            oid = self._regclass(text)
            assert oid is not None
            return oid
        if kind == "regtype":
            for name, oid in TYPE_OIDS.items():
                if name == text or format_type(oid, -1) == text:
                    return oid
            raise ServerError("42704", f'type "{text}" does not exist')
        nsp = {"pg_catalog": 11, "public": 2200}
        if text not in nsp:
            raise ServerError("3F000", f'schema "{text}" does not exist')
        return nsp[text]

    def _reg_name(self, kind: str, oid: int | None) -> str | None:
        if oid is None:
            return None
        if kind == "regclass":
            for row in self._loaded.get("pg_class", ()):
                if row[0] == oid:
                    return str(row[1]) if row[2] in (11, 2200) else f"{self._nspname(row[2])}.{row[1]}"
            return str(oid)
        if kind == "regtype":
            return format_type(oid, -1) if format_type(oid, -1) != "???" else str(oid)
        return {11: "pg_catalog", 2200: "public"}.get(oid, str(oid))

    # -- statements -------------------------------------------------------------------------
    def execute(self, conn: Connection, sql: str, params: Sequence[str | None] = (),
                checkpoint: Callable[[], None] | None = None) -> Answer:
        """The answer to one statement; *params* are the text values of ``$1``, ``$2`` …
        (the extended protocol's Bind), substituted as literals of unknown type.
        *checkpoint* is called between the steps (parse, rewrite, run): a worker's way to
        stop a statement past its time (it raises)."""
        check = checkpoint or _no_checkpoint
        try:
            parsed = parse_sql(sql)
        except ParseError as exc:
            raise ServerError("42601", str(exc.args[0]) if exc.args else "syntax error") from None
        if len(parsed) != 1:
            raise unsupported(sql)
        check()
        stmt = parsed[0].stmt
        if params or "$" in sql:  # a walk over the whole tree: only when it can find a $n
            stmt = _Params(params)(stmt)
            check()
        if isinstance(stmt, ast.SelectStmt):
            return self._select(conn, stmt, check)
        if isinstance(stmt, ast.CreatePublicationStmt):
            return self._create_publication(stmt)
        if isinstance(stmt, ast.AlterPublicationStmt):
            return self._alter_publication(stmt)
        if isinstance(stmt, ast.DropStmt) and stmt.removeType == ObjectType.OBJECT_PUBLICATION:
            return self._drop_publication(stmt)
        if isinstance(stmt, ast.RenameStmt) and stmt.renameType == ObjectType.OBJECT_PUBLICATION:
            return self._rename_publication(stmt)
        if isinstance(stmt, ast.VariableSetStmt):
            # SET/RESET of a session setting: accepted, as clients send them at start-up
            # (extra_float_digits, application_name …); the fake's settings stay its own.
            return Command("RESET" if stmt.kind.name.startswith("VAR_RESET") else "SET")
        raise unsupported(sql)

    # -- publications ----------------------------------------------------------------------
    def _publication(self, name: str) -> Publication:
        pub = self.server.scenario.publication(name)
        if pub is None:
            raise ServerError("42704", f'publication "{name}" does not exist')
        return pub

    def _options(self, options: Sequence[Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for opt in options or ():
            value = _const(opt.arg) if opt.arg is not None else True
            if opt.defname in out:
                raise ServerError("42601", "conflicting or redundant options")
            if opt.defname == "publish":
                actions = {a.strip().lower() for a in str(value).split(",") if a.strip()}
                allowed = {"insert", "update", "delete"} | ({"truncate"} if majors.major(self.major).truncate else set())
                for a in actions:
                    if a not in allowed:
                        raise ServerError("22023", f'unrecognized value for publication option "publish": "{a}"')
                out["actions"] = frozenset(actions)
            elif opt.defname == "publish_via_partition_root" and opt.defname in majors.major(self.major).publication_options:
                out["via_root"] = _bool(value)
            elif opt.defname == "publish_generated_columns" and majors.major(self.major).publish_generated_columns:
                if str(value) not in ("none", "stored"):
                    raise ServerError("22023", f'invalid value for publication parameter "publish_generated_columns": '
                                               f'"{value}"')
                out["generated_columns"] = str(value)
            else:
                raise ServerError("42601", f'unrecognized publication parameter: "{opt.defname}"')
        return out

    def _objects(self, specs: Sequence[Any] | None) -> tuple[list[PublishedTable], list[str]]:
        """``FOR TABLE …`` (with column lists and row filters, 15+) and ``FOR TABLES IN
        SCHEMA …`` (15+)."""
        tables: list[PublishedTable] = []
        listed: dict[str, PublishedTable] = {}
        schemas: list[str] = []
        for spec in specs or ():
            kind = spec.pubobjtype
            if kind == PublicationObjSpecType.PUBLICATIONOBJ_TABLE:
                pt = spec.pubtable
                if (pt.columns or pt.whereClause is not None) and not majors.major(self.major).publication_filters:
                    raise ServerError("42601", 'syntax error at or near "("' if pt.columns
                                      else 'syntax error at or near "WHERE"')
                rel = pt.relation
                t = self._find_table(rel.schemaname, rel.relname)
                # "foo, foo" is one entry, unless a row filter or a column list is among them
                # (publicationcmds.c OpenTableList).
                first = listed.get(t.qualified_name)
                if first is not None:
                    if pt.whereClause is not None or first.where is not None:
                        raise ServerError("42710", f'conflicting or redundant WHERE clauses for table "{t.name}"')
                    if pt.columns or first.columns is not None:
                        raise ServerError("42710", f'conflicting or redundant column lists for table "{t.name}"')
                    continue
                columns = None
                if pt.columns:
                    columns = tuple(_names(pt.columns))
                    for c in columns:
                        if t.column(c) is None:
                            raise ServerError("42703", f'column "{c}" of relation "{t.name}" does not exist')
                where = None
                if pt.whereClause is not None:
                    try:
                        where = parse_expression(RawStream()(pt.whereClause), {c.name: c.type.name for c in t.columns})
                    except ExpressionError as exc:
                        raise ServerError("0A000", "the fake walsender cannot evaluate this row filter",
                                          detail=str(exc)) from None
                listed[t.qualified_name] = PublishedTable(t.qualified_name, columns, where)
                tables.append(listed[t.qualified_name])
            elif kind in (PublicationObjSpecType.PUBLICATIONOBJ_TABLES_IN_SCHEMA,
                          PublicationObjSpecType.PUBLICATIONOBJ_TABLES_IN_CUR_SCHEMA):
                if "schemas" not in majors.major(self.major).publication_options:
                    raise ServerError("42601", 'syntax error at or near "TABLES"')
                schema = spec.name if kind == PublicationObjSpecType.PUBLICATIONOBJ_TABLES_IN_SCHEMA else "public"
                known = {t.schema for t in self._tables()} | {"public"}
                if schema not in known:
                    raise ServerError("3F000", f'schema "{schema}" does not exist')
                schemas.append(schema)
            else:
                raise ServerError("42601", "invalid publication object list")
        return tables, schemas

    @staticmethod
    def _with_objects(pub: Publication, tables: Sequence[PublishedTable], schemas: Sequence[str]) -> Publication:
        return Publication(pub.name, None if pub.all_tables else tuple(t.table for t in tables), pub.actions,
                           tuple(schemas), tuple(t for t in tables if t.columns is not None or t.where is not None),
                           pub.via_root, pub.generated_columns)

    @staticmethod
    def _listed(pub: Publication) -> list[PublishedTable]:
        return [pub.entry(name) or PublishedTable(name) for name in pub.tables or ()]

    def _create_publication(self, stmt: ast.CreatePublicationStmt) -> Answer:
        server = self.server
        if server.scenario.publication(stmt.pubname) is not None:
            raise ServerError("42710", f'publication "{stmt.pubname}" already exists')
        opts = self._options(stmt.options)
        tables, schemas = self._objects(stmt.pubobjects)
        base = Publication(stmt.pubname, None if stmt.for_all_tables else (), opts.get("actions", ACTIONS),
                           via_root=opts.get("via_root", False),
                           generated_columns=opts.get("generated_columns", "none"))
        server.set_publications([*server.scenario.publications, self._with_objects(base, tables, schemas)])
        return Command("CREATE PUBLICATION")

    def _alter_publication(self, stmt: ast.AlterPublicationStmt) -> Answer:
        server = self.server
        pub = self._publication(stmt.pubname)
        if stmt.options:
            opts = self._options(stmt.options)
            pub = Publication(pub.name, pub.tables, opts.get("actions", pub.actions), pub.schemas, pub.entries,
                              opts.get("via_root", pub.via_root), opts.get("generated_columns", pub.generated_columns))
        elif stmt.pubobjects is not None:
            if pub.all_tables:
                raise ServerError("55000", f'publication "{pub.name}" is defined as FOR ALL TABLES',
                                  detail="Tables cannot be added to or dropped from FOR ALL TABLES publications.")
            tables, schemas = self._objects(stmt.pubobjects)
            listed = self._listed(pub)
            if stmt.action == AlterPublicationAction.AP_AddObjects:
                for t in tables:
                    if any(x.table == t.table for x in listed):
                        raise ServerError("42710", f'relation "{t.table.split(".", 1)[1]}" is already member of '
                                                   f'publication "{pub.name}"')
                new_tables, new_schemas = [*listed, *tables], [*pub.schemas, *schemas]
            elif stmt.action == AlterPublicationAction.AP_DropObjects:
                for t in tables:
                    if not any(x.table == t.table for x in listed):
                        raise ServerError("42704", f'relation "{t.table.split(".", 1)[1]}" is not part of the '
                                                   f'publication')
                drop = {t.table for t in tables}
                new_tables = [x for x in listed if x.table not in drop]
                new_schemas = [x for x in pub.schemas if x not in schemas]
            else:
                new_tables, new_schemas = list(tables), list(schemas)
            pub = self._with_objects(pub, new_tables, new_schemas)
        server.set_publications([pub if p.name == pub.name else p for p in server.scenario.publications])
        return Command("ALTER PUBLICATION")

    def _drop_publication(self, stmt: ast.DropStmt) -> Answer:
        server = self.server
        notices: list[ServerError] = []
        keep = list(server.scenario.publications)
        for name in (o.sval for o in stmt.objects):
            if not any(p.name == name for p in keep):
                if not stmt.missing_ok:
                    raise ServerError("42704", f'publication "{name}" does not exist')
                notices.append(ServerError("00000", f'publication "{name}" does not exist, skipping',
                                           severity="NOTICE"))
                continue
            keep = [p for p in keep if p.name != name]
        server.set_publications(keep)
        return Command("DROP PUBLICATION", notices=tuple(notices))

    def _rename_publication(self, stmt: ast.RenameStmt) -> Answer:
        server = self.server
        old = stmt.object.sval
        pub = self._publication(old)
        if server.scenario.publication(stmt.newname) is not None:
            raise ServerError("42710", f'publication "{stmt.newname}" already exists')
        renamed = Publication(stmt.newname, pub.tables, pub.actions, pub.schemas, pub.entries, pub.via_root,
                              pub.generated_columns)
        server.set_publications([renamed if p.name == old else p for p in server.scenario.publications],
                                renamed={old: stmt.newname})
        return Command("ALTER PUBLICATION")

    # -- SELECT ----------------------------------------------------------------------------
    def _select(self, conn: Connection, stmt: ast.SelectStmt, check: Callable[[], None] = _no_checkpoint) -> Answer:
        if stmt.intoClause is not None or stmt.lockingClause:
            raise unsupported(RawStream()(stmt))
        fields: list[FieldInfo] = []
        columns = _result_columns(stmt, self.major, self._tables(), fields)  # before the rewriting
        self._refresh()
        self._pid = conn.pid
        rewriter = _Rewriter(self, conn)
        db = self._open()
        try:
            try:
                lists = _condense(stmt)
                rewritten = rewriter(stmt)
                check()
                sql = lists.expand(RawStream()(rewritten))
                check()
                cursor = db.execute(sql)
                rows = cursor.fetchall()
                description = cursor.description
            finally:
                for name in rewriter.temp_tables:
                    db.execute(f"DROP TABLE IF EXISTS {name}")
        except ServerError:
            raise
        except Exception as exc:
            raise _engine_error(exc, sql) from None
        if columns is None or len(columns) != len(description):
            columns = [(d[0], _FROM_ENGINE.get(str(d[1]), 25)) for d in description]
        else:
            columns = [(name, oid if oid is not None else _FROM_ENGINE.get(str(d[1]), 25))
                       for (name, oid), d in zip(columns, description, strict=True)]
        text_rows = tuple(tuple(self._value(v, oid) for v, (_, oid) in zip(row, columns, strict=True))
                          for row in rows)
        return Result(tuple((n, o) for n, o in columns), text_rows, f"SELECT {len(text_rows)}",
                      fields=tuple(fields) if len(fields) == len(columns) else ())

    def _value(self, v: Any, oid: int) -> str | None:
        if oid in (2205, 2206, 4089) and isinstance(v, int):
            kind = {2205: "regclass", 2206: "regtype", 4089: "regnamespace"}[oid]
            return self._reg_name(kind, v)
        return _text(v, oid)


def result_columns(stmt: ast.SelectStmt, major: int,
                   tables: Sequence[Table] = ()) -> list[tuple[str, int | None]] | None:
    """The result columns' names and PostgreSQL types, from the parse tree (*tables*: the
    scenario's, which a query may read too)."""
    return _result_columns(stmt, major, tables)


def _result_columns(stmt: ast.SelectStmt, major: int, tables: Sequence[Table] = (),
                    fields: list[FieldInfo] | None = None,
                    ctes: Mapping[str, Any] | None = None) -> list[tuple[str, int | None]] | None:
    """The result columns' names and types; *fields* gets what RowDescription says of each
    besides (see :class:`~._sql.FieldInfo`). *ctes*: the WITH queries of enclosing queries."""
    if stmt.withClause is not None:
        ctes = {**(ctes or {}), **{c.ctename: c for c in stmt.withClause.ctes or ()
                                   if isinstance(c, ast.CommonTableExpr)}}
    if stmt.op is not None and stmt.op.name != "SETOP_NONE":
        # a set operation's columns are no table's (the left query's types, no origin)
        columns = _result_columns(stmt.larg, major, tables, None, ctes) if stmt.larg is not None else None
        if fields is not None and columns is not None:
            fields.extend(DEFAULT_FIELD for _ in columns)
        return columns
    if stmt.valuesLists:
        return None
    scope = _Scope(major, tables, ctes)
    scope.add_from(stmt.fromClause)
    out: list[tuple[str, int | None]] = []
    infos = fields if fields is not None else []
    for target in stmt.targetList or ():
        val = target.val
        if isinstance(val, ast.ColumnRef) and isinstance(val.fields[-1], ast.A_Star):
            qualifier = _names(val.fields[:-1])
            expanded = scope.star(qualifier[-1] if qualifier else None)
            if not expanded:
                return None
            out.extend(expanded)
            infos.extend(scope.star_fields(qualifier[-1] if qualifier else None))
            continue
        infos.append(scope.field(val.fields) if isinstance(val, ast.ColumnRef) else DEFAULT_FIELD)
        name = target.name or _column_name(val) or "?column?"
        oid = _expr_type(val, scope)
        if isinstance(val, ast.TypeCast):
            tname = val.typeName.names[-1].sval
            if tname in _REG_TYPES:
                oid = {"regclass": 2205, "regtype": 2206, "regnamespace": 4089}[tname]
        out.append((name, oid))
    return out


def _engine_error(exc: Exception, sql: str) -> ServerError:
    text = str(exc)
    text = re.sub(r"^[A-Za-z ]+ Error: ", "", text).split("\n")[0]
    text = text.replace(f"{_SCHEMA}.", "").replace("pgw_", "")
    text = re.sub(r"_(\d+)\b(?=\()", "", text)
    m_ = re.search(r'(Type|Function) with name "?([^" ]+)"? is not in the catalog, but it exists in', text)
    if m_:
        what = "type" if m_.group(1) == "Type" else "function"
        return ServerError("0A000", f'the fake walsender does not provide the {what} "{m_.group(2)}"',
                           detail=f"Query: {sql[:200]}")
    m_ = re.search(r"Table with name (\S+) does not exist", text)
    if m_:
        return ServerError("42P01", f'relation "{m_.group(1)}" does not exist')
    m_ = re.search(r'Referenced column "([^"]+)" not found', text) or re.search(
        r'column "?([^" ]+)"? (?:does not exist|not found)', text, re.IGNORECASE)
    if m_:
        return ServerError("42703", f'column "{m_.group(1)}" does not exist')
    m_ = re.search(r"Scalar Function with name (\S+) does not exist", text) or re.search(
        r"Table Function with name (\S+) does not exist", text)
    if m_:
        return ServerError("42883", f"function {m_.group(1)} does not exist",
                           hint="The fake walsender provides the functions replication clients call.")
    if isinstance(exc, ServerError):
        return exc
    return ServerError("0A000", f"the fake walsender cannot answer this query: {text}",
                       detail=f"Query: {sql[:200]}")


class _Params(visitors.Visitor):  # type: ignore[misc]
    """``$n`` replaced by the n-th parameter's text (NULL for None), cast to its declared
    type (*types*, 0 or missing: none) unless the parameter already is a cast's operand."""

    def __init__(self, params: Sequence[str | None], types: Sequence[int] = ()) -> None:
        super().__init__()
        self.params = params
        self.types = types

    def visit_ParamRef(self, ancestors: Any, node: ast.ParamRef) -> Any:
        if not 1 <= node.number <= len(self.params):
            raise ServerError("42P02", f"there is no parameter ${node.number}")
        value = self.params[node.number - 1]
        const = ast.A_Const(isnull=True) if value is None else ast.A_Const(isnull=False, val=ast.String(sval=value))
        oid = self.types[node.number - 1] if node.number <= len(self.types) else 0
        name = type_name(oid) if oid not in (0, 25, 705) else None
        if name is None or isinstance(ancestors.node, ast.TypeCast):
            return const
        return ast.TypeCast(arg=const, typeName=ast.TypeName(names=(ast.String(sval=name),)))


class _ParamScan(visitors.Visitor):  # type: ignore[misc]
    """The ``$n`` of a statement: number -> the type OID of the cast it is the operand of
    (``$1::int4``), of the catalog column it is compared with (``slot_name = $1``: name,
    as parse_oper.c resolves an unknown operand), or 0."""

    def __init__(self, scope: _Scope) -> None:
        super().__init__()
        self.scope = scope
        self.found: dict[int, int] = {}

    def visit_ParamRef(self, ancestors: Any, node: ast.ParamRef) -> Any:
        parent = ancestors.node
        oid = None
        if isinstance(parent, ast.TypeCast):
            oid = _type_of_name(parent.typeName)
        elif isinstance(parent, ast.A_Expr) and parent.kind.name == "AEXPR_OP":
            other = parent.rexpr if parent.lexpr is node else parent.lexpr
            if isinstance(other, ast.ColumnRef):
                oid = self.scope.column(other.fields)
        if not self.found.get(node.number):
            self.found[node.number] = oid or 0


def parse_one(sql: str) -> Any:
    """The parse tree of one statement (None for an empty string), or the ServerError a
    real server's Parse gives (exec_parse_message in postgres.c)."""
    try:
        parsed = parse_sql(sql)
    except ParseError as exc:
        raise ServerError("42601", str(exc.args[0]) if exc.args else "syntax error") from None
    if len(parsed) > 1:
        raise ServerError("42601", "cannot insert multiple commands into a prepared statement")
    return parsed[0].stmt if parsed else None


def parameter_types(stmt: Any, declared: Sequence[int], major: int) -> tuple[int, ...]:
    """The type OID of each parameter of a parsed statement: the one Parse declared, else
    the type it is cast to or the catalog column's it is compared with, else text (what a
    real server resolves an unknown to)."""
    scope = _Scope(major)
    if isinstance(stmt, ast.SelectStmt):
        scope.add_from(stmt.fromClause)
    scan = _ParamScan(scope)
    if stmt is not None:
        scan(stmt)
    count = max([len(declared), *scan.found])
    return tuple((declared[i] if i < len(declared) and declared[i] else scan.found.get(i + 1) or 25)
                 for i in range(count))


def bind_parameters(sql: str, params: Sequence[str | None], types: Sequence[int]) -> str:
    """*sql* with its ``$n`` replaced by the values' literals (the extended protocol's Bind,
    so that a bound statement takes the simple query's path)."""
    if not params:
        return sql
    stmt = parse_one(sql)
    if stmt is None:
        return sql  # an empty statement declared with parameters: still empty
    return str(RawStream()(_Params(params, types)(stmt)))


class _SlotCalls(visitors.Visitor):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def visit_FuncCall(self, ancestors: Any, node: ast.FuncCall) -> None:
        name = _names(node.funcname)[-1]
        if name in _SLOT_FUNCTIONS:
            self.found.append(name)


def slot_function_called(stmt: Any) -> str | None:
    """The first slot function with side effects a parsed statement calls, or None."""
    calls = _SlotCalls()
    if stmt is not None:
        calls(stmt)
    return calls.found[0] if calls.found else None


def returns_rows(stmt: Any) -> bool:
    """Does a parsed statement return rows (a Describe answers RowDescription, not NoData)?"""
    return isinstance(stmt, (ast.SelectStmt, ast.VariableShowStmt, ast.ExplainStmt))


#: Scenario column types kept as the engine's own (others as their text form).
_NATIVE = frozenset({"int2", "int4", "int8", "oid", "bool"})


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _engine_value(text: str | None, engine_type: str) -> Any:
    if text is None or engine_type == "VARCHAR":
        return text
    return text == "t" if engine_type == "BOOLEAN" else int(text)


def _user_table(tables: Sequence[Table], node: ast.RangeVar) -> Table | None:
    """The scenario table a FROM item names (unqualified: in public, the search path)."""
    for t in tables:
        if t.name == node.relname and (node.schemaname or "public") == t.schema:
            return t
    return None


class _CteNames(visitors.Visitor):  # type: ignore[misc]
    """The names of a statement's WITH queries, at any depth."""

    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def visit_CommonTableExpr(self, ancestors: Any, node: ast.CommonTableExpr) -> Any:
        self.found.add(node.ctename)
        return None


class _Rewriter(visitors.Visitor):  # type: ignore[misc]
    """The parse tree made runnable by the engine (see the module docstring)."""

    def __init__(self, engine: SqlEngine, conn: Connection) -> None:
        super().__init__()
        self.engine = engine
        self.conn = conn
        self.temp_tables: list[str] = []
        #: the names of the statement's WITH queries (a reference to one is no table's)
        self.ctes: set[str] = set()

    def __call__(self, node: Any) -> Any:
        names = _CteNames()
        names(node)
        self.ctes = names.found
        return super().__call__(node)

    def visit_RangeVar(self, ancestors: Any, node: ast.RangeVar) -> Any:
        if node.schemaname is None and node.relname in self.ctes:
            return None  # a WITH query's name: the engine runs the query itself
        relation = catalog_relation(node.schemaname, node.relname)
        if relation is not None:
            return ast.RangeVar(schemaname=_SCHEMA, relname=engine_table(relation), inh=True, relpersistence="p",
                                alias=node.alias or ast.Alias(aliasname=node.relname))
        if node.schemaname == "information_schema" or (
                node.schemaname in (None, "pg_catalog") and node.relname.startswith("pg_")):
            raise ServerError("0A000", f'the fake walsender does not answer queries on "{node.relname}"',
                              hint="It answers " + ", ".join(sorted(CATALOG)) + ".")
        table = _user_table(self.engine._tables(), node)
        if table is not None:
            return ast.RangeVar(relname=self._user_rows(table), inh=True, relpersistence="p",
                                alias=node.alias or ast.Alias(aliasname=node.relname))
        qualified = f"{node.schemaname}.{node.relname}" if node.schemaname else node.relname
        raise ServerError("42P01", f'relation "{qualified}" does not exist')

    def _user_rows(self, table: Table) -> str:
        """A scenario table's rows as the transaction's snapshot sees them (a slot's with
        SNAPSHOT 'use', else the present: :meth:`ServerState.reads_after_history`), its
        partitions' too, as a temporary table: integers and booleans as themselves, other
        values in their text form."""
        engine, conn = self.engine, self.conn
        engine._temp += 1
        name = f"pgw_rows_{engine._temp}"
        types = [_ENGINE_TYPES.get(type_name(c.type.oid) or "", "VARCHAR") if type_name(c.type.oid) in _NATIVE
                 else "VARCHAR" for c in table.columns]
        db = engine._open()
        db.execute(f"CREATE TEMP TABLE {name} ({', '.join(_quote(c.name) + ' ' + t for c, t in zip(table.columns, types))})")
        self.temp_tables.append(name)
        after = engine.server.reads_after_history(conn.snapshot_after_history)
        rows = [tuple(_engine_value(c.type.text(r.get(c.name)), t) for c, t in zip(table.columns, types))
                for leaf in engine.server.scenario.leaves(table) for r in engine.server.rows_as_of(leaf, after)]
        if rows and table.columns:
            db.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in table.columns)})", [list(r) for r in rows])
        return name

    def visit_RangeFunction(self, ancestors: Any, node: ast.RangeFunction) -> Any:
        call = node.functions[0][0] if node.functions and node.functions[0] else None
        if not isinstance(call, ast.FuncCall):
            return None
        name = call.funcname[-1].sval
        alias = node.alias or ast.Alias(aliasname=name)
        if name == "pg_get_publication_tables":
            if not majors.major(self.engine.major).publication_tables_variadic and len(call.args or ()) != 1:
                raise ServerError("42883", "function pg_get_publication_tables does not exist")
            lateral = bool(node.lateral)
            try:
                args = [_const(a) for a in call.args or ()]
                if call.func_variadic and len(args) == 1 and isinstance(args[0], list):
                    args = args[0]
                names = ", ".join("'" + str(a).replace("'", "''") + "'" for a in args) or "NULL"
            except ServerError:
                if call.func_variadic:
                    raise
                # LATERAL pg_get_publication_tables(p.pubname): the argument refers to the row
                names = ", ".join(RawStream()(a) for a in call.args or ())
                lateral = True
            cols = ", ".join(f'"{c.name}"' for c in PUBLICATION_TABLES_FUNCTION if c.exists(self.engine.major))
            sub = parse_sql(f"SELECT {cols} FROM {_SCHEMA}._publication_tables WHERE pubname IN ({names})")[0].stmt
            return ast.RangeSubselect(lateral=lateral, subquery=sub, alias=alias)
        if name in _SLOT_FUNCTIONS:
            rows = _slot_function(self.engine, self.conn, name, [_const(a) for a in call.args or ()])
            return ast.RangeVar(relname=self._temp(name, rows), inh=True, relpersistence="p", alias=alias)
        if name in _FUNCTIONS:
            # A scalar function in FROM (``SELECT * FROM pg_current_wal_lsn()``): one row, one
            # column named as the function (or its alias).
            column = alias.colnames[0].sval if alias.colnames else alias.aliasname
            subquery = ast.SelectStmt(targetList=(ast.ResTarget(name=column, val=self._scalar(call, name)),),
                                      limitOption=ast.SelectStmt().limitOption, op=ast.SelectStmt().op)
            return ast.RangeSubselect(lateral=False, subquery=subquery,
                                      alias=ast.Alias(aliasname=alias.aliasname))
        return None

    def _temp(self, name: str, rows: list[tuple[Any, ...]]) -> str:
        engine = self.engine
        engine._temp += 1
        table = f"pgw_rows_{engine._temp}"
        cols = ", ".join(f'"{n}" {_ENGINE_TYPES.get(t, "VARCHAR")}' for n, t in _SLOT_FUNCTIONS[name])
        db = engine._open()
        db.execute(f"CREATE TEMP TABLE {table} ({cols})")
        self.temp_tables.append(table)
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            db.executemany(f"INSERT INTO {table} VALUES ({marks})", [list(r) for r in rows])
        return table

    def visit_FuncCall(self, ancestors: Any, node: ast.FuncCall) -> Any:
        names = _names(node.funcname)
        name = names[-1]
        if len(names) > 1 and names[0] != "pg_catalog":
            return None
        if name in _SLOT_FUNCTIONS:
            rows = _slot_function(self.engine, self.conn, name, [_const(a) for a in node.args or ()])
            cols = _SLOT_FUNCTIONS[name]
            if len(rows) != 1:
                raise ServerError("0A000", f"the fake walsender runs {name} in FROM only",
                                  hint=f"SELECT * FROM {name}(…)")
            if len(cols) == 1:
                value = "" if cols[0][1] == "void" else rows[0][0]
            else:
                value = "(" + ",".join("" if v is None else str(v) for v in rows[0]) + ")"
            return ast.A_Const(isnull=False, val=ast.String(sval=value))
        return self._scalar(node, name)

    @staticmethod
    def _scalar(node: ast.FuncCall, name: str) -> Any:
        """A call of one of :data:`_FUNCTIONS` as the engine's function (None: not one)."""
        fn = _FUNCTIONS.get(name)
        if fn is None or name == "pg_get_publication_tables":
            return None
        nargs = len(node.args or ())
        if nargs not in fn.arities:
            raise ServerError("42883", f"function {name} with {nargs} arguments does not exist",
                              hint="No function matches the given name and argument types.")
        return ast.FuncCall(funcname=(ast.String(sval=f"pgw_{name}_{nargs}"),), args=node.args,
                            agg_star=False, agg_distinct=False, func_variadic=False,
                            funcformat=node.funcformat)

    def visit_SQLValueFunction(self, ancestors: Any, node: ast.SQLValueFunction) -> Any:
        op = node.op.name.removeprefix("SVFOP_").lower()
        if op in _SETTINGS_NAMES:
            return ast.A_Const(isnull=False, val=ast.String(sval=self.conn.user))
        if op == "current_catalog":
            return ast.A_Const(isnull=False, val=ast.String(sval=self.engine.server.scenario.server.database))
        if op == "current_schema":
            return ast.A_Const(isnull=False, val=ast.String(sval="public"))
        return None

    def visit_TypeCast(self, ancestors: Any, node: ast.TypeCast) -> Any:
        tname = node.typeName.names[-1].sval
        if tname in _REG_TYPES:
            if isinstance(node.arg, ast.A_Const) and isinstance(node.arg.val, ast.String):
                return ast.A_Const(isnull=False, val=ast.Integer(ival=self.engine._reg_oid(tname, node.arg.val.sval)))
            return node.arg
        engine_type = _CAST_TYPES.get(tname)
        if engine_type is None:
            return None
        if tname == "regproc" and isinstance(node.arg, ast.A_Const) and isinstance(node.arg.val, ast.String):
            # A function's name, as regprocout writes it for pg_catalog's (no schema).
            return ast.A_Const(isnull=False, val=ast.String(sval=node.arg.val.sval.removeprefix("pg_catalog.")))
        array = "[]" if node.typeName.arrayBounds else ""
        arg = node.arg
        if isinstance(arg, ast.TypeCast):  # 'pg_class'::regclass::oid: the new node is not visited again
            arg = self.visit_TypeCast(ancestors, arg) or arg
        return ast.TypeCast(arg=arg, typeName=ast.TypeName(names=(ast.String(sval=engine_type + array),),
                                                                setof=False, pct_type=False, typemod=-1))


# ------------------------------------------------------------------------------------------
# The slot functions (replication-functions in the docs; slotfuncs.c, logicalfuncs.c)
# ------------------------------------------------------------------------------------------


def _slot_function(engine: SqlEngine, conn: Connection, name: str, args: list[Any]) -> list[tuple[Any, ...]]:
    # On a worker (a long statement, core.Compute) as on the loop: the slots change under
    # the server's lock, which replication commands take too.
    with engine.server.slots_lock:
        return _run_slot_function(engine, conn, name, args)


def _run_slot_function(engine: SqlEngine, conn: Connection, name: str, args: list[Any]) -> list[tuple[Any, ...]]:
    server = engine.server
    major = engine.major
    # The slot (and the plugin) are `name` arguments: namein cuts a longer text to
    # NAMEDATALEN-1 bytes silently (name.c), before ReplicationSlotValidateName sees it.
    names = 2 if name == "pg_create_logical_replication_slot" else 1
    args = [truncate_identifier(a) if i < names and isinstance(a, str) else a for i, a in enumerate(args)]
    if name == "pg_create_logical_replication_slot":
        most = majors.major(major).create_slot_function_args
        if not 2 <= len(args) <= most:
            raise ServerError("42883", f"function {name} with {len(args)} arguments does not exist")
        slot_name, plugin = args[0], args[1]
        temporary = _bool(args[2]) if len(args) > 2 else False
        two_phase = _bool(args[3]) if len(args) > 3 else False
        failover = _bool(args[4]) if len(args) > 4 else False
        if slot_name is None or plugin is None:
            return [(None, None)]
        conn.check_slot_name(slot_name)
        if slot_name in server.slots:
            raise ServerError("42710", f'replication slot "{slot_name}" already exists')
        if conn.tx_undo is not None:
            # logical.c CreateInitDecodingContext: the transaction holds an XID.
            raise ServerError("25001", "cannot create logical replication slot in transaction that has performed "
                                       "writes")
        if plugin != "pgoutput":
            raise ServerError("58P01", f'could not access file "{plugin}": No such file or directory',
                              hint="The fake walsender decodes with pgoutput only.")
        pos = server.slot_position()
        server.slots[slot_name] = SlotState(slot_name, "logical", plugin, server.scenario.server.database, pos,
                                            pos, two_phase, failover, temporary, None,
                                            conn.id if temporary else None)
        return [(slot_name, format_lsn(pos))]
    if name == "pg_create_physical_replication_slot":
        if not 1 <= len(args) <= 3:
            raise ServerError("42883", f"function {name} with {len(args)} arguments does not exist")
        slot_name = args[0]
        reserve = _bool(args[1]) if len(args) > 1 else False
        temporary = _bool(args[2]) if len(args) > 2 else False
        conn.check_slot_name(slot_name)
        if slot_name in server.slots:
            raise ServerError("42710", f'replication slot "{slot_name}" already exists')
        pos = server.slot_position() if reserve else 0
        server.slots[slot_name] = SlotState(slot_name, "physical", None, None, 0, pos, False, False, temporary,
                                            None, conn.id if temporary else None)
        return [(slot_name, format_lsn(pos) if reserve else None)]
    if name == "pg_drop_replication_slot":
        if len(args) != 1:
            raise ServerError("42883", f"function {name} with {len(args)} arguments does not exist")
        slot = _slot(server, args[0])
        server.check_slot_free(slot)
        del server.slots[slot.name]
        return [("",)]
    if name == "pg_replication_slot_advance":
        slot = _slot(server, args[0])
        target = parse_lsn(str(args[1]))
        server.happen()
        end = min(target, server.wal_position())
        if slot.kind == "logical":
            slot.confirmed_flush = max(slot.confirmed_flush, end)
        else:
            slot.restart_lsn = max(slot.restart_lsn, end)
        return [(slot.name, format_lsn(end))]
    # pg_logical_slot_{get,peek}_[binary_]changes(slot, upto_lsn, upto_nchanges, VARIADIC options)
    if len(args) < 3:
        raise ServerError("42883", f"function {name} with {len(args)} arguments does not exist")
    slot = _slot(server, args[0])
    if slot.kind != "logical":
        raise ServerError("22023", "cannot use physical replication slot for logical decoding")
    if "binary" not in name:
        # logicalfuncs.c pg_logical_slot_get_changes_guts
        raise ServerError("22023", f'logical decoding output plugin "{slot.plugin}" produces binary output, but '
                                   f'function "{name}(name,pg_lsn,integer,text[])" expects textual data')
    server.check_slot_free(slot)
    server.check_slot_valid(slot)
    upto_lsn = None if args[1] is None else parse_lsn(str(args[1]))
    upto_n = args[2]
    flat: list[Any] = []
    for a in args[3:]:
        flat.extend(a if isinstance(a, list) else [a])
    if len(flat) % 2:
        raise ServerError("2202E", "array must have even number of elements")
    options = server.persona.parse_options([(str(flat[i]), None if flat[i + 1] is None else str(flat[i + 1]))
                                            for i in range(0, len(flat), 2)])
    server.happen()
    plan = server.plan(options, slot.confirmed_flush).finish()
    rows: list[tuple[Any, ...]] = []
    xid = 0
    count = 0
    confirmed = slot.confirmed_flush
    for item in _writes(plan.items):
        msg = item.message
        if isinstance(msg, (m.Begin, m.StreamStart, m.BeginPrepare)):
            xid = msg.xid
            if upto_lsn is not None and item.lsn > upto_lsn:
                break
        rows.append((format_lsn(item.lsn), xid, item.payload))
        count += 1
        if isinstance(msg, (m.Commit, m.Prepare, m.CommitPrepared, m.RollbackPrepared, m.StreamCommit)):
            confirmed = max(confirmed, getattr(msg, "end_lsn", item.lsn) or item.lsn)
            if upto_n is not None and count >= int(upto_n):
                break
    if "_get_" in name:
        slot.confirmed_flush = confirmed
    return rows


def _writes(items: Sequence[Any]) -> Iterator[Write]:
    for item in items:
        if isinstance(item, Write):
            if item.message is not None:
                yield item
        elif item.error.severity in ("ERROR", "FATAL", "PANIC"):
            raise item.error


def _slot(server: ServerState, name: Any) -> SlotState:
    slot = server.slots.get(str(name))
    if slot is None:
        raise ServerError("42704", f'replication slot "{name}" does not exist')
    return slot
