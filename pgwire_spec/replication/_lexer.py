"""The replication command lexer (repl_scanner.l), one per server major and release.

Lexing, as repl_scanner.l does it:

- keywords are UPPERCASE and case-sensitive (``identify_system`` is SQL);
- identifiers are folded to lower case (ASCII only) unless double-quoted, and truncated to
  63 bytes (NAMEDATALEN - 1); inside double quotes ``""`` is a quote from the minor release
  the per-major table names (``doubled_quote_since``); before, ``"a""b"`` is two identifiers;
- string literals are single-quoted, ``''`` is a quote; no ``E''``, no backslash escapes;
- unsigned integers; LSNs are ``hex/hex``;
- whitespace is the table's (VT from 17 on); no comments.

Linear time: each token is one match of one compiled pattern (flex's longest match: an LSN
before a number or an identifier, which it always outmatches), and option lists are read a
run of well-formed items at a time (:data:`Grammar.plugin_items`, :data:`Grammar.generic_items`),
so a command of megabytes costs what reading its characters costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .. import majors
from ..errors import CommandSyntaxError, OptionError
from ..lsn import parse_lsn
from ..majors import Major
from ._ast import _MAX_UINT32, _NAMEDATALEN

_END, _KW, _IDENT, _STRING, _UINT, _LSN, _CHAR = "end", "keyword", "ident", "string", "uint", "lsn", "char"

# ident_start [A-Za-z\200-\377_]: every byte of a non-ASCII character is >= 0x80.
_IDENT = r"[A-Za-z_\u0080-\U0010FFFF][A-Za-z_0-9$\u0080-\U0010FFFF]*+"
_LSN_PAT = r"[0-9A-Fa-f]++/[0-9A-Fa-f]++"
_UINT_PAT = r"[0-9]++"
_STRING_PAT = r"'[^'\x00]*+(?:''[^'\x00]*+)*+'"
_QIDENT_DOUBLED = r'"[^"\x00]*+(?:""[^"\x00]*+)*+"'
_QIDENT_PLAIN = r'"[^"\x00]*+"'

_PLAIN_IDENT_RE = re.compile(r"[a-z_\u0080-\U0010FFFF][a-z_0-9$\u0080-\U0010FFFF]*")
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UNFOLD = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    value: str | int | None  # keyword, identifier, string, character: str; number, LSN: int
    start: int
    end: int
    quoted: bool = False

    @property
    def as_str(self) -> str:
        assert isinstance(self.value, str)
        return self.value

    @property
    def as_int(self) -> int:
        assert isinstance(self.value, int)
        return self.value


@dataclass(frozen=True, slots=True, eq=False)
class Grammar:
    """The lexer and the parser's view of one major's entry of the per-major table."""

    table: Major
    keywords: frozenset[str]
    commands: frozenset[str]
    option_keywords: frozenset[str]
    #: ``""`` inside a quoted identifier is a quote (xddouble)
    doubled_quote: bool
    #: whitespace, then one token (or nothing: a character the patterns do not know)
    token: re.Pattern[str]
    #: a run of whole ``item ,`` units of START_REPLICATION's plugin options / generic options
    plugin_run: re.Pattern[str]
    plugin_unit: re.Pattern[str]
    generic_run: re.Pattern[str]
    generic_unit: re.Pattern[str]
    #: the inside of a string / quoted identifier without its closing quote (for errors)
    string_inside: re.Pattern[str]
    qident_inside: re.Pattern[str]

    @property
    def major(self) -> int:
        return self.table.major

    @property
    def generic(self) -> bool:
        """Parenthesized option lists of CREATE_REPLICATION_SLOT / BASE_BACKUP."""
        return self.table.generic_options


@lru_cache(maxsize=64)
def _compile(table: Major, doubled: bool) -> Grammar:
    ws = "[" + re.escape(table.whitespace) + "]*+"
    qident = _QIDENT_DOUBLED if doubled else _QIDENT_PLAIN
    token = re.compile(
        f"{ws}(?:(?P<lsn>{_LSN_PAT})|(?P<uint>{_UINT_PAT})|(?P<ident>{_IDENT})|(?P<qident>{qident})"
        f"|(?P<string>{_STRING_PAT}))?"
    )
    # One option list item followed by its comma (the last item, the ')' and anything
    # irregular are the token parser's); the runs without capturing groups (a possessive
    # repeat of capturing groups trips CPython 3.11's re: "The span of capturing group is
    # wrong").
    def units(capture: bool) -> tuple[str, str]:
        def c(p: str) -> str:
            return f"({p})" if capture else f"(?:{p})"

        # a quoted text's group is its inside
        qi, si = f'"{c(qident[1:-1])}"', f"'{c(_STRING_PAT[1:-1])}'"
        name = f"(?:{qi}|{c(_IDENT)})"
        sep = c(f"{ws},{ws}")
        plugin = f"{name}(?:{ws}{si})?{sep}"
        generic = f"{name}(?:{ws}(?:{qi}|{c(_IDENT)}|{si}|{c(_UINT_PAT)}))?{sep}"
        return plugin, generic

    plugin, generic = units(True)
    plugin_run, generic_run = units(False)
    return Grammar(
        table=table,
        keywords=table.keywords,
        commands=table.commands,
        option_keywords=table.option_keywords,
        doubled_quote=doubled,
        token=token,
        plugin_run=re.compile(f"(?:{plugin_run})*+"),
        plugin_unit=re.compile(plugin),
        generic_run=re.compile(f"(?:{generic_run})*+"),
        generic_unit=re.compile(generic),
        string_inside=re.compile(_STRING_PAT[1:-1]),
        qident_inside=re.compile(qident[1:-1]),
    )


def grammar(server_major: int | None, server_minor: int | None = None) -> Grammar:
    """The grammar of *server_major* (default: the newest) at *server_minor* (default: its
    latest release)."""
    if server_major is None:
        if server_minor is not None:
            raise OptionError(f"server_minor {server_minor!r} needs a server_major")
        table = majors.newest()
    else:
        table = majors.major(server_major)
    if server_minor is not None and (
        isinstance(server_minor, bool) or not isinstance(server_minor, int) or server_minor < 0
    ):
        raise OptionError(f"expected a server minor (an integer >= 0), found {server_minor!r}")
    return _compile(table, table.doubled_quote(server_minor))


def truncate_identifier(name: str) -> str:
    """truncate_identifier: at most NAMEDATALEN-1 bytes, cut on a character boundary."""
    if len(name) < _NAMEDATALEN // 4:
        return name
    size = 0
    for i, ch in enumerate(name):
        size += len(ch.encode("utf-8", "surrogatepass"))
        if size > _NAMEDATALEN - 1:
            return name[:i]
    return name


def unquote_identifier(raw: str, doubled: bool) -> str:
    """The name inside a double-quoted identifier's text."""
    inner = raw[1:-1]
    if doubled and '""' in inner:
        inner = inner.replace('""', '"')
    return truncate_identifier(inner)


