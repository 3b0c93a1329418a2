"""The oracles of the client-conformance catalogue on hand-built transcripts (no server, no
client): each grade a case can give, and the evidence under a failure."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.clientconf import CASES, Run, case, parse_hook_line
from pgwire_spec.pgoutput.messages import Begin, Commit
from pgwire_spec.replication.messages import PrimaryKeepalive, StandbyStatusUpdate, XLogData
from pgwire_spec.walsender import Entry
from pgwire_spec.wire import CopyBothResponse, CopyDone, ErrorResponse, Query

BASE = 0x1500000


def k(t: float, wal_end: int, reply: bool = False, conn: int = 1) -> Entry:
    return Entry(conn, "B", t, None, PrimaryKeepalive(wal_end, 0, reply))


def r(t: float, flush: int, conn: int = 1, write: int | None = None) -> Entry:
    w = flush if write is None else write
    return Entry(conn, "F", t, None, StandbyStatusUpdate(w, flush, 0, 0, False))


def w(t: float, lsn: int, pg: Any, conn: int = 1) -> Entry:
    return Entry(conn, "B", t, None, XLogData(lsn, lsn, 0, b"x"), pg)


def begin(t: float, final: int, conn: int = 1) -> Entry:
    return w(t, final - 0x40, Begin(final, 0, 7), conn)


def commit(t: float, final: int, conn: int = 1) -> Entry:
    return w(t, final, Commit(0, final, final + 0x30, 0), conn)


def start(t: float, lsn: str, conn: int) -> Entry:
    return Entry(conn, "F", t, Query(f"START_REPLICATION SLOT s LOGICAL {lsn} (proto_version '1')"))


def status(cid: str, entries: list[Entry], **kw: Any) -> str:
    return case(cid).grade(Run(entries, **kw)).status


def test_keepalive_reply() -> None:
    asked = [k(1.0, BASE, reply=True)]
    assert status("keepalive-reply", asked + [r(1.1, BASE), k(5.0, BASE)]) == "passed"
    grade = case("keepalive-reply").grade(Run(asked + [r(4.5, BASE), k(6.0, BASE)]))
    assert grade.status == "failed" and "within 3 s" in grade.reason
    assert grade.evidence[0].startswith(">") and "CopyData k" in grade.evidence[0]
    # a closed connection owes no answer; a keepalive at the window's end is not judged
    assert status("keepalive-reply", asked + [Entry(1, "B", 1.5, event="reset"), k(5.0, BASE, conn=2)]) == "passed"
    assert status("keepalive-reply", [k(1.0, BASE, reply=True)]) == "not applicable"


def test_idle_feedback() -> None:
    kas = [k(i * 0.3, BASE + i * 4096) for i in range(5)]
    assert status("idle-feedback", kas + [r(1.5, BASE + 4096)]) == "passed"
    assert status("idle-feedback", kas + [r(1.5, BASE, write=BASE + 8192)]) == "failed"
    assert status("idle-feedback", kas) == "failed"
    assert status("idle-feedback", [k(0, BASE), k(1, BASE)]) == "not applicable"


def test_positions() -> None:
    tx = [k(0, BASE), begin(0.1, BASE + 0x100), commit(0.1, BASE + 0x100)]
    end = BASE + 0x130
    assert status("positions", tx + [r(0.2, end)]) == "passed"
    assert status("positions", tx + [r(0.2, end), r(0.3, end - 1)]) == "failed"                    # backwards
    assert status("positions", tx + [r(0.2, end + 0x1000)]) == "failed"                           # not sent
    assert status("positions", tx[:2] + [r(0.2, BASE + 0x101)]) == "failed"                       # no Commit yet
    # with the applied hook: acknowledged 2 s before it was reported applied
    assert status("positions", tx + [r(0.2, end)], applied=((2.2, end),)) == "failed"
    assert status("positions", tx + [r(0.2, end)], applied=((0.15, end),)) == "passed"
    assert status("positions", tx) == "not applicable"


def test_reset_resume() -> None:
    a, b = BASE + 0x100, BASE + 0x200
    reset = [Entry(1, "B", 0.3, event="fault:reset"), Entry(1, "B", 0.3, event="reset")]
    first = [start(0, "0/0", 1), begin(0.1, a), commit(0.1, a), r(0.2, a + 0x30), begin(0.25, b)] + reset
    again = [start(1, "0/0", 2), begin(1.1, b, 2), commit(1.1, b, 2)]
    assert status("reset-resume", first + again) == "passed"
    assert status("reset-resume", first) == "failed"                                  # no reconnect
    assert status("reset-resume", first + [start(1, "0/1500500", 2)]) == "failed"      # resumed too far
    assert status("reset-resume", first + again[:2]) == "failed"                       # b never in full
    assert status("reset-resume", first + again, applied=((0.1, a + 0x30), (1.1, a + 0x30))) == "failed"
    assert status("reset-resume", first[:3]) == "not applicable"


def test_shutdown() -> None:
    down = [k(0.1, BASE), Entry(1, "B", 0.5, event="fault:shutdown"), Entry(1, "B", 0.5)]
    assert status("shutdown", down + [Entry(1, "F", 0.6, CopyDone()), k(4, BASE, conn=2)]) == "passed"
    assert status("shutdown", down + [Entry(1, "F", 0.6, event="closed"), k(4, BASE, conn=2)]) == "passed"
    assert status("shutdown", down + [r(1.0, BASE), k(4, BASE, conn=2)]) == "failed"
    # a close the runner caused (stopping the client) is not the client's answer
    assert status("shutdown", down + [Entry(1, "F", 4.0, event="closed")], stopped=4.0) == "failed"
    assert status("shutdown", down + [Entry(1, "F", 1.0, event="closed")], stopped=1.0) == "not applicable"
    assert status("shutdown", down[:1]) == "not applicable"


@pytest.mark.parametrize(("cid", "code"), [("slot-missing", "42704"), ("slot-active", "55006")])
def test_backoff(cid: str, code: str) -> None:
    def attempts(n: int) -> list[Entry]:
        return [Entry(i + 1, "B", i * 0.01, ErrorResponse((("S", "ERROR"), ("C", code), ("M", "slot")))) for i in range(n)]
    assert status(cid, attempts(3), window=3.0) == "passed"
    assert status(cid, attempts(30), window=3.0) == "failed"

    def slow(n: int, pause: float) -> list[Entry]:
        # a loaded machine: 0.8 s from connecting to the refusal, then *pause* before the next
        out, t = [], 0.0
        for i in range(1, n + 1):
            out += [Entry(i, "F", t, event="connected"),
                    Entry(i, "B", t + 0.8, ErrorResponse((("S", "ERROR"), ("C", code), ("M", "slot")))),
                    Entry(i, "F", t + 0.8, event="closed")]
            t += 0.8 + pause
        return out
    assert status(cid, slow(3, 0.1), window=3.0, stopped=2.8) == "failed"    # 1 a second, yet a hot loop
    assert status(cid, slow(3, 1.0), window=5.0, stopped=5.4) == "passed"
    assert status(cid, [Entry(1, "B", 0, CopyBothResponse(0, ()))], window=3.0) == "not applicable"


def test_hook_lines() -> None:
    assert parse_hook_line('{"applied": "0/16B3748"}') == 0x16B3748
    assert parse_hook_line('{"applied": 42}') == 42
    for junk in ("hello", '{"applied": "zz"}', '{"applied": true}', "{", '["applied"]'):
        assert parse_hook_line(junk) is None


def test_catalogue_is_named_once() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    with pytest.raises(KeyError, match="expected a case among"):
        case("nope")


def test_hook_lines_with_changes() -> None:
    from pgwire_spec.clientconf import parse_hook

    hook = parse_hook('{"applied": "0/16B3748", "changes": 16}')
    assert hook is not None and (hook.lsn, hook.changes) == (0x16B3748, 16)
    assert parse_hook('{"applied": "0/1", "changes": -1}').changes is None  # type: ignore[union-attr]
    assert parse_hook('{"applied": "0/1", "pad": "' + "x" * 5000 + '"}') is None  # bounded


def _streamed(t0: float, xid: int = 900, sub: int = 901, conn: int = 1) -> list[Entry]:
    from pgwire_spec.pgoutput.messages import Insert, StreamAbort, StreamCommit, StreamStart, StreamStop

    ins = Insert(xid, 16384, ("1", "x"))
    return [w(t0, BASE, StreamStart(xid, True), conn), w(t0, BASE + 8, ins, conn), w(t0, BASE + 9, StreamStop(), conn),
            w(t0 + 0.1, BASE + 0x20, StreamAbort(xid, sub), conn),
            w(t0 + 0.2, BASE + 0x30, StreamCommit(xid, 0, BASE + 0x30, BASE + 0x60, 0), conn)]


def test_stream_subxact_abort() -> None:
    end = BASE + 0x60
    tx = _streamed(0.1)
    assert status("stream-subxact-abort", tx, applied=((0.5, end),), changes={end: 16}) == "passed"
    grade = case("stream-subxact-abort").grade(Run(tx, applied=((0.5, end),), changes={end: 24}))
    assert grade.status == "failed" and "aborted subtransaction's 8 rows" in grade.reason
    assert any("StreamAbort" in line for line in grade.evidence)
    assert "dropped the whole" in case("stream-subxact-abort").grade(Run(tx, applied=((0.5, BASE),))).reason
    assert status("stream-subxact-abort", tx + [r(0.6, end)]) == "passed"                 # no hook: acknowledged
    assert status("stream-subxact-abort", tx) == "failed"                                  # never acknowledged
    assert status("stream-subxact-abort", tx[:4] + [Entry(1, "F", 0.3, event="closed")]) == "failed"
    assert status("stream-subxact-abort", [begin(0.1, BASE), commit(0.2, BASE)]) == "not applicable"


def test_slot_invalidated() -> None:
    fired = [k(0.1, BASE), Entry(1, "B", 0.5, event="fault:invalidate_slot"), Entry(1, "B", 0.5, event="closed")]

    def refused(n: int, every: float) -> list[Entry]:
        return [Entry(2 + i, "B", 1.0 + i * every, ErrorResponse((("S", "ERROR"), ("C", "55000"), ("M", "gone"))))
                for i in range(n)]
    assert status("slot-invalidated", fired + refused(3, 1.0), stopped=8.0) == "passed"
    assert status("slot-invalidated", fired + refused(40, 0.1), stopped=8.0) == "failed"      # hot loop
    assert status("slot-invalidated", fired, stopped=8.0) == "failed"                         # hangs
    assert status("slot-invalidated", fired, stopped=3.0) == "not applicable"                 # too soon
    assert status("slot-invalidated", fired, exit_code=1) == "passed"
    assert status("slot-invalidated", fired, exit_code=0) == "failed"                         # no error reported
    assert status("slot-invalidated", fired[:1]) == "not applicable"


def test_sender_timeout() -> None:
    kill = Entry(1, "B", 2.5, event="COMMERROR terminating walsender process due to replication timeout (not sent)")
    tx = [start(0, "0/0", 1), Entry(1, "B", 0, CopyBothResponse(0, ())), begin(0.1, BASE + 0x100),
          commit(0.1, BASE + 0x100), r(0.2, BASE + 0x130)]
    assert status("sender-timeout", tx + [r(1.2, BASE + 0x130)]) == "passed"                   # never terminated
    assert status("sender-timeout", tx + [kill, start(3.5, "0/1500130", 2)]) == "passed"      # resumed
    assert status("sender-timeout", tx + [kill, start(3.5, "0/1600000", 2)]) == "failed"      # too far
    assert status("sender-timeout", tx + [kill], exit_code=1) == "passed"
    assert status("sender-timeout", tx + [kill], stopped=8.0) == "failed"                     # hangs
    assert status("sender-timeout", [k(0, BASE)]) == "not applicable"


def test_slot_held() -> None:
    a, b = BASE + 0x100, BASE + 0x200
    fired = [start(0, "0/0", 1), begin(0.1, a), commit(0.1, a), begin(0.2, b), Entry(1, "B", 0.3, event="fault:hold_slot"),
             Entry(1, "B", 0.3, event="reset")]

    def busy(n: int, every: float) -> list[Entry]:
        return [Entry(2 + i, "B", 0.5 + i * every, ErrorResponse((("S", "ERROR"), ("C", "55006"), ("M", "active"))))
                for i in range(n)]
    resumed = [start(3.5, "0/0", 9), Entry(9, "B", 3.5, CopyBothResponse(0, ())), begin(3.6, b, 9), commit(3.6, b, 9)]
    params = {"last_commit_end": b + 0x30}
    assert status("slot-held", fired + busy(3, 1.0) + resumed, params=params) == "passed"
    assert status("slot-held", fired + busy(30, 0.1) + resumed, params=params) == "failed"      # hot loop
    assert status("slot-held", fired + busy(3, 1.0) + resumed[:2], params=params, stopped=12.0) == "failed"
    assert status("slot-held", fired + busy(3, 1.0), exit_code=1) == "passed"                   # gave up, said so
    assert status("slot-held", fired + busy(3, 1.0), stopped=12.0) == "failed"                  # never resumed
    assert status("slot-held", fired[:3]) == "not applicable"
