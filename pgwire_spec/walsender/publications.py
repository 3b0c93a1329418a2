"""Publications as PostgreSQL declares them, and the SQL expressions they hold.

A scenario's publications read like ``CREATE PUBLICATION`` (the docs' "CREATE PUBLICATION"
reference page)::

    publications:
      pub_all: all                                   # FOR ALL TABLES
      pub_some: [public.accounts, public.items]      # FOR TABLE a, b
      pub_rich:
        tables:
          - public.accounts                          # the whole table
          - {table: public.orders, columns: [id, total], where: "total > 100 AND status IN ('paid', 'sent')"}
        schemas: [sales]                             # FOR TABLES IN SCHEMA sales (15+)
        publish: [insert, update]                    # WITH (publish = 'insert, update')
        publish_via_partition_root: true             # 13+
        publish_generated_columns: stored            # 18

Row filters and generated-column expressions are parsed with PostgreSQL's own parser
(pglast) and evaluated the way the server evaluates them for the forms supported here:
comparisons (``= <> != < <= > >=``), ``AND``/``OR``/``NOT`` with SQL's three-valued logic,
``IS [NOT] NULL``, ``[NOT] IN (…)``, ``[NOT] BETWEEN``, casts of constants, arithmetic
(``+ - * / %``) and ``||`` on the row's columns and constants. Anything else is an
:class:`ExpressionError` naming the sub-expression that cannot be evaluated.

How several publications combine for one table (the publish-as relation, the actions, the
row filters OR-ed per action, one column list) is :mod:`._relsync`'s job, after pgoutput.c's
``get_rel_sync_entry``, ``pgoutput_row_filter_init`` and ``pgoutput_column_list_init``.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import PgWireError

__all__ = [
    "ACTIONS",
    "GENERATED_COLUMNS",
    "Expression",
    "ExpressionError",
    "Publication",
    "PublishedTable",
    "parse_expression",
]

#: The ``publish`` actions (the docs' CREATE PUBLICATION, "publish").
ACTIONS = frozenset({"insert", "update", "delete", "truncate"})
#: ``publish_generated_columns`` values (PostgreSQL 18).
GENERATED_COLUMNS = ("none", "stored")


class ExpressionError(PgWireError, ValueError):
    """A row filter or generation expression the fake cannot parse or evaluate."""

    def __init__(self, expected: str, found: str) -> None:
        self.expected = expected
        self.found = found
        super().__init__(f"expected {expected}, found {found}")


# ------------------------------------------------------------------------------------------
# Expressions
# ------------------------------------------------------------------------------------------

_NUMERIC_TYPES = frozenset({"int2", "int4", "int8", "oid", "numeric", "float4", "float8",
                            "smallint", "integer", "bigint", "real", "double precision", "decimal"})
_BOOL_TYPES = frozenset({"bool", "boolean"})
#: Collations whose text order is the code point order (pg_collation: C, POSIX, ucs_basic).
_CODE_POINT_COLLATIONS = frozenset({"C", "POSIX", "ucs_basic"})
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: bool(a == b),
    "<>": lambda a, b: bool(a != b),
    "!=": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if not (_is_int(a) and _is_int(b)) else _int_div(a, b),
    "%": lambda a, b: a - b * _int_div(a, b) if _is_int(a) and _is_int(b) else a % b,
}


def _is_int(v: Any) -> bool:
    return isinstance(v, decimal.Decimal) and v == v.to_integral_value()


def _int_div(a: Any, b: Any) -> Any:
    # integer division truncates toward zero (int4div in PostgreSQL's int.c)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def typed(type_name: str, value: Any) -> Any:
    """A column value as the evaluator compares it: numbers as Decimal, booleans as bool,
    anything else as its text form (None stays NULL)."""
    if value is None:
        return None
    if type_name in _NUMERIC_TYPES:
        if isinstance(value, bool):
            return decimal.Decimal(int(value))
        try:
            return decimal.Decimal(str(value))
        except decimal.InvalidOperation:
            return str(value)
    if type_name in _BOOL_TYPES:
        if isinstance(value, str):
            return value.strip().lower() in ("t", "true", "yes", "on", "1")
        return bool(value)
    return value if isinstance(value, str) else str(value)


def _coerce_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """An unknown-typed literal takes the other side's type, as the parser resolves it."""
    if isinstance(a, decimal.Decimal) and isinstance(b, str):
        try:
            return a, decimal.Decimal(b)
        except decimal.InvalidOperation:
            raise ExpressionError("a number", repr(b)) from None
    if isinstance(b, decimal.Decimal) and isinstance(a, str):
        return tuple(reversed(_coerce_pair(b, a)))  # type: ignore[return-value]
    if isinstance(a, bool) and isinstance(b, str):
        return a, typed("bool", b)
    if isinstance(b, bool) and isinstance(a, str):
        return typed("bool", a), b
    return a, b


