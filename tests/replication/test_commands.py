"""The replication command language: every form of every command in both syntaxes, the
lexical rules of the server's scanner, what real clients send (transcripts/, byte for byte),
spec/commands.yaml against the parser (and, live, against real servers), round trips and
bad input that only ever raises CommandSyntaxError."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pgwire_spec import majors
from pgwire_spec.errors import CommandSyntaxError, EncodeError, OptionError, PgWireError
from pgwire_spec.replication import _ast, _lexer, _parser
from pgwire_spec.replication import commands as C
from pgwire_spec.replication.commands import (
    SERVER_MAJORS,
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
    format_command,
    is_replication_command,
    parse_command,
)
from tests._servers import pg_server  # noqa: F401  (the session-scoped server factory)

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "spec" / "commands.yaml").read_text(encoding="utf-8"))
def _transcripts() -> Path:
    """The recorded conversations: $PGWIRE_SPEC_TRANSCRIPTS, else shared/ beside the clone."""
    if "PGWIRE_SPEC_TRANSCRIPTS" in os.environ:
        return Path(os.environ["PGWIRE_SPEC_TRANSCRIPTS"])
    beside = Path(__file__).resolve().parents[3] / "shared" / "reference" / "transcripts"
    return beside if beside.is_dir() else Path("/work/shared/reference/transcripts")

#: keyword -> (first major, last major) whose scanner knows it, from the per-major table.
KEYWORDS = {
    k: (min(m for m, e in majors.MAJORS.items() if k in e.keywords),
        max(m for m, e in majors.MAJORS.items() if k in e.keywords))
    for k in sorted(set().union(*(e.keywords for e in majors.MAJORS.values())))
}
#: major -> first minor release whose scanner reads "" inside a quoted identifier.
DOUBLED_QUOTE_SINCE = {m: e.doubled_quote_since for m, e in majors.MAJORS.items() if e.doubled_quote_since is not None}


TRANSCRIPTS = _transcripts()
MAJORS = list(SERVER_MAJORS)


def majors_of(servers: str) -> list[int]:
    lo, _, hi = servers.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def outcome(text: str, major: int | None = None, minor: int | None = None) -> str:
    try:
        cmd = parse_command(text, server_major=major, server_minor=minor)
    except CommandSyntaxError as exc:
        assert 0 <= exc.position <= len(text), exc
        return "syntax"
    return "sql" if cmd is None else "command"


def syntax_error(text: str, major: int | None = None, minor: int | None = None) -> CommandSyntaxError:
    with pytest.raises(CommandSyntaxError) as info:
        parse_command(text, server_major=major, server_minor=minor)
    return info.value


# =========================================================================================
# Every form
# =========================================================================================

FORMS: list[tuple[str, ReplicationCommand]] = [
    ("IDENTIFY_SYSTEM", IdentifySystem()),
    ("SHOW data_directory_mode", Show("data_directory_mode")),
    ('SHOW a."B".c', Show("a.B.c")),
    ("TIMELINE_HISTORY 7", TimelineHistory(7)),
    ("READ_REPLICATION_SLOT s", ReadReplicationSlot("s")),
    ("UPLOAD_MANIFEST", UploadManifest()),
    ("DROP_REPLICATION_SLOT s", DropReplicationSlot("s")),
    ("DROP_REPLICATION_SLOT s WAIT", DropReplicationSlot("s", wait=True)),
    ("CREATE_REPLICATION_SLOT s PHYSICAL", CreateReplicationSlot("s", "physical")),
    ("CREATE_REPLICATION_SLOT s TEMPORARY PHYSICAL RESERVE_WAL",
     CreateReplicationSlot("s", "physical", temporary=True, options=(("reserve_wal", None),))),
    ("CREATE_REPLICATION_SLOT s PHYSICAL (RESERVE_WAL false)",
     CreateReplicationSlot("s", "physical", options=(("reserve_wal", False),))),
    ("CREATE_REPLICATION_SLOT s LOGICAL pgoutput", CreateReplicationSlot("s", "logical", "pgoutput")),
    ("CREATE_REPLICATION_SLOT s LOGICAL pgoutput EXPORT_SNAPSHOT",
     CreateReplicationSlot("s", "logical", "pgoutput", options=(("snapshot", "export"),))),
    ("CREATE_REPLICATION_SLOT s LOGICAL pgoutput USE_SNAPSHOT",
     CreateReplicationSlot("s", "logical", "pgoutput", options=(("snapshot", "use"),))),
    ("CREATE_REPLICATION_SLOT s LOGICAL pgoutput TWO_PHASE NOEXPORT_SNAPSHOT",
     CreateReplicationSlot("s", "logical", "pgoutput", options=(("two_phase", None), ("snapshot", "nothing")))),
    ("CREATE_REPLICATION_SLOT s TEMPORARY LOGICAL test_decoding (SNAPSHOT 'export', TWO_PHASE true, FAILOVER)",
     CreateReplicationSlot("s", "logical", "test_decoding", temporary=True,
                           options=(("snapshot", "export"), ("two_phase", True), ("failover", None)))),
    ("ALTER_REPLICATION_SLOT s (FAILOVER false, TWO_PHASE 1)",
     AlterReplicationSlot("s", (("failover", False), ("two_phase", 1)))),
    ("START_REPLICATION 0/16B3748", StartReplication("physical", None, 0x16B3748)),
    ("START_REPLICATION SLOT s PHYSICAL A/0 TIMELINE 2", StartReplication("physical", "s", 0xA00000000, 2)),
    ("START_REPLICATION SLOT s LOGICAL FFFFFFFF/FFFFFFFF", StartReplication("logical", "s", 2**64 - 1)),
    ("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'p', binary)",
     StartReplication("logical", "s", 0, options=(("proto_version", "1"), ("publication_names", "p"), ("binary", None)))),
    ("BASE_BACKUP", BaseBackup()),
    ("BASE_BACKUP (LABEL 'x', PROGRESS, CHECKPOINT 'fast', WAIT 0, MAX_RATE 32, INCREMENTAL)",
     BaseBackup((("label", "x"), ("progress", None), ("checkpoint", "fast"), ("wait", 0), ("max_rate", 32),
                 ("incremental", None)))),
]


@pytest.mark.parametrize("text, expected", FORMS, ids=[t for t, _ in FORMS])
def test_every_form_parses_and_formats_back(text: str, expected: ReplicationCommand) -> None:
    cmd = parse_command(text)
    assert cmd == expected and type(cmd) is type(expected)
    assert format_command(cmd) == text
    # the default style writes the same, in the syntax the text used
    assert cmd.style is not None
    style = FormatStyle(legacy_syntax=cmd.style.legacy_syntax, physical_keyword=cmd.style.physical_keyword)
    assert format_command(expected, style=style) == text
    assert is_replication_command(text)


LEGACY_BASE_BACKUP = (
    "BASE_BACKUP LABEL 'it''s' PROGRESS FAST WAL NOWAIT MAX_RATE 1024 TABLESPACE_MAP"
    " NOVERIFY_CHECKSUMS MANIFEST 'yes' MANIFEST_CHECKSUMS 'SHA256'"
)


def test_base_backup_old_syntax_10_to_14() -> None:
    cmd = parse_command(LEGACY_BASE_BACKUP, server_major=14)
    assert cmd == BaseBackup((
        ("label", "it's"), ("progress", None), ("fast", None), ("wal", None), ("nowait", None),
        ("max_rate", 1024), ("tablespace_map", None), ("noverify_checksums", None), ("manifest", "yes"),
        ("manifest_checksums", "SHA256"),
    ))
    assert format_command(cmd) == LEGACY_BASE_BACKUP
    assert format_command(dataclasses.replace(cmd, style=None), server_major=14) == LEGACY_BASE_BACKUP
    # 15 dropped the old syntax; NOVERIFY_CHECKSUMS came in 11, MANIFEST in 13
    assert syntax_error(LEGACY_BASE_BACKUP, 15).position == len("BASE_BACKUP ")
    assert "NOVERIFY_CHECKSUMS" in syntax_error("BASE_BACKUP NOVERIFY_CHECKSUMS", 10).found
    assert outcome("BASE_BACKUP NOVERIFY_CHECKSUMS", 11) == "command"
    assert outcome("BASE_BACKUP MANIFEST 'yes'", 12) == "syntax"
    assert outcome("BASE_BACKUP MANIFEST 'yes'", 13) == "command"
    assert outcome("BASE_BACKUP (LABEL 'x')", 14) == "syntax"


def test_create_slot_both_syntaxes_give_the_same_options() -> None:
    old = parse_command('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput TWO_PHASE NOEXPORT_SNAPSHOT')
    new = parse_command("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (TWO_PHASE, SNAPSHOT 'nothing')")
    assert old == new
    assert isinstance(old, CreateReplicationSlot) and isinstance(new, CreateReplicationSlot)
    assert old.style is not None and old.style.legacy_syntax is True
    assert new.style is not None and new.style.legacy_syntax is False
    assert old.snapshot == "nothing" and old.two_phase and not old.failover and not old.reserve_wal
    # the syntax follows the server major when the style leaves it open
    bare = CreateReplicationSlot("s", "logical", "pgoutput", options=(("snapshot", "nothing"),))
    assert format_command(bare, server_major=14) == "CREATE_REPLICATION_SLOT s LOGICAL pgoutput NOEXPORT_SNAPSHOT"
    assert format_command(bare, server_major=15) == "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')"
    assert format_command(bare) == "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')"
    # TWO_PHASE is a keyword from 15 only
    assert outcome("CREATE_REPLICATION_SLOT s LOGICAL pgoutput TWO_PHASE", 14) == "syntax"
    with pytest.raises(EncodeError, match="PostgreSQL 14 does not accept"):
        format_command(old, server_major=14)
    with pytest.raises(EncodeError, match="no keyword in the old CREATE_REPLICATION_SLOT syntax"):
        format_command(dataclasses.replace(new, options=(("failover", True),)), server_major=14)
    # a parsed command's recorded syntax yields to the major asked for; an explicit style does not
    snap = parse_command("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'use')")
    assert snap is not None
    assert format_command(snap, server_major=14) == "CREATE_REPLICATION_SLOT s LOGICAL pgoutput USE_SNAPSHOT"
    with pytest.raises(EncodeError, match="PostgreSQL 14 does not accept"):
        format_command(snap, server_major=14, style=FormatStyle(legacy_syntax=False))


def test_options_dict_and_boolean_options() -> None:
    assert not CreateReplicationSlot("s", "physical").reserve_wal
    with pytest.raises(OptionError, match="failover requires a Boolean value, found 1.5"):
        _ = CreateReplicationSlot("s", "logical", "p", options=(("failover", 1.5),)).failover  # type: ignore[arg-type]
    cmd = parse_command("CREATE_REPLICATION_SLOT s LOGICAL p (TWO_PHASE 'on', FAILOVER 0, SNAPSHOT 'use', TWO_PHASE 'off')")
    assert isinstance(cmd, CreateReplicationSlot)
    assert cmd.options_dict() == {"two_phase": "off", "failover": 0, "snapshot": "use"}
    assert not cmd.two_phase and not cmd.failover and cmd.snapshot == "use"
    bad = CreateReplicationSlot("s", "logical", "p", options=(("two_phase", "maybe"),))
    with pytest.raises(OptionError, match="two_phase requires a Boolean value"):
        _ = bad.two_phase
    with pytest.raises(OptionError):
        _ = CreateReplicationSlot("s", "physical", options=(("reserve_wal", 2),)).reserve_wal
    start = parse_command("START_REPLICATION SLOT s LOGICAL 0/0 (a 'x', b, a 'y')")
    assert isinstance(start, StartReplication) and start.options_dict() == {"a": "y", "b": None}
    assert BaseBackup((("label", "l"),)).options_dict() == {"label": "l"}
    assert AlterReplicationSlot("s", (("failover", True),)).options_dict() == {"failover": True}


# =========================================================================================
# Lexical rules (repl_scanner.l), as real servers showed them
# =========================================================================================


def test_keywords_are_case_sensitive_and_identifiers_fold() -> None:
    assert parse_command("identify_system") is None  # an identifier: SQL
    assert parse_command("Identify_System") is None
    assert parse_command("SHOW Server_Version") == Show("server_version")
    assert parse_command('SHOW "Server_Version"') == Show("Server_Version")
    assert parse_command("DROP_REPLICATION_SLOT S") == DropReplicationSlot("s")
    # a keyword is not an identifier: no slot named SLOT unless quoted
    assert syntax_error("DROP_REPLICATION_SLOT SLOT").position == 22
    assert parse_command('DROP_REPLICATION_SLOT "SLOT"') == DropReplicationSlot("SLOT")
    # lower case keywords are identifiers
    assert "identifier 'wait'" in syntax_error("DROP_REPLICATION_SLOT s wait").found


def test_quoting_and_escaping() -> None:
    cmd = parse_command("START_REPLICATION SLOT s LOGICAL 0/0 (a 'it''s', \"B c\" '', d '\"')")
    assert isinstance(cmd, StartReplication)
    assert cmd.options == (("a", "it's"), ("B c", ""), ("d", '"'))
    assert format_command(cmd) == "START_REPLICATION SLOT s LOGICAL 0/0 (a 'it''s', \"B c\" '', d '\"')"
    # "" inside a quoted identifier: a quote from the August 2026 minors (seen on 15.20),
    # before that two identifiers (seen on 15.18 and every other major's npm build)
    assert parse_command('SHOW "a""b"') == Show('a"b')
    assert parse_command('SHOW """"', server_major=15, server_minor=20) == Show('"')
    assert syntax_error('SHOW "a""b"', 15, 18).position == 8
    assert syntax_error('SHOW "a""b"', 13).position == 8  # 13 never got it
    assert parse_command('SHOW ""') == Show("")
    assert format_command(DropReplicationSlot('a"b')) == 'DROP_REPLICATION_SLOT "a""b"'
    assert format_command(DropReplicationSlot('a"b'), server_major=18, server_minor=5) == 'DROP_REPLICATION_SLOT "a""b"'
    with pytest.raises(EncodeError, match="PostgreSQL 18.4 does not accept"):
        format_command(DropReplicationSlot('a"b'), server_major=18, server_minor=4)
    with pytest.raises(EncodeError, match="PostgreSQL 13 does not accept"):
        format_command(DropReplicationSlot('a"b'), server_major=13)
    # no E'' strings, no backslash escapes
    assert parse_command(r"START_REPLICATION SLOT s LOGICAL 0/0 (a 'x\')") == StartReplication(
        "logical", "s", 0, options=(("a", "x\\"),))
    assert outcome("START_REPLICATION SLOT s LOGICAL 0/0 (a E'x')") == "syntax"


