"""Faults: make the fake walsender misbehave on cue, per connection, by message position or
by time.

In a scenario file::

    faults:
      - {action: disconnect, after_messages: 120, application_name: sub}   # FIN after 120 messages
      - {action: reset, after_seconds: 2.5}                                # RST 2.5 s into the stream
      - {action: stall, after_messages: 10, seconds: 30}                   # stop sending for 30 s
      - {action: delay, after_messages: 10, seconds: 0.5}                  # pause once, then go on
      - {action: corrupt, after_messages: 5, offset: 0, xor: 255}          # flip bits of message #5
      - {action: truncate, after_messages: 5, keep: 3}                     # message #5 cut to 3 bytes
      - {action: duplicate, after_messages: 7}                             # message #7 sent twice
      - {action: error, after_messages: 3, sqlstate: XX000, message: boom} # ErrorResponse mid-stream
      - {action: keepalive, after_messages: 4}                             # keepalive, replyRequested
      - {action: refuse_auth, user: replicator}                            # FATAL 28P01 at auth
      - {action: shutdown, after_messages: 9}                              # CopyDone from the server
      - {action: crash, after_messages: 50}                                # every connection dropped
      - {action: disconnect, kind: Commit, after_messages: 3}              # FIN right after the 3rd Commit
      - {action: invalidate_slot, after_messages: 6, reason: wal_removed} # slot invalidated, client ended
      - {action: drop_slot, after_seconds: 1}                              # slot dropped behind its back
      - {action: hold_slot, after_messages: 4, seconds: 5}                 # RST; slot stays active 5 s
      - {action: invalidate_slot, slot: s, reason: idle_timeout}           # at once (no trigger, a slot)
      - {action: stray_stream_abort, kind: Commit, after_messages: 2}      # 18's unsolicited Stream Abort

``after_messages: N`` fires before the stream's message number N (0-based: after N
XLogData messages were sent on that connection); ``after_seconds: S`` fires S seconds after
START_REPLICATION. With ``kind`` (a pgoutput message name: Commit, Insert, …) ``after_messages``
counts only messages of that kind: the fault fires right after the N-th of them. A fault added
while a stream runs (``FakeWalsender.add_fault``, the control plane) counts from the moment it
meets the stream: ``after_messages: 0`` is the next message. Which connections: ``connection`` (the n-th connection to the server that
matches the other selectors, 1-based), ``application_name``, ``user``, ``slot``; ``times``
limits how many connections a fault fires on (default 1; ``null`` for every one). A slot
fault (``invalidate_slot``, ``drop_slot``, ``hold_slot``) naming a ``slot`` and given neither
``after_messages`` nor ``after_seconds`` acts at once: when the server starts (in a scenario)
or when it is added (``add_fault``, the control plane).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..pgoutput.messages import MESSAGE_TYPES

__all__ = ["Fault", "ACTIONS", "SLOT_ACTIONS", "STRAY_ABORT_AFTER", "parse_faults", "FaultBook", "check_slot_fault"]

#: action -> what it does
ACTIONS: dict[str, str] = {
    "disconnect": "close the connection cleanly (FIN)",
    "reset": "close the connection with a TCP reset (RST)",
    "stall": "stop sending (keepalives too) for `seconds`, or for ever",
    "delay": "pause `seconds` before the message, then go on",
    "corrupt": "XOR the byte at `offset` of the message's pgoutput payload with `xor`",
    "truncate": "cut the message's pgoutput payload to `keep` bytes",
    "duplicate": "send the message twice",
    "error": "send an ErrorResponse (`sqlstate`, `message`, `severity`) and end the stream",
    "keepalive": "send a keepalive with replyRequested = 1 before the message",
    "refuse_auth": "answer the authentication with FATAL 28P01",
    "shutdown": "end the stream as a server shutting down does: CopyDone, then, after the client's CopyDone, "
                "CommandComplete and close",
    "crash": "drop every connection of the server (reset); refuse new ones for `seconds`",
    "invalidate_slot": "invalidate the slot (`slot`, else the connection's) for `reason` (wal_removed, rows_removed, "
                       "idle_timeout: the persona's causes); the connection using it ends with FATAL 57P01",
    "drop_slot": "drop the slot (`slot`, else the connection's); the connection using it ends with FATAL 57P01",
    "hold_slot": "reset the connection; its slot stays active for `seconds` (reconnects meet 55006); at once: the "
                 "slot active for another backend that long",
    "stray_stream_abort": "send a Stream Abort (`xid`, `xid` + 1) of a transaction never streamed, between "
                          "transactions, whatever the client negotiated, as PostgreSQL 18 does (erratum "
                          "E-PG18-STRAY-STREAM-ABORT); place it with `kind` (a message that ends a transaction) "
                          "or after_messages: 0",
}

#: The faults that act on a slot (ServerState.slot_fault).
SLOT_ACTIONS = frozenset({"invalidate_slot", "drop_slot", "hold_slot"})


#: The kinds after which a stray Stream Abort falls between transactions, as a server sends it.
STRAY_ABORT_AFTER = ("Commit", "StreamStop", "StreamCommit", "StreamAbort", "Prepare", "CommitPrepared",
                     "RollbackPrepared", "StreamPrepare")

#: The longest time a fault waits or lasts (a week): finite, so deadlines stay numbers.
MAX_SECONDS = 7 * 86400.0


@dataclass(frozen=True, slots=True)
class Fault:
    action: str
    after_messages: int | None = None
    after_seconds: float | None = None
    connection: int | None = None
    application_name: str | None = None
    user: str | None = None
    slot: str | None = None
    times: int | None = 1
    seconds: float | None = None
    offset: int = 0
    xor: int = 0xFF
    keep: int | None = None
    sqlstate: str = "XX000"
    message: str = "fault injected by the fake walsender"
    severity: str = "ERROR"
    kind: str | None = None
    #: invalidate_slot: the cause (pg_replication_slots.invalidation_reason).
    reason: str | None = None
    #: stray_stream_abort: the aborted transaction's xid (its subtransaction is xid + 1);
    #: default: two below the scenario's first xid (a transaction older than the stream's).
    xid: int | None = None

    def __post_init__(self) -> None:
        for name in ("after_messages", "connection", "times", "offset", "keep"):
            value = getattr(self, name)
            if isinstance(value, int) and not 0 <= value < 1 << 63:
                raise ValueError(f"expected {name} from 0 to 2^63-1, found {value}")
        for name in ("after_seconds", "seconds"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and not 0 <= value <= MAX_SECONDS:
                raise ValueError(f"expected {name} from 0 to {MAX_SECONDS:g} seconds, found {value}")
        if self.action not in ACTIONS:
            raise ValueError(f"expected a fault action among {', '.join(ACTIONS)}, found {self.action!r}")
        if self.action not in ("refuse_auth",) and self.after_messages is None and self.after_seconds is None:
            if self.action != "crash" and not self.at_once:
                raise ValueError(f"fault {self.action} needs after_messages or after_seconds")
        if self.after_messages is not None and self.after_messages < 0:
            raise ValueError(f"expected after_messages >= 0, found {self.after_messages}")
        if self.kind is not None:
            if self.kind not in MESSAGE_TYPES:
                raise ValueError(f"expected a kind among {', '.join(MESSAGE_TYPES)}, found {self.kind!r}")
            if self.after_messages is None:
                raise ValueError(f"fault {self.action} with kind {self.kind} needs after_messages (the count of "
                                 f"{self.kind} messages)")
        if self.after_seconds is not None and self.after_seconds < 0:
            raise ValueError(f"expected after_seconds >= 0, found {self.after_seconds}")
        if self.times is not None and self.times < 1:
            raise ValueError(f"expected times >= 1 or null, found {self.times}")
        if not (len(self.sqlstate) == 5 and self.sqlstate.isalnum()):
            raise ValueError(f"expected a 5-character SQLSTATE, found {self.sqlstate!r}")
        if self.reason is not None and self.action != "invalidate_slot":
            raise ValueError(f"reason is for invalidate_slot, found it with {self.action}")
        if self.action == "hold_slot" and not self.seconds:
            raise ValueError("fault hold_slot needs seconds > 0 (how long the slot stays active)")
        if self.xid is not None and (self.action != "stray_stream_abort" or not 3 <= self.xid < (1 << 32) - 1):
            raise ValueError(f"xid is for stray_stream_abort, from 3 to 2^32-2, found {self.xid} with {self.action}")
        if self.action == "stray_stream_abort" and self.kind not in STRAY_ABORT_AFTER and (
                self.kind is not None or self.after_messages != 0):
            raise ValueError("fault stray_stream_abort goes between transactions, as a server sends it: expected "
                             f"kind among {', '.join(STRAY_ABORT_AFTER)} or after_messages: 0, found "
                             + (f"kind {self.kind}" if self.kind else
                                f"after_messages: {self.after_messages}" if self.after_messages is not None
                                else f"after_seconds: {self.after_seconds}"))
        if self.severity not in ("ERROR", "FATAL", "PANIC"):
            raise ValueError(f"expected severity ERROR, FATAL or PANIC, found {self.severity!r}")

    @property
    def at_once(self) -> bool:
        """A slot fault naming its slot, without a trigger: it acts when added."""
        return (self.action in SLOT_ACTIONS and self.slot is not None and self.after_messages is None
                and self.after_seconds is None)

    @property
    def positional(self) -> bool:
        return self.after_messages is not None

    @property
    def tag(self) -> str | None:
        """The pgoutput tag ``kind`` counts, or None."""
        return MESSAGE_TYPES[self.kind].tag if self.kind is not None else None

    def as_json(self) -> dict[str, Any]:
        """The fault's JSON/YAML form (the fields that differ from the defaults)."""
        default = _DEFAULTS
        return {f: getattr(self, f) for f in _ORDER if f == "action" or getattr(self, f) != default[f]}

    def selects(self, ordinal: int, params: Mapping[str, str]) -> bool:
        """Whether this fault applies to a connection (its ordinal among matching ones is
        checked by :class:`FaultBook`)."""
        if self.application_name is not None and params.get("application_name") != self.application_name:
            return False
        if self.user is not None and params.get("user") != self.user:
            return False
        return True


