"""The SQL that real replication clients send, recognised by structure and answered from the
scenario.

Clients send a handful of catalog queries over a replication connection (as their sources
send them: streamutil.c and pg_recvlogical.c, libpqwalreceiver.c, tablesync.c): pg_recvlogical and every subscriber start with
``set_config('search_path', '', false)``; a subscriber checks its publications, fetches the
published tables (each publisher major has its own form), and its table-sync workers ask
for the relation, its columns, column lists and row filters, then ``COPY … TO STDOUT``
inside a ``BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ`` transaction.

Queries are matched on their structure — whitespace, line breaks and letter case do not
matter — and answered with the result shape the client checks (column count and types,
values as text). Anything else gets a clear ErrorResponse; the connection goes on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..wire import FieldDescription, RowDescription
from ._catalog import type_size
from ._relsync import PubTable, publication_tables
from ._settings import lookup, show_all, show_text, values
from .personas import Persona, ServerError
from .publications import Expression, ExpressionError, parse_expression
from .scenario import Column, Limits, Scenario, Table

__all__ = ["FieldInfo", "row_description", "Result", "Command", "CopyOut", "Empty", "NotAnswered", "answer", "setting", "split_statements",
           "quote_ident"]

# type OIDs of the result columns real servers use
TEXT, NAME, OID, CHAR, BOOL, INT2, INT4, INT2VECTOR, NAME_ARRAY = 25, 19, 26, 18, 16, 21, 23, 22, 1003


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """A result column's RowDescription fields besides its name and type (printtup.c
    SendRowDescriptionMessage): the type modifier (a table's ``numeric(10,2)`` column's),
    and, for a plain column of a table or view, the relation's OID and the column's
    attribute number (parse_target.c markTargetListOrigin; 0 and 0 for anything else);
    *size* overrides the type's own length (a scenario's enum type: 4)."""

    typmod: int = -1
    table: int = 0
    column: int = 0
    size: int | None = None


DEFAULT_FIELD = FieldInfo()


def row_description(columns: Sequence[tuple[str, int]], fields: Sequence[FieldInfo] = (),
                    formats: Sequence[int] = ()) -> RowDescription:
    """RowDescription of result *columns* (name, type OID), with their *fields* (none: the
    defaults) and *formats* (none: all text)."""
    return RowDescription(tuple(
        FieldDescription(name, info.table, info.column, oid, type_size(oid) if info.size is None else info.size,
                         info.typmod, formats[i] if formats else 0)
        for i, ((name, oid), info) in enumerate(zip(columns, fields or [DEFAULT_FIELD] * len(columns), strict=True))))


@dataclass(frozen=True, slots=True)
class Result:
    """Rows: RowDescription, DataRows, CommandComplete ``tag``."""

    columns: tuple[tuple[str, int], ...]
    rows: tuple[tuple[str | None, ...], ...]
    tag: str
    #: ParameterStatus to send after CommandComplete (a GUC_REPORT setting changed).
    parameters: tuple[tuple[str, str], ...] = ()
    #: What RowDescription says of each column besides its name and type, when the parse
    #: tree knows it (empty: the defaults for every column).
    fields: tuple[FieldInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class Command:
    """No rows: CommandComplete ``tag``; ``transaction``: begin | commit | rollback."""

    tag: str
    transaction: str | None = None
    #: NoticeResponses to send before CommandComplete.
    notices: tuple[ServerError, ...] = ()


@dataclass(frozen=True, slots=True)
class CopyOut:
    table: Table
    columns: tuple[Column, ...]
    binary: bool
    #: The tables whose rows are copied: the table, or a partitioned table's partitions.
    sources: tuple[Table, ...] = ()
    #: ``COPY (SELECT … WHERE …)``: the rows that pass (table sync with row filters).
    where: Expression | None = None


@dataclass(frozen=True, slots=True)
class Empty:
    """An empty query string: EmptyQueryResponse."""


Answer = Result | Command | CopyOut | Empty


class NotAnswered(ServerError):
    """A statement none of the exact-shape answers here recognises: the SQL engine
    (:mod:`._engine`) takes it."""


def squash(sql: str) -> str:
    """Whitespace runs to one space, none next to parentheses and commas; no trailing ';'."""
    text = re.sub(r"\s+", " ", sql).strip()
    text = re.sub(r"\s*\(\s*", "(", text)
    text = re.sub(r"\s+\)", ")", text)
    text = re.sub(r"\s*,\s*", ",", text)
    text = re.sub(r"\s*(=|!=|<>)\s*", r" \1 ", text)
    return text.rstrip("; ").strip()


def quote_ident(name: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


#: A simple Query's pieces: a quoted string or identifier ('' and "" inside; unterminated:
#: to the end), a semicolon, or a run of anything else. One regex pass: linear, and fast on
#: a query of megabytes.
_PIECES = re.compile(r"""'(?:[^']+|'')*'?|"(?:[^"]+|"")*"?|;|[^'";]+""")


