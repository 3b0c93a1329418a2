"""The client-conformance catalogue: each case is a scenario for the fake walsender, the
faults it plays, and an oracle that grades the client from the connection's transcript
(and, when the client offers it, the applied-LSN hook: its stdout as JSON lines).

Sans-IO: a case builds plain mappings and judges a finished :class:`Run`; starting the
server and the client is :mod:`.runner`'s job.
"""

from __future__ import annotations

import json
import statistics
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..lsn import format_lsn, parse_lsn
from ..walsender.transcript import Entry

__all__ = ["ClientCase", "Grade", "Run", "CASES", "case", "parse_hook_line", "parse_hook", "HookLine", "STATUSES"]

#: The grades a case gives.
STATUSES = ("passed", "failed", "not applicable")

#: Lines of transcript shown on each side of the message a failure is about.
_CONTEXT = 3


@dataclass(frozen=True, slots=True)
class Run:
    """What happened while one case ran: the transcript's entries, the LSNs the client
    reported applied (``(seconds since the server started, lsn)``, in order), the client's
    exit status (None when it was still running at the end of the window and was stopped),
    the window's length in seconds, the case's parameters and when the runner stopped it."""

    entries: Sequence[Entry]
    applied: Sequence[tuple[float, int]] = ()
    exit_code: int | None = None
    window: float = 0.0
    params: Mapping[str, Any] = field(default_factory=dict)
    #: When the runner began stopping the client (seconds since the server started; None
    #: when the client exited on its own): closes from then on are not the client's doing.
    stopped: float | None = None
    #: Applied LSN -> the row changes the client applied in that transaction, when its hook
    #: lines say (``"changes": N``).
    changes: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Grade:
    """A case's verdict on one client: ``status`` among :data:`STATUSES`, the ``reason``
    in one sentence, and the ``evidence``: transcript lines around the failure."""

    case: str
    status: str
    reason: str
    evidence: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"case": self.case, "status": self.status, "reason": self.reason, "evidence": list(self.evidence)}


@dataclass(frozen=True, slots=True)
class ClientCase:
    """One case: ``id``, what it checks (``title``), the scenario mapping for a slot name
    (``scenario(slot)``), how long the client gets (``window``, seconds), whether the case
    makes the slot look active (``slot_active``), and the ``oracle``."""

    id: str
    title: str
    scenario: Callable[[str], dict[str, Any]]
    oracle: Callable[[Run], tuple[str, str, int | None]]
    window: float = 6.0
    slot_active: bool = False
    #: True once the oracle has all it needs (the runner stops the client early) …
    done: Callable[[Run], bool] | None = None
    #: … after this many more seconds (the client's last acknowledgements and hook lines).
    grace: float = 1.0

    def grade(self, run: Run) -> Grade:
        status, reason, at = self.oracle(run)
        return Grade(self.id, status, reason, _evidence(run.entries, at) if status == "failed" else ())


@dataclass(frozen=True, slots=True)
class HookLine:
    """One line of the applied hook: the transaction's end ``lsn`` and, when the client
    says, the row ``changes`` (inserts, updates, deletes) it applied for it."""

    lsn: int
    changes: int | None = None


#: The longest hook line read (a client may print other, longer lines: ignored).
_HOOK_LINE_MAX = 4096


def parse_hook(line: str) -> HookLine | None:
    """One line of the applied hook: a JSON object ``{"applied": "0/16B3748"}`` (the LSN as
    text or an integer), optionally with ``"changes": N``; None for any other line (clients
    may print other things)."""
    line = line.strip()
    if not line.startswith("{") or len(line) > _HOOK_LINE_MAX:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    value = obj.get("applied")
    lsn: int | None = None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64:
        lsn = value
    elif isinstance(value, str):
        try:
            lsn = parse_lsn(value)
        except ValueError:
            return None
    if lsn is None:
        return None
    changes = obj.get("changes")
    if isinstance(changes, bool) or not isinstance(changes, int) or changes < 0:
        changes = None
    return HookLine(lsn, changes)


def parse_hook_line(line: str) -> int | None:
    """The LSN of one line of the applied hook (:func:`parse_hook`), or None."""
    hook = parse_hook(line)
    return hook.lsn if hook is not None else None


# ------------------------------------------------------------------------------------------
# Reading a transcript
# ------------------------------------------------------------------------------------------


def _tag(e: Entry) -> str:
    return getattr(e.payload, "tag", "") if e.payload is not None else ""


def _is(e: Entry, name: str) -> bool:
    return type(e.message).__name__ == name


def _evidence(entries: Sequence[Entry], at: int | None) -> tuple[str, ...]:
    if at is None or not entries:
        return ()
    at = min(max(at, 0), len(entries) - 1)
    lo, hi = max(0, at - _CONTEXT), min(len(entries), at + _CONTEXT + 1)
    return tuple(("> " if i == at else "  ") + f"{entries[i].time:8.3f} {entries[i].describe()}"
                 for i in range(lo, hi))