def test_identifiers_are_truncated_to_63_bytes() -> None:
    assert parse_command("SHOW " + "a" * 70) == Show("a" * 63)
    assert parse_command('SHOW "' + "B" * 70 + '"') == Show("B" * 63)
    assert parse_command("SHOW " + "é" * 40) == Show("é" * 31)  # 62 bytes: not half a character
    with pytest.raises(EncodeError, match="longer than 63 bytes"):
        format_command(DropReplicationSlot("s" * 64))


def test_whitespace_by_major() -> None:
    assert parse_command("\t IDENTIFY_SYSTEM\r\n\f;\n") == IdentifySystem()
    assert outcome("IDENTIFY_SYSTEM\v", 16) == "syntax"
    assert outcome("IDENTIFY_SYSTEM\v", 17) == "command"
    assert outcome("\vIDENTIFY_SYSTEM", 16) == "sql"  # the first token is the character VT
    assert outcome("IDENTIFY_SYSTEM\u00a0") == "sql"  # NBSP is an identifier character
    assert outcome("IDENTIFY_SYSTEM -- comment") == "syntax"
    assert outcome("/* c */ IDENTIFY_SYSTEM") == "sql"


def test_longest_match_like_flex() -> None:
    assert parse_command("START_REPLICATION 0/0TIMELINE 9") == StartReplication("physical", None, 0, 9)
    assert parse_command("START_REPLICATION 0/0ATIMELINE 9") == StartReplication("physical", None, 0xA, 9)
    assert parse_command('START_REPLICATION SLOT"x"LOGICAL 0/0') == StartReplication("logical", "x", 0)
    assert parse_command("START_REPLICATION abc/DEF") == StartReplication("physical", None, 0xABC00000DEF)
    assert parse_command("START_REPLICATION 000000001/00000000002") == StartReplication("physical", None, 2**32 + 2)
    assert "LSN abc/1" in syntax_error("SHOW abc/1").found
    assert syntax_error("TIMELINE_HISTORY 1abc").position == 18


