"""The walsender's command language: a lexer, a parser and a formatter.

A replication connection sends its commands as simple Query texts. The walsender lexes the
first token (repl_scanner.l): a replication keyword makes the text a replication command,
parsed by repl_gram.y; anything else is SQL, passed to the SQL engine (with
``replication=database``). :func:`parse_command` mirrors that: ``None`` for SQL, a command
object, or :class:`~pgwire_spec.errors.CommandSyntaxError` where the walsender answers
"syntax error", "unterminated quoted string" or "invalid timeline".

The grammar follows the servers of majors 10-18 (docs: "Streaming Replication Protocol"),
checked against real servers (10.23 … 18.4 and 15.20) text by text: ``spec/commands.yaml``
lists what each major accepts and what the servers did. Lexing, as repl_scanner.l does it:

- keywords are UPPERCASE and case-sensitive (``identify_system`` is SQL);
- identifiers are folded to lower case (ASCII only) unless double-quoted, and truncated to
  63 bytes (NAMEDATALEN - 1); inside double quotes ``""`` is a quote since the minor
  releases of August 2026 (15.20 seen; 14.24, 15.19, 16.15, 17.11, 18.5 inferred); before,
  and on 10-13, ``"a""b"`` is two identifiers;
- string literals are single-quoted, ``''`` is a quote; no ``E''``, no backslash escapes;
- unsigned integers; LSNs are ``hex/hex``;
- whitespace is space, tab, CR, LF, FF, and VT from 17 on; no comments;
- one optional trailing ``;``.

Commands are frozen, slotted dataclasses. Values mean what the server takes from the text;
how a client spelled them (quotes it did not need, zero-padded LSNs, spaces inside
parentheses, old or new option syntax) is a :class:`FormatStyle`, recorded by the parser on
the command (``cmd.style``, not compared) and used by :func:`format_command`, so formatting a
parsed command gives back the client's text. Named styles reproduce what real clients send
(:data:`CLIENT_STYLES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import ClassVar, Literal, NoReturn

from ..errors import CommandSyntaxError, EncodeError, OptionError
from ..lsn import format_lsn, parse_lsn

__all__ = [
    "ReplicationCommand",
    "IdentifySystem",
    "Show",
    "TimelineHistory",
    "CreateReplicationSlot",
    "ReadReplicationSlot",
    "AlterReplicationSlot",
    "DropReplicationSlot",
    "StartReplication",
    "BaseBackup",
    "UploadManifest",
    "OptionValue",
    "GenericOptions",
    "PluginOptions",
    "FormatStyle",
    "CLIENT_STYLES",
    "SERVER_MAJORS",
    "parse_command",
    "format_command",
    "is_replication_command",
]

#: The server majors whose grammar this module knows.
SERVER_MAJORS = range(10, 19)
_NEWEST = SERVER_MAJORS[-1]

_NAMEDATALEN = 64
_MAX_UINT32 = 0xFFFFFFFF

#: A generic option's value: ``str`` a string literal (or an identifier other than
#: true/false: the server makes the same string of both), ``int`` an unsigned integer,
#: ``bool`` the bare words ``true``/``false``, ``None`` no value.
OptionValue = str | int | bool | None
GenericOptions = tuple[tuple[str, OptionValue], ...]
#: START_REPLICATION … LOGICAL options: a name and a string literal or nothing.
PluginOptions = tuple[tuple[str, str | None], ...]
Kind = Literal["physical", "logical"]


# ===========================================================================================
# Keywords, by server major (repl_scanner.l of each major; seen on 10.23 … 18.4)
# ===========================================================================================

#: keyword -> (first major, last major) in which repl_scanner.l knows it.
_KEYWORDS: dict[str, tuple[int, int]] = {
    **{k: (10, 18) for k in (
        "BASE_BACKUP", "IDENTIFY_SYSTEM", "SHOW", "TIMELINE", "START_REPLICATION",
        "CREATE_REPLICATION_SLOT", "DROP_REPLICATION_SLOT", "TIMELINE_HISTORY", "PHYSICAL",
        "RESERVE_WAL", "LOGICAL", "SLOT", "TEMPORARY", "EXPORT_SNAPSHOT", "NOEXPORT_SNAPSHOT",
        "USE_SNAPSHOT", "WAIT")},
    "READ_REPLICATION_SLOT": (15, 18),
    "TWO_PHASE": (15, 18),
    "ALTER_REPLICATION_SLOT": (17, 18),
    "UPLOAD_MANIFEST": (17, 18),
    # BASE_BACKUP's old option keywords, gone with the old syntax in 15.
    **{k: (10, 14) for k in ("LABEL", "PROGRESS", "FAST", "WAL", "NOWAIT", "MAX_RATE", "TABLESPACE_MAP")},
    "NOVERIFY_CHECKSUMS": (11, 14),
    "MANIFEST": (13, 14),
    "MANIFEST_CHECKSUMS": (13, 14),
}

#: First tokens that make a text a replication command (replication_scanner_is_replication_command).
_COMMAND_KEYWORDS = frozenset({
    "IDENTIFY_SYSTEM", "BASE_BACKUP", "START_REPLICATION", "CREATE_REPLICATION_SLOT",
    "DROP_REPLICATION_SLOT", "ALTER_REPLICATION_SLOT", "READ_REPLICATION_SLOT", "TIMELINE_HISTORY",
    "UPLOAD_MANIFEST", "SHOW",
})

#: The parenthesized option lists of CREATE_REPLICATION_SLOT and BASE_BACKUP (15+).
_GENERIC_SYNTAX_SINCE = 15

#: First minor release of each major whose scanner reads ``""`` inside a quoted identifier
#: as a quote (upstream a75bd485b5ea, "Clean up quoting of variable strings within
#: replication commands", June 2026, back-patched to the supported branches). Seen: 15.20
#: has it; 10.23, 11.22, 12.22, 13.23, 14.23, 15.18, 16.14, 17.10 and 18.4 have not.
_DOUBLED_QUOTE_SINCE: dict[int, int] = {14: 24, 15: 19, 16: 15, 17: 11, 18: 5}

#: Old-syntax CREATE_REPLICATION_SLOT keywords and the option each stands for, as 15+
#: servers turn them into options (create_slot_legacy_opt).
_LEGACY_SLOT_OPTIONS: dict[str, tuple[str, OptionValue]] = {
    "EXPORT_SNAPSHOT": ("snapshot", "export"),
    "NOEXPORT_SNAPSHOT": ("snapshot", "nothing"),
    "USE_SNAPSHOT": ("snapshot", "use"),
    "RESERVE_WAL": ("reserve_wal", None),
    "TWO_PHASE": ("two_phase", None),
}

#: Old-syntax BASE_BACKUP keywords (majors 10-14) and the kind of their argument.
_LEGACY_BACKUP_OPTIONS: dict[str, Literal["string", "uint"] | None] = {
    "LABEL": "string", "PROGRESS": None, "FAST": None, "WAL": None, "NOWAIT": None,
    "MAX_RATE": "uint", "TABLESPACE_MAP": None, "NOVERIFY_CHECKSUMS": None,
    "MANIFEST": "string", "MANIFEST_CHECKSUMS": "string",
}


@dataclass(frozen=True, slots=True)
class _Grammar:
    major: int
    keywords: frozenset[str]
    commands: frozenset[str]
    whitespace: str
    generic: bool  # parenthesized option lists of CREATE_REPLICATION_SLOT / BASE_BACKUP
    #: keywords that may name a generic option (ident_or_keyword: all but READ_REPLICATION_SLOT)
    option_keywords: frozenset[str]
    #: ``""`` inside a quoted identifier is a quote (xddouble)
    doubled_quote: bool


def _make_grammar(major: int, doubled_quote: bool) -> _Grammar:
    keywords = frozenset(k for k, (lo, hi) in _KEYWORDS.items() if lo <= major <= hi)
    return _Grammar(
        major=major,
        keywords=keywords,
        commands=keywords & _COMMAND_KEYWORDS,
        # VT became whitespace in 17 (seen: 'IDENTIFY_SYSTEM\v' is a syntax error up to 16).
        whitespace=" \t\n\r\f\v" if major >= 17 else " \t\n\r\f",
        generic=major >= _GENERIC_SYNTAX_SINCE,
        option_keywords=keywords - {"READ_REPLICATION_SLOT"},
        doubled_quote=doubled_quote,
    )


_GRAMMARS = {
    (major, dq): _make_grammar(major, dq) for major in SERVER_MAJORS for dq in (False, True)
}


def _grammar(server_major: int | None, server_minor: int | None = None) -> _Grammar:
    """The grammar of *server_major* (default: the newest) at *server_minor* (default: its
    latest release)."""
    if server_major is None:
        if server_minor is not None:
            raise OptionError(f"server_minor {server_minor!r} needs a server_major")
        server_major = _NEWEST
    if isinstance(server_major, bool) or not isinstance(server_major, int) or server_major not in SERVER_MAJORS:
        raise OptionError(
            f"expected a server major from {SERVER_MAJORS[0]} to {_NEWEST}, found {server_major!r}"
        )
    if server_minor is not None and (
        isinstance(server_minor, bool) or not isinstance(server_minor, int) or server_minor < 0
    ):
        raise OptionError(f"expected a server minor (an integer >= 0), found {server_minor!r}")
    since = _DOUBLED_QUOTE_SINCE.get(server_major)
    doubled = since is not None and (server_minor is None or server_minor >= since)
    return _GRAMMARS[server_major, doubled]


# ===========================================================================================
# Format styles
# ===========================================================================================

_WS = " \t\n\r\f\v"
_OPEN_RE = re.compile(rf"\([{_WS}]*")
_SEP_RE = re.compile(rf"[{_WS}]*,[{_WS}]*")
_CLOSE_RE = re.compile(rf"[{_WS}]*\)")
_LEGACY_SEP_RE = re.compile(rf"[{_WS}]+")


@dataclass(frozen=True, slots=True)
class FormatStyle:
    """How a client spells a command: everything the server does not see as a difference.

    Names are always quoted when they must be (upper case, punctuation, empty); the
    ``quote_*`` flags quote them also when they need not be.
    """

    #: LSN low half zero-padded to 8 digits (psycopg2: ``0/00000000``).
    pad_lsn: bool = False
    #: Slot names always double-quoted (libpq clients write ``"%s"``).
    quote_slot: bool = False
    #: The same for DROP_REPLICATION_SLOT and ALTER_REPLICATION_SLOT; None: as ``quote_slot``
    #: (the subscriber quotes those only when needed).
    quote_slot_in_drop: bool | None = None
    #: Output plugin names always quoted (pg_recvlogical, psycopg2).
    quote_plugin: bool = False
    #: START_REPLICATION's plugin option names always quoted (pg_recvlogical, psycopg2).
    quote_option_names: bool = False
    #: Generic option names written in lower case (every known client writes upper case).
    lowercase_option_names: bool = False
    #: START_REPLICATION … PHYSICAL with the optional PHYSICAL keyword.
    physical_keyword: bool = False
    #: CREATE_REPLICATION_SLOT / BASE_BACKUP in the old keyword syntax; None: the old syntax
    #: for a server major below 15 (as clients decide), else the parenthesized one.
    legacy_syntax: bool | None = None
    #: Opening parenthesis, separator and closing parenthesis of generic option lists,
    #: with their whitespace (pg_recvlogical / pg_basebackup: ``"( "``, ``",  "``, ``")"``).
    option_list: tuple[str, str, str] = ("(", ", ", ")")
    #: The same for START_REPLICATION's plugin options.
    plugin_option_list: tuple[str, str, str] = ("(", ", ", ")")
    #: Whitespace before each old-syntax option keyword (pg_recvlogical: two spaces).
    legacy_separator: str = " "
    #: A trailing ``;``.
    semicolon: bool = False

    def __post_init__(self) -> None:
        for name in ("option_list", "plugin_option_list"):
            value = getattr(self, name)
            if not (
                isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) for v in value)
                and _OPEN_RE.fullmatch(value[0]) and _SEP_RE.fullmatch(value[1]) and _CLOSE_RE.fullmatch(value[2])
            ):
                raise OptionError(
                    f"FormatStyle.{name}: expected ('(' and whitespace, whitespace ',' whitespace,"
                    f" whitespace and ')'), found {value!r}"
                )
        if not (isinstance(self.legacy_separator, str) and _LEGACY_SEP_RE.fullmatch(self.legacy_separator)):
            raise OptionError(
                f"FormatStyle.legacy_separator: expected whitespace, found {self.legacy_separator!r}"
            )


_DEFAULT_STYLE = FormatStyle()

# streamutil.c (pg_recvlogical, pg_basebackup, pg_receivewal) writes " NAME" after "(" or
# after ", " (AppendPlainCommandOption), and START_REPLICATION's options on its own.
_STREAMUTIL = FormatStyle(
    quote_slot=True, quote_plugin=True, quote_option_names=True,
    option_list=("( ", ",  ", ")"), legacy_separator="  ",
)

#: What real clients send (pg_recvlogical.c, streamutil.c, psycopg2's extras.py,
#: libpqwalreceiver.c; checked against transcripts/ byte for byte).
CLIENT_STYLES: Mapping[str, FormatStyle] = MappingProxyType({
    "default": _DEFAULT_STYLE,
    "pg_recvlogical": _STREAMUTIL,
    "pg_basebackup": _STREAMUTIL,
    "psycopg2": FormatStyle(pad_lsn=True, quote_slot=True, quote_plugin=True, quote_option_names=True),
    # CREATE/START quote "%s"; DROP/ALTER use quote_identifier (needed only, keywords aside).
    "subscriber": FormatStyle(quote_slot=True, quote_slot_in_drop=False),
})


# ===========================================================================================
# Commands
# ===========================================================================================


@dataclass(frozen=True, slots=True)
class ReplicationCommand:
    """Base of every replication command. ``keyword`` is the command's first word (and the
    CommandComplete tag a server answers with)."""

    keyword: ClassVar[str]
    #: How the text was (or is to be) spelled; not part of equality.
    style: FormatStyle | None = field(default=None, compare=False, repr=False, kw_only=True)


def _options_dict(options: tuple[tuple[str, object], ...]) -> dict[str, object]:
    return dict(options)


@dataclass(frozen=True, slots=True)
class IdentifySystem(ReplicationCommand):
    """``IDENTIFY_SYSTEM``"""

    keyword: ClassVar[str] = "IDENTIFY_SYSTEM"


@dataclass(frozen=True, slots=True)
class Show(ReplicationCommand):
    """``SHOW name`` (the name of a setting, dotted parts joined with ``.``)."""

    keyword: ClassVar[str] = "SHOW"
    name: str


@dataclass(frozen=True, slots=True)
class TimelineHistory(ReplicationCommand):
    """``TIMELINE_HISTORY tli``"""

    keyword: ClassVar[str] = "TIMELINE_HISTORY"
    timeline: int


@dataclass(frozen=True, slots=True)
class CreateReplicationSlot(ReplicationCommand):
    """``CREATE_REPLICATION_SLOT slot [TEMPORARY] {PHYSICAL | LOGICAL plugin} [options]``.

    Options in either syntax: the old keywords become the options 15+ servers make of them
    (``NOEXPORT_SNAPSHOT`` is ``("snapshot", "nothing")``, ``TWO_PHASE`` is
    ``("two_phase", None)``); which syntax was written is ``style.legacy_syntax``.
    """

    keyword: ClassVar[str] = "CREATE_REPLICATION_SLOT"
    slot_name: str
    kind: Kind
    plugin: str | None = None
    temporary: bool = False
    options: GenericOptions = ()

    def options_dict(self) -> dict[str, OptionValue]:
        """The options by name (a repeated option: the last one)."""
        return _options_dict(self.options)  # type: ignore[return-value]

    @property
    def snapshot(self) -> str | None:
        """The snapshot action asked for ('export', 'nothing', 'use'), or None."""
        value = self.options_dict().get("snapshot")
        return value if isinstance(value, str) else None

    @property
    def two_phase(self) -> bool:
        """two_phase asked for (OptionError if its value is not a Boolean the server takes)."""
        return _boolean_option(self.options, "two_phase")

    @property
    def reserve_wal(self) -> bool:
        """reserve_wal asked for (OptionError if its value is not a Boolean)."""
        return _boolean_option(self.options, "reserve_wal")

    @property
    def failover(self) -> bool:
        """failover asked for (17+; OptionError if its value is not a Boolean)."""
        return _boolean_option(self.options, "failover")


@dataclass(frozen=True, slots=True)
class ReadReplicationSlot(ReplicationCommand):
    """``READ_REPLICATION_SLOT slot`` (15+)."""

    keyword: ClassVar[str] = "READ_REPLICATION_SLOT"
    slot_name: str


@dataclass(frozen=True, slots=True)
class AlterReplicationSlot(ReplicationCommand):
    """``ALTER_REPLICATION_SLOT slot ( option [value] [, ...] )`` (17+)."""

    keyword: ClassVar[str] = "ALTER_REPLICATION_SLOT"
    slot_name: str
    options: GenericOptions

    def options_dict(self) -> dict[str, OptionValue]:
        """The options by name (a repeated option: the last one)."""
        return _options_dict(self.options)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class DropReplicationSlot(ReplicationCommand):
    """``DROP_REPLICATION_SLOT slot [WAIT]``"""

    keyword: ClassVar[str] = "DROP_REPLICATION_SLOT"
    slot_name: str
    wait: bool = False


@dataclass(frozen=True, slots=True)
class StartReplication(ReplicationCommand):
    """``START_REPLICATION [SLOT slot] [PHYSICAL] lsn [TIMELINE tli]`` or
    ``START_REPLICATION SLOT slot LOGICAL lsn [( name ['value'] [, ...] )]``."""

    keyword: ClassVar[str] = "START_REPLICATION"
    kind: Kind
    slot_name: str | None
    start_lsn: int
    timeline: int | None = None
    options: PluginOptions = ()

    def options_dict(self) -> dict[str, str | None]:
        """The plugin options by name (a repeated option: the last one)."""
        return _options_dict(self.options)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class BaseBackup(ReplicationCommand):
    """``BASE_BACKUP [( option [value] [, ...] )]`` (15+) or ``BASE_BACKUP [LABEL 'l'] [PROGRESS]
    …`` (10-14: options named by their lower-cased keyword, e.g. ``("fast", None)``)."""

    keyword: ClassVar[str] = "BASE_BACKUP"
    options: GenericOptions = ()

    def options_dict(self) -> dict[str, OptionValue]:
        """The options by name (a repeated option: the last one)."""
        return _options_dict(self.options)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class UploadManifest(ReplicationCommand):
    """``UPLOAD_MANIFEST`` (17+)."""

    keyword: ClassVar[str] = "UPLOAD_MANIFEST"


def _boolean_option(options: GenericOptions, name: str) -> bool:
    """An option read as the server's defGetBoolean reads it; absent is false."""
    present, value = False, None
    for key, val in options:
        if key == name:
            present, value = True, val
    if not present or value is None:
        return present
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "on", "false", "off"):
        return value.lower() in ("true", "on")
    raise OptionError(f"{name} requires a Boolean value, found {value!r}")


