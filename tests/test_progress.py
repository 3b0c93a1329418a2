"""Live progress: a tqdm bar on a terminal, plain periodic lines elsewhere."""

from __future__ import annotations

import io

from pgwire_spec._progress import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal() -> None:
    lines: list[str] = []
    with progress(10.0, "fuzz", "s", say=lines.append, interval=0.0) as bar:
        bar.update_to(2.0, "1,000 cases")
        bar.update_to(4.0, "2,000 cases")
    assert lines == ["[fuzz]     2 of ~10 s: 1,000 cases", "[fuzz]     4 of ~10 s: 2,000 cases"]


def test_a_bar_on_a_terminal() -> None:
    term = _Terminal()
    with progress(10.0, "fuzz", "s", stream=term) as bar:
        bar.update_to(5.0, "123 cases")
        bar.update_to(12.0, "456 cases")  # past the estimate: the bar stays full
    shown = term.getvalue()
    assert "fuzz:" in shown and "456 cases" in shown and "100%" in shown