def test_semicolon_and_end() -> None:
    assert parse_command("IDENTIFY_SYSTEM ;") == IdentifySystem()
    err = syntax_error("IDENTIFY_SYSTEM;;")
    assert (err.position, err.expected, err.found) == (16, "end of text", "';'")
    err = syntax_error("IDENTIFY_SYSTEM; SELECT 1")
    assert err.position == 17 and err.expected == "end of text"
    cmd = parse_command("ALTER_REPLICATION_SLOT s ( FAILOVER true );")
    assert cmd is not None and format_command(cmd) == "ALTER_REPLICATION_SLOT s ( FAILOVER true );"


@pytest.mark.parametrize("text, major", [
    ("SELECT pg_catalog.set_config('search_path', '', false);", None),
    ("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ", None),
    ("select 'unterminated", None),
    ("(SELECT 1)", None),
    ("SELECT $$'$$", None),
    ("", None),
    (";", None),
    ("'IDENTIFY_SYSTEM'", None),
    ('"IDENTIFY_SYSTEM"', None),
    ("0/0", None),
    ("READ_REPLICATION_SLOT s", 14),
    ("ALTER_REPLICATION_SLOT s (FAILOVER)", 16),
    ("UPLOAD_MANIFEST", 16),
])
def test_sql_is_none(text: str, major: int | None) -> None:
    assert parse_command(text, server_major=major) is None
    assert not is_replication_command(text, server_major=major)


def test_an_unterminated_first_token_is_a_replication_error() -> None:
    for text in ("'abc", '"abc', "'"):
        assert is_replication_command(text)
        err = syntax_error(text)
        assert err.position == len(text) and "unterminated" in err.found