def _streaming(entries: Sequence[Entry]) -> set[int]:
    """Connections that got as far as the replication stream (a CopyBothResponse)."""
    return {e.connection for e in entries if e.direction == "B" and _is(e, "CopyBothResponse")}


def _errors(entries: Sequence[Entry], sqlstate: str) -> list[int]:
    return [i for i, e in enumerate(entries) if e.direction == "B" and _is(e, "ErrorResponse")
            and e.message.code == sqlstate]


# ------------------------------------------------------------------------------------------
# Oracles
# ------------------------------------------------------------------------------------------

#: Seconds within which a keepalive with replyRequested must be answered (the case's
#: stand-in for wal_sender_timeout; PostgreSQL docs, 19.6.1 "wal_sender_timeout").
REPLY_TIMEOUT = 3.0


def _keepalive_answered(run: Run) -> tuple[str, str, int | None]:
    """Every keepalive with replyRequested is followed, on its connection, by a Standby
    status update within the timeout (protocol docs, 53.4 "Primary keepalive message":
    "1 means that the client should reply to this message as soon as possible")."""
    timeout = float(run.params.get("reply_timeout", REPLY_TIMEOUT))
    entries = run.entries
    end = entries[-1].time if entries else 0.0
    if run.stopped is not None:
        end = min(end, run.stopped)
    asked = 0
    for i, e in enumerate(entries):
        if not (e.direction == "B" and _tag(e) == "k" and e.payload.reply_requested):
            continue
        if end - e.time < timeout:
            continue  # asked too late in the window to judge
        asked += 1
        answered = False
        for later in entries[i + 1:]:
            if later.connection != e.connection:
                continue
            if later.time - e.time > timeout or (run.stopped is not None and later.time >= run.stopped):
                break
            if (later.direction == "F" and _tag(later) == "r") or later.event in ("closed", "reset"):
                answered = True  # a closed connection owes no answer
                break
        if not answered:
            return ("failed", f"a keepalive with replyRequested (walEnd {format_lsn(e.payload.wal_end)}) was not "
                              f"answered within {timeout:g} s", i)
    if not asked:
        return ("not applicable", "no keepalive with replyRequested reached a streaming client", None)
    return ("passed", f"{asked} keepalive(s) with replyRequested answered within {timeout:g} s", None)


def _idle_feedback(run: Run) -> tuple[str, str, int | None]:
    """On an idle server whose walEnd advances (keepalives only), the client sends status
    updates and lets its flush position follow walEnd, so the slot does not hold WAL back
    (protocol docs, 53.4 "Standby status update"; walsender.c WalSndKeepalive)."""
    entries = run.entries
    kas = [i for i, e in enumerate(entries) if e.direction == "B" and _tag(e) == "k"]
    if not kas:
        return ("not applicable", "the client never reached the stream", None)
    first = entries[kas[0]].payload.wal_end
    top = max(entries[i].payload.wal_end for i in kas)
    if top <= first:
        return ("not applicable", "walEnd did not advance while the client streamed", None)
    updates = [i for i, e in enumerate(entries) if e.direction == "F" and _tag(e) == "r"]
    if not updates:
        return ("failed", f"no status update at all while walEnd advanced from {format_lsn(first)} to "
                          f"{format_lsn(top)}", kas[-1])
    best = max(entries[i].payload.flush_lsn for i in updates)
    if best <= first:
        return ("failed", f"status updates sent, but the flush position stayed at {format_lsn(best)} while walEnd "
                          f"advanced from {format_lsn(first)} to {format_lsn(top)}: the slot holds WAL back",
                updates[-1])
    return ("passed", f"{len(updates)} status update(s); flush followed walEnd to {format_lsn(best)} "
                      f"(walEnd reached {format_lsn(top)})", None)