def ends_transaction(sql: str) -> bool:
    """Is *sql* a statement that a failed transaction block still runs (COMMIT, ROLLBACK …)?"""
    return re.match(r"\s*(rollback|abort|commit|end)\b", sql, re.IGNORECASE) is not None


def split_statements(sql: str) -> list[str]:
    """Split a simple Query on top-level semicolons (quotes respected)."""
    if ";" not in sql:
        return [sql] if sql.strip() else [""]
    out: list[str] = []
    start = 0
    for m in _PIECES.finditer(sql):
        if m.group() == ";":
            out.append(sql[start:m.start()])
            start = m.end()
    out.append(sql[start:])
    stmts = [s for s in out if s.strip()]
    return stmts or [""]


_STRING = r"'((?:[^']|'')*)'"


def _strings(text: str) -> list[str]:
    return [s.replace("''", "'") for s in re.findall(_STRING, text)]


def _in_list(text: str, column: str) -> list[str]:
    """The string literals of ``<column> IN ( 'a', 'b' )``."""
    m = re.search(re.escape(column) + r" IN\(((?:" + _STRING + r",?)*)\)", text, re.IGNORECASE)
    return _strings(m.group(1)) if m else []


def _ident_parts(text: str) -> list[str]:
    """``public."My Table"`` -> ['public', 'My Table'] (unquoted parts lower-cased)."""
    parts, i, n = [], 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            buf = []
            while j < n:
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            parts.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and text[j] != ".":
                j += 1
            parts.append(text[i:j].strip().lower())
            i = j
        if i < n and text[i] == ".":
            i += 1
    return parts


def _split_top(text: str) -> list[str]:
    """Split on top-level commas (outside parentheses and quotes)."""
    out: list[str] = []
    buf: list[str] = []
    depth = 0
    quote: str | None = None
    for ch in text:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if buf:
        out.append("".join(buf).strip())
    return [o for o in out if o]


