"""The connection's extended query protocol: Parse, Bind, Describe, Execute, Close, Flush,
Sync (docs: "Extended Query"), over the same SQL surface as the simple Query.

A bound statement takes the simple query's path: its ``$n`` are replaced by the values'
literals (cast to their declared types) and the text is answered as a Query's statement
would be. A read-only SELECT is answered at Bind and handed out by Execute, row limit by
row limit (PortalSuspended); a statement with effects (publication DDL, slot functions,
transaction control, SET) runs at its first Execute, its columns known from the parse tree
for Describe. The messages up to Sync are one implicit transaction unless a BEGIN opens a
block (postgres.c, exec_execute_message): an error before Sync undoes its publication DDL;
slot functions are not transactional, their effects stay, and creating a logical slot after
publication DDL in the same transaction is 25001, as on a real server (logical.c).

After an error every message up to Sync is skipped, and Sync answers ReadyForQuery
(postgres.c, PostgresMain: ``ignore_till_sync``). A walsender refuses the protocol on a
replication connection: Parse, Bind, Describe, Execute and Close get 08P01 "extended query
protocol not supported in a replication connection" (postgres.c, forbidden_in_wal_sender),
Flush and Sync are served.

A mixin of :class:`~pgwire_spec.walsender.core.Connection`; it runs on its state."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pglast.ast import SelectStmt

from ..lsn import format_lsn
from ..wire import (
    Bind,
    BindComplete,
    CloseComplete,
    CommandComplete,
    DataRow,
    Describe,
    Execute,
    Flush,
    NoData,
    ParameterDescription,
    ParameterStatus,
    Parse,
    ParseComplete,
    PortalSuspended,
    Sync,
)
from ..wire import Close as CloseMessage
from . import _sql
from ._commands import MAX_SQL_INLINE
from ._engine import (
    bind_parameters,
    parameter_types,
    parse_one,
    result_columns,
    returns_rows,
    slot_function_called,
)
from .personas import ServerError
from .types import resolve_type

if TYPE_CHECKING:
    from .core import ServerState

__all__ = ["EXTENDED_MESSAGES", "receive_binary"]

#: The frontend messages of the extended query protocol.
EXTENDED_MESSAGES: tuple[type, ...] = (Parse, Bind, Describe, Execute, CloseMessage, Flush, Sync)

_NOT_IN_WALSENDER = "extended query protocol not supported in a replication connection"


# ------------------------------------------------------------------------------------------
# Binary parameters: each type's receive function, to the text the statement takes
# ------------------------------------------------------------------------------------------


def _int(fmt: str) -> Callable[[bytes], str]:
    return lambda b: str(struct.unpack(fmt, b)[0])


def _float(fmt: str) -> Callable[[bytes], str]:
    return lambda b: repr(struct.unpack(fmt, b)[0])


def _utf8(b: bytes) -> str:
    return b.decode("utf-8")


#: type OID -> (the value's length in bytes, or None for any; its text). int2recv,
#: int4recv, int8recv, oidrecv, float4recv, float8recv, boolrecv, textrecv (text, varchar,
#: name, bpchar, "char"), bytearecv, pg_lsn_recv, uuid_recv.
_RECEIVE: dict[int, tuple[int | None, Callable[[bytes], str]]] = {
    21: (2, _int(">h")), 23: (4, _int(">i")), 20: (8, _int(">q")), 26: (4, _int(">I")),
    700: (4, _float(">f")), 701: (8, _float(">d")), 16: (1, lambda b: "t" if b != b"\x00" else "f"),
    25: (None, _utf8), 1043: (None, _utf8), 19: (None, _utf8), 1042: (None, _utf8), 18: (None, _utf8),
    17: (None, lambda b: "\\x" + b.hex()),
    3220: (8, lambda b: format_lsn(struct.unpack(">Q", b)[0])), 2950: (16, lambda b: str(uuid.UUID(bytes=b))),
}


def receive_binary(oid: int, value: bytes, number: int) -> str:
    """A binary parameter's text, or the ServerError a real server's receive function gives."""
    entry = _RECEIVE.get(oid)
    if entry is None:
        raise ServerError("0A000", f"the fake walsender cannot read bind parameter {number} in binary "
                                   f"(type {oid})", hint="Send it in text format.")
    length, text = entry
    if length is not None and len(value) != length:
        if len(value) < length:
            raise ServerError("08P01", "insufficient data left in message")
        raise ServerError("22P03", f"incorrect binary data format in bind parameter {number}")
    try:
        return text(value)
    except UnicodeDecodeError:
        raise ServerError("22021", 'invalid byte sequence for encoding "UTF8"') from None


# ------------------------------------------------------------------------------------------
# Statements and portals
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Statement:
    sql: str
    parameter_types: tuple[int, ...]
    returns_rows: bool
    #: A slot function with side effects it calls (pg_create_logical_replication_slot …).
    slot_function: str | None = None
    #: Runs at Execute, not at Bind: it has effects (see the module docstring).
    effects: bool = False
    #: Its result columns from the parse tree, when every type is known there (None: ask
    #: the engine).
    columns: tuple[tuple[str, int], ...] | None = None


@dataclass(slots=True)
class _Portal:
    #: The answer; None until a statement with effects has run (its first Execute).
    answer: Any
    #: One format code per result column.
    formats: tuple[int, ...]
    sent: int = 0
    done: bool = False
    #: The bound text of a statement with effects, run at the first Execute.
    deferred: str | None = None
    #: Its result columns (None: it returns no rows), for a Describe before it runs.
    columns: tuple[tuple[str, int], ...] | None = None
    #: What RowDescription says of each besides (empty: the defaults).
    fields: tuple[_sql.FieldInfo, ...] = ()


def _formats(codes: tuple[int, ...], count: int, what: str) -> tuple[int, ...]:
    """A Bind's format codes for *count* items: none (all text), one for all, or one each."""
    if len(codes) == 0:
        return (0,) * count
    if len(codes) == 1:
        return codes * count
    if len(codes) != count:
        raise ServerError("08P01", f"bind message has {len(codes)} {what} formats but "
                                   + (f"query has {count} columns" if what == "result" else f"{count} parameters"))
    return codes


