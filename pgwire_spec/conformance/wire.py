"""Conformance through the wire, the part without I/O: cases put into replication sessions, and
what a client reported read back into one answer per case.

Many decoders are not libraries one can hand bytes to: they live inside a replication
client (pg_recvlogical, a Node or Go client, a CDC service). Such a client is streamed the
cases by the fake walsender, a replay of exactly the cases' payloads, and what it reports
is compared with the reference decode. Two client kinds:

``pgrecvlogical``
    pg_recvlogical writes each XLogData's data followed by a newline to its output file
    (src/bin/pg_basebackup/pg_recvlogical.c, processXLogData: ``copybuf + hdr_len``, then
    ``"\\n"``) and decodes nothing. Before each case the session carries a marker, an empty
    transaction (Begin, Commit) whose commit time names the case (:data:`MARKER_TIME` plus its
    position), and one after the last; what lies between two markers is that case's bytes,
    compared exactly: a message dropped, repeated or reordered is named, a changed one is
    decoded by the     reference to show the field that differs. An empty transaction is what any protocol
    version and options may carry (pgoutput.c sends Begin and Commit for a transaction
    without changes up to PostgreSQL 14), so the client negotiates exactly the case's options. A malformed case is not applicable (nothing in
    pg_recvlogical rejects a message).
``jsonl``
    the client prints one JSON line per XLogData it decoded: ``{"lsn": "0/2000040",
    "message": {…}}`` (the JSON form of spec/message.schema.json) or ``{"lsn": …, "error":
    {"message": …}}``; other lines are ignored, a line without ``lsn`` is about the XLogData
    after the previous line's. Every XLogData of a session has its own dataStart (Relation and
    Type too, where a real walsender sends 0/0), so each line names the payload it is about.
    A malformed case is sent up to the payload it must be rejected at; a case whose rejection
    is due at the end of the stream is not applicable (a session does not end where a case
    does).

Cases share a session when they have the same decoding context (the options negotiated)
and, for ``jsonl``, when the reference decoder reads the session's payloads, one case after
the other without a reset, exactly as it reads each case alone. After a malformed case the
client's state is its own (what it kept of a message it rejected): the cases after it in
the session are ``tainted``, and one of them that fails is run again alone, in a session of
its own, before it counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..capture.options import OptionSet
from ..errors import DecodeError
from ..jsonform import to_json
from ..lsn import parse_lsn
from ..pgoutput import messages as m
from ..pgoutput._codec import encode
from ..pgoutput.decoder import DECODER_OPTIONS, PgOutputDecoder
from .adapter import CaseResult
from .adapters.reference import decode_case as reference_decode
from .cases import Case, kind_of
from .runner import first_difference
from .shapes import Shape, map_entry

__all__ = ["KINDS", "Kind", "MARKER_TIME", "FIRST_LSN", "Session", "plan_sessions", "read_pgrecvlogical",
           "read_jsonl", "JsonlLines"]

Kind = Literal["pgrecvlogical", "jsonl"]
KINDS: tuple[Kind, ...] = ("pgrecvlogical", "jsonl")

#: The commit time of the empty transactions that mark where a case starts (pgrecvlogical),
#: plus the case's position: far past any case's (microseconds since 2000-01-01: year 2253).
MARKER_TIME = 8 * 10**15
#: Their xid.
MARKER_XID = 0xFFFF_FFF0
#: The dataStart of a session's first XLogData (past the fake server's start_lsn).
FIRST_LSN = 0x2000000
#: Cases in one session at most.
MAX_CASES = 500


@dataclass(frozen=True, slots=True)
class Session:
    """One replication session: the cases it carries, the options the client negotiates,
    and every XLogData in order (``payloads``, their ``lsns``; ``owner``: the case position
    and payload index each belongs to, ``None`` for a marker)."""

    kind: Kind
    cases: tuple[Case, ...]
    options: Mapping[str, str]
    payloads: tuple[bytes, ...]
    lsns: tuple[int, ...]
    owner: tuple[tuple[int, int] | None, ...]
    #: per case, how many of its payloads are sent (a malformed case: up to its rejection)
    sent: tuple[int, ...] = ()
    #: per case, whether a malformed case came before it in the session
    tainted: tuple[bool, ...] = ()
    markers: tuple[bytes, ...] = field(default=(), repr=False)

    @property
    def end_marker(self) -> bytes:
        return self.markers[-1] if self.markers else b""


def not_applicable(kind: Kind, case: Case) -> str | None:
    """Why *case* cannot be put to a client of *kind*, or ``None``."""
    if any(not p for p in case.payloads[:_sent(case)]):
        return "an XLogData without data is not a pgoutput message: clients reject it below their decoder"
    if case.error is None:
        return None
    if kind == "pgrecvlogical":
        return ("pg_recvlogical writes the bytes of each message and decodes none: a malformed message is "
                "not its to reject")
    if case.error.index >= len(case.payloads):
        return "its rejection is due at the end of the stream, and a replication session does not end where a case does"
    return None


def options_of(kind: Kind, context: Mapping[str, Any], publication: str = "pub") -> dict[str, str]:
    """The pgoutput options a client negotiates for *context*."""
    opts = OptionSet("case", int(context.get("protocol_version", 1)), publication,
                     streaming=str(context.get("streaming", "off")), two_phase=bool(context.get("two_phase")),
                     binary=bool(context.get("binary")),
                     messages=bool(context.get("messages")))
    return opts.pgoutput_options()


def _marker(n: int, lsn: int) -> tuple[bytes, bytes]:
    """The empty transaction before case *n* (*n* = the case count: after the last)."""
    return (encode(m.Begin(lsn, MARKER_TIME + n, MARKER_XID)),
            encode(m.Commit(0, lsn, lsn + 0x28, MARKER_TIME + n)))


def _sent(case: Case) -> int:
    return len(case.payloads) if case.error is None else min(len(case.payloads), case.error.index + 1)


def _context_key(case: Case) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), v) for k, v in case.context.items()))


class _Continuity:
    """The reference decoder reading one session's cases in a row: whether a case reads
    the same after the ones before it as alone, and the Stream Abort messages that close
    the streamed transactions a case leaves open (``fillers``: a case may end between two
    segments of a streamed transaction; the next case may open the same xid again)."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        self.parallel = context.get("streaming") == "parallel"
        self.decoder = PgOutputDecoder(strict=True, **{k: context[k] for k in DECODER_OPTIONS if k in context})
        self.broken = False

    def takes(self, case: Case, alone: Sequence[Mapping[str, Any]]) -> bool:
        if self.broken:
            return False
        out: list[Mapping[str, Any]] = []
        for p in case.payloads[:_sent(case)]:
            try:
                out.append({"message": to_json(self.decoder.decode(p))})
            except DecodeError as err:
                out.append({"error": {"rule": err.rule}})
                self.broken = True
                break
        want = [r if "message" in r else {"error": {"rule": r["error"].get("rule")}} for r in alone[:len(out)]]
        return out == want

    def fillers(self, lsn: int) -> tuple[bytes, ...]:
        """Stream Abort for each streamed transaction left open (read by the decoder too);
        the tail of protocol 4's parallel mode (docs: Stream Abort) at *lsn*, time 0."""
        out = []
        for xid in sorted(self.decoder.open_streams):
            msg = m.StreamAbort(xid, xid, lsn if self.parallel else None, 0 if self.parallel else None)
            out.append(encode(msg))
            self.decoder.decode(out[-1])
        return tuple(out)