def test_bytes_and_other_types() -> None:
    assert parse_command(b"SHOW \xc3\xa9t\xc3\xa9") == Show("été")
    err = syntax_error(b"SHOW \xff")  # type: ignore[arg-type]
    assert (err.position, err.expected) == (5, "UTF-8 text")
    with pytest.raises(CommandSyntaxError):
        parse_command(42)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="server major from 10 to 18"):
        parse_command("IDENTIFY_SYSTEM", server_major=9)
    with pytest.raises(OptionError, match="needs a server_major"):
        parse_command("IDENTIFY_SYSTEM", server_minor=3)
    for minor in (-1, True, "4"):
        with pytest.raises(OptionError, match="server minor"):
            is_replication_command("IDENTIFY_SYSTEM", server_major=15, server_minor=minor)  # type: ignore[arg-type]
    with pytest.raises(OptionError):
        format_command(IdentifySystem(), server_major=19)
    with pytest.raises(OptionError, match="expected a style among"):
        format_command(IdentifySystem(), style="pgjdbc")


# =========================================================================================
# Bad input: CommandSyntaxError with what was expected, what was found, and where
# =========================================================================================

BAD: list[tuple[str, int, str, str]] = [
    # text, position, a word of expected, a word of found
    ("START_REPLICATION", 17, "LSN", "end of text"),
    ('START_REPLICATION SLOT "s" LOGICAL', 34, "LSN", "end of text"),
    ('START_REPLICATION SLOT "s" LOGICAL 0/0 (', 40, "option name", "end of text"),
    ('START_REPLICATION SLOT "s" LOGICAL 0/0 (a', 41, "')'", "end of text"),
    ('START_REPLICATION SLOT "s" LOGICAL 0/0 (a \'b', 44, "closing ' for the string that starts at position 42", "unterminated"),
    ('START_REPLICATION SLOT "s', 25, 'closing "', "unterminated"),
    ("START_REPLICATION SLOT s LOGICAL 0/0 (TWO_PHASE 'on')", 38, "option name", "keyword TWO_PHASE"),
    ("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version 1)", 52, "string value", "number 1"),
    ("START_REPLICATION SLOT s LOGICAL 0/0 ()", 38, "option name", "')'"),
    ("START_REPLICATION SLOT s LOGICAL 0/0 (a 'b',)", 44, "option name", "')'"),
    ("START_REPLICATION SLOT s LOGICAL 0/0 TIMELINE 1", 37, "'('", "keyword TIMELINE"),
    ("START_REPLICATION LOGICAL 0/0", 18, "SLOT", "keyword LOGICAL"),
    ("START_REPLICATION 0/G", 18, "LSN", "number 0"),
    ("START_REPLICATION 0/0/0", 21, "end of text", "'/'"),
    ("START_REPLICATION 0 / 0", 18, "LSN", "number 0"),
    ("START_REPLICATION 1FFFFFFFF/0", 18, "32 bits", "LSN 1FFFFFFFF/0"),
    ("START_REPLICATION 0/0 TIMELINE 0", 31, "invalid timeline 0", "number 0"),
    ("START_REPLICATION 0/0 TIMELINE 4294967296", 31, "32-bit", "4294967296"),
    ("START_REPLICATION 0/0 TIMELINE", 30, "timeline", "end of text"),
    ("TIMELINE_HISTORY", 16, "timeline", "end of text"),
    ("TIMELINE_HISTORY '1'", 17, "timeline", "string '1'"),
    ("TIMELINE_HISTORY 0", 17, "invalid timeline 0", "number 0"),
    ("SHOW", 4, "setting name", "end of text"),
    ("SHOW a.", 7, "after '.'", "end of text"),
    ("SHOW 1", 5, "setting name", "number 1"),
    ("CREATE_REPLICATION_SLOT", 23, "slot name", "end of text"),
    ("CREATE_REPLICATION_SLOT 's' LOGICAL p", 24, "slot name", "string 's'"),
    ('CREATE_REPLICATION_SLOT "s"', 27, "PHYSICAL", "end of text"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL', 35, "plugin", "end of text"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput TEMPORARY', 45, "option keyword", "keyword TEMPORARY"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput ()', 46, "option name", "')'"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (SNAPSHOT 0/0)', 55, "value", "LSN 0/0"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (READ_REPLICATION_SLOT)', 46, "option name", "keyword"),
    ('CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (SNAPSHOT \'nothing\') NOEXPORT_SNAPSHOT', 66, "end of text", "NOEXPORT_SNAPSHOT"),
    ('CREATE_REPLICATION_SLOT "s" TEMPORARY TEMPORARY PHYSICAL', 38, "PHYSICAL", "keyword TEMPORARY"),
    ("DROP_REPLICATION_SLOT", 21, "slot name", "end of text"),
    ("DROP_REPLICATION_SLOT s WAIT WAIT", 29, "end of text", "keyword WAIT"),
    ("ALTER_REPLICATION_SLOT s", 24, "'('", "end of text"),
    ("ALTER_REPLICATION_SLOT s ()", 26, "option name", "')'"),
    ("BASE_BACKUP ()", 13, "option name", "')'"),
    ("BASE_BACKUP (MAX_RATE 1 2)", 24, "','", "number 2"),
    ("BASE_BACKUP (MAX_RATE 1) LABEL 'x'", 25, "end of text", "identifier 'LABEL'"),
    ("IDENTIFY_SYSTEM x", 16, "end of text", "identifier 'x'"),
    ("IDENTIFY_SYSTEM\x00", 15, "NUL", "NUL"),
    ("SHOW 'a\x00'", 7, "NUL", "NUL"),
]


@pytest.mark.parametrize("text, position, expected, found", BAD, ids=[repr(b[0]) for b in BAD])
def test_bad_input_says_what_where(text: str, position: int, expected: str, found: str) -> None:
    err = syntax_error(text)
    assert err.position == position, err
    assert expected in err.expected, err
    assert found in err.found, err
    assert err.text == text
    assert isinstance(err, PgWireError) and isinstance(err, ValueError)
    assert f"position {position}" in str(err)


