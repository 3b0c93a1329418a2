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
before a number or an identifier, which it always outmatches), and an option list's
well-formed items are read one pattern match each, with their comma
(:attr:`Grammar.plugin_unit`, :attr:`Grammar.generic_unit`), so a command of megabytes costs
what reading its characters costs. The common regular shapes (every item spelled alike:
``"name" 'value'``, ``name 'value'``, ``NAME word``, ``NAME 123``, ``NAME``) are read a
whole run at a time: one match of :attr:`Grammar.plugin_fast` / :attr:`Grammar.generic_fast`
for the run, then its parts cut out with ``str.split`` (no Python step per item).
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

#: a run's string values longer than this are read by the unit patterns (a character class
#: walks a long text many times slower than str.find)
_FAST_STRING = 1024

#: [a-z_\u0080-\U0010FFFF][a-z_0-9$\u0080-\U0010FFFF]*, written as the classes' complements
#: below 0x80: the same characters, compiled in 0.2 ms instead of 7 (re's charset
#: optimisation walks a range up to U+10FFFF at every start of every command)
_PLAIN_IDENT_RE = re.compile(r"[^\x00-\x5e\x60\x7b-\x7f][^\x00-\x23\x25-\x2f\x3a-\x5e\x60\x7b-\x7f]*")
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UNFOLD = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


#: A shape of option list items (``quoted-string``, ``word-string``, ``word-word``,
#: ``word-uint``, ``word``), the pattern of a run of them and of one.
FastShape = tuple[str, re.Pattern[str], re.Pattern[str]]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    value: str | int | None  # keyword, identifier, string, character: str; number, LSN: int
    start: int
    end: int
    quoted: bool = False
    #: an identifier cut to NAMEDATALEN-1 bytes: as written (folded unless quoted)
    untruncated: str | None = None

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
    #: one whole option list item with its comma (or, the last, the ')' after it) of
    #: START_REPLICATION's plugin options / generic options
    plugin_unit: re.Pattern[str]
    generic_unit: re.Pattern[str]
    #: whole runs of items spelled alike, each with its comma: (shape, run, one item)
    plugin_fast: tuple[FastShape, ...]
    generic_fast: tuple[FastShape, ...]

    @property
    def major(self) -> int:
        return self.table.major

    @property
    def plugin_name_keywords(self) -> frozenset[str]:
        """Words that cannot name a plugin option unquoted."""
        return self.keywords

    @property
    def generic_name_keywords(self) -> frozenset[str]:
        """Words that cannot name a generic option unquoted."""
        return self.keywords - self.option_keywords

    @property
    def generic(self) -> bool:
        """Parenthesized option lists of CREATE_REPLICATION_SLOT / BASE_BACKUP."""
        return self.table.generic_options


