"""Counts over a fixture corpus: cases per server major and message kind (a Markdown table)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..pgoutput.messages import MESSAGE_TYPES
from .fixture import FixtureError, find_fixture_files, read_fixture

__all__ = ["corpus_table"]


def corpus_table(paths: list[str | Path]) -> str:
    """A Markdown table: one row per major, one column per message kind, plus totals."""
    per_major: dict[int, Counter[str]] = {}
    sizes: Counter[int] = Counter()
    groups: Counter[int] = Counter()
    captured: Counter[int] = Counter()
    for path in find_fixture_files(list(paths)):
        try:
            fx = read_fixture(path)
        except FixtureError:
            continue
        c = per_major.setdefault(fx.major, Counter())
        c.update(case.expected.get("type", "?") for case in fx.cases)
        sizes[fx.major] += path.stat().st_size
        groups[fx.major] += len(fx.groups)
        captured[fx.major] += sum(g.captured for g in fx.groups)
    kinds = [(name, cls.tag) for name, cls in MESSAGE_TYPES.items()]
    head = ["major", "option sets", "payloads captured", "cases kept", *[f"{n} `{t}`" for n, t in kinds], "bytes on disk"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total: Counter[str] = Counter()
    for major in sorted(per_major):
        c = per_major[major]
        total.update(c)
        row = [str(major), str(groups[major]), f"{captured[major]:,}", f"{sum(c.values()):,}",
               *[str(c.get(n, 0)) for n, _ in kinds], f"{sizes[major]:,}"]
        lines.append("| " + " | ".join(row) + " |")
    row = ["all", str(sum(groups.values())), f"{sum(captured.values()):,}", f"{sum(total.values()):,}",
           *[str(total.get(n, 0)) for n, _ in kinds], f"{sum(sizes.values()):,}"]
    lines.append("| " + " | ".join(f"**{x}**" for x in row) + " |")
    return "\n".join(lines)