def check_slot_fault(fault: Fault, major: int) -> None:
    """ValueError when an ``invalidate_slot`` names a cause PostgreSQL *major* does not
    invalidate slots for (pg_replication_slots.invalidation_reason; the per-major table)."""
    from ..majors import MAJORS

    if fault.action != "invalidate_slot":
        return
    causes = MAJORS[major].slot_invalidation_causes
    cause = fault.reason or "wal_removed"
    if cause not in causes:
        raise ValueError(f"expected a reason PostgreSQL {major} invalidates slots for ({', '.join(causes) or 'none'}), "
                         f"found {cause!r}")


_FIELDS = {f.name for f in fields(Fault)}
_ORDER = [f.name for f in fields(Fault)]
_DEFAULTS = {f.name: f.default for f in fields(Fault)}


def parse_faults(data: Any, path: str = "faults") -> list[Fault]:
    """Faults from their YAML/JSON form (a list of mappings)."""
    from .scenario import ScenarioError

    if isinstance(data, Fault):
        return [data]
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise ScenarioError(path, "a list of faults", repr(data))
    out = []
    for i, item in enumerate(data):
        if isinstance(item, Fault):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise ScenarioError(f"{path}[{i}]", "a fault like {action: disconnect, after_messages: 10}", repr(item))
        unknown = [k for k in item if k not in _FIELDS]
        if unknown:
            raise ScenarioError(f"{path}[{i}]", f"keys among {', '.join(sorted(_FIELDS))}", f"unknown key {unknown[0]!r}")
        try:
            out.append(Fault(**dict(item)))
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f"{path}[{i}]", "a valid fault", str(exc)) from None
    return out


