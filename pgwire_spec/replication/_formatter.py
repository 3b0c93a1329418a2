"""The replication command formatter: the text a client sends for a command object,
in a client's :class:`FormatStyle`, checked against a major's grammar when asked."""

from __future__ import annotations

from dataclasses import replace

from ..errors import CommandSyntaxError, EncodeError, OptionError
from ..lsn import format_lsn
from ._ast import (
    _DEFAULT_STYLE,
    _LEGACY_BACKUP_OPTIONS,
    _LEGACY_SLOT_OPTIONS,
    _MAX_UINT32,
    _NAMEDATALEN,
    CLIENT_STYLES,
    AlterReplicationSlot,
    BaseBackup,
    CreateReplicationSlot,
    DropReplicationSlot,
    FormatStyle,
    IdentifySystem,
    ReadReplicationSlot,
    ReplicationCommand,
    Show,
    StartReplication,
    TimelineHistory,
    UploadManifest,
)
from ._lexer import _PLAIN_IDENT_RE, _UNFOLD, grammar
from ._parser import parse_command


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
    return server_major is not None and not grammar(server_major).generic


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
    grammar(server_major, server_minor)
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
