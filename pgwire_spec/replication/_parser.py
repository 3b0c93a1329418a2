"""The replication command parser (repl_gram.y), over the per-major table's grammar.

:func:`parse_command` mirrors the walsender: ``None`` for SQL (the first token is not a
replication command keyword of that major), a command object, or
:class:`~pgwire_spec.errors.CommandSyntaxError` where the walsender answers "syntax
error", "unterminated quoted string" or "invalid timeline". The parser records how the
text was spelled (a :class:`FormatStyle`) on the command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, NoReturn

from ..errors import CommandSyntaxError
from ._ast import (
    _LEGACY_BACKUP_OPTIONS,
    _LEGACY_SLOT_OPTIONS,
    AlterReplicationSlot,
    BaseBackup,
    CreateReplicationSlot,
    DropReplicationSlot,
    FormatStyle,
    IdentifySystem,
    Kind,
    OptionValue,
    PluginOptions,
    ReadReplicationSlot,
    ReplicationCommand,
    Show,
    StartReplication,
    TimelineHistory,
    UploadManifest,
)
from ._lexer import (
    _CHAR,
    _END,
    _FOLD,
    _IDENT,
    _KW,
    _LSN,
    _STRING,
    _UINT,
    _UNFOLD,
    FastShape,
    Grammar,
    _Token,
    describe,
    grammar,
    lex,
    truncate_identifier,
    uint_value,
)

#: Whole option list items read at once: the items, the first separator, where they end,
#: whether the last of them is the list's last (a ')' follows, no comma).
_Run = tuple[list[tuple[str, object]], str | None, int, bool]
_BOOLEAN_WORDS: dict[str, OptionValue] = {"true": True, "false": False}
#: Items of any spelling read between two runs of one shape (then a run is tried again).
_UNITS_BETWEEN_RUNS = 16


class _Parser:
    __slots__ = ("text", "g", "pos", "tok", "prev", "expected", "style", "truncated")

    def __init__(self, text: str, g: Grammar) -> None:
        self.text = text
        self.g = g
        self.pos = 0
        self.tok: _Token | None = None
        self.prev: _Token | None = None
        #: What the optional parts tried at the current token wanted (for error messages).
        self.expected: list[str] = []
        #: FormatStyle fields seen in the text.
        self.style: dict[str, object] = {}
        #: Identifiers cut to NAMEDATALEN-1 bytes (as written, as cut), in order.
        self.truncated: list[tuple[str, str]] = []

    # -- tokens --------------------------------------------------------------------------
    def peek(self) -> _Token:
        if self.tok is None:
            self.tok = lex(self.text, self.pos, self.g)
            self.pos = self.tok.end
        return self.tok

    def cut(self, tok: _Token) -> None:
        """Record *tok*'s cut, if the lexer cut it (when the parser takes it or fails at it:
        a token peeked at and then read again by an option run counts once)."""
        if tok.untruncated is not None:
            self.truncated.append((tok.untruncated, tok.as_str))

    def truncate(self, name: str) -> str:
        """*name* cut to NAMEDATALEN-1 bytes, the cut recorded."""
        cut = truncate_identifier(name)
        if cut is not name:
            self.truncated.append((name, cut))
        return cut

    def take(self) -> _Token:
        tok = self.peek()
        self.cut(tok)
        self.prev, self.tok = tok, None
        self.expected = []
        return tok

    def fail(self, expected: str | None = None) -> NoReturn:
        tok = self.peek()
        self.cut(tok)
        wanted = [*self.expected, *([expected] if expected else [])]
        unique = list(dict.fromkeys(wanted))
        what = unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]
        raise CommandSyntaxError(
            expected=what, found=describe(tok, self.text), position=tok.start, text=self.text
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

    def seek(self, pos: int) -> None:
        """Continue lexing at *pos*, after a run of items read at once (which ended with a
        comma, or with the last item)."""
        self.tok = None
        self.pos = pos
        self.prev = _Token(_CHAR, ",", pos, pos)
        self.expected = []

    def option_list(
        self, key: str, item: Callable[[], tuple[str, object]], run: Callable[[int], _Run],
    ) -> tuple[tuple[str, object], ...]:
        """``'(' item (',' item)* ')'``, the '(' just taken; records the spacing as *key*.

        Whole items with their comma (the last one: with the ``)`` after it) are read a run
        at a time by *run* (one pattern match for the run, one per item to take its parts);
        the ``)`` and anything the run leaves (a keyword where a value goes, a number out of
        range, a stray token) token by token."""
        assert self.prev is not None
        opening = self.text[self.prev.start:self.peek().start]
        items: list[tuple[str, object]] = []
        sep: str | None = None
        while True:
            got, first_sep, end, last = run(self.peek().start)
            if got:
                items.extend(got)
                sep = first_sep if sep is None else sep
                self.seek(end)
                if last:
                    break  # the run read the last item; the ')' follows
            items.append(item())
            before = self.prev.end
            if self.accept_char(",") is None:
                break
            if sep is None:
                sep = self.text[before:self.peek().start]
        before = self.prev.end
        close = self.expect_char(")")
        self.style[key] = (opening, sep or ", ", self.text[before:close.end])
        return tuple(items)

    def plugin_run(self, start: int) -> _Run:
        """START_REPLICATION's plugin options from *start*, as many whole units as there are."""
        return self.run(start, self.g.plugin_fast, self.plugin_units)

    def generic_run(self, start: int) -> _Run:
        """Generic options (``name [value]``) from *start*, as many whole units as there are."""
        return self.run(start, self.g.generic_fast, self.generic_units)

    def run(
        self, start: int, shapes: tuple[FastShape, ...], units: Callable[[int, int], _Run],
    ) -> _Run:
        """Runs of items spelled alike (:meth:`fast_run`), between them at most a few items
        of any spelling (*units*), until neither reads more."""
        out: list[tuple[str, object]] = []
        first_sep: str | None = None
        end, last = start, False
        while not last:
            fast = self.fast_run(end, shapes)
            if fast is not None:
                run, run_sep, end = fast
                out.extend(run)
                first_sep = run_sep if first_sep is None else first_sep
                continue
            got, sep, end, last = units(end, _UNITS_BETWEEN_RUNS)
            if not got:
                break
            out.extend(got)
            first_sep = sep if first_sep is None else first_sep
        return out, first_sep, end, last

    def fast_run(
        self, start: int, shapes: tuple[FastShape, ...],
    ) -> tuple[Iterable[tuple[str, object]], str, int] | None:
        """The longest run of items of one shape from *start*, each with its comma, read
        with one match and ``str.split`` (the lexer's ``*_fast`` patterns), up to a keyword
        (which only the token parser reports right); None when no shape reads a run."""
        text, g = self.text, self.g
        ws, plugin = g.table.whitespace, shapes is g.plugin_fast
        for shape, pattern, unit in shapes:
            end = pattern.match(text, start).end()  # type: ignore[union-attr]  # (…)*+ always matches
            if end - start < 8:  # nothing, or one short item: the unit reader is as quick
                continue
            run = text[start:end]
            if shape.endswith("string"):
                parts = run.split("'")
                values: list[Any] = parts[1::2]
                words = "".join(parts[0::2])
                after_first = parts[2]
                names = words.split('"')[1::2] if shape == "quoted-string" else words.replace(",", " ").split()
            else:
                tokens = run.replace(",", " ").split()
                names, values = (tokens, [None] * len(tokens)) if shape == "word" else (tokens[0::2], tokens[1::2])
                after_first = run[len(run[:run.index(",")].rstrip(ws)):]
            sep = after_first[:len(after_first) - len(after_first.lstrip(ws + ","))]
            if shape != "quoted-string":
                # a keyword where a name or a value goes ends the run before its item
                reserved = g.plugin_name_keywords if plugin else g.generic_name_keywords
                stops = [names.index(w) for w in reserved.intersection(names)]
                if shape == "word-word":
                    stops.extend(values.index(w) for w in g.keywords.intersection(values))
                if stops:
                    count = min(stops)
                    if count == 0:
                        continue
                    names, values = names[:count], values[:count]
                    for _, item in zip(range(count), unit.finditer(text, start)):
                        end = item.end()
                if plugin:
                    self.style["quote_option_names"] = False
                else:
                    self.lowercase_style(names)
                names = " ".join(names).translate(_FOLD).split(" ")
            if shape == "word-word":
                values = " ".join(values).translate(_FOLD).split(" ")
                if max(map(len, values)) >= 16 or max(map(len, names)) >= 16:
                    cut = [(self.truncate(name), self.truncate(value)) for name, value in zip(names, values)]
                    names, values = [name for name, _ in cut], [value for _, value in cut]
                values = list(map(_BOOLEAN_WORDS.get, values, values))
            else:
                if max(map(len, names)) >= 16:
                    names = [self.truncate(name) for name in names]
                if shape == "word-uint":
                    values = list(map(int, values))
            return zip(names, values), sep, end
        return None

    def lowercase_style(self, names: list[str]) -> None:
        """The first generic option name with ASCII letters tells whether names are written
        in lower case (READ_REPLICATION_SLOT is always lower)."""
        if "lowercase_option_names" in self.style:
            return
        for raw in names:
            name = raw.translate(_FOLD)
            if name != raw.translate(_UNFOLD) and name != "read_replication_slot":
                self.style["lowercase_option_names"] = raw.translate(_UNFOLD) != raw
                return

    def plugin_units(self, start: int, limit: int) -> _Run:
        """Plugin options from *start*, at most *limit* whole units, one match each."""
        g, text = self.g, self.text
        out: list[tuple[str, object]] = []
        append = out.append
        keywords, doubled = g.keywords, g.doubled_quote
        quoted_all = True
        first_sep: str | None = None
        last = False
        match, end = g.plugin_unit.match, start
        while not last and len(out) < limit:
            # one anchored match a unit (a search could look past the items)
            unit = match(text, end)
            if unit is None:
                break
            qname, name, value, sep = unit.groups()
            if name is not None:
                if name in keywords:  # a keyword names no plugin option: the parser says so
                    break
                quoted_all = False
                name = name.translate(_FOLD)
            else:
                name = qname.replace('""', '"') if doubled and '""' in qname else qname
            if len(name) >= 16:
                name = self.truncate(name)
            if value is not None and "''" in value:
                value = value.replace("''", "'")
            append((name, value))
            if first_sep is None:
                first_sep = sep
            last = sep is None
            end = unit.end()
        if out:
            self.style["quote_option_names"] = bool(self.style.get("quote_option_names", True)) and quoted_all
        return out, first_sep, end, last

    def generic_units(self, start: int, limit: int) -> _Run:
        """Generic options from *start*, at most *limit* whole units, one match each."""
        g, text = self.g, self.text
        out: list[tuple[str, object]] = []
        keywords, doubled, style = g.keywords, g.doubled_quote, self.style
        first_sep: str | None = None
        last = False
        match, end = g.generic_unit.match, start
        while not last and len(out) < limit:
            unit = match(text, end)
            if unit is None:
                break
            qname, name, qvalue, ivalue, svalue, uvalue, sep = unit.groups()
            if ivalue is not None and ivalue in keywords:
                break  # a keyword is no value: the parser says so (before the name's truncation is noted)
            if name is not None:
                if name in keywords and name not in g.option_keywords:  # the parser says why
                    break
                raw = name
                name = name.translate(_FOLD)
                if (
                    "lowercase_option_names" not in style and name != raw.translate(_UNFOLD)
                    and name != "read_replication_slot"
                ):
                    # the first name with ASCII letters tells (READ_REPLICATION_SLOT is always lower)
                    style["lowercase_option_names"] = raw.translate(_UNFOLD) != raw
            else:
                name = qname.replace('""', '"') if doubled and '""' in qname else qname
            if len(name) >= 16:
                name = self.truncate(name)
            value: OptionValue
            if ivalue is not None:
                word = self.truncate(ivalue.translate(_FOLD))
                value = _BOOLEAN_WORDS.get(word, word)
            elif qvalue is not None:
                word = self.truncate(qvalue.replace('""', '"') if doubled else qvalue)
                value = _BOOLEAN_WORDS.get(word, word)
            elif svalue is not None:
                value = svalue.replace("''", "'")
            elif uvalue is not None:
                value = uint_value(uvalue, unit.start(6), text)
            else:
                value = None
            out.append((name, value))
            if first_sep is None:
                first_sep = sep
            last = sep is None
            end = unit.end()
        return out, first_sep, end, last

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
            value = _BOOLEAN_WORDS.get(val.as_str, val.as_str)
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
    options = p.option_list("option_list", p.generic_option, p.generic_run)
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
        options.extend(p.option_list("option_list", p.generic_option, p.generic_run))  # type: ignore[arg-type]
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
                options = p.option_list("plugin_option_list", p.plugin_option, p.plugin_run)  # type: ignore[assignment]
            return StartReplication("logical", slot, lsn, None, options)
    p.style["physical_keyword"] = p.accept_kw("PHYSICAL") is not None
    lsn = p.lsn()
    timeline = p.timeline() if p.accept_kw("TIMELINE") else None
    return StartReplication("physical", slot, lsn, timeline)


