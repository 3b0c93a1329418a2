"""What the connection's parts share: the actions the core hands the shell, a slot's state
and a running logical stream's state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..pgoutput.decoder import PgOutputDecoder
from ._render import Plan
from .personas import StreamOptions

# ------------------------------------------------------------------------------------------
# Actions
# ------------------------------------------------------------------------------------------


class Action:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Send(Action):
    data: bytes


@dataclass(frozen=True, slots=True)
class Wait(Action):
    """Nothing to do until bytes arrive or *deadline* (None: no deadline) passes."""

    deadline: float | None


@dataclass(frozen=True, slots=True)
class Close(Action):
    """Close the connection: ``reset`` with RST; ``crash``: every connection of the server."""

    reset: bool = False
    crash: bool = False


@dataclass(frozen=True, slots=True)
class Compute(Action):
    """Run ``work(cancelled)`` off the event loop (a worker thread) and hand what it returns
    to ``conn.computed(result)``; then ask for the next action as usual. *work* does no I/O
    and never raises (an error is its result); ``cancelled()`` turns True once *timeout*
    seconds have passed (or the connection is gone), and *work* then returns soon, with
    its own error. The connection reads no more input and hands out nothing else until it
    got the result (one per connection at a time); other connections go on meanwhile. A
    shell without threads may run *work* inline (``cancelled`` always False)."""

    work: Callable[[Callable[[], bool]], object]
    timeout: float



# ------------------------------------------------------------------------------------------
# Slots and streams
# ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SlotState:
    name: str
    kind: str  # logical | physical
    plugin: str | None
    database: str | None
    confirmed_flush: int
    restart_lsn: int
    two_phase: bool = False
    failover: bool = False
    temporary: bool = False
    #: The connection using the slot (START_REPLICATION), or None.
    active: int | None = None
    #: The connection that created a temporary slot.
    owner: int | None = None
    #: Why the slot was invalidated (one of the persona's ``slot_invalidation_causes``:
    #: wal_removed, rows_removed, idle_timeout …), or None.
    invalidated: str | None = None
    #: Seconds the slot stays active after its connection ends (a walsender that has not
    #: yet noticed its client is gone: a reconnect meets 55006 meanwhile).
    hold: float = 0.0
    #: While so held: until when (the server's clock) and the pid it is active for.
    held_until: float | None = None
    held_pid: int = 0
    #: When the slot was last released (wall clock, Unix seconds; None while active):
    #: pg_replication_slots.inactive_since (17+).
    inactive_since: float | None = None


#: walsender.c: at most one lag sample a second from logical decoding
#: (WALSND_LOGICAL_LAG_TRACK_INTERVAL_MS), at most this many kept (LAG_TRACKER_BUFFER_SIZE).
_LAG_SAMPLE_INTERVAL = 1.0
_LAG_SAMPLES = 8192


@dataclass(slots=True)
class LagTracker:
    """pg_stat_replication's write_lag, flush_lag and replay_lag as walsender.c computes
    them (LagTrackerWrite, LagTrackerRead, ProcessStandbyReplyMessage): the server notes
    (position sent, time) at most once a second while it streams (a logical walsender's
    WalSndUpdateProgress); a status update's position that passes unread samples sets that
    lag to the time since the newest of them was noted, one between two samples to the time
    interpolated between them, one before the first unread sample (all read before) to the
    time since that sample; with nothing to read a lag stays, and all are cleared (NULL)
    when two updates in a row report the sent position applied. Times are the shell's
    monotonic clock, in seconds."""

    samples: list[tuple[int, float]] = field(default_factory=list)
    #: per kind (write, flush, apply): the next sample not yet read, the last one read
    heads: list[int] = field(default_factory=lambda: [0, 0, 0])
    last_read: list[tuple[int, float] | None] = field(default_factory=lambda: [None, None, None])
    #: per kind: the lag in seconds, None before any (NULL)
    lags: list[float | None] = field(default_factory=lambda: [None, None, None])
    fully_applied: bool = False

    def write(self, lsn: int, now: float) -> None:
        """The server sent WAL up to *lsn*."""
        samples = self.samples
        if samples and (lsn <= samples[-1][0] or now - samples[-1][1] < _LAG_SAMPLE_INTERVAL):
            return
        if len(samples) - min(self.heads) >= _LAG_SAMPLES:
            samples[-1] = (lsn, now)  # full: overwrite the newest sample (LagTrackerWrite)
            return
        samples.append((lsn, now))
        read = min(self.heads)
        if read >= 1024:  # forget what every kind has read
            del samples[:read]
            self.heads = [h - read for h in self.heads]

    def read(self, positions: tuple[int, int, int], sent: int, now: float) -> None:
        """A status update reported *positions* (write, flush, apply); *sent* is the
        position the server sent last."""
        clear = False
        if positions[2] == sent:
            clear, self.fully_applied = self.fully_applied, True
        else:
            self.fully_applied = False
        samples = self.samples
        for kind, lsn in enumerate(positions):
            head, noted = self.heads[kind], None
            while head < len(samples) and samples[head][0] <= lsn:
                noted = samples[head][1]
                self.last_read[kind] = samples[head]
                head += 1
            self.heads[kind] = head
            if head == len(samples):
                self.last_read[kind] = None
            if noted is None and head < len(samples):
                prev, nxt = self.last_read[kind], samples[head]
                if prev is None:
                    noted = nxt[1]  # only a future sample: the lag if it were reached now
                elif lsn >= prev[0]:
                    noted = prev[1] + (nxt[1] - prev[1]) * (lsn - prev[0]) / (nxt[0] - prev[0])
            if noted is not None and noted <= now:
                self.lags[kind] = now - noted
            elif clear:
                self.lags[kind] = None


@dataclass(slots=True)
class _Stream:
    """A running START_REPLICATION … LOGICAL."""

    slot: SlotState
    options: StreamOptions
    plan: Plan
    started: float
    index: int = 0  # next plan item
    sent: int = 0  # XLogData messages sent
    wal_end: int = 0  # highest position sent
    done_keepalive: bool = False
    next_keepalive: float = 0.0
    faults: list[int] = field(default_factory=list)
    #: fault index -> the ``sent`` count it fires at (None: never; a kind it never reaches)
    due: dict[int, int | None] = field(default_factory=dict)
    #: fault index -> [next item to look at, Writes up to it, matches so far] for a fault
    #: counting one message kind, until its position is found
    scan: dict[int, list[int]] = field(default_factory=dict)
    scan_tags: dict[int, tuple[bytes, int]] = field(default_factory=dict)
    #: fault index -> when it met the stream (``after_seconds`` counts from there)
    since: dict[int, float] = field(default_factory=dict)
    paused_until: float | None = None
    paused_forever: bool = False
    #: The server sent CopyDone (a shutdown): it sends nothing more and waits for the
    #: client's CopyDone.
    done_sending: bool = False
    decoder: PgOutputDecoder | None = None
    #: When the client last sent anything (wal_sender_timeout counts from there), and
    #: whether the half-timeout keepalive asking for a reply went out since
    #: (walsender.c last_reply_timestamp, waiting_for_ping_response).
    last_reply: float = 0.0
    #: pg_stat_replication's lags (walsender.c's lag tracker), and the sendTime of the
    #: client's last status update (reply_time, µs since 2000-01-01; 0: none yet).
    lag: LagTracker = field(default_factory=LagTracker)
    reply_time: int = 0
    pinged: bool = False



#: Most bytes handed out per Send while streaming.
CHUNK = 1 << 16