#: A row as the evaluator sees it: column name -> value already :func:`typed`.
TypedRow = Mapping[str, Any]


class _Node:
    """One parsed sub-expression: its evaluation, its text as pg_get_expr prints it, and
    what the parser knows of its type (a column's type, or the kind of a literal: int,
    float, unknown for a quoted one, bool) with the literal itself."""

    __slots__ = ("eval", "text", "sqltype", "literal")

    def __init__(self, ev: Callable[[TypedRow], Any], text: str, sqltype: str | None = None,
                 literal: str | None = None) -> None:
        self.eval = ev
        self.text = text
        self.sqltype = sqltype
        self.literal = literal


_INT_TYPES = frozenset({"int2", "int4", "int8", "smallint", "integer", "bigint"})
_FLOAT_TYPES = {"float8": "double precision", "double precision": "double precision", "float4": "real",
                "real": "real"}
_CHAR_TYPES = frozenset({"varchar", "character varying"})


def _operand_texts(left: _Node, right: _Node) -> tuple[str, str]:
    """The operands of a binary operator as ruleutils.c prints them once the parser has
    coerced a literal to the column's type (or the column to the literal's)."""

    def side(node: _Node, other: _Node) -> str:
        t = other.sqltype
        if node.literal is None:
            if node.sqltype in _INT_TYPES and other.sqltype == "float":
                return f"({node.text})::numeric"      # int4 vs 1.5: the column is cast
            if node.sqltype in _CHAR_TYPES and other.sqltype in ("unknown", "text"):
                return f"({node.text})::text"
            return node.text
        lit, kind = node.literal, node.sqltype
        if t in ("numeric", "decimal"):
            if kind == "int":
                return f"({lit})::numeric" if not lit.startswith("-") else f"'{lit}'::numeric"
            if kind == "unknown":
                return lit if "." in lit and lit.lstrip("-").replace(".", "", 1).isdigit() else f"'{lit}'::numeric"
        if t in _INT_TYPES and kind == "int" and lit.startswith("-"):
            return f"'{lit}'::{'integer' if -(1 << 31) <= int(lit) else 'bigint'}"
        if t in _FLOAT_TYPES and kind in ("int", "float"):
            return f"({lit})::{_FLOAT_TYPES[t]}" if kind == "int" and not lit.startswith("-") \
                else f"'{lit}'::{_FLOAT_TYPES[t]}"
        return node.text

    return side(left, right), side(right, left)


def _deparse_node(node: Any) -> str:
    try:
        from pglast.stream import RawStream

        return str(RawStream()(node))
    except Exception:  # pragma: no cover - deparse of a node pglast itself produced
        return type(node).__name__