def test_legacy_base_backup_errors() -> None:
    err = syntax_error("BASE_BACKUP LABEL", 14)
    assert (err.position, err.found) == (17, "end of text") and "string after LABEL" in err.expected
    err = syntax_error("BASE_BACKUP MAX_RATE 'x'", 14)
    assert err.position == 21 and "number after MAX_RATE" in err.expected
    err = syntax_error("BASE_BACKUP LABEL x", 14)
    assert err.position == 18


@pytest.mark.parametrize("cmd, message", [
    (DropReplicationSlot("a\x00b"), "NUL"),
    (DropReplicationSlot(42), "expected str"),  # type: ignore[arg-type]
    (Show("a." + "x" * 64), "longer than 63 bytes"),
    (TimelineHistory(0), "from 1 to 4294967295"),
    (TimelineHistory(True), "from 1 to 4294967295"),
    (StartReplication("physical", None, 2**64), "LSN out of range"),
    (StartReplication("physical", None, -1), "LSN out of range"),
    (StartReplication("physical", None, "0/0"), "expected an int"),  # type: ignore[arg-type]
    (StartReplication("physical", "s", 0, options=(("a", None),)), "takes no options"),
    (StartReplication("logical", "s", 0, timeline=1), "takes no TIMELINE"),
    (StartReplication("logical", None, 0), "slot_name: expected str"),
    (StartReplication("logical", "s", 0, options=(("a", 1),)), "expected a str or None"),  # type: ignore[arg-type]
    (StartReplication("sideways", "s", 0), "kind"),  # type: ignore[arg-type]
    (CreateReplicationSlot("s", "logical"), "plugin: expected str"),
    (CreateReplicationSlot("s", "physical", "pgoutput"), "no output plugin"),
    (CreateReplicationSlot("s", "both"), "kind"),  # type: ignore[arg-type]
    (CreateReplicationSlot("s", "physical", options=[("a", None)]), "tuple of (name, value) pairs"),  # type: ignore[arg-type]
    (CreateReplicationSlot("s", "physical", options=(("a", 1.5),)), "expected str, int, bool or None"),  # type: ignore[arg-type]
    (CreateReplicationSlot("s", "physical", options=(("a", -1),)), "unsigned 32-bit"),
    (CreateReplicationSlot("s", "physical", options=(("a", "x\x00"),)), "NUL"),
    (AlterReplicationSlot("s", ()), "cannot be empty"),
    (BaseBackup((("label", None),), style=FormatStyle(legacy_syntax=True)), "expected a str"),
    (BaseBackup((("fast", "yes"),), style=FormatStyle(legacy_syntax=True)), "takes no value"),
    (BaseBackup((("max_rate", "32"),), style=FormatStyle(legacy_syntax=True)), "unsigned 32-bit"),
    (BaseBackup((("checkpoint", "fast"),), style=FormatStyle(legacy_syntax=True)), "no keyword in the old BASE_BACKUP"),
    (CreateReplicationSlot("s", "logical", "p", options=(("two_phase", True),), style=FormatStyle(legacy_syntax=True)),
     "no keyword in the old"),
])
def test_unformattable_commands_raise_encode_error(cmd: ReplicationCommand, message: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(message)):
        format_command(cmd)


def test_format_checks_the_server_major() -> None:
    with pytest.raises(EncodeError, match="PostgreSQL 16 does not know ALTER_REPLICATION_SLOT"):
        format_command(AlterReplicationSlot("s", (("failover", True),)), server_major=16)
    with pytest.raises(EncodeError, match="PostgreSQL 14 does not know READ_REPLICATION_SLOT"):
        format_command(ReadReplicationSlot("s"), server_major=14)
    with pytest.raises(EncodeError, match="PostgreSQL 12 does not accept"):
        format_command(BaseBackup((("manifest", "yes"),)), server_major=12)
    with pytest.raises(EncodeError, match="PostgreSQL 15 does not accept"):
        format_command(BaseBackup((("fast", None),)), style=FormatStyle(legacy_syntax=True), server_major=15)
    # a recorded old spelling yields to the major asked for: 15 takes FAST as a (semantically unknown) option
    assert format_command(BaseBackup((("fast", None),), style=FormatStyle(legacy_syntax=True)), server_major=15) == (
        "BASE_BACKUP (FAST)")
    # a keyword of that major as a START_REPLICATION option name must be quoted
    start = StartReplication("logical", "s", 0, options=(("TWO_PHASE", "on"),))
    assert format_command(start, server_major=15) == "START_REPLICATION SLOT s LOGICAL 0/0 (\"TWO_PHASE\" 'on')"
    assert format_command(BaseBackup((("fast", None),)), server_major=14) == "BASE_BACKUP FAST"


def test_format_style_validates_its_layout() -> None:
    for bad in ({"option_list": ("[", ", ", ")")}, {"option_list": (" (", ", ", ")")},
                {"plugin_option_list": ("(", ";", ")")}, {"plugin_option_list": ("(", ",")},
                {"legacy_separator": ""}, {"legacy_separator": "x"}):
        with pytest.raises(OptionError):
            FormatStyle(**bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError):
        format_command(IdentifySystem(), style=42)  # type: ignore[arg-type]


def test_generic_option_names_read_back_in_every_case() -> None:
    for name in ("two_phase", "slot", "read_replication_slot", "upload_manifest", "Mixed", "a b", "", "é", "x$"):
        cmd = BaseBackup(((name, None),))
        for major in (15, 16, 17, 18):
            assert parse_command(format_command(cmd), server_major=major) == cmd, (name, major)
    assert format_command(BaseBackup((("read_replication_slot", None),))) == "BASE_BACKUP (read_replication_slot)"
    assert format_command(BaseBackup((("Mixed", None),))) == 'BASE_BACKUP ("Mixed")'
    lower = FormatStyle(lowercase_option_names=True)
    assert format_command(BaseBackup((("two_phase", True),)), style=lower) == "BASE_BACKUP (two_phase true)"


# =========================================================================================
# Real clients: every replication command in transcripts/ parses, and formats back
# =========================================================================================