def _positions_sane(run: Run) -> tuple[str, str, int | None]:
    """Write/flush/apply positions never go backwards on a connection, never pass what the
    server has sent (walEnd of XLogData and keepalives), a flush position never covers a
    transaction whose Commit has not arrived, and (with the hook) never one the client has
    not reported applied."""
    entries = run.entries
    sent_top = 0
    last: dict[int, tuple[int, int, int]] = {}
    open_tx: dict[int, int] = {}  # connection -> final_lsn of the transaction being received
    applied = sorted(run.applied)
    updates = 0
    for i, e in enumerate(entries):
        if e.direction == "B" and _tag(e) in ("w", "k"):
            pg = e.pgoutput
            # a Commit names the end of its record: a client may acknowledge up to there
            sent_top = max(sent_top, e.payload.wal_end, getattr(pg, "end_lsn", 0) or 0)
            name = type(pg).__name__
            if name == "Begin":
                open_tx[e.connection] = pg.final_lsn
            elif name == "Commit":
                open_tx.pop(e.connection, None)
            continue
        if e.event in ("closed", "reset"):
            open_tx.pop(e.connection, None)
            continue
        if not (e.direction == "F" and _tag(e) == "r"):
            continue
        updates += 1
        p = e.payload
        now = (p.write_lsn, p.flush_lsn, p.apply_lsn)
        before = last.get(e.connection, (0, 0, 0))
        for name, old, new in zip(("write", "flush", "apply"), before, now):
            if new and new < old:
                return ("failed", f"the {name} position went backwards: {format_lsn(old)} then {format_lsn(new)}", i)
        last[e.connection] = (max(before[0], now[0]), max(before[1], now[1]), max(before[2], now[2]))
        for name, new in zip(("write", "flush", "apply"), now):
            if new > sent_top:
                return ("failed", f"the {name} position {format_lsn(new)} is ahead of everything the server sent "
                                  f"(walEnd {format_lsn(sent_top)})", i)
        tx = open_tx.get(e.connection)
        if tx is not None and p.flush_lsn > tx:
            return ("failed", f"flush {format_lsn(p.flush_lsn)} covers the transaction committing at "
                              f"{format_lsn(tx)}, whose Commit has not arrived", i)
        if applied:
            # a slack for the two pipes (stdout and the socket) being read by different threads
            done = max((lsn for t, lsn in applied if t <= e.time + 0.5), default=0)
            commits = [x.pgoutput.end_lsn for x in entries[:i] if x.connection == e.connection
                       and type(x.pgoutput).__name__ == "Commit" and x.pgoutput.end_lsn <= p.flush_lsn]
            if commits and max(commits) > done:
                return ("failed", f"flush {format_lsn(p.flush_lsn)} acknowledges the transaction ending at "
                                  f"{format_lsn(max(commits))} before the client reported it applied "
                                  f"(applied so far: {format_lsn(done)})", i)
    if not updates:
        return ("not applicable", "the client sent no status update", None)
    how = "with the applied hook" if applied else "from the transcript alone (no applied hook)"
    return ("passed", f"{updates} status update(s) checked {how}", None)


def _resume(run: Run) -> tuple[str, str, int | None]:
    """After a reset in the middle of a transaction the client reconnects and resumes at a
    position no later than its last confirmed flush or the end of the last transaction it
    received in full (0 means the slot's position): every transaction arrives in full on
    some connection, and (with the hook) none is applied twice."""
    entries = run.entries
    if "fault:reset" not in [e.event for e in entries]:
        return ("not applicable", "the client never reached the transaction the reset interrupts", None)
    confirmed = received = 0
    starts = []
    begun: dict[int, int] = {}  # final_lsn -> index of its first Begin
    committed: set[int] = set()
    for i, e in enumerate(entries):
        if e.direction == "F" and _tag(e) == "r" and e.payload.flush_lsn:
            confirmed = max(confirmed, e.payload.flush_lsn)
        elif e.direction == "F" and _is(e, "Query") and e.message.sql.lstrip().upper().startswith("START_REPLICATION"):
            starts.append(i)
            lsn = _start_lsn(e.message.sql)
            # A client may resume after a transaction it received in full although its
            # acknowledgement was lost with the connection (a subscriber's replication origin
            # does: logical/worker.c), or anywhere up to the commit of the first transaction
            # it has not received in full: decoding skips only transactions committing
            # before the start (snapbuild.c SnapBuildXactNeedsSkip); beyond that, what lies
            # between is lost.
            partial = min((f for f in begun if f not in committed), default=0)
            bound = max(confirmed, received, partial)
            if len(starts) > 1 and lsn is not None and lsn > bound:
                return ("failed", f"resumed at {format_lsn(lsn)}, after its confirmed flush {format_lsn(confirmed)}, "
                                  f"the end of the last transaction it received in full {format_lsn(received)} "
                                  f"and the commit of the first it had not ({format_lsn(partial)}): what lies between "
                                  f"is lost", i)
        elif e.direction == "B" and e.pgoutput is not None:
            name = type(e.pgoutput).__name__
            if name == "Begin":
                begun.setdefault(e.pgoutput.final_lsn, i)
            elif name == "Commit":
                committed.add(e.pgoutput.commit_lsn)
                received = max(received, e.pgoutput.end_lsn)
    if len(starts) < 2:
        return ("failed", "the client did not reconnect after the reset", len(entries) - 1)
    lost = sorted(set(begun) - committed)
    if lost:
        return ("failed", f"the transaction committing at {format_lsn(lost[0])} never arrived in full", begun[lost[0]])
    if run.applied:
        seen: dict[int, float] = {}
        for t, lsn in run.applied:
            if lsn in seen:
                return ("failed", f"applied {format_lsn(lsn)} twice (at {seen[lsn]:.3f} s and {t:.3f} s): its "
                                  f"confirmed flush stayed at {format_lsn(confirmed)} and it resumed from there", None)
            seen[lsn] = t
    how = "; nothing applied twice" if run.applied else " (duplicates not judged: no applied hook)"
    return ("passed", f"reconnected {len(starts) - 1} time(s), resumed at or before the confirmed flush, "
                      f"{len(committed)} transaction(s) arrived in full{how}", None)