class _Extended:
    server: ServerState

    def _extended(self, msg: Any, now: float) -> None:
        if isinstance(msg, Sync):
            self.skip_till_sync = False
            if self.tx == "I":
                self.portals.clear()  # an implicit transaction's portals end with it
                self.tx_undo = None  # and it commits
            self._ready()
            return
        if self.skip_till_sync or isinstance(msg, Flush):
            return
        try:
            if self.replication != "false":
                raise ServerError("08P01", _NOT_IN_WALSENDER)
            try:
                self._EXTENDED_HANDLERS[type(msg)](self, msg)
            except (ServerError, RecursionError):
                raise
            except Exception as exc:  # a bug of ours must not take the connection down
                raise ServerError("XX000", f"internal error of the fake walsender: {type(exc).__name__}: {exc}") from None
        except ServerError as err:
            self.send_error(err)
            self.skip_till_sync = True
            self._undo_writes()
            if self.tx == "T":
                self.tx = "E"

    def _check_aborted(self, sql: str) -> None:
        if self.tx == "E" and not _sql.ends_transaction(sql):
            raise ServerError("25P02", "current transaction is aborted, commands ignored until end of "
                                       "transaction block")

    def _parse(self, msg: Parse) -> None:
        if msg.statement and msg.statement in self.statements:
            raise ServerError("42P05", f'prepared statement "{msg.statement}" already exists')
        self._check_aborted(msg.sql)
        self._check_length(msg.sql, MAX_SQL_INLINE)  # parsed here, on the loop: the short ones only
        stmt = parse_one(msg.sql)
        major = self.server.persona.major
        types = parameter_types(stmt, msg.parameter_types, major)
        rows, slot_function = returns_rows(stmt), slot_function_called(stmt)
        columns = result_columns(stmt, major) if isinstance(stmt, SelectStmt) else None
        known = None if columns is None or any(oid is None for _, oid in columns) else \
            tuple((name, oid) for name, oid in columns if oid is not None)
        self.statements[msg.statement] = _Statement(msg.sql, types, rows, slot_function,
                                                    slot_function is not None or not rows, known)
        self.send(ParseComplete())

    def _statement_named(self, name: str) -> _Statement:
        found = self.statements.get(name)
        if found is None:
            raise ServerError("26000", f'prepared statement "{name}" does not exist' if name
                              else "unnamed prepared statement does not exist")
        return found

    def _portal_named(self, name: str) -> _Portal:
        found = self.portals.get(name)
        if found is None:
            raise ServerError("34000", f'portal "{name}" does not exist')
        return found

    def _bind(self, msg: Bind) -> None:
        stmt = self._statement_named(msg.statement)
        if msg.portal and msg.portal in self.portals:
            raise ServerError("42P03", f'portal "{msg.portal}" already exists')
        formats = _formats(msg.parameter_formats, len(msg.parameters), "parameter")
        if len(msg.parameters) != len(stmt.parameter_types):
            raise ServerError("08P01", f"bind message supplies {len(msg.parameters)} parameters, but prepared "
                                       f'statement "{msg.statement}" requires {len(stmt.parameter_types)}')
        values: list[str | None] = []
        for i, (value, fmt, oid) in enumerate(zip(msg.parameters, formats, stmt.parameter_types, strict=True)):
            if value is None:
                values.append(None)
            elif fmt == 1:
                values.append(receive_binary(oid, value, i + 1))
            elif fmt == 0:
                try:
                    values.append(value.decode("utf-8"))
                except UnicodeDecodeError:
                    raise ServerError("22021", 'invalid byte sequence for encoding "UTF8"') from None
            else:
                raise ServerError("08P01", f"unsupported format code: {fmt}")
        self._check_aborted(stmt.sql)
        bound = bind_parameters(stmt.sql, values, stmt.parameter_types)
        if stmt.effects:
            if stmt.returns_rows and stmt.columns is None:
                raise ServerError("0A000", f"the fake walsender cannot tell the columns of a statement calling "
                                           f"{stmt.slot_function} before it runs",
                                  hint="Name the function's columns (SELECT * FROM the function).")
            answer, columns, fields = None, stmt.columns if stmt.returns_rows else None, ()
        else:
            answer = self._evaluate(bound)
            columns = answer.columns if isinstance(answer, _sql.Result) else None
            fields = answer.fields if isinstance(answer, _sql.Result) else ()
        result_formats = _formats(msg.result_formats, len(columns or ()), "result")
        if any(f not in (0, 1) for f in result_formats):
            raise ServerError("08P01", f"unsupported format code: {next(f for f in result_formats if f not in (0, 1))}")
        self.portals[msg.portal] = _Portal(answer, result_formats, deferred=bound if stmt.effects else None,
                                           columns=columns, fields=fields)
        self.send(BindComplete())

    def _describe(self, msg: Describe) -> None:
        if msg.kind == "S":
            stmt = self._statement_named(msg.name)
            self.send(ParameterDescription(stmt.parameter_types))
            if not stmt.returns_rows:
                self.send(NoData())
                return
            # The columns of a statement not yet bound: its answer with NULL parameters
            # (the SELECTs clients describe read catalogs; they change nothing), or, for
            # one with effects, the parse tree's.
            if stmt.effects:
                if stmt.columns is None:
                    raise ServerError("0A000", f"the fake walsender cannot tell the columns of a statement "
                                               f"calling {stmt.slot_function} before it runs",
                                      hint="Name the function's columns (SELECT * FROM the function).")
                self.send(_sql.row_description(stmt.columns))
                return
            answer = self._evaluate(bind_parameters(stmt.sql, [None] * len(stmt.parameter_types),
                                                    stmt.parameter_types))
            if isinstance(answer, _sql.Result):
                self.send(_sql.row_description(answer.columns, answer.fields))
            else:
                self.send(NoData())
            return
        portal = self._portal_named(msg.name)
        if portal.columns is not None:
            self.send(_sql.row_description(portal.columns, portal.fields, portal.formats))
        else:
            self.send(NoData())

    def _execute(self, msg: Execute) -> None:
        portal = self._portal_named(msg.portal)
        if portal.deferred is not None:
            sql, portal.deferred = portal.deferred, None
            portal.answer = self._evaluate(sql)
            if isinstance(portal.answer, _sql.Result) and len(portal.answer.columns) != len(portal.formats):
                raise ServerError("XX000", "internal error of the fake walsender: the statement's columns differ "
                                           "from its parse tree's")
        answer = portal.answer
        if not isinstance(answer, _sql.Result):
            if not portal.done:
                portal.done = True
                self._answer(answer)
            return
        if portal.done:
            # A portal run to its end: nothing more (pquery.c PortalRunSelect).
            self.send(CommandComplete("SELECT 0" if answer.tag.startswith("SELECT") else answer.tag))
            return
        rows = answer.rows[portal.sent:] if msg.max_rows <= 0 else answer.rows[portal.sent:portal.sent + msg.max_rows]
        types = [resolve_type(oid) if fmt == 1 else None for (_, oid), fmt in zip(answer.columns, portal.formats,
                                                                                   strict=True)]
        for row in rows:
            self.send(DataRow(tuple(_value(v, t) for v, t in zip(row, types, strict=True))))
        portal.sent += len(rows)
        if portal.sent < len(answer.rows):
            self.send(PortalSuspended())
            return
        portal.done = True
        self.send(CommandComplete(f"SELECT {len(rows)}" if answer.tag.startswith("SELECT") else answer.tag))
        for name, value in answer.parameters:
            self.send(ParameterStatus(name, value))

    def _close(self, msg: CloseMessage) -> None:
        # Closing what does not exist is not an error (docs: "Extended Query").
        (self.statements if msg.kind == "S" else self.portals).pop(msg.name, None)
        self.send(CloseComplete())

    _EXTENDED_HANDLERS: dict[type, Callable[[Any, Any], None]] = {
        Parse: _parse, Bind: _bind, Describe: _describe, Execute: _execute, CloseMessage: _close,
    }


def _value(v: str | bytes | None, binary: Any) -> bytes | None:
    if v is None:
        return None
    if binary is None:
        return v if isinstance(v, bytes) else v.encode()
    out = binary.binary(v)
    if out is None:
        raise ServerError("0A000", f"the fake walsender cannot send type {binary.name} in binary",
                          hint="Ask for this column in text format.")
    return bytes(out)