def transcript_queries() -> list[tuple[str, int, int, str]]:
    """(file, server major, server minor, query text) of every Query a client sent in
    transcripts/, with the version the server announced."""
    out = []
    for path in sorted(TRANSCRIPTS.glob("*.log")):
        text = path.read_text(encoding="utf-8")
        major, minor = map(int, re.search(r"server_version=(\d+)\.(\d+)", text).groups())  # type: ignore[union-attr]
        assert f"pg{major}." in path.name
        for line in text.splitlines():
            m = re.match(r"\[\d+\] F Query (.*)$", line)
            if m:
                out.append((path.name, major, minor, ast.literal_eval(m.group(1))))
    return out


QUERIES = transcript_queries() if TRANSCRIPTS.is_dir() else []
STYLE_OF_FILE = {"pg_recvlogical": "pg_recvlogical", "psycopg2": "psycopg2", "subscriber": "subscriber"}


@pytest.mark.skipif(not QUERIES, reason=f"the recorded transcripts are not at {TRANSCRIPTS} (set PGWIRE_SPEC_TRANSCRIPTS)")
def test_every_transcript_query_parses_and_formats_back_byte_for_byte() -> None:
    kinds: set[str] = set()
    files: set[str] = set()
    for name, major, minor, text in QUERIES:
        first = text.split(None, 1)[0] if text.strip() else ""
        if first not in majors.COMMAND_KEYWORDS:
            assert parse_command(text, server_major=major, server_minor=minor) is None, text
            continue
        files.add(name)
        cmd = parse_command(text, server_major=major, server_minor=minor)
        assert cmd is not None, text
        kinds.add(type(cmd).__name__)
        assert format_command(cmd) == text  # the recorded style
        client = STYLE_OF_FILE[name.split("-")[0]]
        bare = dataclasses.replace(cmd, style=None)
        assert format_command(bare, style=client, server_major=major, server_minor=minor) == text, (name, text)
        assert parse_command(format_command(bare)) == cmd
    assert kinds == {"IdentifySystem", "Show", "CreateReplicationSlot", "StartReplication", "DropReplicationSlot"}
    assert len(files) == 7


# =========================================================================================
# spec/commands.yaml against the parser
# =========================================================================================


def test_spec_keywords_are_the_parsers() -> None:
    assert {k["name"]: k["servers"] for k in SPEC["keywords"]} == {
        name: f"{lo}-{hi}" for name, (lo, hi) in KEYWORDS.items()
    }
    for servers, chars in SPEC["lexical"]["whitespace"].items():
        for major in majors_of(servers):
            assert _lexer.grammar(major).table.whitespace == "".join(chars)
    since = {int(k): v for k, v in SPEC["lexical"]["doubled_quote"]["since"].items()}
    assert since == DOUBLED_QUOTE_SINCE
    for major in MAJORS:
        assert not _lexer.grammar(major, 0).doubled_quote
        assert _lexer.grammar(major).doubled_quote == (major in since)
        if major in since:
            assert not _lexer.grammar(major, since[major] - 1).doubled_quote and _lexer.grammar(major, since[major]).doubled_quote
    names = {c["name"] for c in SPEC["commands"]}
    assert names == set(majors.COMMAND_KEYWORDS) == set(_parser._PARSERS)
    for c in SPEC["commands"]:
        assert getattr(C, c["class"]).keyword == c["name"]
        first = min(lo for f in c["forms"] for lo in majors_of(f["servers"]))
        assert KEYWORDS[c["name"]][0] == first, c["name"]


def _forms(name: str) -> list[dict[str, Any]]:
    return next(c["forms"] for c in SPEC["commands"] if c["name"] == name)


def test_spec_legacy_option_tables_are_the_parsers() -> None:
    slot = _forms("CREATE_REPLICATION_SLOT")[0]["legacy_options"]
    assert {o["keyword"]: tuple(o["option"]) for o in slot} == _ast._LEGACY_SLOT_OPTIONS
    backup = _forms("BASE_BACKUP")[0]["legacy_options"]
    kinds = {"string": "string", "number": "uint", None: None}
    assert {o["keyword"]: kinds[o.get("argument")] for o in backup} == _ast._LEGACY_BACKUP_OPTIONS
    for option in [*slot, *backup]:
        assert option["servers"] == "{}-{}".format(*KEYWORDS[option["keyword"]])


def test_spec_examples_parse_exactly_in_their_servers() -> None:
    for c in SPEC["commands"]:
        accepted: dict[str, set[int]] = {}
        for form in c["forms"]:
            for text in form["examples"]:
                accepted.setdefault(text, set()).update(majors_of(form["servers"]))
        for text, servers in accepted.items():
            for major in MAJORS:
                result = outcome(text, major)
                if major in servers:
                    cmd = parse_command(text, server_major=major)
                    assert type(cmd).__name__ == c["class"], (text, major)
                    assert format_command(cmd) == text
                else:
                    assert result != "command", (text, major)


def test_spec_clients_texts_are_what_the_styles_write() -> None:
    for entry in SPEC["clients"]:
        text, servers = entry["text"], majors_of(entry["servers"])
        for major in servers:
            cmd = parse_command(text, server_major=major)
            assert cmd is not None, (text, major)
            if entry["style"] == "recorded":
                assert format_command(cmd, server_major=major) == text
            else:
                bare = dataclasses.replace(cmd, style=None)
                assert format_command(bare, style=entry["style"], server_major=major) == text, (entry, major)


def test_spec_deviations_are_syntax_errors_here() -> None:
    for d in SPEC["deviations"]:
        assert outcome(d["text"]) == "syntax", d


SEEN_MINORS = {int(k): int(v.split(".")[1]) for k, v in SPEC["seen_versions"].items()}


def _seen_rows() -> list[tuple[str, int, int, str, str]]:
    """(text, major, minor, what the server did, what the parser does)."""
    rows = []
    for entry in SPEC["seen"]:
        for key, value in entry.items():
            if key in ("text", "parser"):
                continue
            if "." in key:
                major, minor = map(int, key.split("."))
                rows.append((entry["text"], major, minor, value, entry.get("parser", value)))
                continue
            for major in majors_of(key):
                rows.append((entry["text"], major, SEEN_MINORS[major], value, entry.get("parser", value)))
    return rows


SEEN = _seen_rows()