def _start_lsn(sql: str) -> int | None:
    for word in sql.replace("(", " ").split():
        if "/" in word:
            try:
                return parse_lsn(word)
            except ValueError:
                continue
    return None


def _shutdown(run: Run) -> tuple[str, str, int | None]:
    """When the server ends the stream as a shutting-down walsender does (CopyDone), the
    client answers CopyDone or closes the connection; it does not keep the connection open
    in silence (protocol docs, 53.4 START_REPLICATION: "the server … will send CopyDone";
    walsender.c WalSndDone waits for the client's CopyDone)."""
    timeout = float(run.params.get("reply_timeout", REPLY_TIMEOUT))
    entries = run.entries
    end = entries[-1].time if entries else 0.0
    for i, e in enumerate(entries):
        if e.event != "fault:shutdown":
            continue
        for later in entries[i + 1:]:
            if later.connection != e.connection:
                continue
            if later.time - e.time > timeout or (run.stopped is not None and later.time >= run.stopped):
                break
            if later.direction == "F" and _is(later, "CopyDone"):
                return ("passed", f"answered the server's CopyDone with CopyDone after "
                                  f"{later.time - e.time:.3f} s", None)
            if later.event in ("closed", "reset"):
                return ("passed", f"closed the connection {later.time - e.time:.3f} s after the server's CopyDone "
                                  f"(without its own CopyDone)", None)
        if min(end, run.stopped if run.stopped is not None else end) - e.time < timeout:
            return ("not applicable", "the window ended before the client could answer", None)
        return ("failed", f"neither CopyDone nor a close within {timeout:g} s of the server's CopyDone: the "
                          f"connection hangs", i)
    return ("not applicable", "the client never reached the point where the server shuts down", None)


def _shutdown_scenario(slot: str) -> dict[str, Any]:
    return _base(slot, transactions=_txns(3), keepalive={"interval": 0.5},
                 faults=[{"action": "shutdown", "kind": "Commit", "after_messages": 2}])


def _shutdown_judged(run: Run) -> bool:
    return _shutdown(run)[0] == "passed"


# ------------------------------------------------------------------------------------------
# A subtransaction aborted inside a streamed transaction
# ------------------------------------------------------------------------------------------

#: The streamed transaction: rows kept before and after a subtransaction whose rows are
#: rolled back; each row about 9 kB, so each part passes logical_decoding_work_mem (64 kB)
#: and is streamed before the rollback, which then reaches the client as a Stream Abort of
#: the subtransaction (protocol docs, 53.9 "Stream Abort"; reorderbuffer.c
#: ReorderBufferAbort on a streamed subtransaction).
_STREAM_KEPT, _STREAM_ABORTED, _STREAM_ROW = 16, 8, "x" * 9000


def _stream_scenario(slot: str) -> dict[str, Any]:
    def rows(first: int, n: int) -> list[dict[str, Any]]:
        return [{"insert": "public.accounts", "new": {"id": k, "name": _STREAM_ROW}} for k in range(first, first + n)]
    half = _STREAM_KEPT // 2
    changes = [*rows(1, half), {"subtransaction": rows(1001, _STREAM_ABORTED), "rollback": True},
               *rows(1 + half, half)]
    return _base(slot, transactions=[{"changes": changes, "stream": True}], keepalive={"interval": 0.5})


def _pg(e: Entry) -> str:
    return type(e.pgoutput).__name__ if e.pgoutput is not None else ""


