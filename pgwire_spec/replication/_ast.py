"""The replication commands as objects, and how a client spells them (:class:`FormatStyle`).

Commands are frozen, slotted dataclasses. Values mean what the server takes from the text;
how a client spelled them is a :class:`FormatStyle`, recorded by the parser on the command
(``cmd.style``, not compared) and used by the formatter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Literal

from ..errors import OptionError

_MAX_UINT32 = 0xFFFFFFFF
_NAMEDATALEN = 64

#: A generic option's value: ``str`` a string literal (or an identifier other than
#: true/false: the server makes the same string of both), ``int`` an unsigned integer,
#: ``bool`` the bare words ``true``/``false``, ``None`` no value.
OptionValue = str | int | bool | None
GenericOptions = tuple[tuple[str, OptionValue], ...]
#: START_REPLICATION … LOGICAL options: a name and a string literal or nothing.
PluginOptions = tuple[tuple[str, str | None], ...]
Kind = Literal["physical", "logical"]


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
    #: The identifiers longer than NAMEDATALEN-1 bytes the lexer cut, in the text's order:
    #: (as written, lower-cased unless quoted; as cut). repl_scanner.l truncates them with
    #: warn=true, so the walsender sends a NOTICE 42622 for each (scansup.c
    #: truncate_identifier) before it answers.
    truncated: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False, kw_only=True)


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
