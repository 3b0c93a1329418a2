"""Live progress of long work: a tqdm bar on a terminal, plain periodic lines otherwise
(CI logs, pipes), on stderr, so that a command's output stays its result.

>>> with progress(total=60.0, desc="fuzz", unit="s") as bar:
...     bar.update_to(12.0, "1,234,567 cases")
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["Progress", "progress"]


class Progress:
    """One task's progress: :meth:`update_to` a position (of *total*), with a short text."""

    def __init__(self, total: float | None, desc: str, unit: str, stream: IO[str], interval: float,
                 say: Callable[[str], None] | None) -> None:
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.stream = stream
        self.say = say or (lambda line: print(line, file=stream, flush=True))
        self.position = 0.0
        self.text = ""
        self._last_line = 0.0
        self._bar: Any = None
        if say is None and stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=stream, dynamic_ncols=True, leave=True,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} {unit} {postfix}")

    def update_to(self, position: float, text: str = "") -> None:
        self.position, self.text = position, text
        if self._bar is not None:
            shown = min(position, self.total) if self.total else position
            self._bar.update(shown - self._bar.n)
            self._bar.set_postfix_str(text, refresh=True)
            return
        now = time.monotonic()
        if now - self._last_line >= self.interval:
            self._last_line = now
            of = f" of ~{self.total:.0f}" if self.total else ""
            self.say(f"[{self.desc}] {position:5.0f}{of} {self.unit}: {text}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextmanager
def progress(total: float | None, desc: str, unit: str, *, stream: IO[str] | None = None,
             interval: float = 2.0, say: Callable[[str], None] | None = None) -> Iterator[Progress]:
    """A :class:`Progress` for the block: a bar when *stream* (stderr) is a terminal and no
    *say* is given, else a line every *interval* seconds through *say* (default: *stream*)."""
    bar = Progress(total, desc, unit, stream or sys.stderr, interval, say)
    try:
        yield bar
    finally:
        bar.close()