def _stream_subxact(run: Run) -> tuple[str, str, int | None]:
    """A transaction streamed in blocks, with a Stream Abort of one of its subtransactions
    between them, is applied at its Stream Commit with every change of the top-level
    transaction and none of the aborted subtransaction's (with the hook's ``changes``), or
    at least acknowledged without the connection failing (without them)."""
    entries = run.entries
    if not any(_pg(e) == "StreamStart" for e in entries):
        return ("not applicable", "the client did not ask for streaming (protocol version 2 or later, streaming "
                                  "on): the transaction came whole", None)
    aborts = [i for i, e in enumerate(entries) if _pg(e) == "StreamAbort" and e.pgoutput.subtransaction_xid != e.pgoutput.xid]
    if not aborts:
        return ("not applicable", "no Stream Abort of a subtransaction reached the client", None)
    at = aborts[0]
    commits = [i for i, e in enumerate(entries) if _pg(e) == "StreamCommit" and i > at]
    if not commits:
        conn = entries[at].connection
        for e in entries[at + 1:]:
            if e.connection == conn and e.event in ("closed", "reset") and (run.stopped is None
                                                                             or e.time < run.stopped):
                return ("failed", "the client closed the connection after the Stream Abort of subtransaction "
                                  f"{entries[at].pgoutput.subtransaction_xid}, before the Stream Commit", at)
        return ("not applicable", "the window ended before the Stream Commit", None)
    c = commits[0]
    end = entries[c].pgoutput.end_lsn
    if run.applied:
        if end not in {lsn for _, lsn in run.applied}:
            return ("failed", f"the streamed transaction (Stream Commit, end {format_lsn(end)}) was never reported "
                              f"applied: a subtransaction's abort dropped the whole transaction", c)
        n = run.changes.get(end)
        if n is None:
            return ("passed", f"applied the streamed transaction ending at {format_lsn(end)} after the Stream Abort "
                              f"of a subtransaction (its row count not reported: no \"changes\" in the hook)", None)
        if n != _STREAM_KEPT:
            why = (f"the aborted subtransaction's {_STREAM_ABORTED} rows were applied too" if n == _STREAM_KEPT
                   + _STREAM_ABORTED else f"expected the top-level transaction's {_STREAM_KEPT}")
            return ("failed", f"applied {n} row changes of the streamed transaction: {why}", at)
        return ("passed", f"applied the streamed transaction's {n} row changes, none of the aborted "
                          f"subtransaction's {_STREAM_ABORTED}", None)
    conn = entries[c].connection
    flushed = max((e.payload.flush_lsn for e in entries[c:] if e.connection == conn and e.direction == "F"
                   and _tag(e) == "r"), default=0)
    if flushed >= end:
        return ("passed", f"acknowledged the streamed transaction (flush {format_lsn(flushed)}) after the Stream "
                          f"Abort of a subtransaction (what it applied is not judged: no applied hook)", None)
    return ("failed", f"never acknowledged the streamed transaction ending at {format_lsn(end)} (flush reached "
                      f"{format_lsn(flushed)})", c)


def _stream_judged(run: Run) -> bool:
    return _stream_subxact(run)[0] == "passed"


# ------------------------------------------------------------------------------------------
# The slot invalidated; wal_sender_timeout
# ------------------------------------------------------------------------------------------


def _invalidated_scenario(slot: str) -> dict[str, Any]:
    # After the 2nd Commit the slot loses its WAL: the walsender using it is terminated
    # (slot.c InvalidatePossiblyObsoleteSlot: FATAL 57P01), every START_REPLICATION then
    # meets 55000 "can no longer get changes from replication slot" (logical.c).
    return _base(slot, transactions=_txns(4), keepalive={"interval": 0.5},
                 faults=[{"action": "invalidate_slot", "kind": "Commit", "after_messages": 2,
                          "reason": "wal_removed"}])


def _refusals_after(entries: Sequence[Entry], event: str, sqlstate: str) -> tuple[int | None, list[int], int]:
    """Where fault *event* fired, the errors *sqlstate* after it, and on how many
    connections (the client's attempts)."""
    fired = next((i for i, e in enumerate(entries) if e.event == event), None)
    if fired is None:
        return None, [], 0
    errs = [i for i in _errors(entries, sqlstate) if i > fired]
    return fired, errs, len({entries[i].connection for i in errs})


def _retry_pause(run: Run, errs: Sequence[int]) -> float | None:
    """How long the client pauses after a refusal before it tries again: the mean, over the
    refused connections, of the seconds from the connection's last entry (its close) to the
    next connection's first, or to the end of the window when none followed and the client
    was still running. Measured from the client's own pauses, not attempts per second: on a
    loaded machine every connection takes longer to set up and refuse, which lowers a hot
    loop's rate but not its pauses. None without a refused connection to measure from."""
    entries = run.entries
    if not entries:
        return None
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for e in entries:
        first.setdefault(e.connection, e.time)
        last[e.connection] = e.time
    if run.stopped is not None:
        end: float | None = run.stopped
    else:  # exited (no pause after its last attempt), or judged without the runner
        end = None if run.exit_code is not None else entries[0].time + run.window
    order = sorted(first)
    pauses = []
    for c in sorted({entries[i].connection for i in errs}):
        k = bisect_right(order, c)
        if k < len(order):
            pauses.append(max(0.0, first[order[k]] - last[c]))
        elif end is not None:
            pauses.append(max(0.0, end - last[c]))
    return statistics.fmean(pauses) if pauses else None


def _hot_loop(run: Run, errs: Sequence[int], attempts: int, what: str, span: float) -> tuple[str, str, int | None] | None:
    """A failing grade when the client met *what* and tried again without pausing
    :data:`MIN_RETRY_GAP` on average, else None."""
    pause = _retry_pause(run, errs)
    if pause is None or pause >= MIN_RETRY_GAP or attempts < 2:
        return None
    return ("failed", f"{attempts} attempts met {what} in {span:.1f} s, pausing {pause:.2f} s on average after a "
                      f"refusal (at least {MIN_RETRY_GAP:g} s expected): a hot loop", errs[-1])


def _pause(run: Run, errs: Sequence[int]) -> str:
    pause = _retry_pause(run, errs)
    return "" if pause is None else f", pausing {pause:.1f} s on average after a refusal"