@lru_cache(maxsize=64)
def _compile(table: Major, doubled: bool) -> Grammar:
    ws = "[" + re.escape(table.whitespace) + "]*+"
    qident = _QIDENT_DOUBLED if doubled else _QIDENT_PLAIN
    # Quoted texts are not the pattern's: lex() reads them with str.find, which a text of
    # megabytes inside quotes needs (a character class walks it many times slower).
    token = re.compile(f"{ws}(?:(?P<lsn>{_LSN_PAT})|(?P<uint>{_UINT_PAT})|(?P<ident>{_IDENT}))?")
    # One option list item followed by its comma or, the last one, by the ')' (which, and
    # anything irregular, is the token parser's).
    def units() -> tuple[str, str]:
        def c(p: str) -> str:
            return f"({p})"

        # a quoted text's group is its inside; a long one (or one with many doubled
        # quotes) is left to the token parser, which reads it with str.find
        qi, si = (f"{q}{c(_bounded(inside))}{q}" for q, inside in (('"', qident[1:-1]), ("'", _STRING_PAT[1:-1])))
        name = f"(?:{qi}|{c(_IDENT)})"
        # the comma after an item, or (the last item) nothing before the closing ')'
        sep = f"(?:{c(f'{ws},{ws}')}|(?={ws}\\)))"
        plugin = f"{name}(?:{ws}{si})?{sep}"
        generic = f"{name}(?:{ws}(?:{qi}|{c(_IDENT)}|{si}|{c(_UINT_PAT)}))?{sep}"
        return plugin, generic

    plugin, generic = units()
    # Runs of one shape (str.split cuts their parts, so a quoted text holds neither quote,
    # a word is ASCII; anything else is the unit patterns'), each item with its comma.
    word, sep = "[A-Za-z_][A-Za-z_0-9$]*+", f"{ws},{ws}"
    string = f"'[^'\\x00]{{0,{_FAST_STRING}}}+'"
    # at most 9 digits: always a 32-bit number (longer ones, zeros first, the unit reader's)
    values = {"string": string, "word": word, "uint": "[0-9]{1,9}+"}
    plugin_fast = (
        ("quoted-string", f'"[^"\'\\x00]++"{ws}{string}{sep}'),
        ("word-string", f"{word}{ws}{string}{sep}"),
    )
    generic_fast = (
        *((f"word-{kind}", f"{word}{ws}{value}{sep}") for kind, value in values.items()),
        ("word", f"{word}{sep}"),
    )
    return Grammar(
        table=table,
        keywords=table.keywords,
        commands=table.commands,
        option_keywords=table.option_keywords,
        doubled_quote=doubled,
        token=token,
        plugin_unit=re.compile(plugin),
        generic_unit=re.compile(generic),
        plugin_fast=tuple((shape, re.compile(f"(?:{unit})*+"), re.compile(unit)) for shape, unit in plugin_fast),
        generic_fast=tuple((shape, re.compile(f"(?:{unit})*+"), re.compile(unit)) for shape, unit in generic_fast),
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


def _bounded(inside: str) -> str:
    """A quoted text's inside pattern, bounded: at most 64 runs of 256 characters."""
    return inside.replace(")*+", "){0,64}+").replace("*+", "{0,256}+")


def downcase_identifier(name: str) -> str:
    """An unquoted identifier as the scanners read it: ASCII letters lower-cased (scansup.c
    downcase_identifier, for a multibyte encoding)."""
    return name.translate(_FOLD)


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


def _quoted(text: str, pos: int, g: Grammar) -> _Token:
    """A string literal or a quoted identifier from its opening quote at *pos* (xq / xd:
    a doubled quote is a quote, in identifiers from the release the table names)."""
    quote = text[pos]
    doubling = quote == "'" or g.doubled_quote
    n = len(text)
    parts = []
    i = pos + 1
    while True:
        j = text.find(quote, i)
        nul = text.find("\x00", i, n if j < 0 else j)
        if nul >= 0:
            raise _nul(text, nul)
        if j < 0:
            what = "string" if quote == "'" else "identifier"
            raise CommandSyntaxError(
                expected=f"a closing {quote} for the {what} that starts at position {pos}",
                found=f"end of text (unterminated quoted {what})", position=n, text=text,
            )
        parts.append(text[i:j])
        if doubling and j + 1 < n and text[j + 1] == quote:  # xqdouble / xddouble
            parts.append(quote)
            i = j + 2
            continue
        inside = "".join(parts)
        if quote == "'":
            return _Token(_STRING, inside, pos, j + 1)
        name = truncate_identifier(inside)
        return _Token(_IDENT, name, pos, j + 1, quoted=True, untruncated=None if name is inside else inside)


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
            return _quoted(text, start, g)
        return _Token(_CHAR, ch, start, start + 1)
    start, end = m.span(kind)
    raw = m.group(kind)
    if kind == "ident":
        if raw in g.keywords:
            return _Token(_KW, raw, start, end)
        folded = raw.translate(_FOLD)
        name = truncate_identifier(folded)
        return _Token(_IDENT, name, start, end, untruncated=None if name is folded else folded)
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