class FaultBook:
    """Server-wide bookkeeping: which connection each fault may fire on, and how often it did."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = list(faults)
        self.matches = [0] * len(self.faults)
        self.fired = [0] * len(self.faults)
        #: Faults removed at run time (their index stays; they never fire again).
        self.removed: set[int] = set()
        #: Faults meant for running connections only (added for one connection at run time).
        self.pinned: set[int] = set()

    def add(self, fault: Fault, *, pinned: bool = False) -> int:
        if pinned:
            self.pinned.add(len(self.faults))
        self.faults.append(fault)
        self.matches.append(0)
        self.fired.append(0)
        return len(self.faults) - 1

    def remove(self, index: int) -> None:
        if not 0 <= index < len(self.faults):
            raise KeyError(index)
        self.removed.add(index)

    def for_connection(self, params: Mapping[str, str], phase: str, slot: str | None = None) -> list[int]:
        """Indexes of the faults that may fire on a connection entering *phase*
        ('auth' or 'stream'); counts the connection toward ``connection`` ordinals."""
        out = []
        for i, f in enumerate(self.faults):
            if i in self.removed or i in self.pinned:
                continue
            is_auth = f.action == "refuse_auth"
            if (phase == "auth") != is_auth:
                continue
            if f.slot is not None and f.slot != slot:
                continue
            if not f.selects(0, params):
                continue
            self.matches[i] += 1
            if f.connection is not None and self.matches[i] != f.connection:
                continue
            if f.times is not None and self.fired[i] >= f.times:
                continue
            out.append(i)
        return out

    def fire(self, index: int) -> bool:
        """Record that fault *index* fires now; False when it used up its ``times``."""
        f = self.faults[index]
        if index in self.removed or (f.times is not None and self.fired[index] >= f.times):
            return False
        self.fired[index] += 1
        return True


def last_fired(book: FaultBook, action: str) -> Fault:
    """The last fault of *action* that fired (its parameters shape the modification)."""
    for i in range(len(book.faults) - 1, -1, -1):
        if book.faults[i].action == action and book.fired[i]:
            return book.faults[i]
    return Fault(action, after_messages=0)


def modify_payload(book: FaultBook, data: bytes, modifiers: Sequence[str]) -> tuple[bytes, int]:
    """The one place the message modifiers apply, for every stream (logical, physical WAL,
    BASE_BACKUP): *data* corrupted (one byte XORed) and/or truncated, and how many times it
    goes out (2 with ``duplicate``)."""
    copies = 1
    for mod in modifiers:
        if mod == "corrupt":
            if data:
                f = last_fired(book, "corrupt")
                b = bytearray(data)
                b[min(max(f.offset, 0), len(b) - 1)] ^= f.xor & 0xFF
                data = bytes(b)
        elif mod == "truncate":
            f = last_fired(book, "truncate")
            data = data[:max(0, f.keep if f.keep is not None else len(data) // 2)]
        elif mod == "duplicate":
            copies = 2
    return data, copies