def _reaction(run: Run, at: int, what: str) -> tuple[str, str, int | None] | None:
    """How the client reacted once the server ended its connection at entry *at*: a
    passing or failing grade for an exit (status 0 says nothing went wrong: not a clear
    error), None when it is still running (the caller judges its retries)."""
    if run.exit_code is None:
        return None
    if run.exit_code == 0:
        return ("failed", f"{what}; the client exited with status 0, reporting no error", at)
    return ("passed", f"{what}; the client exited with status {run.exit_code}", None)


def _slot_invalidated(run: Run) -> tuple[str, str, int | None]:
    """After its slot is invalidated (its connection ended with FATAL 57P01, then 55000 on
    START_REPLICATION) the client exits with an error, or retries at most
    after a pause of :data:`MIN_RETRY_GAP`; it neither hangs nor hammers the server."""
    entries = run.entries
    fired, errs, attempts = _refusals_after(entries, "fault:invalidate_slot", "55000")
    if fired is None:
        return ("not applicable", "the client never reached the point where its slot is invalidated", None)
    t0 = entries[fired].time
    what = "its slot was invalidated" + (f", {attempts} attempt(s) met 55000" if attempts else "")
    verdict = _reaction(run, fired, what)
    if verdict is not None:
        return verdict
    end = run.stopped if run.stopped is not None else (entries[-1].time if entries else t0)
    span = max(end - t0, 1e-3)
    hot = _hot_loop(run, errs, attempts, "55000 after its slot was invalidated", span)
    if hot is not None:
        return hot
    if not attempts:
        if span < HANG_AFTER:
            return ("not applicable", f"the window ended {span:.1f} s after the slot was invalidated: too soon to "
                                      f"judge the reaction", None)
        return ("failed", f"its connection ended (FATAL 57P01, the slot invalidated) and in {span:.1f} s the client "
                          f"neither exited nor tried again: it hangs", fired)
    return ("passed", f"{what} in {span:.1f} s{_pause(run, errs)}: retries with backoff, still running", None)


#: How long the slot stays active after the reset in the slot-held case (seconds).
HOLD = 3.0


def _held_scenario(slot: str) -> dict[str, Any]:
    # The connection is reset after the 2nd Insert of the 2nd transaction and, as when the
    # old walsender has not yet noticed its client is gone, the slot stays active for HOLD
    # seconds: reconnects meet 55006 "replication slot … is active for PID …" (slot.c).
    return _base(slot, transactions=_txns(4, rows=3), keepalive={"interval": 0.5},
                 faults=[{"action": "hold_slot", "kind": "Insert", "after_messages": 5, "seconds": HOLD}])


def _slot_held(run: Run) -> tuple[str, str, int | None]:
    """After a reset, its slot still active for a few seconds (55006 on reconnect), the
    client retries after pauses of :data:`MIN_RETRY_GAP` and, once the slot is free,
    resumes and receives every transaction; or it exits with an error status."""
    entries = run.entries
    fired, errs, attempts = _refusals_after(entries, "fault:hold_slot", "55006")
    if fired is None:
        return ("not applicable", "the client never reached the transaction the reset interrupts", None)
    t0 = entries[fired].time
    hot = _hot_loop(run, errs, attempts, f"55006 while the slot stayed active {HOLD:g} s", HOLD)
    if hot is not None:
        return hot
    streaming = {e.connection for e in entries[fired:] if e.direction == "B" and _is(e, "CopyBothResponse")}
    what = f"{attempts} attempt(s) met 55006 while the slot stayed active {HOLD:g} s"
    if streaming:
        later = Run([e for e in entries if e.connection in streaming], params=run.params)
        if _all_received(later):
            return ("passed", f"{what}; then resumed and received every transaction", None)
        return ("failed", f"{what}; resumed, but the scenario's last transaction never arrived", len(entries) - 1)
    verdict = _reaction(run, fired, what)
    if verdict is not None:
        return verdict
    end = run.stopped if run.stopped is not None else entries[-1].time
    if end - t0 < HOLD + HANG_AFTER:
        return ("not applicable", "the window ended too soon after the slot was released to judge", None)
    return ("failed", f"{what}; {end - t0 - HOLD:.1f} s after the slot was released the client had neither "
                      f"resumed nor exited", fired)


def _held_judged(run: Run) -> bool:
    return _slot_held(run)[0] == "passed"


#: Seconds without an exit or a new attempt after the server ended the connection that make
#: a hang (longer than the 5 s pg_recvlogical and subscribers wait before trying again).
HANG_AFTER = 5.5


#: The wal_sender_timeout the case's server enforces (seconds; PostgreSQL's default is 60).
SENDER_TIMEOUT = 2.0


def _timeout_scenario(slot: str) -> dict[str, Any]:
    data = _base(slot, transactions=_txns(3), keepalive={"interval": 30})
    data["server"]["wal_sender_timeout"] = SENDER_TIMEOUT
    return data