# ===========================================================================================
# Lexer (repl_scanner.l)
# ===========================================================================================

_END, _KW, _IDENT, _STRING, _UINT, _LSN, _CHAR = "end", "keyword", "ident", "string", "uint", "lsn", "char"

_LSN_RE = re.compile(r"[0-9A-Fa-f]+/[0-9A-Fa-f]+")
_UINT_RE = re.compile(r"[0-9]+")
# ident_start [A-Za-z\200-\377_]: every byte of a non-ASCII character is >= 0x80.
_IDENT_RE = re.compile(r"[A-Za-z_\u0080-\U0010FFFF][A-Za-z_0-9$\u0080-\U0010FFFF]*")
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


def _truncate_identifier(name: str) -> str:
    """truncate_identifier: at most NAMEDATALEN-1 bytes, cut on a character boundary."""
    if len(name) < _NAMEDATALEN // 4:
        return name
    size = 0
    for i, ch in enumerate(name):
        size += len(ch.encode("utf-8", "surrogatepass"))
        if size > _NAMEDATALEN - 1:
            return name[:i]
    return name


def _describe(tok: _Token, text: str) -> str:
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


def _lex(text: str, pos: int, g: _Grammar) -> _Token:
    """The token at or after *pos* (flex: longest match, keywords before identifiers)."""
    n = len(text)
    ws = g.whitespace
    while pos < n and text[pos] in ws:
        pos += 1
    if pos >= n:
        return _Token(_END, None, n, n)
    ch = text[pos]
    if ch == "\x00":
        raise CommandSyntaxError(
            expected="text without NUL (a query string ends at its first NUL)", found="NUL",
            position=pos, text=text,
        )
    if ch == "'":
        parts = []
        i = pos + 1
        while True:
            j = text.find("'", i)
            nul = text.find("\x00", i, n if j < 0 else j)
            if nul >= 0:
                raise CommandSyntaxError(
                    expected="text without NUL (a query string ends at its first NUL)", found="NUL",
                    position=nul, text=text,
                )
            if j < 0:
                raise CommandSyntaxError(
                    expected=f"a closing ' for the string that starts at position {pos}",
                    found="end of text (unterminated quoted string)", position=n, text=text,
                )
            parts.append(text[i:j])
            if j + 1 < n and text[j + 1] == "'":  # xqdouble
                parts.append("'")
                i = j + 2
                continue
            return _Token(_STRING, "".join(parts), pos, j + 1)
    if ch == '"':
        parts = []
        i = pos + 1
        while True:
            j = text.find('"', i)
            nul = text.find("\x00", i, n if j < 0 else j)
            if nul >= 0:
                raise CommandSyntaxError(
                    expected="text without NUL (a query string ends at its first NUL)", found="NUL",
                    position=nul, text=text,
                )
            if j < 0:
                raise CommandSyntaxError(
                    expected=f'a closing " for the identifier that starts at position {pos}',
                    found="end of text (unterminated quoted identifier)", position=n, text=text,
                )
            parts.append(text[i:j])
            if g.doubled_quote and j + 1 < n and text[j + 1] == '"':  # xddouble
                parts.append('"')
                i = j + 2
                continue
            return _Token(_IDENT, _truncate_identifier("".join(parts)), pos, j + 1, quoted=True)
    best_kind, best_end = None, pos
    for kind, regex in ((_LSN, _LSN_RE), (_UINT, _UINT_RE), (_IDENT, _IDENT_RE)):
        m = regex.match(text, pos)
        if m and m.end() > best_end:
            best_kind, best_end = kind, m.end()
    raw = text[pos:best_end]
    if best_kind == _IDENT:
        if raw in g.keywords:
            return _Token(_KW, raw, pos, best_end)
        return _Token(_IDENT, _truncate_identifier(raw.translate(_FOLD)), pos, best_end)
    if best_kind == _UINT:
        digits = raw.lstrip("0") or "0"
        value = int(digits) if len(digits) <= 10 else _MAX_UINT32 + 1
        if value > _MAX_UINT32:
            # The server's strtoul wraps this to 32 bits; we refuse it.
            raise CommandSyntaxError(
                expected="an unsigned 32-bit integer (at most 4294967295)", found=f"number {raw}",
                position=pos, text=text,
            )
        return _Token(_UINT, value, pos, best_end)
    if best_kind == _LSN:
        hi, lo = raw.split("/")
        hi, lo = hi.lstrip("0") or "0", lo.lstrip("0") or "0"
        if len(hi) > 8 or len(lo) > 8:
            # sscanf("%X/%X") into 32-bit halves: the server wraps; we refuse.
            raise CommandSyntaxError(
                expected="an LSN whose halves fit in 32 bits (at most 8 hex digits each)",
                found=f"LSN {raw}", position=pos, text=text,
            )
        return _Token(_LSN, parse_lsn(f"{hi}/{lo}"), pos, best_end)
    return _Token(_CHAR, ch, pos, pos + 1)


