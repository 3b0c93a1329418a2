"""A scenario's history as the server's WAL would hold it: LSNs, xids, old and new rows.

The scenario says *what* happened; this module decides *where* in the WAL it happened
(each change, subtransaction abort, commit, prepare … gets an LSN; transactions follow each
other from ``server.start_lsn``) and simulates the tables, so that every update and delete
knows the full old row (REPLICA IDENTITY FULL sends it) and the final rows are known (what a
subscriber must end with). Nothing here depends on what a client negotiates: that is
:mod:`._render`'s job.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ._relsync import rel_sync
from .scenario import (
    CommitPrepared,
    EmitMessage,
    RollbackPrepared,
    RowDelete,
    RowInsert,
    RowUpdate,
    Scenario,
    ScenarioError,
    Subtransaction,
    Table,
    TableTruncate,
    Transaction,
)

__all__ = ["History", "ChangeEvent", "InsertRuns", "SubAbort", "TxnEvent", "PreparedEnd", "MessageEvent", "compile_history"]

#: Approximate WAL record sizes (bytes): enough to give LSNs a realistic spacing.
_COMMIT_RECORD = 0x30
_ABORT_RECORD = 0x28
_PREPARE_RECORD = 0x60
#: Approximate reorder-buffer memory of one change beyond its values (ReorderBufferChange,
#: HeapTuple header …), to decide when a transaction is streamed.
_CHANGE_OVERHEAD = 100


def _align(n: int) -> int:
    return (n + 7) & ~7


Row = dict[str, Any]


@dataclass(slots=True)
class ChangeEvent:
    kind: str  # insert | update | delete | truncate | message
    lsn: int
    #: The xid of the (sub)transaction that made the change.
    xid: int
    table: Table | None = None
    new: Row | None = None
    old: Row | None = None
    key_changed: bool = False
    unchanged: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    cascade: bool = False
    restart_identity: bool = False
    message: EmitMessage | None = None
    #: Estimated reorder-buffer memory.
    size: int = 0
    #: The xids of the subtransactions enclosing this change, outermost first.
    path: tuple[int, ...] = ()


@dataclass(slots=True)
class SubAbort:
    """ROLLBACK TO SAVEPOINT of subtransaction ``subxid`` (and the ones inside it)."""

    subxid: int
    lsn: int
    time: int
    #: Every xid whose changes the rollback discards (subxid and nested ones).
    xids: frozenset[int] = frozenset()


@dataclass(slots=True, frozen=True)
class InsertRuns:
    """A transaction's changes as a renderer reads runs of inserts into one table (the
    bulk of most streams) without a Python step per row: each change's LSN and new row,
    and where the run of inserts into one table that holds it ends (the next index for any
    other change)."""

    lsns: list[int]
    news: list[Row | None]
    ends: list[int]

    @staticmethod
    def of(changes: list[ChangeEvent]) -> InsertRuns:
        ends = [0] * len(changes)
        end, table = 0, None  # the run after change i: its end and table (None: no run)
        for i in range(len(changes) - 1, -1, -1):
            ev = changes[i]
            if ev.kind != "insert":
                end, table = i + 1, None
            elif ev.table is not table:
                end, table = i + 1, ev.table
            ends[i] = end
        return InsertRuns([ev.lsn for ev in changes], [ev.new for ev in changes], ends)


@dataclass(slots=True)
class TxnEvent:
    xid: int
    first_lsn: int
    #: LSN of the commit (abort, prepare) record; end_lsn: the end of that record.
    commit_lsn: int
    end_lsn: int
    commit_time: int
    outcome: str  # commit | abort | prepare
    items: list[ChangeEvent | SubAbort] = field(default_factory=list)
    origin: tuple[str, int] | None = None
    gid: str | None = None
    stream: bool | None = None
    #: Whether a subtransaction of it was rolled back (a SubAbort among the items).
    rollbacks: bool = False
    #: The items' insert runs, made once with the history when nothing was rolled back.
    inserts: InsertRuns | None = None


@dataclass(slots=True)
class PreparedEnd:
    """COMMIT PREPARED or ROLLBACK PREPARED of an earlier prepared transaction."""

    txn: TxnEvent
    commit: bool
    lsn: int
    end_lsn: int
    time: int


@dataclass(slots=True)
class MessageEvent:
    """A non-transactional logical message."""

    lsn: int
    end_lsn: int
    message: EmitMessage


Event = TxnEvent | PreparedEnd | MessageEvent


class _Tables:
    """Rows per table with an undo log, so a (sub)transaction abort is cheap."""

    def __init__(self, scenario: Scenario, include_initial: bool, strict: bool) -> None:
        self.strict = strict
        self.rows: dict[str, dict[int, Row]] = {}
        self.idx: dict[str, dict[tuple[str | None, ...], list[int]]] = {}
        self.next_id = 0
        for t in scenario.tables:
            self.rows[t.qualified_name] = {}
            if include_initial:
                for r in t.rows:
                    self._put(t, None, self._complete(t, dict(r)))

    @staticmethod
    def _complete(t: Table, row: Row) -> Row:
        out = {c.name: row.get(c.name) for c in t.columns}
        for c in t.columns:
            if c.generated is not None:
                out[c.name] = _generated(c, c.generated.value(out))
        return out

    def _put(self, t: Table, rid: int | None, row: Row) -> int:
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        self.rows[t.qualified_name][rid] = row
        return rid

    @staticmethod
    def _matches(t: Table, row: Row, key: Row) -> bool:
        for name, value in key.items():
            col = t.column(name)
            assert col is not None
            if col.type.text(row.get(name)) != col.type.text(value):
                return False
        return True

    # -- the key index: key values (as text) -> row ids, for tables with key columns --------
    @staticmethod
    def _key(t: Table, row: Row) -> tuple[str | None, ...]:
        return tuple(c.type.text(row.get(c.name)) for c in t.columns if c.key)

    def _index(self, t: Table) -> dict[tuple[str | None, ...], list[int]]:
        name = t.qualified_name
        idx = self.idx.get(name)
        if idx is None:
            idx = {}
            for rid, row in self.rows[name].items():
                idx.setdefault(self._key(t, row), []).append(rid)
            self.idx[name] = idx
        return idx

    def _indexed(self, t: Table, rid: int, row: Row, add: bool) -> None:
        idx = self.idx.get(t.qualified_name)
        if idx is None or not t.key_columns:
            return
        k = self._key(t, row)
        if add:
            idx.setdefault(k, []).append(rid)
        else:
            rids = idx.get(k)
            if rids is not None and rid in rids:
                rids.remove(rid)

    def find(self, t: Table, key: Row, path: str) -> tuple[int, Row] | None:
        rows = self.rows[t.qualified_name]
        if t.key_columns and set(key) == set(t.key_columns):
            k = tuple(c.type.text(key.get(c.name)) for c in t.columns if c.key)
            found = [(rid, rows[rid]) for rid in sorted(self._index(t).get(k, ()))]
        else:
            found = [(rid, row) for rid, row in rows.items() if self._matches(t, row, key)]
        if not found:
            if self.strict:
                raise ScenarioError(path, f"a row of {t.qualified_name} with {key}", "no such row")
            return None
        if len(found) > 1 and self.strict and t.replica_identity in ("d", "i"):
            raise ScenarioError(path, f"a key naming one row of {t.qualified_name}", f"{len(found)} rows match {key}")
        return found[0]

    # each operation returns its undo entry
    def insert(self, t: Table, row: Row) -> tuple[Any, ...]:
        rid = self._put(t, None, row)
        self._indexed(t, rid, row, True)
        return ("del", t.qualified_name, rid)

    def replace(self, t: Table, rid: int, row: Row) -> tuple[Any, ...]:
        old = self.rows[t.qualified_name][rid]
        self.rows[t.qualified_name][rid] = row
        self._indexed(t, rid, old, False)
        self._indexed(t, rid, row, True)
        return ("put", t.qualified_name, rid, old)

    def delete(self, t: Table, rid: int) -> tuple[Any, ...]:
        old = self.rows[t.qualified_name].pop(rid)
        self._indexed(t, rid, old, False)
        return ("put", t.qualified_name, rid, old)

    def truncate(self, t: Table) -> tuple[Any, ...]:
        old = self.rows[t.qualified_name]
        self.rows[t.qualified_name] = {}
        self.idx.pop(t.qualified_name, None)
        return ("all", t.qualified_name, old)

    def undo(self, log: list[tuple[Any, ...]]) -> None:
        for entry in reversed(log):
            self.idx.pop(entry[1], None)  # rebuilt on the next lookup
            if entry[0] == "del":
                self.rows[entry[1]].pop(entry[2], None)
            elif entry[0] == "put":
                rows = self.rows[entry[1]]
                rows[entry[2]] = entry[3]
                # keep the original order of rows (a delete then undo re-appends otherwise)
                self.rows[entry[1]] = dict(sorted(rows.items()))
            else:
                self.rows[entry[1]] = entry[2]

    def final(self, name: str) -> list[Row]:
        return [dict(r) for r in self.rows[name].values()]


@dataclass
class History:
    scenario: Scenario
    events: list[Event]
    end_lsn: int
    tables: _Tables

    def final_rows(self, table: str) -> list[Row]:
        t = self.scenario.table(table)
        return [r for leaf in self.scenario.leaves(t) for r in self.tables.final(leaf.qualified_name)]


def _generated(col: Any, value: Any) -> Any:
    """A computed value in the column's own type (integers truncated as an int cast rounds)."""
    if value is None:
        return None
    if col.type.name in ("int2", "int4", "int8"):
        return int(value.to_integral_value(decimal.ROUND_HALF_EVEN)) if isinstance(value, decimal.Decimal) else int(value)
    if col.type.name in ("float4", "float8"):
        return float(value)
    return value