def _sender_timeout(run: Run) -> tuple[str, str, int | None]:
    """With wal_sender_timeout enforced (a keepalive asking for a reply at half of it, the
    connection closed without a message at its end; walsender.c WalSndCheckTimeOut), a
    client either is never terminated, or reacts sanely: reconnects and resumes no later
    than its confirmed flush, or exits with an error; it does not hang."""
    entries = run.entries
    kills = [i for i, e in enumerate(entries) if e.event is not None and "replication timeout" in e.event]
    if not kills:
        if not _streaming(entries):
            return ("not applicable", "the client never reached the stream", None)
        updates = sum(1 for e in entries if e.direction == "F" and _tag(e) == "r")
        return ("passed", f"never terminated: {updates} status update(s) kept it within wal_sender_timeout "
                          f"({SENDER_TIMEOUT:g} s)", None)
    at = kills[0]
    e0 = entries[at]
    confirmed = max((e.payload.flush_lsn for e in entries[:at] if e.direction == "F" and _tag(e) == "r"), default=0)
    received = max((e.pgoutput.end_lsn for e in entries[:at] if _pg(e) == "Commit"), default=0)
    what = f"terminated by wal_sender_timeout at {e0.time:.1f} s (silent for {SENDER_TIMEOUT:g} s)"
    for i, e in enumerate(entries[at + 1:], at + 1):
        if e.direction == "F" and _is(e, "Query") and e.message.sql.lstrip().upper().startswith("START_REPLICATION"):
            lsn = _start_lsn(e.message.sql) or 0
            if lsn > max(confirmed, received):
                return ("failed", f"{what}; resumed at {format_lsn(lsn)}, after its confirmed flush "
                                  f"{format_lsn(confirmed)}: what lies between is lost", i)
            return ("passed", f"{what}; reconnected {e.time - e0.time:.1f} s later and resumed at "
                              f"{format_lsn(lsn) if lsn else 'the slot position'}", None)
    verdict = _reaction(run, at, what)
    if verdict is not None:
        return verdict
    end = run.stopped if run.stopped is not None else entries[-1].time
    if end - e0.time < HANG_AFTER:
        return ("not applicable", "the window ended too soon after the termination to judge the reaction", None)
    return ("failed", f"{what}; {end - e0.time:.1f} s later the client has neither reconnected nor exited: "
                      f"it hangs", at)


def _timeout_judged(run: Run) -> bool:
    kills = [e.time for e in run.entries if e.event is not None and "replication timeout" in e.event]
    if not kills:
        updates = [e for e in run.entries if e.direction == "F" and _tag(e) == "r"]
        return bool(updates) and updates[-1].time - updates[0].time > 2 * SENDER_TIMEOUT
    return _sender_timeout(run)[0] == "passed"


#: The pause after a refusal below which a client hammering a refusing server is in a hot
#: loop, seconds (pg_recvlogical waits 5 s between attempts; libpq-based retry loops 1 s or
#: more; a subscriber's apply worker is restarted after wal_retrieve_retry_interval).
MIN_RETRY_GAP = 0.5


def _backoff(sqlstate: str) -> Callable[[Run], tuple[str, str, int | None]]:
    def oracle(run: Run) -> tuple[str, str, int | None]:
        entries = run.entries
        errs = _errors(entries, sqlstate)
        if not errs:
            return ("not applicable", f"the server never had to answer {sqlstate} (the client did not ask for the "
                                      f"slot)", None)
        span = max(run.window, 1e-3)
        attempts = len({entries[i].connection for i in errs})
        how = "then exited" if run.exit_code is not None else "still running at the end of the window"
        hot = _hot_loop(run, errs, attempts, sqlstate, span)
        if hot is not None:
            return hot
        return ("passed", f"{attempts} attempt(s) met {sqlstate} in {span:.1f} s{_pause(run, errs)}, {how}"
                          + (f" (exit status {run.exit_code})" if run.exit_code is not None else ""), None)
    oracle.__doc__ = (f"After {sqlstate}, the client exits or retries with backoff: at least {MIN_RETRY_GAP:g} s "
                      f"between a refusal and its next attempt.")
    return oracle


# ------------------------------------------------------------------------------------------
# Scenarios
# ------------------------------------------------------------------------------------------


def _base(slot: str | None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "server": {"version": "16.4", "database": "postgres"},
        "auth": {"method": "trust", "users": {"replicator": None}},
        "publications": {"pub": ["public.accounts"]},
        "tables": {"public.accounts": {"columns": [{"name": "id", "type": "int4", "key": True},
                                                   {"name": "name", "type": "text"}]}},
        "transactions": [],
    }
    if slot is not None:
        data["slots"] = [{"name": slot}]
    data.update(extra)
    return data


def _txns(n: int, rows: int = 1, first: int = 1) -> list[dict[str, Any]]:
    out = []
    k = first
    for _ in range(n):
        changes = []
        for _ in range(rows):
            changes.append({"insert": "public.accounts", "new": {"id": k, "name": f"row {k}"}})
            k += 1
        out.append({"changes": changes})
    return out