def plan_sessions(kind: Kind, cases: Sequence[Case], *, max_cases: int = MAX_CASES) -> list[Session]:
    """The sessions that carry *cases* (those applicable to *kind*), in their order within
    each decoding context."""
    groups: dict[tuple[tuple[str, Any], ...], list[Case]] = {}
    for c in cases:
        if not_applicable(kind, c) is None:
            groups.setdefault(_context_key(c), []).append(c)
    out: list[Session] = []
    for group in groups.values():
        chunk: list[Case] = []
        fill: list[tuple[bytes, ...]] = []  # per case in the chunk: the fillers sent after it
        continuity: _Continuity | None = None
        for c in group:
            if kind == "jsonl":
                alone = reference_decode(c.context, c.payloads[:_sent(c)])
                full = continuity is None or len(chunk) >= max_cases
                if not full and continuity is not None and continuity.broken:
                    # after a malformed case: the client's state is its own, the case is tainted
                    continuity = _Continuity(c.context)
                    continuity.takes(c, alone)
                elif full or continuity is None or not continuity.takes(c, alone):
                    if chunk:  # the reference reads it otherwise after the cases before: a new session
                        out.append(_session(kind, chunk, fill))
                    chunk, fill, continuity = [], [], _Continuity(c.context)
                    continuity.takes(c, alone)
                chunk.append(c)
                fill.append(() if continuity.broken else continuity.fillers(FIRST_LSN))
            else:
                chunk.append(c)
                fill.append(())
                if len(chunk) >= max_cases:
                    out.append(_session(kind, chunk, fill))
                    chunk, fill = [], []
        if chunk:
            out.append(_session(kind, chunk, fill))
    return out


