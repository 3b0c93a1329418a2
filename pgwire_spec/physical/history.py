"""Timeline history files: what TIMELINE_HISTORY sends, and how a server reads them.

A history file ``0000000N.history`` (timeline.c, writeTimeLineHistory) has one line per
ancestor timeline: ``parentTLI <TAB> switchpoint <TAB> reason``, e.g.
``1\\t0/3000158\\tno recovery target specified``. Reading it (readTimeLineHistory) gives
the timelines of the server's history, each with the range of WAL it covers; the walsender
asks it where a requested timeline ends (tliSwitchPoint) and READ_REPLICATION_SLOT which
timeline a position belongs to (tliOfPointInHistory).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PgWireError
from ..lsn import format_lsn, parse_lsn

__all__ = [
    "HistoryError",
    "TimelineEntry",
    "History",
    "history_file_name",
    "parse_history",
    "render_history",
]


class HistoryError(PgWireError, ValueError):
    """A history file that does not parse, or a timeline that is not in the history."""


def history_file_name(timeline: int) -> str:
    """``00000002.history`` (TLHistoryFileName)."""
    return f"{timeline:08X}.history"


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One line of a history file: the parent *timeline*, the position where the server
    switched away from it, and the reason text."""

    timeline: int
    switchpoint: int
    reason: str = "no recovery target specified"


def parse_history(content: bytes | str, *, timeline: int | None = None) -> tuple[TimelineEntry, ...]:
    """The entries of a history file's content (blank lines and ``#`` comments skipped,
    as readTimeLineHistory does). *timeline*: the file's own timeline, for error texts."""
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    where = f"history of timeline {timeline}" if timeline is not None else "history file"
    out: list[TimelineEntry] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = line.split("\t", 2) if "\t" in line else stripped.split(None, 2)
        try:
            tli = int(parts[0])
            switch = parse_lsn(parts[1])
        except (ValueError, IndexError):
            raise HistoryError(f"{where}, line {number}: expected 'timeline<TAB>X/X<TAB>reason', "
                               f"found {line!r}") from None
        if out and tli <= out[-1].timeline:
            raise HistoryError(f"{where}, line {number}: expected timeline IDs in increasing sequence, "
                               f"found {tli} after {out[-1].timeline}")
        out.append(TimelineEntry(tli, switch, parts[2].strip() if len(parts) > 2 else ""))
    return tuple(out)


def render_history(entries: tuple[TimelineEntry, ...] | list[TimelineEntry]) -> bytes:
    """A history file's content, as writeTimeLineHistory writes it."""
    return "".join(f"{e.timeline}\t{format_lsn(e.switchpoint)}\t{e.reason}\n" for e in entries).encode()


@dataclass(frozen=True, slots=True)
class History:
    """A server's timeline history: its current timeline and the switch points of the
    ones before it (the current timeline's history file)."""

    current: int
    entries: tuple[TimelineEntry, ...] = ()

    def __post_init__(self) -> None:
        if self.current < 1:
            raise HistoryError(f"expected a timeline ID >= 1, found {self.current}")
        if self.entries and self.entries[-1].timeline >= self.current:
            raise HistoryError(f"expected the history of timeline {self.current} to name older timelines, "
                               f"found timeline {self.entries[-1].timeline}")

    @property
    def timelines(self) -> list[int]:
        return [e.timeline for e in self.entries] + [self.current]

    def begin(self, timeline: int) -> int:
        """Where *timeline* begins (0 for the first one)."""
        prev = 0
        for e in self.entries:
            if e.timeline == timeline:
                return prev
            prev = e.switchpoint
        if timeline == self.current:
            return prev
        raise self._missing(timeline)

    def switchpoint(self, timeline: int) -> tuple[int | None, int | None]:
        """(switch point, next timeline) of *timeline*; (None, None) for the current one
        (tliSwitchPoint)."""
        for i, e in enumerate(self.entries):
            if e.timeline == timeline:
                following = self.entries[i + 1].timeline if i + 1 < len(self.entries) else self.current
                return e.switchpoint, following
        if timeline == self.current:
            return None, None
        raise self._missing(timeline)

    def timeline_of(self, lsn: int) -> int:
        """The timeline position *lsn* belongs to (tliOfPointInHistory: a switch point
        belongs to the newer timeline)."""
        for e in self.entries:
            if lsn < e.switchpoint:
                return e.timeline
        return self.current

    def file(self, timeline: int) -> bytes:
        """The content of timeline *timeline*'s history file (its ancestors' lines)."""
        if timeline == self.current:
            return render_history(self.entries)
        for i, e in enumerate(self.entries):
            if e.timeline == timeline:
                return render_history(self.entries[:i])
        raise self._missing(timeline)

    @staticmethod
    def _missing(timeline: int) -> HistoryError:
        return HistoryError(f"requested timeline {timeline} is not in this server's history")