def _keepalive_scenario(slot: str) -> dict[str, Any]:
    return _base(slot, transactions=_txns(2), keepalive={"interval": 0.5, "reply_requested": True})


def _idle_scenario(slot: str) -> dict[str, Any]:
    return _base(slot, keepalive={"interval": 0.3, "advance": 4096})


def _positions_scenario(slot: str) -> dict[str, Any]:
    return _base(slot, transactions=_txns(4, rows=3), keepalive={"interval": 0.5, "advance": 256})


#: The pause after the first transaction of the reset-resume case (seconds): time for the
#: client's acknowledgement of it to reach the server, as it would between two transactions
#: committed apart. Without it, whether an acknowledgement sent at once still arrives before
#: the reset is a race, and a client that resumes from the slot is sent the transaction again
#: or not by chance.
ACK_PAUSE = 2.0


def _reset_scenario(slot: str) -> dict[str, Any]:
    # The reset falls after the 2nd Insert of the 3-row 2nd transaction (its 5th Insert).
    return _base(slot, transactions=_txns(4, rows=3), keepalive={"interval": 0.5},
                 faults=[{"action": "delay", "kind": "Commit", "after_messages": 1, "seconds": ACK_PAUSE},
                         {"action": "reset", "kind": "Insert", "after_messages": 5}])


def _missing_scenario(slot: str) -> dict[str, Any]:
    return _base(None)


def _resumed_in_full(run: Run) -> bool:
    starts = sum(1 for e in run.entries if e.direction == "F" and _is(e, "Query")
                 and e.message.sql.lstrip().upper().startswith("START_REPLICATION"))
    if starts < 2:
        return False
    last = max((e.connection for e in run.entries), default=0)
    return _all_received(Run([e for e in run.entries if e.connection == last], params=run.params))


def _keepalives_judged(run: Run) -> bool:
    timeout = float(run.params.get("reply_timeout", REPLY_TIMEOUT))
    end = run.entries[-1].time if run.entries else 0.0
    return sum(1 for e in run.entries if e.direction == "B" and _tag(e) == "k" and e.payload.reply_requested
               and end - e.time >= timeout) >= 2


def _flush_followed(run: Run) -> bool:
    return _idle_feedback(run)[0] == "passed"


def _all_received(run: Run) -> bool:
    last = run.params.get("last_commit_end", 1 << 62)
    return any(type(e.pgoutput).__name__ == "Commit" and e.pgoutput.end_lsn >= last for e in run.entries)


CASES: tuple[ClientCase, ...] = (
    ClientCase("keepalive-reply", "keepalive with replyRequested answered within the timeout",
               _keepalive_scenario, _keepalive_answered, window=6.0, done=_keepalives_judged),
    ClientCase("idle-feedback", "feedback sent on an idle server whose walEnd advances",
               _idle_scenario, _idle_feedback, window=4.0, done=_flush_followed),
    ClientCase("positions", "flush/apply positions never backwards, never ahead of what was sent or applied",
               _positions_scenario, _positions_sane, window=5.0, done=_all_received, grace=2.5),
    ClientCase("reset-resume", f"after a reset mid-transaction ({ACK_PAUSE:g} s after the previous Commit): resume "
                               "at or before the confirmed flush, nothing lost or duplicated",
               _reset_scenario, _resume, window=9.0, done=_resumed_in_full, grace=2.0),
    ClientCase("stream-subxact-abort", "a subtransaction aborted inside a streamed transaction: the rest applied "
                                       "at Stream Commit, the subtransaction's rows not",
               _stream_scenario, _stream_subxact, window=6.0, done=_stream_judged, grace=1.0),
    ClientCase("slot-invalidated", "slot invalidated while streaming (57P01, then 55000): exit with an error, "
                                   "or retry with backoff",
               _invalidated_scenario, _slot_invalidated, window=8.0),
    ClientCase("sender-timeout", "wal_sender_timeout enforced: never terminated, or reconnects and resumes, or "
                                 "exits with an error",
               _timeout_scenario, _sender_timeout, window=8.0, done=_timeout_judged, grace=0.5),
    ClientCase("shutdown", "server shutting down (CopyDone from the server): CopyDone back, or a close",
               _shutdown_scenario, _shutdown, window=5.5, done=_shutdown_judged),
    ClientCase("slot-missing", "slot missing (42704): exit, or retry with backoff",
               _missing_scenario, _backoff("42704"), window=3.0),
    ClientCase("slot-held", "after a reset the slot stays active 3 s (55006): back off, then resume with "
                            "nothing lost",
               _held_scenario, _slot_held, window=12.0, done=_held_judged, grace=0.5),
    ClientCase("slot-active", "slot active (55006): exit, or retry with backoff",
               lambda slot: _base(slot), _backoff("55006"), window=3.0, slot_active=True),
)


def case(case_id: str) -> ClientCase:
    for c in CASES:
        if c.id == case_id:
            return c
    raise KeyError(f"expected a case among {', '.join(c.id for c in CASES)}, found {case_id!r}")