def _session(kind: Kind, cases: Sequence[Case], fill: Sequence[tuple[bytes, ...]] = ()) -> Session:
    payloads: list[bytes] = []
    lsns: list[int] = []
    owner: list[tuple[int, int] | None] = []
    markers: list[bytes] = []
    lsn = FIRST_LSN

    def add(p: bytes, who: tuple[int, int] | None) -> None:
        nonlocal lsn
        payloads.append(p)
        lsns.append(lsn)
        owner.append(who)
        lsn += 0x40 + ((len(p) + 7) & ~7)  # a growing position, as WAL records take room

    def mark(n: int) -> None:
        parts = _marker(n, lsn)
        for p in parts:
            add(p, None)
        markers.append(b"\n".join(parts))  # as pg_recvlogical writes them

    sent = tuple(_sent(c) for c in cases)
    tainted = tuple(any(c.error is not None for c in cases[:n]) for n in range(len(cases)))
    for n, c in enumerate(cases):
        if kind == "pgrecvlogical":
            mark(n)
        for i, p in enumerate(c.payloads[:sent[n]]):
            add(p, (n, i))
        for p in fill[n] if n < len(fill) else ():
            add(p, None)
    if kind == "pgrecvlogical":
        mark(len(cases))
    return Session(kind, tuple(cases), options_of(kind, cases[0].context), tuple(payloads), tuple(lsns),
                   tuple(owner), sent, tainted, tuple(markers))


# -- reading what the client reported ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one session gave: an answer per case it settled (by position), and the position
    of the first case it did not reach (``None``: all settled) — those run again in a new
    session."""

    answers: dict[int, CaseResult]
    resume: int | None = None
    #: why the session stopped short (with ``resume``)
    why: str = ""


def _unreached(session: Session, n: int, why: str, answers: dict[int, CaseResult], *, started: bool) -> Outcome:
    """The client stopped within case *n* (*started*: it fails with *why*, the ones after it
    run again) or before it (it runs again)."""
    if started:
        answers[n] = CaseResult(crash=why)
        n += 1
    return Outcome(answers, n if n < len(session.cases) else None, why)


def read_pgrecvlogical(session: Session, output: bytes, ended: str) -> Outcome:
    """pg_recvlogical's output file against the session: per case, the bytes between its
    marker and the next. *ended* says how the client stopped when it did not reach the end
    marker (its exit status and stderr, or the timeout)."""
    answers: dict[int, CaseResult] = {}
    starts: list[int] = []
    pos = 0
    for marker in session.markers:
        line = marker + b"\n"
        at = output.find(line, pos)
        if at < 0:
            break
        starts.append(at)
        pos = at + len(line)
    for n, case in enumerate(session.cases):
        if n + 1 >= len(starts):  # this case's end (the next marker) never came
            started = n < len(starts)
            return _unreached(session, n, f"pg_recvlogical stopped {'within' if started else 'before'} this case: "
                                          f"{ended}", answers, started=started)
        begin = starts[n] + len(session.markers[n]) + 1
        answers[n] = _compare_bytes(case, session.sent[n], output[begin:starts[n + 1]])
    return Outcome(answers)


def _compare_bytes(case: Case, count: int, got: bytes) -> CaseResult:
    sent = case.payloads[:count]
    if got == b"".join(p + b"\n" for p in sent):
        return CaseResult(tuple(reference_decode(case.context, sent)))
    pos = 0
    for i, p in enumerate(sent):
        if got.startswith(p + b"\n", pos):
            pos += len(p) + 1
            continue
        kind = kind_of(p)
        seen = [j for j, q in enumerate(sent) if j != i and got.startswith(q + b"\n", pos)]
        if pos >= len(got):
            return CaseResult(failure=f"message #{i} ({kind}) and the {len(sent) - i - 1} after it were not "
                                      "written (dropped)", index=i, actual=None)
        if seen and seen[0] > i:
            return CaseResult(failure=f"message #{i} ({kind}) was not written: #{seen[0]} came in its place "
                                      "(dropped or reordered)", index=i, actual={"hex": got[pos:pos + 64].hex()})
        if seen:
            return CaseResult(failure=f"message #{seen[0]} was written again in the place of #{i} ({kind}) "
                                      "(repeated)", index=i, actual={"hex": got[pos:pos + 64].hex()})
        # a changed message: read as long as the one sent, decoded to show the field
        changed = got[pos:pos + len(p)]
        decoded = reference_decode(case.context, [*sent[:i], changed])[i:i + 1]
        where = ""
        if decoded and "message" in decoded[0] and i < len(case.expected):
            where = f": differs at {first_difference(case.expected[i], decoded[0]['message'])}"
        return CaseResult(failure=f"message #{i} ({kind}) written with other bytes than were sent{where}", index=i,
                          actual={"hex": changed.hex(), "decoded": decoded[0] if decoded else None})
    again = [j for j, q in enumerate(sent) if got.startswith(q + b"\n", pos)]
    if again:
        return CaseResult(failure=f"message #{again[-1]} ({kind_of(sent[again[-1]])}) was written again after the "
                                  "case's last message (repeated)", index=again[-1], actual={"hex": got[pos:pos + 64].hex()})
    return CaseResult(failure=f"{len(got) - pos} bytes written after the case's last message (extra output)",
                      index=len(sent) - 1, actual={"hex": got[pos:pos + 64].hex()})


class JsonlLines:
    """A jsonl client's output, read as it arrives: the entries by payload position, and
    whether the session's work is done (the last payload answered, or the rejection the
    session's last case ends at)."""

    def __init__(self, session: Session, shape: Shape | None = None) -> None:
        self.session = session
        #: the client's shape: lines with ``native`` are mapped by it
        self.shape = shape
        self.unreported = None if shape is None else shape.unreported
        #: the client's hello line, when it printed one before any report (an object with
        #: ``contract``, as an adapter's hello)
        self.hello: Mapping[str, Any] | None = None
        self.by_lsn = {lsn: k for k, lsn in enumerate(session.lsns)}
        self.entries: list[tuple[int, Mapping[str, Any]]] = []  # (payload position, entry) in order
        self.unknown: list[str] = []
        self._buf = b""
        self._next = 0
        last_case = len(session.cases) - 1
        self._last_start = next((k for k, o in enumerate(session.owner) if o is not None and o[0] == last_case),
                                len(session.owner))
        self.done = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for raw in lines:
            self._line(raw)

    def _line(self, raw: bytes) -> None:
        text = raw.strip()
        if not text.startswith(b"{"):
            return
        try:
            obj = json.loads(text)
        except ValueError:
            return
        if isinstance(obj, dict) and "contract" in obj and self.hello is None and not self.entries:
            self.hello = obj
            return
        if not isinstance(obj, dict) or not ({"message", "error", "native"} & set(obj)):
            return
        k = self._next
        if "lsn" in obj:
            try:
                found = self.by_lsn.get(parse_lsn(str(obj["lsn"])))
            except ValueError:
                found = None
            if found is None:
                self.unknown.append(str(obj["lsn"])[:40])
                return
            k = found
        entry = ({"message": obj["message"]} if "message" in obj else {"error": obj["error"]} if "error" in obj
                 else map_entry({"native": obj["native"]}, self.shape))
        self.entries.append((k, entry))
        self._next = k + 1
        last = len(self.session.payloads) - 1
        if k >= last or ("error" in entry and k >= self._last_start and self.session.cases[-1].error is not None):
            self.done = True