class _Compiler:
    """pglast nodes -> evaluators; *types* maps each known column to its type name."""

    def __init__(self, types: Mapping[str, str]) -> None:
        self.types = types
        self.columns: set[str] = set()

    def unsupported(self, node: Any, why: str = "") -> ExpressionError:
        what = _deparse_node(node)
        return ExpressionError(
            "an expression the fake evaluates (comparisons, AND/OR/NOT, IS NULL, IN, BETWEEN, "
            "arithmetic and || on columns and constants)",
            f"{what!r}" + (f" ({why})" if why else ""))

    def node(self, node: Any) -> _Node:
        from pglast import ast, enums

        if isinstance(node, ast.ColumnRef):
            names = [getattr(f, "sval", None) for f in node.fields]
            if any(n is None for n in names):
                raise self.unsupported(node, "a column name")
            name = names[-1]
            assert isinstance(name, str)
            if name not in self.types:
                raise ExpressionError(f"a column of the table ({', '.join(self.types)})", repr(name))
            self.columns.add(name)
            return _Node(lambda row, n=name: row.get(n), _quote_ident(name), self.types[name])
        if isinstance(node, ast.A_Const):
            if node.isnull:
                return _Node(lambda row: None, "NULL")
            v = node.val
            if isinstance(v, ast.Integer):
                d = decimal.Decimal(v.ival)
                text = str(v.ival) if v.ival >= 0 else f"'{v.ival}'::integer"
                return _Node(lambda row, d=d: d, text, "int", str(v.ival))
            if isinstance(v, ast.Float):
                d = decimal.Decimal(v.fval)
                return _Node(lambda row, d=d: d, v.fval, "float", v.fval)
            if isinstance(v, ast.Boolean):
                b = bool(v.boolval)
                return _Node(lambda row, b=b: b, "true" if b else "false", "bool")
            if isinstance(v, ast.String):
                s = v.sval
                return _Node(lambda row, s=s: s, "'" + s.replace("'", "''") + "'::text", "unknown", s)
            raise self.unsupported(node)
        if isinstance(node, ast.TypeCast):
            inner = self.node(node.arg)
            tname = getattr(node.typeName.names[-1], "sval", "")
            return _Node(lambda row, f=inner.eval, t=tname: typed(t, f(row)), f"({inner.text})::{tname}")
        if isinstance(node, ast.CollateClause):
            # Text is compared by code point: the C collation's order for UTF-8 (and the
            # fake database's own collation); any other would order text differently.
            name = ".".join(getattr(n, "sval", "") for n in node.collname)
            if name.removeprefix("pg_catalog.") not in _CODE_POINT_COLLATIONS:
                raise ExpressionError(
                    'a collation the fake orders text by ("C", "POSIX" or "ucs_basic": by code point; '
                    "it does not implement the ordering of locale collations)", repr(name))
            inner = self.node(node.arg)
            short = name.removeprefix("pg_catalog.")
            return _Node(inner.eval, f"({inner.text} COLLATE {_quote_ident(short)})", inner.sqltype)
        if isinstance(node, ast.BoolExpr):
            args = [self.node(a) for a in node.args]
            if node.boolop == enums.BoolExprType.NOT_EXPR:
                a0 = args[0]

                def not_(row: TypedRow, f: Callable[[TypedRow], Any] = a0.eval) -> Any:
                    v = f(row)
                    return None if v is None else not v

                return _Node(not_, f"(NOT {a0.text})")
            is_and = node.boolop == enums.BoolExprType.AND_EXPR
            fs = [a.eval for a in args]

            def bool_(row: TypedRow) -> Any:
                unknown = False
                for f in fs:
                    v = f(row)
                    if v is None:
                        unknown = True
                    elif bool(v) != is_and:
                        return not is_and
                return None if unknown else is_and

            joiner = " AND " if is_and else " OR "
            return _Node(bool_, "(" + joiner.join(a.text for a in args) + ")")
        if isinstance(node, ast.NullTest):
            a = self.node(node.arg)
            is_null = node.nulltesttype == enums.NullTestType.IS_NULL
            return _Node(lambda row, f=a.eval: (f(row) is None) == is_null,
                         f"({a.text} IS {'NULL' if is_null else 'NOT NULL'})")
        if isinstance(node, ast.A_Expr):
            return self.a_expr(node)
        raise self.unsupported(node)

    def a_expr(self, node: Any) -> _Node:
        from pglast import enums

        kind = node.kind
        op = getattr(node.name[-1], "sval", "") if node.name else ""
        if kind == enums.A_Expr_Kind.AEXPR_OP and op in _COMPARE:
            left, right = self.node(node.lexpr), self.node(node.rexpr)
            cmp = _COMPARE[op]

            def compare(row: TypedRow) -> Any:
                a, b = left.eval(row), right.eval(row)
                if a is None or b is None:
                    return None
                a, b = _coerce_pair(a, b)
                try:
                    return cmp(a, b)
                except TypeError:
                    raise ExpressionError(f"comparable values for {op}", f"{a!r} and {b!r}") from None

            lt, rt = _operand_texts(left, right)
            return _Node(compare, f"({lt} {'<>' if op == '!=' else op} {rt})", "bool")
        if kind == enums.A_Expr_Kind.AEXPR_OP and (op in _ARITH or op == "||") and node.lexpr is not None:
            left, right = self.node(node.lexpr), self.node(node.rexpr)

            def arith(row: TypedRow) -> Any:
                a, b = left.eval(row), right.eval(row)
                if a is None or b is None:
                    return None
                if op == "||":
                    return _text(a) + _text(b)
                a, b = _coerce_pair(a, b)
                try:
                    return _ARITH[op](a, b)
                except (TypeError, decimal.InvalidOperation, ZeroDivisionError) as exc:
                    raise ExpressionError(f"numbers for {op}", f"{a!r} and {b!r} ({exc})") from None

            lt, rt = _operand_texts(left, right)
            rtype = "text" if op == "||" else (left.sqltype if left.literal is None else right.sqltype)
            return _Node(arith, f"({lt} {op} {rt})", rtype)
        if kind == enums.A_Expr_Kind.AEXPR_OP and op == "-" and node.lexpr is None:
            right = self.node(node.rexpr)
            return _Node(lambda row, f=right.eval: None if f(row) is None else -f(row), f"(- {right.text})")
        if kind == enums.A_Expr_Kind.AEXPR_IN:
            left = self.node(node.lexpr)
            items = [self.node(x) for x in node.rexpr]
            negate = op == "<>"

            def in_(row: TypedRow) -> Any:
                a = left.eval(row)
                if a is None:
                    return None
                unknown = False
                for it in items:
                    b = it.eval(row)
                    if b is None:
                        unknown = True
                        continue
                    x, y = _coerce_pair(a, b)
                    if x == y:
                        return not negate
                return None if unknown else negate

            arr = "ARRAY[" + ", ".join(i.text for i in items) + "]"
            return _Node(in_, f"({left.text} {'<> ALL' if negate else '= ANY'} ({arr}))")
        if kind in (enums.A_Expr_Kind.AEXPR_BETWEEN, enums.A_Expr_Kind.AEXPR_NOT_BETWEEN):
            left = self.node(node.lexpr)
            lo, hi = (self.node(x) for x in node.rexpr)
            negate = kind == enums.A_Expr_Kind.AEXPR_NOT_BETWEEN

            def between(row: TypedRow) -> Any:
                a, b, c = left.eval(row), lo.eval(row), hi.eval(row)
                if a is None or b is None or c is None:
                    return None
                a1, b1 = _coerce_pair(a, b)
                a2, c1 = _coerce_pair(a, c)
                inside = b1 <= a1 and a2 <= c1
                return inside != negate

            if negate:
                text = f"(({left.text} < {lo.text}) OR ({left.text} > {hi.text}))"
            else:
                text = f"(({left.text} >= {lo.text}) AND ({left.text} <= {hi.text}))"
            return _Node(between, text)
        raise self.unsupported(node)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _quote_ident(name: str) -> str:
    import re

    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class Expression:
    """A SQL expression over one table's columns (a row filter, a generation expression).

    ``text`` is what the scenario wrote; ``columns`` the columns it reads; ``deparsed``
    its text as ``pg_get_expr`` prints it (ruleutils.c: every operator parenthesised,
    literals with the casts the parser added) for the supported forms."""

    text: str
    columns: frozenset[str]
    deparsed: str
    _eval: Callable[[TypedRow], Any] = field(compare=False, repr=False)
    _types: tuple[tuple[str, str], ...] = field(compare=False, repr=False, default=())

    def value(self, row: Mapping[str, Any]) -> Any:
        """The expression's value on *row* (column -> scenario value); None is NULL."""
        types = dict(self._types)
        return self._eval({c: typed(types.get(c, "text"), row.get(c)) for c in self.columns})

    def matches(self, row: Mapping[str, Any]) -> bool:
        """True when the row passes the filter (NULL counts as false, as in WHERE)."""
        return self.value(row) is True