class _Answerer:
    def __init__(self, scenario: Scenario, persona: Persona, version: str, limits: Limits | None = None) -> None:
        self.scenario = scenario
        self.persona = persona
        self.version = version
        #: The limits in force (the scenario's, or the command line's over them).
        self.limits = limits if limits is not None else scenario.server.limits

    # -- helpers ---------------------------------------------------------------------------
    def pub_tables(self, pubnames: list[str]) -> list[PubTable]:
        """pg_get_publication_tables of each named publication, in order."""
        major = self.persona.major
        out: list[PubTable] = []
        for name in pubnames:
            pub = self.scenario.publication(name)
            if pub is not None:
                out.extend(publication_tables(self.scenario, pub, major))
        return out

    def published_tables(self, pubnames: list[str]) -> list[tuple[Table, tuple[int, ...] | None]]:
        """The subscriber's table list: (table, attrs), distinct, in table order. 16+ asks
        pg_get_publication_tables for every publication at once, which drops partitions
        whose ancestor is listed when any publication publishes via the root
        (filter_partitions in pg_publication.c)."""
        rows = self.pub_tables(pubnames)
        if self.persona.table.publication_tables_variadic and any(r.publication.via_root for r in rows):
            names = {r.table.qualified_name for r in rows}
            rows = [r for r in rows
                    if not any(a.qualified_name in names for a in self.scenario.ancestors(r.table))]
        order = {t.qualified_name: i for i, t in enumerate(self.scenario.tables)}
        seen: dict[tuple[str, tuple[int, ...] | None], tuple[Table, tuple[int, ...] | None]] = {}
        for r in sorted(rows, key=lambda r: order[r.table.qualified_name]):
            attrs = r.attrs
            if attrs is None and self.persona.table.publication_filters:
                # pg_publication_tables (15) lists every column when there is no list
                attrs = tuple(range(1, len(r.table.columns) + 1))
            seen.setdefault((r.table.qualified_name, attrs), (r.table, attrs))
        return list(seen.values())

    def table_by_oid(self, oid: int) -> Table | None:
        for t in self.scenario.tables:
            if t.oid == oid:
                return t
        return None

    def table_by_name(self, schema: str, name: str) -> Table | None:
        for t in self.scenario.tables:
            if t.schema == schema and t.name == name:
                return t
        return None

    def setting(self, name: str) -> str | None:
        """SHOW's text of a setting (any letter case), from the one table of settings."""
        current = values(self.scenario.server, self.version, self.limits)
        known = lookup(name, self.persona.major)
        if known is not None:
            return show_text(known, current[known.name])
        low = name.lower()
        return next((v for k, v in current.items() if k.lower() == low), None)

    # -- dispatch --------------------------------------------------------------------------
    def answer(self, sql: str, in_transaction: bool) -> Answer:
        text = squash(sql)
        low = text.lower()
        if not low:
            return Empty()
        m = re.fullmatch(r"select (?:pg_catalog\.)?set_config\(" + _STRING + r"," + _STRING + r",(true|false)\)",
                         text, re.IGNORECASE)
        if m:
            name, value = m.group(1).replace("''", "'"), m.group(2).replace("''", "'")
            params: tuple[tuple[str, str], ...] = ()
            if name == "search_path" and self.persona.table.reports_search_path:
                params = (("search_path", value),)
            return Result((("set_config", TEXT),), ((value,),), "SELECT 1", params)
        m = re.fullmatch(r"show ([a-z_][a-z0-9_.]*|\"[^\"]+\")", text, re.IGNORECASE)
        if m:
            return self.show(m.group(1).strip('"'))
        if re.fullmatch(r"(begin|start transaction)( .*)?", low):
            return Command("BEGIN", "begin")
        if low in ("commit", "end", "commit transaction", "commit work"):
            return Command("COMMIT", "commit")
        if low in ("rollback", "abort", "rollback transaction", "rollback work"):
            return Command("ROLLBACK", "rollback")
        if re.match(r"copy\b", low):
            return self.copy(sql)
        if low.startswith("select "):
            return self.select(text, low)
        raise NotAnswered("0A000", "the fake walsender does not answer this statement",
                          detail=f"Statement: {sql.strip()[:200]}",
                          hint="Only the queries replication clients send are answered; see the scenario docs.")

    def show(self, name: str) -> Result:
        if name.lower() == "all":
            rows = tuple(show_all(self.scenario.server, self.version, self.limits))
            return Result((("name", TEXT), ("setting", TEXT), ("description", TEXT)), rows, "SHOW")
        value = self.setting(name)
        if value is None:
            raise ServerError("42704", f'unrecognized configuration parameter "{name}"')
        return Result(((name.lower(), TEXT),), ((value,),), "SHOW")

    def select(self, text: str, low: str) -> Answer:
        # check_publications (subscriber 15+)
        if re.search(r"from pg_catalog\.pg_publication t where t\.pubname in\(", low):
            names = _in_list(text, "t.pubname")
            found_pubs = tuple((n,) for n in names if self.scenario.publication(n) is not None)
            return Result((("pubname", NAME),), found_pubs, f"SELECT {len(found_pubs)}")
        # check_publications_origin (copy_data with origin = none): no table comes from
        # another origin here.
        if "pg_subscription_rel" in low:
            return Result((("pubname", NAME),), (), "SELECT 0")
        # fetch_table_list, publisher 16+
        if "pg_get_publication_tables(variadic array_agg(pubname::text))" in low:
            names = _in_list(text, "pubname")
            listed = self.published_tables(names)
            cols: list[tuple[str, int]] = [("nspname", NAME), ("relname", NAME)]
            with_attrs = "gpt.attrs" in low
            if with_attrs:
                cols.append(("attrs", INT2VECTOR))
            rows: list[tuple[str | None, ...]] = []
            for t, attrs in listed:
                row: list[str | None] = [t.schema, t.name]
                if with_attrs:
                    row.append(None if attrs is None else " ".join(map(str, attrs)))
                if tuple(row) not in rows:
                    rows.append(tuple(row))
            return Result(tuple(cols), tuple(rows), f"SELECT {len(rows)}")
        # fetch_table_list, publisher up to 15
        if "from pg_catalog.pg_publication_tables t" in low:
            names = _in_list(text, "t.pubname")
            listed = self.published_tables(names)
            with_attnames = "t.attnames" in low
            cols = [("schemaname", NAME), ("tablename", NAME)]
            if with_attnames:
                cols.append(("attnames", NAME_ARRAY))
            rows = []
            for t, attrs in listed:
                row = [t.schema, t.name]
                if with_attnames:
                    names_ = [t.columns[i - 1].name for i in (attrs or ())]
                    row.append("{" + ",".join(quote_ident(n) if re.search(r'[{},"\\\s]', n) is None
                                              else '"' + n.replace('"', '\\"') + '"'
                                              for n in names_) + "}")
                if tuple(row) not in rows:
                    rows.append(tuple(row))
            return Result(tuple(cols), tuple(rows), f"SELECT {len(rows)}")
        # table sync: the relation
        if re.search(r"select c\.oid,c\.relreplident(,c\.relkind)? from pg_catalog\.pg_class c", low):
            ms = re.search(r"n\.nspname = " + _STRING, text, re.IGNORECASE)
            mr = re.search(r"c\.relname = " + _STRING, text, re.IGNORECASE)
            if not ms or not mr:
                raise ServerError("42601", "expected a relation query naming n.nspname and c.relname")
            rel = self.table_by_name(ms.group(1).replace("''", "'"), mr.group(1).replace("''", "'"))
            with_kind = "c.relkind" in low
            cols = [("oid", OID), ("relreplident", CHAR)] + ([("relkind", CHAR)] if with_kind else [])
            if rel is None:
                return Result(tuple(cols), (), "SELECT 0")
            found: tuple[str | None, ...] = (str(rel.oid), rel.replica_identity,
                                             *([rel.relkind] if with_kind else []))
            return Result(tuple(cols), (found,), "SELECT 1")
        # table sync: the column list of the publication(s) (publisher 15+)
        if "array_length(gpt.attrs" in low or (low.startswith("select distinct") and "prattrs" in low
                                               and "pg_publication_rel" in low):
            return self.column_lists(text, low)
        # table sync: the columns
        if "from pg_catalog.pg_attribute a" in low:
            return self.attributes(text, low)
        # table sync: the row filters (publisher 15+)
        if low.startswith("select distinct pg_get_expr(") and ("gpt.qual" in low or "prqual" in low):
            return self.row_filters(text, low)
        if re.fullmatch(r"select (pg_catalog\.)?pg_is_in_recovery\(\)", low):
            return Result((("pg_is_in_recovery", BOOL),), (("f",),), "SELECT 1")
        if re.fullmatch(r"select (pg_catalog\.)?version\(\)", low):
            v = f"PostgreSQL {self.version} (pgwire-spec fake walsender)"
            return Result((("version", TEXT),), ((v,),), "SELECT 1")
        if re.fullmatch(r"select (pg_catalog\.)?current_database\(\)", low):
            return Result((("current_database", NAME),), ((self.scenario.server.database,),), "SELECT 1")
        m = re.fullmatch(r"select (-?\d+)", low)
        if m:
            return Result((("?column?", INT4),), ((m.group(1),),), "SELECT 1")
        raise NotAnswered("0A000", "the fake walsender does not answer this query",
                          detail=f"Query: {text[:200]}",
                          hint="Only the queries replication clients send are answered; see the scenario docs.")

    def _relid_pubs(self, text: str, low: str) -> tuple[list[PubTable], str]:
        m = re.search(r"gpt\.relid = (\d+)", low) or re.search(r"pr\.prrelid = (\d+)", low)
        if not m:
            raise ServerError("42601", "expected a query naming gpt.relid")
        relid = int(m.group(1))
        names = _in_list(text, "p.pubname")
        return [r for r in self.pub_tables(names) if r.table.oid == relid], m.group(1)

    def column_lists(self, text: str, low: str) -> Result:
        """SELECT DISTINCT (CASE WHEN array_length(gpt.attrs, 1) = c.relnatts THEN NULL
        ELSE gpt.attrs END) … WHERE gpt.relid = N AND p.pubname IN (…): one row per
        distinct column list of the publications that publish relation N."""
        rows: list[tuple[str | None, ...]] = []
        for r in self._relid_pubs(text, low)[0]:
            attrs = r.attrs
            value = None if attrs is None or len(attrs) == len(r.table.columns) else " ".join(map(str, attrs))
            if (value,) not in rows:
                rows.append((value,))
        return Result((("attrs", INT2VECTOR),), tuple(rows), f"SELECT {len(rows)}")

    def row_filters(self, text: str, low: str) -> Result:
        """SELECT DISTINCT pg_get_expr(gpt.qual, gpt.relid) … : the row filter of each
        publication that publishes relation N (NULL: none)."""
        rows: list[tuple[str | None, ...]] = []
        for r in self._relid_pubs(text, low)[0]:
            value = r.where.deparsed if r.where is not None else None
            if (value,) not in rows:
                rows.append((value,))
        return Result((("pg_get_expr", TEXT),), tuple(rows), f"SELECT {len(rows)}")

    def attributes(self, text: str, low: str) -> Result:
        m = re.search(r"a\.attrelid = (\d+)", low)
        if not m:
            raise NotAnswered("0A000", "not a table-sync column query")
        t = self.table_by_oid(int(m.group(1)))
        ms = re.match(r"select (.*?) from pg_catalog\.pg_attribute a", text, re.IGNORECASE)
        assert ms is not None
        items = _split_top(ms.group(1))
        has_identity_index = t is not None and t.replica_identity in ("d", "i") and bool(t.key_columns)
        cols: list[tuple[str, int]] = []
        getters: list[Any] = []
        for item in items:
            it = item.lower().replace(" ", "")
            if it == "a.attnum":
                cols.append(("attnum", INT2))
                getters.append(lambda i, c: str(i + 1))
            elif it == "a.attname":
                cols.append(("attname", NAME))
                getters.append(lambda i, c: c.name)
            elif it == "a.atttypid":
                cols.append(("atttypid", OID))
                getters.append(lambda i, c: str(c.type.oid))
            elif it == "a.atttypmod":
                cols.append(("atttypmod", INT4))
                getters.append(lambda i, c: str(c.type.typmod))
            elif it.startswith("a.attnum=any(i.indkey)"):
                cols.append(("?column?", BOOL))
                # LEFT JOIN on the replica identity index: NULL when there is none (FULL).
                getters.append(lambda i, c: ("t" if c.key else "f") if has_identity_index else None)
            elif it.startswith("a.attgenerated!=''") or it.startswith("a.attgenerated<>''"):
                cols.append(("?column?", BOOL))
                getters.append(lambda i, c: "f" if c.generated is None else "t")
            else:
                raise NotAnswered("0A000", "not a table-sync column query", detail=f"Unknown select item: {item}")
        if t is None:
            return Result(tuple(cols), (), "SELECT 0")
        # 12-17 ask for the columns that are not generated (a.attgenerated = '')
        skip_generated = "a.attgenerated = ''" in low
        rows = tuple(tuple(g(i, c) for g in getters) for i, c in enumerate(t.columns)
                     if not (skip_generated and c.generated is not None))
        return Result(tuple(cols), rows, f"SELECT {len(rows)}")

    def copy(self, sql: str) -> CopyOut:
        """``COPY t [(cols)] TO STDOUT`` or ``COPY (SELECT cols FROM [ONLY] t [WHERE …]) TO
        STDOUT`` [``WITH (FORMAT binary)``], parsed with PostgreSQL's parser (tablesync.c's
        copy_table sends the second form for partitioned tables and row filters)."""
        from pglast import ast, parse_sql
        from pglast.parser import ParseError
        from pglast.stream import RawStream

        try:
            stmts = parse_sql(sql)
        except ParseError as exc:
            raise ServerError("42601", f"syntax error: {exc}") from None
        stmt = stmts[0].stmt if len(stmts) == 1 else None
        if not isinstance(stmt, ast.CopyStmt) or stmt.is_from or stmt.filename or stmt.is_program:
            raise ServerError("0A000", "the fake walsender answers only COPY … TO STDOUT",
                              detail=f"Statement: {sql.strip()[:200]}")
        binary = False
        for opt in stmt.options or ():
            if opt.defname == "format":
                fmt = str(getattr(opt.arg, "sval", "")).lower()
                if fmt not in ("text", "binary", "csv"):
                    raise ServerError("22023", f'COPY format "{fmt}" not recognized')
                if fmt == "csv":
                    raise ServerError("0A000", "the fake walsender serves COPY in text or binary format")
                binary = fmt == "binary"
        where: Expression | None = None
        col_names: list[str] | None
        only = False
        if stmt.relation is not None:
            rv = stmt.relation
            col_names = [a.sval for a in stmt.attlist] if stmt.attlist else None
            only = True
        else:
            q = stmt.query
            if (not isinstance(q, ast.SelectStmt) or not q.fromClause or len(q.fromClause) != 1
                    or not isinstance(q.fromClause[0], ast.RangeVar) or q.targetList is None):
                raise ServerError("0A000", "the fake walsender answers COPY (SELECT columns FROM table [WHERE …])",
                                  detail=f"Statement: {sql.strip()[:200]}")
            rv = q.fromClause[0]
            only = not rv.inh
            col_names = []
            for target in q.targetList:
                val = target.val
                if isinstance(val, ast.ColumnRef) and isinstance(val.fields[-1], ast.A_Star):
                    col_names = None
                    break
                if not isinstance(val, ast.ColumnRef):
                    raise ServerError("0A000", "the fake walsender copies plain columns",
                                      detail=f"Select item: {RawStream()(val)}")
                col_names.append(val.fields[-1].sval)
        schema, name = rv.schemaname or "public", rv.relname
        t = self.table_by_name(schema, name)
        if t is None:
            raise ServerError("42P01", f'relation "{schema}.{name}" does not exist')
        if stmt.relation is None and stmt.query.whereClause is not None:
            try:
                where = parse_expression(RawStream()(stmt.query.whereClause),
                                         {c.name: c.type.name for c in t.columns})
            except ExpressionError as exc:
                raise ServerError("0A000", "the fake walsender cannot evaluate this WHERE clause",
                                  detail=str(exc)) from None
        if col_names is None:
            columns = tuple(c for c in t.columns if c.generated is None) if stmt.relation is not None else t.columns
        else:
            picked = []
            for cname in col_names:
                col = t.column(cname)
                if col is None:
                    raise ServerError("42703", f'column "{cname}" of relation "{t.name}" does not exist')
                picked.append(col)
            columns = tuple(picked)
        # COPY t / SELECT … FROM ONLY t: the table's own rows; FROM t: its partitions' too
        sources = (t,) if only and t.relkind != "p" else self.scenario.leaves(t)
        return CopyOut(t, columns, binary, sources, where)


