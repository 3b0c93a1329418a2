"""The walsender's command language: a lexer, a parser and a formatter.

A replication connection sends its commands as simple Query texts. The walsender lexes the
first token (repl_scanner.l): a replication keyword makes the text a replication command,
parsed by repl_gram.y; anything else is SQL, passed to the SQL engine (with
``replication=database``). :func:`parse_command` mirrors that: ``None`` for SQL, a command
object, or :class:`~pgwire_spec.errors.CommandSyntaxError` where the walsender answers
"syntax error", "unterminated quoted string" or "invalid timeline".

The grammar follows the servers of majors 10-18 (docs: "Streaming Replication Protocol"),
checked against real servers (10.23 … 18.4 and 15.20) text by text: ``spec/commands.yaml``
lists what each major accepts and what the servers did. What differs between majors is
read from the per-major table (:mod:`pgwire_spec.majors`). The parts: the command objects
and styles (``_ast``), the lexer (``_lexer``), the parser (``_parser``) and the formatter
(``_formatter``); this module is their public face. Lexing, as repl_scanner.l does it:

- keywords are UPPERCASE and case-sensitive (``identify_system`` is SQL);
- identifiers are folded to lower case (ASCII only) unless double-quoted, and truncated to
  63 bytes (NAMEDATALEN - 1); inside double quotes ``""`` is a quote since the minor
  releases of August 2026 (upstream a75bd485b5ea; 15.20 seen; 14.24, 15.19, 16.15, 17.11,
  18.5 inferred); before, and on 10-13, ``"a""b"`` is two identifiers;
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

from .. import majors
from ._ast import (
    CLIENT_STYLES,
    AlterReplicationSlot,
    BaseBackup,
    CreateReplicationSlot,
    DropReplicationSlot,
    FormatStyle,
    GenericOptions,
    IdentifySystem,
    OptionValue,
    PluginOptions,
    ReadReplicationSlot,
    ReplicationCommand,
    Show,
    StartReplication,
    TimelineHistory,
    UploadManifest,
)
from ._formatter import format_command
from ._lexer import downcase_identifier, truncate_identifier
from ._parser import is_replication_command, parse_command

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
    "truncate_identifier",
    "downcase_identifier",
]

#: The server majors whose grammar this module knows (the per-major table's).
SERVER_MAJORS = majors.known()