# ===========================================================================================
# Parser (repl_gram.y)
# ===========================================================================================


class _Parser:
    __slots__ = ("text", "g", "pos", "tok", "prev", "expected", "style")

    def __init__(self, text: str, g: _Grammar) -> None:
        self.text = text
        self.g = g
        self.pos = 0
        self.tok: _Token | None = None
        self.prev: _Token | None = None
        #: What the optional parts tried at the current token wanted (for error messages).
        self.expected: list[str] = []
        #: FormatStyle fields seen in the text.
        self.style: dict[str, object] = {}

    # -- tokens --------------------------------------------------------------------------
    def peek(self) -> _Token:
        if self.tok is None:
            self.tok = _lex(self.text, self.pos, self.g)
            self.pos = self.tok.end
        return self.tok

    def take(self) -> _Token:
        tok = self.peek()
        self.prev, self.tok = tok, None
        self.expected = []
        return tok

    def fail(self, expected: str | None = None) -> NoReturn:
        tok = self.peek()
        wanted = [*self.expected, *([expected] if expected else [])]
        unique = list(dict.fromkeys(wanted))
        what = unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]
        raise CommandSyntaxError(
            expected=what, found=_describe(tok, self.text), position=tok.start, text=self.text
        )

    def accept_kw(self, name: str) -> _Token | None:
        tok = self.peek()
        if tok.kind == _KW and tok.value == name:
            return self.take()
        self.expected.append(name)
        return None

    def accept_char(self, ch: str) -> _Token | None:
        tok = self.peek()
        if tok.kind == _CHAR and tok.value == ch:
            return self.take()
        self.expected.append(f"'{ch}'")
        return None

    def expect_char(self, ch: str) -> _Token:
        return self.accept_char(ch) or self.fail()

    def expect(self, kind: str, what: str) -> _Token:
        tok = self.peek()
        if tok.kind == kind:
            return self.take()
        self.fail(what)

    def gap_before(self, tok: _Token) -> str:
        """The text between the previous token and *tok* (its whitespace)."""
        assert self.prev is not None
        return self.text[self.prev.end:tok.start]

    # -- shared rules --------------------------------------------------------------------
    def var_name(self, what: str, quoted: list[bool] | None = None) -> str:
        """``IDENT ('.' IDENT)*`` joined with '.'; *quoted* collects which parts were quoted."""
        tok = self.expect(_IDENT, what)
        parts = [tok.as_str]
        marks = [tok.quoted]
        while self.accept_char("."):
            tok = self.expect(_IDENT, f"{what} part after '.'")
            parts.append(tok.as_str)
            marks.append(tok.quoted)
        if quoted is not None:
            quoted.extend(marks)
        return ".".join(parts)

    def slot_name(self, *, drop: bool = False) -> str:
        tok = self.expect(_IDENT, "a slot name")
        self.style["quote_slot_in_drop" if drop else "quote_slot"] = tok.quoted
        return tok.as_str

    def lsn(self) -> int:
        tok = self.expect(_LSN, "an LSN such as 0/16B3748")
        lo = self.text[tok.start:tok.end].split("/")[1]
        self.style["pad_lsn"] = len(lo) == 8 and lo.startswith("0")
        return tok.as_int

    def timeline(self) -> int:
        tok = self.expect(_UINT, "a timeline ID")
        if tok.value == 0:  # repl_gram.y: "invalid timeline %u"
            raise CommandSyntaxError(
                expected="a timeline ID from 1 to 4294967295 (invalid timeline 0)", found="number 0",
                position=tok.start, text=self.text,
            )
        return tok.as_int

    def option_list(self, key: str, item: Callable[[], tuple[str, object]]) -> tuple[tuple[str, object], ...]:
        """``'(' item (',' item)* ')'``, the '(' just taken; records the spacing as *key*."""
        assert self.prev is not None
        opening = self.text[self.prev.start:self.peek().start]
        items = [item()]
        sep: str | None = None
        while True:
            before = self.prev.end
            if self.accept_char(",") is None:
                break
            if sep is None:
                sep = self.text[before:self.peek().start]
            items.append(item())
        before = self.prev.end
        close = self.expect_char(")")
        self.style[key] = (opening, sep or ", ", self.text[before:close.end])
        return tuple(items)

    def generic_option(self) -> tuple[str, OptionValue]:
        tok = self.peek()
        if tok.kind == _IDENT:
            name = tok.as_str
        elif tok.kind == _KW and tok.value in self.g.option_keywords:
            name = tok.as_str.lower()
        else:
            self.fail("an option name")
        self.take()
        raw = self.text[tok.start:tok.end]
        if (
            not tok.quoted and "lowercase_option_names" not in self.style
            and raw.translate(_FOLD) != raw.translate(_UNFOLD) and name != "read_replication_slot"
        ):
            # the first name with ASCII letters tells (READ_REPLICATION_SLOT is always lower)
            self.style["lowercase_option_names"] = raw.translate(_UNFOLD) != raw
        val = self.peek()
        value: OptionValue = None
        if val.kind == _IDENT:
            value = {"true": True, "false": False}.get(val.as_str, val.as_str)
            self.take()
        elif val.kind == _STRING:
            value = val.as_str
            self.take()
        elif val.kind == _UINT:
            value = val.as_int
            self.take()
        else:
            self.expected.append("a value (identifier, string or number)")
        return name, value

    def plugin_option(self) -> tuple[str, str | None]:
        tok = self.expect(_IDENT, "an option name (identifier)")
        self.style["quote_option_names"] = bool(self.style.get("quote_option_names", True)) and tok.quoted
        val = self.peek()
        if val.kind == _STRING:
            self.take()
            return tok.as_str, val.as_str
        self.expected.append("a string value")
        return tok.as_str, None


