"""The command parser's speed: option lists read a run of items at a time agree with the
token-by-token parser, and a command's cost grows linearly with its length (accepted or
rejected)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pgwire_spec.errors import CommandSyntaxError, OptionError
from pgwire_spec.replication import _parser
from pgwire_spec.replication.commands import parse_command

MAJORS = [10, 14, 15, 17, 18]


def _outcome(text: str, major: int, minor: int | None) -> object:
    try:
        cmd = parse_command(text, server_major=major, server_minor=minor)
    except CommandSyntaxError as exc:
        return ("error", exc.position, exc.expected, exc.found, exc.truncated)
    except OptionError as exc:
        return ("option error", str(exc))
    return (cmd, None if cmd is None else (cmd.style, cmd.truncated))


@contextmanager
def tokens_only() -> Iterator[None]:
    """The run readers switched off: every item token by token."""
    saved = _parser._Parser.plugin_run, _parser._Parser.generic_run

    def none(self: _parser._Parser, start: int) -> _parser._Run:
        return [], None, start, False

    _parser._Parser.plugin_run = none  # type: ignore[method-assign]
    _parser._Parser.generic_run = none  # type: ignore[method-assign]
    try:
        yield
    finally:
        _parser._Parser.plugin_run, _parser._Parser.generic_run = saved  # type: ignore[method-assign]


ITEM_PARTS = st.sampled_from([
    "a", "B", "Ab_1", '"Q"', '"a""b"', '""', "'v'", "'it''s'", "''", "0", "42", "4294967296", "0/0", "true",
    "FALSE", '"true"', "WAIT", "TWO_PHASE", "READ_REPLICATION_SLOT", "read_replication_slot", "x" * 70,
    '"' + "y" * 70 + '"', "é", "\x00", "'", '"', "$", ";", "(", "))",
])
WS = st.sampled_from(["", " ", "  ", "\t", "\n", "\v", "\f"])


@st.composite
def option_lists(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(1, 6))):
        parts = draw(st.lists(ITEM_PARTS, min_size=1, max_size=3))
        items.append("".join(p + draw(WS) for p in parts))
    seps = [draw(WS) + draw(st.sampled_from([",", ",", ",", ""])) + draw(WS) for _ in items]
    return "(" + draw(WS) + "".join(i + s for i, s in zip(items, seps, strict=True))[:-1] + draw(WS) + ")"


HEADS = [
    "START_REPLICATION SLOT s LOGICAL 0/0 ",
    "CREATE_REPLICATION_SLOT s LOGICAL pgoutput ",
    "ALTER_REPLICATION_SLOT s ",
    "BASE_BACKUP ",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(HEADS), option_lists(), st.sampled_from(MAJORS), st.sampled_from([None, 0]))
@example("START_REPLICATION SLOT s LOGICAL 0/0 ", "(a 'b', \"c\" 'd''e',  f , g)", 18, None)
@example("BASE_BACKUP ", "(LABEL 'x', WAIT false, MAX_RATE 32, x WAIT, y 1)", 18, None)
@example("BASE_BACKUP ", "(a 4294967296, b)", 18, None)
@example("BASE_BACKUP ", '(A, b "a""b", READ_REPLICATION_SLOT, c)', 18, 0)
@example("CREATE_REPLICATION_SLOT s LOGICAL pgoutput ", "(" + "x" * 70 + " WAIT)),a,a,a)", 18, None)
def test_runs_read_what_the_token_parser_reads(head: str, options: str, major: int, minor: int | None) -> None:
    text = head + options
    fast = _outcome(text, major, minor)
    with tokens_only():
        slow = _outcome(text, major, minor)
    assert fast == slow, text


# Items spelled alike (what a run reads with one match), a few spelled otherwise among them.
REGULAR_ITEMS = st.sampled_from([
    "\"opt\" 'v'", "\"o p\"  ''", "opt 'v'", "Opt\t'it'", "LABEL 'l'", "WAIT false", "x TRUE", "MAX_RATE 32",
    "n 007", "n 1234567890", "PROGRESS", "two_phase", "TWO_PHASE", "a WAIT", "WAIT", "READ_REPLICATION_SLOT",
    "read_replication_slot 'x'", "y" * 20 + " 'v'", '"' + "z" * 20 + "\" 'v'", "b " + "w" * 70, "c '" + "v" * 1100 + "'",
    "_1 'v'", "é 'v'", "\"q\"\"q\" 'v'", "q 'it''s'",
])


@st.composite
def long_option_lists(draw: st.DrawFn) -> str:
    items = draw(st.lists(REGULAR_ITEMS, min_size=1, max_size=40))
    if draw(st.integers(0, 3)):  # mostly one shape repeated, as a client writes a list
        items = [items[0]] * len(items) + items[1:3]
    seps = [draw(WS) + "," + draw(WS) for _ in items]
    return "(" + draw(WS) + "".join(i + s for i, s in zip(items, seps, strict=True))[:-1] + draw(WS) + ")"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(HEADS), long_option_lists(), st.sampled_from(MAJORS), st.sampled_from([None, 0]))
@example("START_REPLICATION SLOT s LOGICAL 0/0 ", "(" + "\"opt\" 'v', " * 30 + "a 'b')", 18, None)
@example("BASE_BACKUP ", "(" + "LABEL 'l', " * 30 + "WAIT 1, " * 20 + "x WAIT, y)", 18, None)
@example("CREATE_REPLICATION_SLOT s LOGICAL pgoutput ", "(" + "x TRUE, " * 10 + "y)", 18, None)
@example("BASE_BACKUP ", "(" + "label 'l', " * 10 + "WAIT)", 18, None)
@example("BASE_BACKUP ", "(" + "a b, " * 10 + "c WAIT, " + "a b, " * 10 + "y)", 18, None)
@example("BASE_BACKUP ", "(" + "MAX_RATE 32, " * 10 + "n 007, " * 3 + "m 1234567890, " * 3 + "y)", 18, None)
@example("BASE_BACKUP ", "(" + "label 'l', " * 10 + "WAIT, " * 10 + "y" * 70 + " " + "w" * 70 + ", x)", 17, None)
@example("START_REPLICATION SLOT s LOGICAL 0/0 ", "(" + "opt 'v', " * 10 + '"a" \'b\')', 15, None)
@example("START_REPLICATION SLOT s LOGICAL 0/0 ", "(" + '"' + "z" * 70 + "\" 'v', " * 10 + "a 'b')", 18, None)
def test_runs_of_one_shape_read_what_the_token_parser_reads(
    head: str, options: str, major: int, minor: int | None,
) -> None:
    text = head + options
    fast = _outcome(text, major, minor)
    with tokens_only():
        slow = _outcome(text, major, minor)
    assert fast == slow, text


def test_identifiers_over_63_bytes_are_cut_and_reported_in_order() -> None:
    long_slot, long_opt, long_value = "S" * 70, "o" * 64, "é" * 40  # é: 2 bytes, cut at 31 characters
    cmd = parse_command(f"CREATE_REPLICATION_SLOT {long_slot} LOGICAL pgoutput ({long_opt} {long_value}, b)")
    assert cmd is not None and cmd.slot_name == "s" * 63
    assert cmd.truncated == (("s" * 70, "s" * 63), (long_opt, long_opt[:63]), (long_value, "é" * 31))
    with pytest.raises(CommandSyntaxError) as err:
        parse_command(f'START_REPLICATION SLOT "{long_slot}" PHYSICAL x')
    assert err.value.truncated == ((long_slot, long_slot[:63]),)


def _plugin_options(size: int) -> str:
    head, item = "START_REPLICATION SLOT \"s\" LOGICAL 0/0 (", "\"opt\" 'value', "
    return head + item * ((size - len(head)) // len(item)) + "\"x\" 'y')"


def _generic_options(size: int) -> str:
    head, item = "BASE_BACKUP (", "LABEL 'l', "
    return head + item * ((size - len(head)) // len(item)) + "WAIT false)"


def _rejected_at_the_end(size: int) -> str:
    head, item = "START_REPLICATION SLOT s LOGICAL 0/0 (", "a 'b', "
    return head + item * ((size - len(head)) // len(item)) + "a 'b' b)"


def _keyword_at_the_end(size: int) -> str:
    head, item = "BASE_BACKUP (", "a b, "
    return head + item * ((size - len(head)) // len(item)) + "c WAIT)"


def _long_identifier(size: int) -> str:
    return "SHOW " + "x" * size


def _unterminated_string(size: int) -> str:
    return "START_REPLICATION SLOT s LOGICAL 0/0 (a '" + "''" * (size // 2)


def _cost(text: str) -> tuple[float, object]:
    """The best of three parses in this thread's CPU time (a shared machine's noise only
    ever adds, and time other processes ran is not counted) and the outcome."""
    best, outcome = float("inf"), None
    for _ in range(3):
        start = time.thread_time()
        try:
            outcome = parse_command(text)
        except CommandSyntaxError as exc:
            outcome = exc
        best = min(best, time.thread_time() - start)
    return best, outcome


@pytest.mark.parametrize("make", [_plugin_options, _generic_options, _rejected_at_the_end, _keyword_at_the_end,
                                  _long_identifier,
                                  _unterminated_string])
def test_a_command_costs_linear_time_in_its_length(make: Callable[[int], str]) -> None:
    (small, _), (large, outcome) = _cost(make(1_000_000)), _cost(make(10_000_000))
    if isinstance(outcome, CommandSyntaxError):
        assert outcome.position > 9_000_000, outcome  # found where it is, at the end
    # Ten times the text: about ten times the time; quadratic work would be a hundred. The
    # bound leaves room for a loaded machine's caches (32 was seen once at load 11).
    ratio = large / max(small, 1e-4)
    assert ratio < 45, f"{make.__name__}: 10 MB took {ratio:.1f} times what 1 MB took"


def test_the_plain_identifier_pattern_is_the_documented_classes() -> None:
    # _PLAIN_IDENT_RE is written as complements below 0x80 (fast to compile): it matches
    # what [a-z_\u0080-\U0010FFFF][a-z_0-9$\u0080-\U0010FFFF]* matches (below U+3000 and at the ranges' ends)
    from pgwire_spec.replication._lexer import _PLAIN_IDENT_RE

    def first(c: str) -> bool:
        return c == "_" or "a" <= c <= "z" or c >= "\x80"

    def rest(c: str) -> bool:
        return first(c) or c == "$" or "0" <= c <= "9"

    for cp in [*range(0x3000), 0xD800, 0xDFFF, 0xFFFF, 0x10000, 0x10FFFF]:
        c = chr(cp)
        assert bool(_PLAIN_IDENT_RE.fullmatch(c)) == first(c), hex(cp)
        assert bool(_PLAIN_IDENT_RE.fullmatch("a" + c)) == rest(c), hex(cp)