def _size(values: Iterable[Any]) -> int:
    return sum(len(str(v)) for v in values if v is not None)


class _Compiler:
    def __init__(self, scenario: Scenario, include_initial: bool) -> None:
        self.scenario = scenario
        self.server = scenario.server
        self.tables = _Tables(scenario, include_initial, strict=include_initial)
        self.lsn = self.server.start_lsn
        self.next_xid = self.server.first_xid
        self.used_xids: set[int] = set()
        self.clock = self.server.clock
        self.prepared: dict[str, tuple[TxnEvent, list[tuple[Any, ...]]]] = {}
        self.events: list[Event] = []
        self.pending: list[ChangeEvent] = []
        #: (table, action) pairs whose replica identity rules were checked
        self.checked: set[tuple[str, str]] = set()

    def xid(self) -> int:
        while self.next_xid in self.used_xids:
            self.next_xid += 1
        xid = self.next_xid
        self.used_xids.add(xid)
        self.next_xid += 1
        return xid

    def tick(self, explicit: int | None) -> int:
        if explicit is not None:
            self.clock = explicit
            return explicit
        self.clock += 1000
        return self.clock

    def advance(self, size: int) -> int:
        lsn = self.lsn
        self.lsn += _align(size)
        return lsn

    def run(self) -> History:
        for i, item in enumerate(self.scenario.history):
            path = f"transactions[{i}]"
            if isinstance(item, Transaction):
                self.transaction(path, item)
            elif isinstance(item, (CommitPrepared, RollbackPrepared)):
                self.prepared_end(path, item)
            elif isinstance(item, EmitMessage):
                size = 0x38 + len(item.prefix) + len(item.content)
                lsn = self.advance(size)
                self.events.append(MessageEvent(lsn, self.lsn, item))
        return History(self.scenario, self.events, self.lsn, self.tables)

    def transaction(self, path: str, txn: Transaction) -> None:
        if txn.xid is not None:
            if txn.xid in self.used_xids:
                raise ScenarioError(f"{path}.xid", "an xid not used before", str(txn.xid))
            self.used_xids.add(txn.xid)
            xid = txn.xid
        else:
            xid = self.xid()
        if txn.outcome == "prepare":
            assert txn.gid is not None
            if txn.gid in self.prepared:
                raise ScenarioError(f"{path}.prepare", "a gid not already prepared", repr(txn.gid))
        first = self.lsn
        event = TxnEvent(xid, first, 0, 0, 0, txn.outcome, [], txn.origin, txn.gid, txn.stream)
        undo: list[tuple[Any, ...]] = []
        self.changes(f"{path}.changes", txn.changes, event, xid, (), undo)
        record = {"commit": _COMMIT_RECORD, "abort": _ABORT_RECORD}.get(txn.outcome, _PREPARE_RECORD + len(txn.gid or ""))
        event.commit_lsn = self.advance(record)
        event.end_lsn = self.lsn
        event.commit_time = self.tick(txn.commit_time)
        if event.items:
            first_change = next((it.lsn for it in event.items if isinstance(it, ChangeEvent)), event.commit_lsn)
            event.first_lsn = min(first, first_change)
        else:
            event.first_lsn = event.commit_lsn
        if not event.rollbacks:
            changes: list[ChangeEvent] = event.items  # type: ignore[assignment]  # no SubAbort
            event.inserts = InsertRuns.of(changes)
        if txn.outcome == "abort":
            self.tables.undo(undo)
        elif txn.outcome == "prepare":
            assert txn.gid is not None
            self.prepared[txn.gid] = (event, undo)
        self.events.append(event)

    def changes(self, path: str, changes: Iterable[Any], event: TxnEvent, xid: int,
                nest: tuple[int, ...], undo: list[tuple[Any, ...]]) -> None:
        for i, change in enumerate(changes):
            cpath = f"{path}[{i}]"
            if isinstance(change, Subtransaction):
                subxid = self.xid()
                inner: list[tuple[Any, ...]] = []
                start = len(event.items)
                self.changes(f"{cpath}.subtransaction", change.changes, event, subxid, nest + (subxid,), inner)
                if change.rollback:
                    self.tables.undo(inner)
                    xids = frozenset({subxid} | {it.xid for it in event.items[start:] if isinstance(it, ChangeEvent)}
                                     | {it.subxid for it in event.items[start:] if isinstance(it, SubAbort)})
                    event.items.append(SubAbort(subxid, self.advance(_ABORT_RECORD), self.tick(None), xids))
                    event.rollbacks = True
                else:
                    undo.extend(inner)
                continue
            ev = self.change(cpath, change, xid, undo)
            for done in self.pending:  # the DELETE half of a cross-partition update
                done.path = nest
                event.items.append(done)
            self.pending.clear()
            if ev is not None:
                ev.path = nest
                event.items.append(ev)

    def change(self, path: str, change: Any, xid: int, undo: list[tuple[Any, ...]]) -> ChangeEvent | None:
        if isinstance(change, RowInsert):
            t = self.scenario.table(change.table)
            row = _Tables._complete(t, dict(change.new))
            t = self._leaf(path, t, row)
            undo.append(self.tables.insert(t, row))
            return ChangeEvent("insert", self.advance(0x40 + _size(row.values())), xid, t, new=row,
                               size=_CHANGE_OVERHEAD + _size(row.values()))
        if isinstance(change, RowUpdate):
            named = self.scenario.table(change.table)
            found_in = self._find(named, dict(change.key), f"{path}.key")
            if found_in is None:
                return None
            t, (rid, old) = found_in
            self._check_identity(path, t, "update")
            new = _Tables._complete(t, {**old, **dict(change.new)})
            target = self.scenario.route(named, new) if named.partition_by is not None else t
            if target is not t:
                if target is None or named.partition_by is None:
                    raise ScenarioError(f"{path}.new", f"a row {t.qualified_name}'s partition bound accepts",
                                        "a row outside it (the server refuses it)")
                # a row moving to another partition: DELETE from the old one, INSERT into
                # the new one (ExecCrossPartitionUpdate)
                self._check_identity(path, t, "delete")
                undo.append(self.tables.delete(t, rid))
                delete = ChangeEvent("delete", self.advance(0x40 + _size(old.values())), xid, t, old=old,
                                     size=_CHANGE_OVERHEAD + _size(old.values()))
                self.pending.append(delete)
                undo.append(self.tables.insert(target, new))
                return ChangeEvent("insert", self.advance(0x40 + _size(new.values())), xid, target, new=new,
                                   size=_CHANGE_OVERHEAD + _size(new.values()))
            undo.append(self.tables.replace(t, rid, new))
            key_changed = any(
                c.type.text(old.get(c.name)) != c.type.text(new.get(c.name)) for c in t.columns if c.key
            )
            size = _size(new.values()) + (_size(old.values()) if t.replica_identity == "f" or key_changed else 0)
            return ChangeEvent("update", self.advance(0x40 + size), xid, t, new=new, old=old,
                               key_changed=key_changed, unchanged=change.unchanged,
                               size=_CHANGE_OVERHEAD + size)
        if isinstance(change, RowDelete):
            named = self.scenario.table(change.table)
            found_in = self._find(named, dict(change.key), f"{path}.key")
            if found_in is None:
                return None
            t, (rid, old) = found_in
            self._check_identity(path, t, "delete")
            undo.append(self.tables.delete(t, rid))
            return ChangeEvent("delete", self.advance(0x40 + _size(old.values())), xid, t, old=old,
                               size=_CHANGE_OVERHEAD + _size(old.values()))
        if isinstance(change, TableTruncate):
            # a partitioned table is truncated with its partitions, all in the WAL record
            named = [self.scenario.table(n) for n in change.tables]
            by_name = {x.qualified_name: x for t in named for x in self._descendants(t)}
            tables = tuple(by_name.values())
            for t in tables:
                undo.append(self.tables.truncate(t))
            return ChangeEvent("truncate", self.advance(0x40 + 4 * len(tables)), xid, tables=tables,
                               cascade=change.cascade, restart_identity=change.restart_identity,
                               size=_CHANGE_OVERHEAD)
        if isinstance(change, EmitMessage):
            size = 0x38 + len(change.prefix) + len(change.content)
            return ChangeEvent("message", self.advance(size), xid, message=change, size=_CHANGE_OVERHEAD + size)
        raise ScenarioError(path, "a change", type(change).__name__)  # pragma: no cover

    def _descendants(self, t: Table) -> list[Table]:
        out = [t]
        for p in self.scenario.partitions(t):
            out.extend(self._descendants(p))
        return out

    def _leaf(self, path: str, t: Table, row: Row) -> Table:
        """The partition that stores a new row of *t* (t itself when not partitioned)."""
        if t.partition_by is None and t.partition_of is None:
            return t
        top = t
        for anc in self.scenario.ancestors(t):
            top = anc
        leaf = self.scenario.route(top, row)
        if t.partition_by is not None:
            if leaf is None:
                raise ScenarioError(path, f"a row some partition of {t.qualified_name} accepts",
                                    "no partition for it")
            return leaf
        if leaf is not t:
            raise ScenarioError(path, f"a row within the bound of {t.qualified_name}"
                                f" ({t.bound.text if t.bound else ''})", "a row outside it")
        return t

    def _find(self, t: Table, key: Row, path: str) -> tuple[Table, tuple[int, Row]] | None:
        """The row a key names, in the table or, for a partitioned one, its partitions."""
        leaves = self.scenario.leaves(t)
        if len(leaves) == 1:
            hit = self.tables.find(leaves[0], key, path)
            return (leaves[0], hit) if hit is not None else None
        strict = self.tables.strict
        self.tables.strict = False
        try:
            hits = [(leaf, h) for leaf in leaves if (h := self.tables.find(leaf, key, path)) is not None]
        finally:
            self.tables.strict = strict
        if not hits:
            if strict:
                raise ScenarioError(path, f"a row of {t.qualified_name} with {key}", "no such row")
            return None
        return hits[0]

    def _check_identity(self, path: str, t: Table, action: str) -> None:
        # A real server refuses the statement itself: "cannot update table … because it
        # does not have a replica identity and publishes updates".
        if not self.tables.strict or (t.qualified_name, action) in self.checked:
            return
        major = self.server.major
        syncs = [(p, rel_sync(self.scenario, t, [p], major)) for p in self.scenario.publications]
        has_identity = t.replica_identity == "f" or (t.replica_identity in ("d", "i") and t.key_columns)
        published = any(action in sync.actions for _p, sync in syncs)
        if published and not has_identity:
            raise ScenarioError(
                path, f"a table with a replica identity ({t.qualified_name} publishes {action}s)",
                f"replica_identity {'nothing' if t.replica_identity == 'n' else 'default without key columns'}",
            )
        # RelationBuildPublicationDesc (relcache.c): a publication publishing updates or
        # deletes may filter on and list columns only within the replica identity (all
        # columns under REPLICA IDENTITY FULL, so a column list must then name them all)
        full = t.replica_identity == "f"
        identity = {c.name for c in t.columns if c.generated is None} if full else set(t.key_columns)
        for pub, sync in syncs:
            if action not in sync.actions:
                continue
            for f in sync.filters.get(action, ()):
                if not full and not f.columns <= identity:
                    raise ScenarioError(path, f"a row filter of publication {pub.name!r} on replica identity "
                                        f"columns only ({t.qualified_name} publishes {action}s)",
                                        f"it reads {', '.join(sorted(f.columns - identity))}")
            sent = {c.name for c in sync.columns}
            if not identity <= sent:
                raise ScenarioError(path, f"a column list of publication {pub.name!r} covering the replica "
                                    f"identity ({t.qualified_name} publishes {action}s)",
                                    f"it leaves out {', '.join(sorted(identity - sent))}")
        self.checked.add((t.qualified_name, action))

    def prepared_end(self, path: str, item: CommitPrepared | RollbackPrepared) -> None:
        entry = self.prepared.pop(item.gid, None)
        if entry is None:
            raise ScenarioError(path, "the gid of a transaction prepared earlier", repr(item.gid))
        txn, undo = entry
        commit = isinstance(item, CommitPrepared)
        if not commit:
            self.tables.undo(undo)
        lsn = self.advance(0x40 + len(item.gid))
        self.events.append(PreparedEnd(txn, commit, lsn, self.lsn, self.tick(item.commit_time)))


#: The last few compiled histories, by scenario identity (loading a scenario compiles it to
#: check it; the server then needs the same History).
_RECENT: dict[int, tuple[Scenario, History]] = {}


def compile_history(scenario: Scenario, *, include_initial: bool = True) -> History:
    """Place the scenario's history in the WAL and simulate its tables."""
    if not include_initial:
        return _Compiler(scenario, include_initial).run()
    hit = _RECENT.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    history = _Compiler(scenario, include_initial).run()
    if len(_RECENT) >= 8:
        _RECENT.pop(next(iter(_RECENT)))
    _RECENT[id(scenario)] = (scenario, history)
    return history