def setting(scenario: Scenario, persona: Persona, version: str, name: str, limits: Limits | None = None) -> str | None:
    """A setting's value as ``SHOW`` and ``current_setting()`` give it, or None. *limits*:
    those in force when not the scenario's."""
    return _Answerer(scenario, persona, version, limits).setting(name)


def answer(scenario: Scenario, persona: Persona, version: str, sql: str, in_transaction: bool = False,
           limits: Limits | None = None) -> Answer:
    """The answer to one SQL statement, or ServerError."""
    return _Answerer(scenario, persona, version, limits).answer(sql, in_transaction)


# ------------------------------------------------------------------------------------------
# COPY row encoders (table sync)
# ------------------------------------------------------------------------------------------

_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b",
                               "\f": "\\f", "\v": "\\v"})


def copy_text_row(columns: tuple[Column, ...], row: dict[str, Any]) -> bytes:
    """One row of COPY text format: tab-separated, ``\\N`` for NULL, backslash escapes."""
    fields = []
    for c in columns:
        t = c.type.text(row.get(c.name))
        fields.append("\\N" if t is None else t.translate(_COPY_ESCAPES))
    return ("\t".join(fields) + "\n").encode("utf-8", "surrogateescape")


COPY_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_BINARY_TRAILER = b"\xff\xff"


def copy_binary_row(columns: tuple[Column, ...], row: dict[str, Any]) -> bytes:
    """One tuple of COPY binary format: Int16 field count, then Int32 length + bytes (-1 NULL)."""
    out = [len(columns).to_bytes(2, "big")]
    for c in columns:
        v = row.get(c.name)
        if v is None:
            out.append(b"\xff\xff\xff\xff")
            continue
        b = c.type.binary(v)
        if b is None:
            raise ServerError("42883", f"no binary output function available for type {c.type.name}")
        out.append(len(b).to_bytes(4, "big") + b)
    return b"".join(out)