def _parse_base_backup(p: _Parser) -> ReplicationCommand:
    options: list[tuple[str, OptionValue]] = []
    if p.g.generic:
        if p.accept_char("("):
            options.extend(p.option_list("option_list", p.generic_option, p.generic_run))  # type: ignore[arg-type]
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
    g = grammar(server_major, server_minor)
    source = _as_text(text)
    p = _Parser(source, g)
    first = p.peek()
    if first.kind != _KW or first.value not in g.commands:
        return None
    p.take()
    try:
        cmd = _PARSERS[first.as_str](p)
        if p.accept_char(";"):
            p.style["semicolon"] = True
        if p.peek().kind != _END:
            p.fail("end of text")
    except CommandSyntaxError as exc:
        exc.truncated = tuple(p.truncated)
        raise
    return replace(cmd, style=FormatStyle(**p.style), truncated=tuple(p.truncated))  # type: ignore[arg-type]


def is_replication_command(
    text: str | bytes, *, server_major: int | None = None, server_minor: int | None = None
) -> bool:
    """True when the walsender of *server_major* (default 18) reads *text* with its
    replication grammar (the first token is a command keyword, or cannot be lexed: an
    unterminated quote), False when it passes the text to the SQL engine."""
    g = grammar(server_major, server_minor)
    try:
        first = lex(_as_text(text), 0, g)
    except CommandSyntaxError:
        return True
    return first.kind == _KW and first.value in g.commands