def test_spec_seen_table_matches_the_parser_for_every_major() -> None:
    assert len({t for t, *_ in SEEN}) >= 300 and {m for _, m, *_ in SEEN} == set(MAJORS)
    wrong = [(t, m, n, want, got) for t, m, n, _seen, want in SEEN if (got := outcome(t, m, n)) != want]
    assert not wrong, wrong[:10]
    # the parser deviates only where a number or an LSN half overflows 32 bits, and refuses it
    deviating = {(t, seen, want) for t, _m, _n, seen, want in SEEN if seen != want}
    assert deviating and all(seen == "command" and want == "syntax" for _, seen, want in deviating)
    assert all(re.search(r"[0-9A-F]{9,}/|\d{11,}", t) for t, *_ in deviating), deviating


# =========================================================================================
# Live: the seen table against real servers
# =========================================================================================

ALL_MAJORS = os.environ.get("PGWIRE_SPEC_ALL_MAJORS") == "1"


def _server_outcome(pgconn: Any, text: str, major: int) -> str:
    from psycopg import pq

    res = pgconn.exec_(text.encode())
    status = res.status
    if status == pq.ExecStatus.COPY_IN:
        pgconn.put_copy_end(b"probe")
        while pgconn.get_result() is not None:
            pass
    if pgconn.transaction_status != pq.TransactionStatus.IDLE:
        pgconn.exec_(b"ROLLBACK")
    if status == pq.ExecStatus.FATAL_ERROR:
        message = (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode()
        if message in ("syntax error", "unterminated quoted string", "invalid streaming start location") \
                or message.startswith("invalid timeline"):
            return "syntax"
        if "at or near" in message:
            return "sql"
    # ran, or failed after parsing: the first token tells who ran it
    return "command" if is_replication_command(text, server_major=major) else "sql"


@pytest.mark.live
@pytest.mark.parametrize("major", [
    pytest.param(m, marks=[] if m == 15 else [
        pytest.mark.slow,
        pytest.mark.skipif(not ALL_MAJORS, reason="every major: set PGWIRE_SPEC_ALL_MAJORS=1 (npm servers, ~25 MB each)"),
    ]) for m in MAJORS
])
def test_live_server_agrees_with_the_seen_table(pg_server: Any, major: int) -> None:  # noqa: F811
    from psycopg import pq

    server = pg_server(major)
    minor = int(re.match(r"\d+\.(\d+)", server.version).group(1))  # type: ignore[union-attr]
    # every text of the table; the parser at this very version says what the server must do
    # (texts where the parser deviates on purpose are checked against the table instead)
    deviations = {t for t, _m, _n, seen, want in SEEN if seen != want}
    texts = list(dict.fromkeys(t for t, *_ in SEEN if t not in deviations))
    assert texts
    conn = pq.PGconn.connect(f"{server.dsn} replication=database".encode())
    try:
        assert conn.status == pq.ConnStatus.OK, conn.error_message
        wrong = [
            (t, want, got) for t in texts
            if (got := _server_outcome(conn, t, major)) != (want := outcome(t, major, minor))
        ]
        # one seen probe creates slot "bad" (unquoted names fold); leave the server as found
        conn.exec_(b"SELECT pg_drop_replication_slot('bad') FROM pg_replication_slots WHERE slot_name = 'bad'")
    finally:
        conn.finish()
    assert not wrong, wrong[:10]


# =========================================================================================
# Hypothesis: generated commands round trip; random text never escapes as another error
# =========================================================================================

WS = " \t\n\r\f"
names = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=20).filter(
    lambda s: len(s.encode()) <= 63
)
plain_names = st.from_regex(r"[a-z_][a-z0-9_$]{0,15}", fullmatch=True)
any_names = st.one_of(plain_names, names, st.sampled_from(["two_phase", "slot", "read_replication_slot", "Snapshot"]))
dotted = st.lists(any_names, min_size=1, max_size=3).map(".".join)
strings = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=20)
uint32 = st.integers(0, 2**32 - 1)
values = st.one_of(st.none(), strings, uint32, st.booleans())
generic = st.lists(st.tuples(any_names, values), min_size=1, max_size=4).map(tuple)
plugin_opts = st.lists(st.tuples(any_names, st.one_of(st.none(), strings)), max_size=4).map(tuple)
lsns = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 0x16B3748, 2**32, 2**64 - 1]))
timelines = st.integers(1, 2**32 - 1)


def _ws(min_size: int = 0) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(WS), min_size=min_size, max_size=2)


styles = st.builds(
    FormatStyle,
    pad_lsn=st.booleans(), quote_slot=st.booleans(), quote_slot_in_drop=st.sampled_from([None, True, False]),
    quote_plugin=st.booleans(), quote_option_names=st.booleans(), lowercase_option_names=st.booleans(),
    physical_keyword=st.booleans(), legacy_syntax=st.sampled_from([None, False]),
    option_list=st.tuples(_ws().map(lambda w: "(" + w), st.tuples(_ws(), _ws()).map(lambda t: t[0] + "," + t[1]),
                          _ws().map(lambda w: w + ")")),
    plugin_option_list=st.tuples(_ws().map(lambda w: "(" + w), st.just(", "), st.just(")")),
    legacy_separator=_ws(1), semicolon=st.booleans(),
)