def _parse_identify_system(p: _Parser) -> ReplicationCommand:
    return IdentifySystem()


def _parse_upload_manifest(p: _Parser) -> ReplicationCommand:
    return UploadManifest()


def _parse_show(p: _Parser) -> ReplicationCommand:
    return Show(p.var_name("a setting name"))


def _parse_timeline_history(p: _Parser) -> ReplicationCommand:
    return TimelineHistory(p.timeline())


def _parse_read_replication_slot(p: _Parser) -> ReplicationCommand:
    quoted: list[bool] = []
    name = p.var_name("a slot name", quoted)
    p.style["quote_slot"] = all(quoted)
    return ReadReplicationSlot(name)


def _parse_drop_replication_slot(p: _Parser) -> ReplicationCommand:
    slot = p.slot_name(drop=True)
    return DropReplicationSlot(slot, wait=p.accept_kw("WAIT") is not None)


def _parse_alter_replication_slot(p: _Parser) -> ReplicationCommand:
    slot = p.slot_name(drop=True)
    p.expect_char("(")
    options = p.option_list("option_list", p.generic_option)
    return AlterReplicationSlot(slot, options)  # type: ignore[arg-type]


def _parse_create_replication_slot(p: _Parser) -> ReplicationCommand:
    slot = p.slot_name()
    temporary = p.accept_kw("TEMPORARY") is not None
    plugin: str | None = None
    if p.accept_kw("PHYSICAL"):
        kind: Kind = "physical"
    elif p.accept_kw("LOGICAL"):
        kind = "logical"
        tok = p.expect(_IDENT, "an output plugin name")
        p.style["quote_plugin"] = tok.quoted
        plugin = tok.as_str
    else:
        p.fail()
    options: list[tuple[str, OptionValue]] = []
    if p.g.generic and p.accept_char("("):
        options.extend(p.option_list("option_list", p.generic_option))  # type: ignore[arg-type]
        p.style["legacy_syntax"] = False
    else:
        while True:
            tok = p.peek()
            if tok.kind == _KW and tok.value in _LEGACY_SLOT_OPTIONS and tok.value in p.g.keywords:
                if not options:
                    gap = p.gap_before(tok)
                    if gap:
                        p.style["legacy_separator"] = gap
                p.take()
                options.append(_LEGACY_SLOT_OPTIONS[tok.as_str])
                p.style["legacy_syntax"] = True
                continue
            p.expected.append("an option keyword")
            break
    return CreateReplicationSlot(slot, kind, plugin, temporary, tuple(options))