def parse_expression(text: str, types: Mapping[str, str]) -> Expression:
    """Parse *text* (SQL) as an expression over columns *types* (name -> type name)."""
    from pglast import parse_sql
    from pglast.parser import ParseError

    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("a SQL expression", repr(text))
    try:
        stmts = parse_sql(f"SELECT 1 WHERE {text}")
    except ParseError as exc:
        raise ExpressionError("a SQL expression", f"{text!r} ({exc})") from None
    where = getattr(stmts[0].stmt, "whereClause", None) if len(stmts) == 1 else None
    if where is None or getattr(stmts[0].stmt, "targetList", None) is None or len(stmts[0].stmt.targetList) != 1:
        raise ExpressionError("one SQL expression", repr(text))
    comp = _Compiler(types)
    root = comp.node(where)
    deparsed = root.text
    return Expression(text, frozenset(comp.columns), deparsed, root.eval, tuple(sorted(types.items())))


# ------------------------------------------------------------------------------------------
# Publications
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PublishedTable:
    """One table of ``FOR TABLE``: its column list and row filter (both 15+)."""

    table: str
    #: The column list in the order written; None: every column.
    columns: tuple[str, ...] | None = None
    #: The row filter (``WHERE (…)``); None: every row.
    where: Expression | None = None


@dataclass(frozen=True, slots=True)
class Publication:
    name: str
    #: Qualified names of the tables listed ``FOR TABLE``; None for ``FOR ALL TABLES``.
    tables: tuple[str, ...] | None
    actions: frozenset[str] = ACTIONS
    #: ``FOR TABLES IN SCHEMA`` (15+).
    schemas: tuple[str, ...] = ()
    #: Column lists and row filters of the listed tables (tables without either may be absent).
    entries: tuple[PublishedTable, ...] = ()
    #: ``publish_via_partition_root`` (13+).
    via_root: bool = False
    #: ``publish_generated_columns`` (18): none | stored.
    generated_columns: str = "none"

    @property
    def all_tables(self) -> bool:
        return self.tables is None

    def lists(self, table: str) -> bool:
        """The table is named ``FOR TABLE`` (not through ALL TABLES or a schema)."""
        return self.tables is not None and table in self.tables

    def in_schema(self, table: str) -> bool:
        return table.rpartition(".")[0] in self.schemas

    def includes(self, table: str) -> bool:
        """The table itself is published (ALL TABLES, FOR TABLE or TABLES IN SCHEMA);
        partitions published through an ancestor are :mod:`._relsync`'s business."""
        return self.tables is None or table in self.tables or self.in_schema(table)

    def publishes(self, table: str, action: str) -> bool:
        return action in self.actions and self.includes(table)

    def entry(self, table: str) -> PublishedTable | None:
        """The column list and row filter of a table listed ``FOR TABLE``."""
        if not self.lists(table):
            return None
        for e in self.entries:
            if e.table == table:
                return e
        return PublishedTable(table)