commands_st = st.one_of(
    st.just(IdentifySystem()),
    st.just(UploadManifest()),
    st.builds(Show, dotted),
    st.builds(TimelineHistory, timelines),
    st.builds(ReadReplicationSlot, dotted),
    st.builds(AlterReplicationSlot, any_names, generic),
    st.builds(DropReplicationSlot, any_names, st.booleans()),
    st.builds(CreateReplicationSlot, any_names, st.just("physical"), st.none(), st.booleans(),
              st.one_of(st.just(()), generic)),
    st.builds(CreateReplicationSlot, any_names, st.just("logical"), any_names, st.booleans(),
              st.one_of(st.just(()), generic)),
    st.builds(StartReplication, st.just("physical"), st.one_of(st.none(), any_names), lsns,
              st.one_of(st.none(), timelines)),
    st.builds(StartReplication, st.just("logical"), any_names, lsns, st.none(), plugin_opts),
    st.builds(BaseBackup, st.one_of(st.just(()), generic)),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(commands_st, styles)
def test_generated_commands_round_trip(cmd: ReplicationCommand, style: FormatStyle) -> None:
    text = format_command(cmd, style=style)
    parsed = parse_command(text)
    assert parsed == cmd and type(parsed) is type(cmd), text
    # the style the parser recorded writes the very same text
    assert parsed is not None and format_command(parsed) == text


legacy_slot_options = st.lists(st.sampled_from(sorted(_ast._LEGACY_SLOT_OPTIONS.values(), key=str)), max_size=4).map(tuple)
legacy_backup_options = st.lists(st.one_of(
    st.sampled_from([("progress", None), ("fast", None), ("wal", None), ("nowait", None), ("tablespace_map", None),
                     ("noverify_checksums", None)]),
    st.tuples(st.sampled_from(["label", "manifest", "manifest_checksums"]), strings),
    st.tuples(st.just("max_rate"), uint32),
), max_size=5).map(tuple)


@settings(max_examples=200)
@given(
    st.one_of(
        st.builds(CreateReplicationSlot, any_names, st.sampled_from(["physical", "logical"]),
                  st.just("pgoutput"), st.booleans(), legacy_slot_options),
        st.builds(BaseBackup, legacy_backup_options),
    ),
    st.sampled_from(MAJORS),
    styles,
)
def test_old_syntax_round_trips_on_the_majors_that_take_it(cmd: ReplicationCommand, major: int, style: FormatStyle) -> None:
    if isinstance(cmd, CreateReplicationSlot) and cmd.kind == "physical":
        cmd = dataclasses.replace(cmd, plugin=None)
    style = dataclasses.replace(style, legacy_syntax=None)  # the major decides: old syntax below 15
    names = {n for n, _ in cmd.options}  # type: ignore[attr-defined]
    lacking = major < 15 and bool(
        names & {"two_phase"} or (major < 11 and "noverify_checksums" in names)
        or (major < 13 and names & {"manifest", "manifest_checksums"})
    )
    # A name with a double quote cannot be written where "" is not a quote (10-13, see
    # _DOUBLED_QUOTE_SINCE): the formatter must refuse it rather than send two identifiers.
    lacking = lacking or (isinstance(cmd, CreateReplicationSlot) and '"' in cmd.slot_name
                          and major not in DOUBLED_QUOTE_SINCE)
    try:
        text = format_command(cmd, style=style, server_major=major)
    except EncodeError as exc:
        # the old syntax of this major has no such keyword (TWO_PHASE < 15, MANIFEST < 13 …)
        assert lacking, exc
        return
    assert not lacking, text
    # '(' may sit in a label or a quoted name
    assert ("(" in text) == (major >= 15 and bool(names)) or "'" in text or '"' in text
    parsed = parse_command(text, server_major=major)
    assert parsed == cmd and parsed is not None and format_command(parsed) == text


TOKENS = st.sampled_from([
    *KEYWORDS, "identify_system", "s", '"s"', '"S x"', '""', "'v'", "''", "'it''s'", "0", "1", "42", "4294967296",
    "0/0", "16/B374D848", "1FFFFFFFF/0", "(", ")", ",", ";", ".", "/", "$", "'", '"', "\x00", "\v", "é", "SELECT",
    "true", "false", "--", "E'x'",
])
token_soup = st.lists(st.tuples(TOKENS, st.sampled_from(["", " ", "\t", "\n", "\v"])), max_size=12).map(
    lambda ts: "".join(t + w for t, w in ts)
)
transcript_texts = st.sampled_from([t for *_, t in QUERIES] or ["IDENTIFY_SYSTEM"])


def mutate(text: str, data: st.DataObject) -> str:
    i = data.draw(st.integers(0, len(text)))
    how = data.draw(st.sampled_from(["cut", "drop", "insert", "swapcase"]))
    if how == "cut":
        return text[:i]
    if how == "drop":
        return text[:i] + text[i + 1:]
    if how == "insert":
        return text[:i] + data.draw(st.sampled_from(list("'\"(),; \v\x00xX0/"))) + text[i:]
    return text[:i] + text[i:].swapcase()


def _check_any_text(text: str, major: int | None) -> None:
    try:
        cmd = parse_command(text, server_major=major)
    except CommandSyntaxError as exc:
        assert 0 <= exc.position <= len(text) and exc.expected and exc.found
        return
    if cmd is None:
        assert not is_replication_command(text, server_major=major)
        return
    assert is_replication_command(text, server_major=major)
    # whatever parses formats back, and reads the same under the same major
    again = format_command(cmd)
    assert parse_command(again, server_major=major) == cmd
    assert parse_command(format_command(cmd, server_major=major), server_major=major) == cmd


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=60), token_soup), st.sampled_from([None, *MAJORS]))
@example("START_REPLICATION SLOT \"s\" LOGICAL 0/0 (a 'b", None)
@example("CREATE_REPLICATION_SLOT s LOGICAL p (UPLOAD_MANIFEST, READ_REPLICATION_SLOT)", 16)
@example("9" * 5000, None)
def test_any_text_is_none_a_command_or_a_syntax_error(text: str, major: int | None) -> None:
    _check_any_text(text, major)


@settings(max_examples=300)
@given(transcript_texts, st.sampled_from([None, *MAJORS]), st.data())
def test_mutated_client_texts_never_escape(text: str, major: int | None, data: st.DataObject) -> None:
    _check_any_text(mutate(text, data), major)


def test_every_prefix_of_every_form_is_a_command_or_a_syntax_error() -> None:
    texts = [t for t, _ in FORMS] + [t for *_, t in QUERIES if is_replication_command(t)] + [LEGACY_BASE_BACKUP]
    for text in texts:
        for i in range(len(text) + 1):
            prefix = text[:i]
            for major in (None, 14):
                try:
                    parse_command(prefix, server_major=major)
                except CommandSyntaxError as exc:
                    assert exc.position <= i


def test_style_is_not_part_of_equality() -> None:
    a = parse_command('DROP_REPLICATION_SLOT "s"')
    b = parse_command("DROP_REPLICATION_SLOT s")
    assert a == b and hash(a) == hash(b) and a is not None and b is not None
    assert a.style != b.style and "style" not in repr(a)
