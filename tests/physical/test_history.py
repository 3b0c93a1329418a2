"""Timeline history files: the recorded one, and the questions a walsender asks of it."""

from __future__ import annotations

import pytest

from pgwire_spec.physical.history import History, HistoryError, TimelineEntry, parse_history, render_history

from .harness import RECORDING


def test_the_recorded_history_file_round_trips() -> None:
    content = RECORDING.history.file(2)
    entries = parse_history(content, timeline=2)
    assert entries == RECORDING.history.entries
    assert render_history(entries) == content
    assert content.endswith(b"\tno recovery target specified\n")


def test_switch_points_and_timelines_of_positions() -> None:
    h = History(3, (TimelineEntry(1, 0x3000158), TimelineEntry(2, 0x5000000)))
    assert h.switchpoint(1) == (0x3000158, 2)
    assert h.switchpoint(2) == (0x5000000, 3)
    assert h.switchpoint(3) == (None, None)
    assert h.begin(1) == 0 and h.begin(2) == 0x3000158 and h.begin(3) == 0x5000000
    # tliOfPointInHistory: a switch point belongs to the newer timeline
    assert [h.timeline_of(p) for p in (0, 0x3000157, 0x3000158, 0x4FFFFFF, 0x5000000)] == [1, 1, 2, 2, 3]
    assert h.file(2) == b"1\t0/3000158\tno recovery target specified\n"
    with pytest.raises(HistoryError, match="requested timeline 4 is not in this server's history"):
        h.switchpoint(4)


def test_comments_and_blank_lines_are_skipped_bad_lines_are_named() -> None:
    assert parse_history("# comment\n\n1\t0/10\tr\n") == (TimelineEntry(1, 0x10, "r"),)
    with pytest.raises(HistoryError, match="line 2"):
        parse_history("1\t0/10\tr\nnot a line\n", timeline=3)
    with pytest.raises(HistoryError, match="increasing"):
        parse_history("2\t0/10\tr\n1\t0/20\tr\n")
    with pytest.raises(HistoryError, match="older timelines"):
        History(2, (TimelineEntry(2, 0x10),))