def read_jsonl(lines: JsonlLines, ended: str) -> Outcome:
    """A jsonl client's lines against the session: per case its entries in payload order,
    up to its first error; a payload reported twice, skipped or out of order is named."""
    session = lines.session
    per_case: list[list[tuple[int, Mapping[str, Any]]]] = [[] for _ in session.cases]
    for k, entry in lines.entries:
        who = session.owner[k]
        if who is not None:
            per_case[who[0]].append((who[1], entry))
    answers: dict[int, CaseResult] = {}
    for n, case in enumerate(session.cases):
        got = per_case[n]
        want = session.sent[n]
        indices = [i for i, _ in got]
        results: list[Mapping[str, Any]] = []
        problem: CaseResult | None = None
        for pos, (i, entry) in enumerate(got):
            expected_i = len(results)
            if i != expected_i:
                kind = kind_of(case.payloads[expected_i]) if expected_i < want else "?"
                if i < expected_i:
                    problem = CaseResult(failure=f"message #{i} ({kind_of(case.payloads[i])}) reported twice "
                                                 f"(lines for #{', #'.join(map(str, indices[:pos + 1]))})",
                                         index=i, actual=dict(entry))
                else:
                    problem = CaseResult(failure=f"nothing reported for message #{expected_i} ({kind}): the next "
                                                 f"line is about #{i} (dropped or reordered)",
                                         index=expected_i, actual=dict(entry))
                break
            results.append(entry)
            if "error" in entry:
                break
        if problem is not None:
            answers[n] = problem
            continue
        finished = bool(results) and ("error" in results[-1] or len(results) >= want)
        if finished:
            answers[n] = CaseResult(tuple(results), unreported=lines.unreported)
            continue
        later = any(per_case[j] for j in range(n + 1, len(session.cases)))
        if later:  # the client went on to later cases: this one's missing lines are dropped
            kind = kind_of(case.payloads[len(results)])
            answers[n] = CaseResult(failure=f"nothing reported for message #{len(results)} ({kind}) or after it, "
                                            "though later cases were reported (dropped)", index=len(results))
            continue
        where = f"after message #{len(results) - 1}" if results else "before its first message"
        return _unreached(session, n, f"the client stopped {where}: {ended}", answers, started=bool(results))
    return Outcome(answers)


