"""The replication command parser on long commands, side by side in one run.

Each shape of command at 1 MB and 10 MB, parsed (or rejected) by:

- ``parse_command``: the parser, reading runs of items spelled alike with one match and
  ``str.split``, other items one pattern match each;
- one match per item: the same parser with the run reader off (what it did before);
- the token parser alone: the same parser with the run readers off, every item token by
  token (what a lexer/parser pair costs per token in Python);
- a bare scan: one ``re.findall`` of the lexer's token pattern over the text, building
  nothing (a floor: what touching every token in C costs).

Medians of interleaved passes; ``ours ÷ this`` below 1 means the other is faster.

    python benchmarks/bench_commands.py            # 1 MB and 10 MB, 5 passes
    python benchmarks/bench_commands.py --short    # 100 kB and 1 MB, 1 pass
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pgwire_spec.errors import CommandSyntaxError
from pgwire_spec.replication import _lexer, _parser
from pgwire_spec.replication.commands import parse_command


def plugin_options(size: int) -> str:
    head, item = "START_REPLICATION SLOT \"s\" LOGICAL 0/0 (", "\"opt\" 'value', "
    return head + item * ((size - len(head)) // len(item)) + "\"x\" 'y')"


def generic_options(size: int) -> str:
    head, item = "BASE_BACKUP (", "LABEL 'l', "
    return head + item * ((size - len(head)) // len(item)) + "WAIT false)"


def rejected_at_the_end(size: int) -> str:
    head, item = "START_REPLICATION SLOT s LOGICAL 0/0 (", "a 'b', "
    return head + item * ((size - len(head)) // len(item)) + "a 'b' b)"


def one_long_string(size: int) -> str:
    return "START_REPLICATION SLOT s LOGICAL 0/0 (a '" + "x" * size + "')"


SHAPES: dict[str, Callable[[int], str]] = {
    "plugin options": plugin_options,
    "generic options": generic_options,
    "rejected at the end": rejected_at_the_end,
    "one long string": one_long_string,
}


@contextmanager
def tokens_only() -> Iterator[None]:
    saved = _parser._Parser.plugin_run, _parser._Parser.generic_run

    def none(self: _parser._Parser, start: int) -> _parser._Run:
        return [], None, start, False

    _parser._Parser.plugin_run = none  # type: ignore[method-assign]
    _parser._Parser.generic_run = none  # type: ignore[method-assign]
    try:
        yield
    finally:
        _parser._Parser.plugin_run, _parser._Parser.generic_run = saved  # type: ignore[method-assign]


@contextmanager
def items_only() -> Iterator[None]:
    saved = _parser._Parser.fast_run

    def none(self: _parser._Parser, start: int, shapes: tuple[_lexer.FastShape, ...]) -> None:
        return None

    _parser._Parser.fast_run = none  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        _parser._Parser.fast_run = saved  # type: ignore[method-assign]


def parse_items_only(text: str) -> None:
    with items_only():
        parse(text)


def parse(text: str) -> None:
    try:
        parse_command(text)
    except CommandSyntaxError:
        pass


def parse_tokens_only(text: str) -> None:
    with tokens_only():
        parse(text)


TOKEN = _lexer.grammar(None).token


def bare_scan(text: str) -> None:
    TOKEN.findall(text)


RUNNERS: dict[str, Callable[[str], None]] = {
    "parse_command": parse,
    "one match per item": parse_items_only,
    "token parser alone": parse_tokens_only,
    "bare re.findall scan": bare_scan,
}


def timed(fn: Callable[[str], None], text: str) -> float:
    # CPU time: on a shared machine other processes' load only adds to the wall clock
    start = time.process_time()
    fn(text)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="interleaved passes (the median is shown)")
    ap.add_argument("--short", action="store_true", help="100 kB and 1 MB, one pass (CI)")
    args = ap.parse_args()
    sizes = (100_000, 1_000_000) if args.short else (1_000_000, 10_000_000)
    repeat = 1 if args.short else args.repeat
    for fn in RUNNERS.values():  # compile the grammar's patterns before timing
        fn(plugin_options(1000))
    print(f"{'command':<22} {'size':>6}  " + "  ".join(f"{name:>22}" for name in RUNNERS)
          + "   ours ÷ per item   ours ÷ tokens   (CPU ms, medians)")
    for shape, make in SHAPES.items():
        for size in sizes:
            text = make(size)
            times: dict[str, list[float]] = {name: [] for name in RUNNERS}
            for _ in range(repeat):
                for name, fn in RUNNERS.items():
                    times[name].append(timed(fn, text))
            med = {name: statistics.median(t) for name, t in times.items()}
            cells = "  ".join(f"{1000 * med[name]:>19.1f} ms" for name in RUNNERS)
            ours = max(med["parse_command"], 1e-6)
            per_item, tokens = med["one match per item"] / ours, med["token parser alone"] / ours
            print(f"{shape:<22} {size / 1e6:>4g}MB  {cells}   {per_item:>8.1f}x faster   {tokens:>6.1f}x faster")


if __name__ == "__main__":
    main()
