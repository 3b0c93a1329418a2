"""The connection's commands: simple queries (SQL answered from the scenario, COPY) and the
replication commands (IDENTIFY_SYSTEM, SHOW, TIMELINE_HISTORY, the slot commands).

A mixin of :class:`~pgwire_spec.walsender.core.Connection`; it runs on its state."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CommandSyntaxError, OptionError
from ..lsn import format_lsn
from ..replication import commands as rc
from ..wire import (
    CommandComplete,
    CopyData,
    CopyDone,
    CopyOutResponse,
    DataRow,
    EmptyQueryResponse,
    ParameterStatus,
)
from . import _sql
from ._base import Close, Compute, SlotState
from ._engine import truncated_identifiers
from .personas import ServerError
from .scenario import Limits
from .stream import CommandSource

if TYPE_CHECKING:
    from .core import ServerState


#: Statements longer than this (characters) are parsed and answered off the event loop, in
#: a worker (the core's Compute action): PostgreSQL's parser through pglast and the SQL
#: engine's walks over the tree cost ~15 µs per character of a long list (a 50,000-value
#: IN list ~4 s), which would hold every other connection of the server meanwhile.
MAX_SQL_INLINE = 1 << 16

#: The longest plain SQL statement the fake answers by default (characters): longer is
#: refused unread with 0A000 naming the cap. PostgreSQL's own bound is the message's,
#: 1 GB (MaxAllocSize); the fake's (``Limits.max_sql_length``, ``serve --max-sql-length``)
#: is lower so that one statement's parse stays bounded in time (``Limits.sql_timeout``).
MAX_SQL_ANSWERED = Limits().max_sql_length


@dataclass(frozen=True, slots=True)
class _Evaluated:
    """What a worker hands back for one statement: the identifiers the scanner cut, and
    the answer or the error."""

    truncated: tuple[tuple[str, str], ...]
    answer: Any
    error: ServerError | None


class _Commands:
    server: ServerState
    tx_undo: tuple[Any, ...] | None
    snapshot_after_history: bool | None
    compute_due: Compute | None
    close_action: Close | None
    #: The statements of a simple Query still to run while one is answered off the loop,
    #: and the publications before it (what its DDL is undone to).
    statements_left: Iterator[str] | None = None
    compute_before: tuple[Any, ...] | None = None

    # -- queries ---------------------------------------------------------------------------
    def _query(self, sql: str, now: float) -> None:
        self.statements_left = iter(_sql.split_statements(sql))
        self._run_statements(now)

    def _run_statements(self, now: float) -> None:
        """Run the Query's statements in order until one's answer is computed off the loop
        (:meth:`_computed` goes on after it), one starts streaming, or one fails."""
        assert self.statements_left is not None
        for stmt in self.statements_left:
            try:
                started = self._guarded(self._one, stmt, now)
            except ServerError as err:
                if self._failed(err):
                    return
                break
            if self.compute_due is not None:
                return
            if started:
                self.statements_left = None
                self.tx_undo = None  # what came before in the Query commits
                return  # START_REPLICATION: ReadyForQuery comes when the stream ends
        self._end_query()

    def _one(self, stmt: str, now: float) -> bool:
        if self.tx == "E" and not _sql.ends_transaction(stmt):
            raise ServerError("25P02", "current transaction is aborted, commands ignored until end "
                                       "of transaction block")
        return self._statement(stmt, now)

    @staticmethod
    def _guarded(run: Callable[..., Any], *args: Any) -> Any:
        try:
            return run(*args)
        except (ServerError, RecursionError):
            raise
        except Exception as exc:  # a bug of ours must not take the connection down
            raise ServerError("XX000", f"internal error of the fake walsender: "
                                       f"{type(exc).__name__}: {exc}") from None

    def _failed(self, err: ServerError) -> bool:
        """Report a statement's error; True when it ends the connection (FATAL)."""
        self.send_error(err)
        self._undo_writes()
        if self.tx == "T":
            self.tx = "E"
        if err.severity in ("FATAL", "PANIC"):
            self.statements_left = None
            self.close_action = Close()
            return True
        return False

    def _end_query(self) -> None:
        self.statements_left = None
        if self.tx == "I":
            self.tx_undo = None  # the Query's implicit transaction commits
        self._ready()

    def _computed(self, result: object, now: float) -> None:
        """A statement's answer from the worker: sent, then the Query's next statements."""
        assert isinstance(result, _Evaluated) and self.compute_before is not None
        self._truncation_notices(result.truncated)
        before, self.compute_before = self.compute_before, None
        if self.tx_undo is None and self.server.scenario.publications is not before[0]:
            self.tx_undo = before
        try:
            if result.error is not None:
                raise result.error
            self._guarded(self._answer, result.answer)
        except ServerError as err:
            if not self._failed(err):
                self._end_query()
            return
        self._run_statements(now)

    def _undo_writes(self) -> None:
        """An error or ROLLBACK: the transaction's publication DDL is undone (slots are not
        transactional: slot functions' effects stay, as on a real server)."""
        if self.tx_undo is not None:
            self.server.restore_publications(self.tx_undo)
            self.tx_undo = None

    def _statement(self, stmt: str, now: float) -> bool:
        """Run one statement; True when it started streaming."""
        major = self.server.persona.major
        if self.replication != "false":
            try:
                cmd = rc.parse_command(stmt, server_major=major)
            except CommandSyntaxError as exc:
                self._truncation_notices(exc.truncated)
                raise ServerError("42601", "syntax error",
                                  detail=f"expected {exc.expected}, found {exc.found} at position {exc.position}") from None
            except OptionError as exc:
                raise ServerError("42601", str(exc)) from None
            if cmd is not None:
                self._truncation_notices(cmd.truncated)
                return self._command(cmd, now)
            if self.replication == "physical":
                raise ServerError("08P01", "cannot execute SQL commands in WAL sender for physical replication")
        if len(stmt) > MAX_SQL_INLINE or self.server.computing:
            self._compute(stmt)  # a long one; or, while a worker answers another, after it
        else:
            self._answer(self._evaluate(stmt))
        return False

    def _compute(self, stmt: str) -> None:
        """Have the statement answered off the loop (the core hands the shell a Compute)."""
        self._check_length(stmt)
        self.compute_before = self.server.publication_state()
        timeout = self.server.limits.sql_timeout
        in_transaction = self.tx != "I"

        def work(cancelled: Callable[[], bool]) -> _Evaluated:
            def checkpoint() -> None:
                if cancelled():
                    raise ServerError("57014", "canceling statement due to statement timeout",
                                      detail=f"The fake walsender answers a statement within {timeout:g} s "
                                             f"(sql_timeout).")
            truncated: tuple[tuple[str, str], ...] = ()
            try:
                checkpoint()
                truncated = tuple(truncated_identifiers(stmt))
                checkpoint()
                answer = self._guarded(self._answer_of, stmt, in_transaction, checkpoint)
                return _Evaluated(truncated, answer, None)
            except ServerError as err:
                return _Evaluated(truncated, None, err)
            except RecursionError:
                return _Evaluated(truncated, None, ServerError("54001", "stack depth limit exceeded"))

        self.compute_due = Compute(work, timeout)

    def _evaluate(self, stmt: str) -> Any:
        """The answer to one SQL statement (a simple query's, or a bound extended one's)."""
        self._check_length(stmt, MAX_SQL_INLINE)
        self._truncation_notices(truncated_identifiers(stmt))
        before = self.server.publication_state()
        try:
            return self._answer_of(stmt, self.tx != "I")
        finally:
            if self.tx_undo is None and self.server.scenario.publications is not before[0]:
                self.tx_undo = before

    def _answer_of(self, stmt: str, in_transaction: bool, checkpoint: Callable[[], None] | None = None) -> Any:
        try:
            return _sql.answer(self.server.scenario, self.server.persona, self.server.version, stmt, in_transaction,
                               self.server.limits)
        except _sql.NotAnswered:
            return self.server.sql.execute(self, stmt, checkpoint=checkpoint)  # type: ignore[arg-type]

    def _truncation_notices(self, truncated: Sequence[tuple[str, str]]) -> None:
        """The scanner's NOTICE for each identifier it cut (scansup.c truncate_identifier)."""
        for name, cut in truncated:
            self.send_error(ServerError("42622", f'identifier "{name}" will be truncated to "{cut}"',
                                        severity="NOTICE"))

    def _check_length(self, stmt: str, cap: int | None = None) -> None:
        limit = self.server.limits.max_sql_length if cap is None else min(cap, self.server.limits.max_sql_length)
        if len(stmt) > limit:
            # Refused unread: a longer statement's parse would be unbounded in time.
            where = "" if cap is None or limit < cap else " in the extended query protocol"
            raise ServerError("0A000", "the fake walsender does not answer this statement",
                              detail=f"A statement of {len(stmt):,} characters (it answers at most "
                                     f"{limit:,}{where}): {stmt[:100]}…",
                              hint=None if cap is None or limit < cap else "Send it as a simple Query.")

    def _answer(self, ans: Any) -> None:
        if isinstance(ans, _sql.Empty):
            self.send(EmptyQueryResponse())
        elif isinstance(ans, _sql.Command):
            for notice in ans.notices:
                self.send_error(notice)
            if ans.transaction == "begin":
                if self.tx == "T":
                    self.send_error(ServerError("25001", "there is already a transaction in progress",
                                                severity="WARNING"))
                self.tx = "T"
            elif ans.transaction == "commit":
                tag = "ROLLBACK" if self.tx == "E" else ans.tag
                if self.tx == "I":
                    self.send_error(ServerError("25P01", "there is no transaction in progress", severity="WARNING"))
                self.tx = "I"
                self.tx_undo = None
                self.snapshot_after_history = None
                self.send(CommandComplete(tag))
                return
            elif ans.transaction == "rollback":
                if self.tx == "I":
                    self.send_error(ServerError("25P01", "there is no transaction in progress", severity="WARNING"))
                self.tx = "I"
                self._undo_writes()
                self.snapshot_after_history = None
            self.send(CommandComplete(ans.tag))
        elif isinstance(ans, _sql.Result):
            self._result(ans.columns, ans.rows, ans.tag, ans.fields)
            for name, value in ans.parameters:
                self.send(ParameterStatus(name, value))
        elif isinstance(ans, _sql.CopyOut):
            self._copy_out(ans)

    def _tag(self, command: str) -> str:
        return self.server.persona.table.command_tag(command)

    def _result(self, columns: tuple[tuple[str, int], ...], rows: Any, tag: str,
                fields: tuple[_sql.FieldInfo, ...] = ()) -> None:
        self.send(_sql.row_description(columns, fields))
        for row in rows:
            self.send(DataRow(tuple(None if v is None else (v if isinstance(v, bytes) else v.encode())
                                    for v in row)))
        self.send(CommandComplete(tag))

    def _copy_out(self, ans: _sql.CopyOut) -> None:
        fmt = 1 if ans.binary else 0
        rows = [r for t in ans.sources for r in self.server.rows_as_of(t, self.server.reads_after_history(self.snapshot_after_history))]
        if ans.where is not None:
            rows = [r for r in rows if ans.where.matches(r)]
        if ans.binary:
            # Validate first: an error must come before CopyOutResponse.
            encoded = [_sql.copy_binary_row(ans.columns, r) for r in rows]
        else:
            encoded = [_sql.copy_text_row(ans.columns, r) for r in rows]
        self.send(CopyOutResponse(fmt, tuple(fmt for _ in ans.columns)))
        if ans.binary:
            if encoded:
                encoded[0] = _sql.COPY_BINARY_HEADER + encoded[0]
                for chunk in encoded:
                    self.send(CopyData(chunk))
                self.send(CopyData(_sql.COPY_BINARY_TRAILER))
            else:
                self.send(CopyData(_sql.COPY_BINARY_HEADER + _sql.COPY_BINARY_TRAILER))
        else:
            for chunk in encoded:
                self.send(CopyData(chunk))
        self.send(CopyDone())
        self.send(CommandComplete(f"COPY {len(rows)}"))

    # -- replication commands --------------------------------------------------------------
    def _command(self, cmd: Any, now: float) -> bool:
        with self.server.slots_lock:  # a worker may be running a slot function (see _compute)
            return self._replication_command(cmd, now)

    def _replication_command(self, cmd: Any, now: float) -> bool:
        persona_ = self.server.persona
        if cmd.keyword not in persona_.commands:
            raise ServerError("42601", "syntax error")
        extra = self.server.scenario.physical
        if extra is not None:
            # A scenario section that serves commands itself (physical replication and
            # BASE_BACKUP: pgwire_spec.physical.serve.PhysicalSource), through the public
            # interface of walsender.stream.
            source: CommandSource = extra
            handled = source.command(self, cmd, now)
            if handled is not None:
                return handled
        if isinstance(cmd, rc.IdentifySystem):
            sc = self.server.scenario.server
            self._result((("systemid", 25), ("timeline", persona_.timeline_type), ("xlogpos", 25), ("dbname", 25)),
                         [(sc.system_id, str(sc.timeline), format_lsn(self.server.wal_position()), self.database)],
                         self._tag("IDENTIFY_SYSTEM"))
            return False
        if isinstance(cmd, rc.Show):
            name = cmd.name
            value = _sql.answer(self.server.scenario, persona_, self.server.version, f"SHOW {name}",
                                limits=self.server.limits)
            assert isinstance(value, _sql.Result)
            self._result(value.columns, value.rows, self._tag("SHOW"))
            return False
        if isinstance(cmd, rc.TimelineHistory):
            self._timeline_history(cmd.timeline)
            return False
        if isinstance(cmd, rc.CreateReplicationSlot):
            self._create_slot(cmd)
            return False
        if isinstance(cmd, rc.DropReplicationSlot):
            return self._drop_slot(cmd)
        if isinstance(cmd, rc.ReadReplicationSlot):
            self._read_slot(cmd)
            return False
        if isinstance(cmd, rc.AlterReplicationSlot):
            self._alter_slot(cmd)
            return False
        if isinstance(cmd, rc.StartReplication):
            return self._start(cmd, now)
        raise ServerError("0A000", f"{cmd.keyword} is not served by the fake walsender",
                          hint="It serves logical replication: IDENTIFY_SYSTEM, SHOW, TIMELINE_HISTORY, the slot "
                               "commands and START_REPLICATION … LOGICAL.")

    def _timeline_history(self, tli: int) -> None:
        sc = self.server.scenario.server
        fname = f"{tli:08X}.history"
        if tli < 2 or tli > sc.timeline:
            raise ServerError("58P01", f'could not open file "pg_wal/{fname}": No such file or directory')
        lines = []
        for t in range(1, tli):
            lines.append(f"{t}\t{format_lsn(sc.start_lsn - (tli - t) * 0x1000)}\tno recovery target specified\n")
        self._result((("filename", 25), ("content", 17)), [(fname, "".join(lines).encode())], self._tag("TIMELINE_HISTORY"))

    @staticmethod
    def _check_slot_name(name: str) -> None:
        if not name:
            raise ServerError("42602", f'replication slot name "{name}" is too short')
        if len(name.encode()) >= 64:
            raise ServerError("42622", f'replication slot name "{name}" is too long')
        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ServerError("42602", f'replication slot name "{name}" contains invalid character',
                              hint="Replication slot names may only contain lower case letters, numbers, "
                                   "and the underscore character.")

    def _create_slot(self, cmd: rc.CreateReplicationSlot) -> None:
        persona_ = self.server.persona
        self._check_slot_name(cmd.slot_name)
        opts = cmd.options_dict()
        for name in opts:
            if name not in persona_.table.slot_options:
                raise ServerError("42601", f'unrecognized option: {name}')
        if cmd.slot_name in self.server.slots:
            raise ServerError("42710", f'replication slot "{cmd.slot_name}" already exists')
        snapshot = opts.get("snapshot", "export" if cmd.kind == "logical" else None)
        if snapshot is not None and snapshot not in ("export", "nothing", "use"):
            raise ServerError("22023", f'unrecognized value for CREATE_REPLICATION_SLOT option "snapshot": "{snapshot}"')
        try:
            two_phase, failover = cmd.two_phase, cmd.failover
        except OptionError as exc:
            raise ServerError("42601", str(exc)) from None
        if cmd.kind == "logical":
            if self.replication != "database":
                raise ServerError("55000", "logical decoding requires a database connection")
            if snapshot == "use" and self.tx != "T":
                raise ServerError("25001", "CREATE_REPLICATION_SLOT ... (SNAPSHOT 'use') must be called inside a "
                                           "transaction")
            if snapshot in ("export", "nothing") and self.tx != "I":
                raise ServerError("25001", f"CREATE_REPLICATION_SLOT ... (SNAPSHOT '{snapshot}') must not be "
                                           "called inside a transaction")
            if cmd.plugin != "pgoutput":
                raise ServerError("58P01", f'could not access file "{cmd.plugin}": No such file or directory',
                                  hint="The fake walsender decodes with pgoutput only.")
            start = self.server.slot_position()
            if snapshot == "use":
                self.snapshot_after_history = self.server.happened and start >= self.server.history.end_lsn
            slot = SlotState(cmd.slot_name, "logical", cmd.plugin, self.database, start, start, two_phase,
                             failover, cmd.temporary, None, self.id if cmd.temporary else None)
            snapshot_name = f"{self.pid:08X}-{len(self.server.slots) + 1:08X}-1" if snapshot == "export" else None
            row: tuple[str | None, ...] = (cmd.slot_name, format_lsn(start), snapshot_name, cmd.plugin)
        else:
            reserve = cmd.reserve_wal
            start = self.server.slot_position() if reserve else 0
            slot = SlotState(cmd.slot_name, "physical", None, None, 0, start if reserve else 0, False,
                             failover, cmd.temporary, None, self.id if cmd.temporary else None)
            row = (cmd.slot_name, format_lsn(start) if reserve else None, None, None)
        self.server.slots[cmd.slot_name] = slot
        self._result((("slot_name", 25), ("consistent_point", 25), ("snapshot_name", 25), ("output_plugin", 25)),
                     [row], self._tag("CREATE_REPLICATION_SLOT"))

    def _slot(self, name: str) -> SlotState:
        slot = self.server.slots.get(name)
        if slot is None:
            raise ServerError("42704", f'replication slot "{name}" does not exist')
        return slot

    def _drop_slot(self, cmd: rc.DropReplicationSlot) -> bool:
        """Drop the slot; True when WAIT waits for the connection using it (ReadyForQuery
        comes once dropped: :meth:`_retry_drop`)."""
        slot = self._slot(cmd.slot_name)
        if self.server.slot_user(slot, self.id) is not None:
            if cmd.wait:
                # walsender.c DropReplicationSlot -> ReplicationSlotAcquire(name, nowait =
                # false): sleep until the slot is released, then drop it.
                self.drop_waiting = slot.name
                return True
            self.server.check_slot_free(slot, self.id)
        del self.server.slots[slot.name]
        self.send(CommandComplete(self._tag("DROP_REPLICATION_SLOT")))
        return False

    def _retry_drop(self) -> bool:
        """A DROP_REPLICATION_SLOT … WAIT: finish it if the slot is free (or gone: the
        error a real server gives); True while it still waits."""
        with self.server.slots_lock:
            return self._retry_drop_now()

    def _retry_drop_now(self) -> bool:
        name = self.drop_waiting
        assert name is not None
        slot = self.server.slots.get(name)
        if slot is not None and self.server.slot_user(slot, self.id) is not None:
            return True
        self.drop_waiting = None
        if slot is None:
            self.send_error(ServerError("42704", f'replication slot "{name}" does not exist'))
        else:
            del self.server.slots[name]
            self.send(CommandComplete(self._tag("DROP_REPLICATION_SLOT")))
        self._ready()
        return False

    def _read_slot(self, cmd: rc.ReadReplicationSlot) -> None:
        slot = self.server.slots.get(cmd.slot_name)
        cols = (("slot_type", 25), ("restart_lsn", 25), ("restart_tli", 20))
        if slot is None:
            self._result(cols, [(None, None, None)], self._tag("READ_REPLICATION_SLOT"))
            return
        if slot.kind == "logical":
            raise ServerError("0A000", "cannot use READ_REPLICATION_SLOT with a logical replication slot")
        tli = str(self.server.scenario.server.timeline) if slot.restart_lsn else None
        self._result(cols, [("physical", format_lsn(slot.restart_lsn) if slot.restart_lsn else None, tli)],
                     self._tag("READ_REPLICATION_SLOT"))

    def _alter_slot(self, cmd: rc.AlterReplicationSlot) -> None:
        slot = self._slot(cmd.slot_name)
        for name, value in cmd.options:
            if name == "failover":
                slot.failover = value is None or value is True or str(value).lower() in ("true", "on", "1")
            elif name == "two_phase" and name in self.server.persona.table.alter_slot_options:
                slot.two_phase = value is None or value is True or str(value).lower() in ("true", "on", "1")
            else:
                raise ServerError("42601", f"unrecognized option: {name}")
        self.send(CommandComplete(self._tag("ALTER_REPLICATION_SLOT")))