def _parse_start_replication(p: _Parser) -> ReplicationCommand:
    slot: str | None = None
    if p.accept_kw("SLOT"):
        slot = p.slot_name()
        if p.accept_kw("LOGICAL"):
            lsn = p.lsn()
            options: PluginOptions = ()
            if p.accept_char("("):
                options = p.option_list("plugin_option_list", p.plugin_option)  # type: ignore[assignment]
            return StartReplication("logical", slot, lsn, None, options)
    p.style["physical_keyword"] = p.accept_kw("PHYSICAL") is not None
    lsn = p.lsn()
    timeline = p.timeline() if p.accept_kw("TIMELINE") else None
    return StartReplication("physical", slot, lsn, timeline)


def _parse_base_backup(p: _Parser) -> ReplicationCommand:
    options: list[tuple[str, OptionValue]] = []
    if p.g.generic:
        if p.accept_char("("):
            options.extend(p.option_list("option_list", p.generic_option))  # type: ignore[arg-type]
            p.style["legacy_syntax"] = False
        return BaseBackup(tuple(options))
    while True:
        tok = p.peek()
        if tok.kind == _KW and tok.value in _LEGACY_BACKUP_OPTIONS:
            if not options:
                gap = p.gap_before(tok)
                if gap:
                    p.style["legacy_separator"] = gap
            p.take()
            arg = _LEGACY_BACKUP_OPTIONS[tok.as_str]
            value: OptionValue = None
            if arg == "string":
                value = p.expect(_STRING, f"a string after {tok.value}").as_str
            elif arg == "uint":
                value = p.expect(_UINT, f"a number after {tok.value}").as_int
            options.append((tok.as_str.lower(), value))
            p.style["legacy_syntax"] = True
            continue
        p.expected.append("an option keyword")
        return BaseBackup(tuple(options))