def unquote_string(raw: str) -> str:
    inner = raw[1:-1]
    return inner.replace("''", "'") if "''" in inner else inner


def describe(tok: _Token, text: str) -> str:
    if tok.kind == _END:
        return "end of text"
    raw = text[tok.start:tok.end]
    if len(raw) > 40:
        raw = raw[:37] + "..."
    if tok.kind == _KW:
        return f"keyword {raw}"
    if tok.kind == _IDENT:
        return f"identifier {raw}" if tok.quoted else f"identifier {raw!r}"
    if tok.kind == _STRING:
        return f"string {raw}"
    if tok.kind == _UINT:
        return f"number {raw}"
    if tok.kind == _LSN:
        return f"LSN {raw}"
    return f"{raw!r}"


def _nul(text: str, position: int) -> CommandSyntaxError:
    return CommandSyntaxError(
        expected="text without NUL (a query string ends at its first NUL)", found="NUL",
        position=position, text=text,
    )


def _unterminated(text: str, pos: int, g: Grammar) -> CommandSyntaxError:
    """The error for a quote at *pos* that the token pattern could not close: a NUL inside
    it, or no closing quote."""
    quote = text[pos]
    inside = g.string_inside if quote == "'" else g.qident_inside
    m = inside.match(text, pos + 1)
    end = m.end() if m else pos + 1
    if end < len(text) and text[end] == "\x00":
        return _nul(text, end)
    what = "string" if quote == "'" else "identifier"
    return CommandSyntaxError(
        expected=f"a closing {quote} for the {what} that starts at position {pos}",
        found=f"end of text (unterminated quoted {what})", position=len(text), text=text,
    )


def uint_value(raw: str, pos: int, text: str) -> int:
    digits = raw.lstrip("0") or "0"
    value = int(digits) if len(digits) <= 10 else _MAX_UINT32 + 1
    if value > _MAX_UINT32:
        # The server's strtoul wraps this to 32 bits; we refuse it.
        raise CommandSyntaxError(
            expected="an unsigned 32-bit integer (at most 4294967295)", found=f"number {raw}",
            position=pos, text=text,
        )
    return value


def lex(text: str, pos: int, g: Grammar) -> _Token:
    """The token at or after *pos* (flex: longest match, keywords before identifiers)."""
    m = g.token.match(text, pos)
    assert m is not None  # every part of the pattern is optional
    kind = m.lastgroup
    if kind is None:
        start = m.end()
        if start >= len(text):
            return _Token(_END, None, start, start)
        ch = text[start]
        if ch == "\x00":
            raise _nul(text, start)
        if ch in "'\"":
            raise _unterminated(text, start, g)
        return _Token(_CHAR, ch, start, start + 1)
    start, end = m.span(kind)
    raw = m.group(kind)
    if kind == "ident":
        if raw in g.keywords:
            return _Token(_KW, raw, start, end)
        return _Token(_IDENT, truncate_identifier(raw.translate(_FOLD)), start, end)
    if kind == "qident":
        return _Token(_IDENT, unquote_identifier(raw, g.doubled_quote), start, end, quoted=True)
    if kind == "string":
        return _Token(_STRING, unquote_string(raw), start, end)
    if kind == "uint":
        return _Token(_UINT, uint_value(raw, start, text), start, end)
    hi, lo = raw.split("/")
    hi, lo = hi.lstrip("0") or "0", lo.lstrip("0") or "0"
    if len(hi) > 8 or len(lo) > 8:
        # sscanf("%X/%X") into 32-bit halves: the server wraps; we refuse.
        raise CommandSyntaxError(
            expected="an LSN whose halves fit in 32 bits (at most 8 hex digits each)",
            found=f"LSN {raw}", position=start, text=text,
        )
    return _Token(_LSN, parse_lsn(f"{hi}/{lo}"), start, end)