_PARSERS: dict[str, Callable[[_Parser], ReplicationCommand]] = {
    "IDENTIFY_SYSTEM": _parse_identify_system,
    "SHOW": _parse_show,
    "TIMELINE_HISTORY": _parse_timeline_history,
    "CREATE_REPLICATION_SLOT": _parse_create_replication_slot,
    "READ_REPLICATION_SLOT": _parse_read_replication_slot,
    "ALTER_REPLICATION_SLOT": _parse_alter_replication_slot,
    "DROP_REPLICATION_SLOT": _parse_drop_replication_slot,
    "START_REPLICATION": _parse_start_replication,
    "BASE_BACKUP": _parse_base_backup,
    "UPLOAD_MANIFEST": _parse_upload_manifest,
}


def _as_text(text: str | bytes) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CommandSyntaxError(
                expected="UTF-8 text", found=f"byte 0x{data[exc.start]:02X}", position=exc.start,
                text=data.decode("utf-8", "replace"),
            ) from None
    raise CommandSyntaxError(
        expected="a command text (str or bytes)", found=type(text).__name__, position=0, text=""
    )


def parse_command(
    text: str | bytes, *, server_major: int | None = None, server_minor: int | None = None
) -> ReplicationCommand | None:
    """Parse a Query text sent on a replication connection.

    Returns None when the walsender of *server_major* (default: the newest, 18; at
    *server_minor*, default: its latest release) would pass the text to the SQL engine (its
    first token is not a replication command keyword of that major: ``SELECT …``,
    ``BEGIN …``, lower-case ``identify_system``, or ``ALTER_REPLICATION_SLOT`` before 17).
    Raises :class:`CommandSyntaxError` (with the character position) where that walsender
    reports a syntax error; bytes are read as UTF-8.
    """
    g = _grammar(server_major, server_minor)
    source = _as_text(text)
    p = _Parser(source, g)
    first = p.peek()
    if first.kind != _KW or first.value not in g.commands:
        return None
    p.take()
    cmd = _PARSERS[first.as_str](p)
    if p.accept_char(";"):
        p.style["semicolon"] = True
    if p.peek().kind != _END:
        p.fail("end of text")
    return replace(cmd, style=FormatStyle(**p.style))  # type: ignore[arg-type]


def is_replication_command(
    text: str | bytes, *, server_major: int | None = None, server_minor: int | None = None
) -> bool:
    """True when the walsender of *server_major* (default 18) reads *text* with its
    replication grammar (the first token is a command keyword, or cannot be lexed: an
    unterminated quote), False when it passes the text to the SQL engine."""
    g = _grammar(server_major, server_minor)
    try:
        first = _lex(_as_text(text), 0, g)
    except CommandSyntaxError:
        return True
    return first.kind == _KW and first.value in g.commands


# ===========================================================================================
# Formatter
# ===========================================================================================


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str):
        raise EncodeError(f"{what}: expected str, found {type(name).__name__}")
    if "\x00" in name:
        raise EncodeError(f"{what} {name!r}: a query text cannot hold NUL")
    return name


def _ident(name: object, what: str, *, quote: bool) -> str:
    """An identifier as the scanner reads it back: plain lower case, else double-quoted
    (a '"' doubled: read back by servers with the xddouble rule, checked with server_major)."""
    name = _check_name(name, what)
    if len(name.encode("utf-8", "surrogatepass")) > _NAMEDATALEN - 1:
        raise EncodeError(f"{what} {name!r}: longer than 63 bytes, the server would truncate it")
    if not quote and _PLAIN_IDENT_RE.fullmatch(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def _string(value: str, what: str) -> str:
    _check_name(value, what)
    return "'" + value.replace("'", "''") + "'"


def _uint(value: object, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_UINT32:
        raise EncodeError(f"{what}: expected an unsigned 32-bit integer, found {value!r}")
    return str(value)


def _lsn(value: object, style: FormatStyle) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodeError(f"start_lsn: expected an int, found {type(value).__name__}")
    try:
        return format_lsn(value, pad=style.pad_lsn)
    except ValueError as exc:
        raise EncodeError(f"start_lsn: {exc}") from None


def _timeline(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_UINT32:
        raise EncodeError(f"timeline: expected an integer from 1 to 4294967295, found {value!r}")
    return str(value)


def _option_name(name: object, style: FormatStyle) -> str:
    name = _ident(name, "option name", quote=False)
    if name.startswith('"'):
        return name
    # Upper case reads back the same: as a keyword (ident_or_keyword gives its lower-case
    # name) or as a folded identifier; READ_REPLICATION_SLOT is the keyword it lacks.
    upper = name.translate(_UNFOLD)
    if style.lowercase_option_names or upper == "READ_REPLICATION_SLOT":
        return name
    return upper


def _option_value(value: object, name: str) -> str:
    if value is None:
        return ""
    if value is True:
        return " true"
    if value is False:
        return " false"
    if isinstance(value, int):
        return " " + _uint(value, f"option {name}")
    if isinstance(value, str):
        return " " + _string(value, f"option {name}")
    raise EncodeError(f"option {name}: expected str, int, bool or None, found {type(value).__name__}")


def _pairs(options: object, what: str) -> tuple[tuple[object, object], ...]:
    if not isinstance(options, tuple) or not all(isinstance(o, tuple) and len(o) == 2 for o in options):
        raise EncodeError(f"{what}: expected a tuple of (name, value) pairs, found {options!r}")
    return options


def _generic_list(options: object, style: FormatStyle) -> str:
    pairs = _pairs(options, "options")
    if not pairs:
        raise EncodeError("options: a parenthesized option list cannot be empty")
    opening, sep, closing = style.option_list
    items = [_option_name(n, style) + _option_value(v, str(n)) for n, v in pairs]
    return opening + sep.join(items) + closing


def _plugin_list(options: object, style: FormatStyle) -> str:
    pairs = _pairs(options, "options")
    opening, sep, closing = style.plugin_option_list
    items = []
    for name, value in pairs:
        item = _ident(name, "option name", quote=style.quote_option_names)
        if value is not None:
            if not isinstance(value, str):
                raise EncodeError(f"option {name}: expected a str or None, found {type(value).__name__}")
            item += " " + _string(value, f"option {name}")
        items.append(item)
    return opening + sep.join(items) + closing


def _use_legacy(style: FormatStyle, server_major: int | None) -> bool:
    if style.legacy_syntax is not None:
        return style.legacy_syntax
    return server_major is not None and server_major < _GENERIC_SYNTAX_SINCE


_LEGACY_SLOT_KEYWORDS = {option: kw for kw, option in _LEGACY_SLOT_OPTIONS.items()}


def _fmt_create(cmd: CreateReplicationSlot, style: FormatStyle, server_major: int | None) -> str:
    text = "CREATE_REPLICATION_SLOT " + _ident(cmd.slot_name, "slot_name", quote=style.quote_slot)
    if cmd.temporary:
        text += " TEMPORARY"
    if cmd.kind == "physical":
        if cmd.plugin is not None:
            raise EncodeError("plugin: a physical slot has no output plugin")
        text += " PHYSICAL"
    elif cmd.kind == "logical":
        text += " LOGICAL " + _ident(cmd.plugin, "plugin", quote=style.quote_plugin)
    else:
        raise EncodeError(f"kind: expected 'physical' or 'logical', found {cmd.kind!r}")
    options = _pairs(cmd.options, "options")
    if not options:
        return text
    if not _use_legacy(style, server_major):
        return text + " " + _generic_list(options, style)
    for option in options:
        keyword = _LEGACY_SLOT_KEYWORDS.get(option)  # type: ignore[arg-type]
        if keyword is None:
            raise EncodeError(
                f"option {option!r} has no keyword in the old CREATE_REPLICATION_SLOT syntax"
                " (only snapshot 'export'/'nothing'/'use', reserve_wal and two_phase without value)"
            )
        text += style.legacy_separator + keyword
    return text


def _fmt_base_backup(cmd: BaseBackup, style: FormatStyle, server_major: int | None) -> str:
    options = _pairs(cmd.options, "options")
    if not options:
        return "BASE_BACKUP"
    if not _use_legacy(style, server_major):
        return "BASE_BACKUP " + _generic_list(options, style)
    text = "BASE_BACKUP"
    for name, value in options:
        keyword = name.translate(_UNFOLD) if isinstance(name, str) else None
        if keyword not in _LEGACY_BACKUP_OPTIONS:
            raise EncodeError(f"option {name!r} has no keyword in the old BASE_BACKUP syntax")
        arg = _LEGACY_BACKUP_OPTIONS[keyword]
        text += style.legacy_separator + keyword
        if arg is None:
            if value is not None:
                raise EncodeError(f"option {name}: takes no value in the old syntax, found {value!r}")
        elif arg == "uint":
            text += " " + _uint(value, f"option {name}")
        else:
            if not isinstance(value, str):
                raise EncodeError(f"option {name}: expected a str, found {value!r}")
            text += " " + _string(value, f"option {name}")
    return text


def _fmt_start(cmd: StartReplication, style: FormatStyle, server_major: int | None) -> str:
    if cmd.kind == "logical":
        if cmd.timeline is not None:
            raise EncodeError("timeline: START_REPLICATION … LOGICAL takes no TIMELINE")
        text = "START_REPLICATION SLOT " + _ident(cmd.slot_name, "slot_name", quote=style.quote_slot)
        text += " LOGICAL " + _lsn(cmd.start_lsn, style)
        if _pairs(cmd.options, "options"):
            text += " " + _plugin_list(cmd.options, style)
        return text
    if cmd.kind != "physical":
        raise EncodeError(f"kind: expected 'physical' or 'logical', found {cmd.kind!r}")
    if cmd.options:
        raise EncodeError("options: physical START_REPLICATION takes no options")
    text = "START_REPLICATION"
    if cmd.slot_name is not None:
        text += " SLOT " + _ident(cmd.slot_name, "slot_name", quote=style.quote_slot)
    if style.physical_keyword:
        text += " PHYSICAL"
    text += " " + _lsn(cmd.start_lsn, style)
    if cmd.timeline is not None:
        text += " TIMELINE " + _timeline(cmd.timeline)
    return text


def _drop_quote(style: FormatStyle) -> bool:
    return style.quote_slot if style.quote_slot_in_drop is None else style.quote_slot_in_drop


def _fmt_show(name: object) -> str:
    name = _check_name(name, "name")
    return "SHOW " + ".".join(_ident(part, "name part", quote=False) for part in name.split("."))


def _format(cmd: ReplicationCommand, style: FormatStyle, server_major: int | None) -> str:
    if isinstance(cmd, IdentifySystem):
        return "IDENTIFY_SYSTEM"
    if isinstance(cmd, UploadManifest):
        return "UPLOAD_MANIFEST"
    if isinstance(cmd, Show):
        return _fmt_show(cmd.name)
    if isinstance(cmd, TimelineHistory):
        return "TIMELINE_HISTORY " + _timeline(cmd.timeline)
    if isinstance(cmd, CreateReplicationSlot):
        return _fmt_create(cmd, style, server_major)
    if isinstance(cmd, ReadReplicationSlot):
        name = _check_name(cmd.slot_name, "slot_name")
        return "READ_REPLICATION_SLOT " + ".".join(
            _ident(part, "slot_name", quote=style.quote_slot) for part in name.split(".")
        )
    if isinstance(cmd, AlterReplicationSlot):
        return (
            "ALTER_REPLICATION_SLOT " + _ident(cmd.slot_name, "slot_name", quote=_drop_quote(style))
            + " " + _generic_list(cmd.options, style)
        )
    if isinstance(cmd, DropReplicationSlot):
        text = "DROP_REPLICATION_SLOT " + _ident(cmd.slot_name, "slot_name", quote=_drop_quote(style))
        return text + " WAIT" if cmd.wait else text
    if isinstance(cmd, StartReplication):
        return _fmt_start(cmd, style, server_major)
    if isinstance(cmd, BaseBackup):
        return _fmt_base_backup(cmd, style, server_major)
    raise EncodeError(f"expected a ReplicationCommand, found {type(cmd).__name__}")


def _version(major: int, minor: int | None) -> str:
    return str(major) if minor is None else f"{major}.{minor}"


def format_command(
    cmd: ReplicationCommand,
    *,
    style: FormatStyle | str | None = None,
    server_major: int | None = None,
    server_minor: int | None = None,
) -> str:
    """The text a client sends for *cmd*.

    *style*: a :class:`FormatStyle`, or the name of one in :data:`CLIENT_STYLES`
    (``"pg_recvlogical"``, ``"psycopg2"``, ``"subscriber"``, ``"pg_basebackup"``); default:
    the style the parser recorded on *cmd*, else ``"default"``. With *server_major*, the
    old option syntax is chosen below 15 (unless a *style* given here says otherwise) and
    the text is checked against that major's grammar (at *server_minor*, default its
    latest): :class:`EncodeError` if it would not accept it (a '"' in a name needs a server
    that reads ``""``).
    """
    if isinstance(style, str):
        try:
            chosen = CLIENT_STYLES[style]
        except KeyError:
            raise OptionError(f"expected a style among {sorted(CLIENT_STYLES)}, found {style!r}") from None
    elif style is None:
        recorded = getattr(cmd, "style", None)
        chosen = recorded if isinstance(recorded, FormatStyle) else _DEFAULT_STYLE
        if server_major is not None and chosen.legacy_syntax is not None:
            # a recorded spelling yields to the syntax the asked-for major takes
            chosen = replace(chosen, legacy_syntax=None)
    elif isinstance(style, FormatStyle):
        chosen = style
    else:
        raise OptionError(f"expected a FormatStyle or a style name, found {type(style).__name__}")
    _grammar(server_major, server_minor)
    text = _format(cmd, chosen, server_major)
    if chosen.semicolon:
        text += ";"
    if server_major is not None:
        try:
            back = parse_command(text, server_major=server_major, server_minor=server_minor)
        except CommandSyntaxError as exc:
            raise EncodeError(f"PostgreSQL {_version(server_major, server_minor)} does not accept {text!r}: {exc}") from None
        if back is None:
            raise EncodeError(
                f"PostgreSQL {server_major} does not know {cmd.keyword} (it would run {text!r} as SQL)"
            )
        if back != cmd:
            raise EncodeError(
                f"PostgreSQL {_version(server_major, server_minor)} reads {text!r} as {back!r}, not {cmd!r}"
            )
    return text

