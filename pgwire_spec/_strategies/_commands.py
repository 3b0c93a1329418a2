"""Replication command texts, as clients send them on a replication connection.

Written from the docs' "Streaming Replication Protocol" section and the transcripts of
real clients (pg_recvlogical.c, libpqwalreceiver.c), independently of the parser in
:mod:`pgwire_spec.replication.commands`: each text is drawn together with the command
object it means, so a parser can be checked against it. Spelling varies the way the lexer
allows (repl_scanner.l): whitespace, quoted or folded identifiers, upper/lower-case hex in
LSNs, zero padding, a trailing semicolon, old and new option syntax.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .. import majors
from ..lsn import format_lsn
from ..replication import commands as c

__all__ = ["CommandCase", "command_cases", "replication_commands"]


@dataclass(frozen=True, slots=True)
class CommandCase:
    """A command text, the server major it is written for, and what it means."""

    text: str
    server_major: int
    command: c.ReplicationCommand


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_plain = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_LOWER + "_"),
    st.text(_LOWER + "0123456789_", max_size=12),
)
# Quoted identifiers keep case and any character but '"' (no escape inside) and NUL.
_quoted_chars = st.characters(exclude_categories=("Cs", "Cc"), exclude_characters='"\x00')
_quoted = st.text(_quoted_chars, min_size=1, max_size=12).filter(lambda s: len(s.encode()) <= 63)


@st.composite
def _ws(draw: st.DrawFn, major: int, optional: bool = False) -> str:
    """Whitespace between tokens: the major's (space, tab, CR, LF, FF; VT from 17 on)."""
    chars = majors.major(major).whitespace
    if optional and draw(st.booleans()):
        return ""
    return draw(st.one_of(st.just(" "), st.text(chars, min_size=1, max_size=3)))


@st.composite
def _ident(draw: st.DrawFn) -> tuple[str, str]:
    """(text, value): a folded identifier (maybe with capitals) or a quoted one."""
    kind = draw(st.integers(0, 2))
    if kind == 0:
        name = draw(_plain)
        return name, name
    if kind == 1:
        # Mixed case, not all upper case (keywords are upper case): folded to lower case.
        name = draw(_plain)
        text = name[0].upper() + name[1:] if len(name) > 1 and name[1:] != name[1:].upper() else name
        return text, text.lower()
    name = draw(_quoted)
    return '"' + name + '"', name


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@st.composite
def _lsn(draw: st.DrawFn) -> tuple[str, int]:
    lsn = draw(st.integers(0, (1 << 64) - 1))
    text = format_lsn(lsn, pad=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.lower()
    return text, lsn


def _options(draw: st.DrawFn, major: int, items: list[str]) -> str:
    ws = _ws(major, optional=True)
    out = "(" + draw(ws) + items[0]
    for item in items[1:]:
        out += draw(ws) + "," + draw(ws) + item
    return out + draw(ws) + ")"


def _identify_system(major: int) -> st.SearchStrategy[tuple[str, c.ReplicationCommand]]:
    return st.just(("IDENTIFY_SYSTEM", c.IdentifySystem()))


@st.composite
def _show(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    parts = draw(st.lists(_ident(), min_size=1, max_size=2))
    text = ".".join(t for t, _ in parts)
    return "SHOW" + draw(_ws(major)) + text, c.Show(".".join(v for _, v in parts))


@st.composite
def _timeline_history(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    tli = draw(st.integers(1, (1 << 32) - 1))
    return f"TIMELINE_HISTORY{draw(_ws(major))}{tli}", c.TimelineHistory(tli)


@st.composite
def _create_slot(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    ws = _ws(major)
    slot_text, slot = draw(_ident())
    text = "CREATE_REPLICATION_SLOT" + draw(ws) + slot_text
    temporary = draw(st.booleans())
    if temporary:
        text += draw(ws) + "TEMPORARY"
    logical = draw(st.booleans())
    plugin = None
    if logical:
        plugin_text, plugin = draw(st.one_of(st.just(("pgoutput", "pgoutput")), st.just(('"pgoutput"', "pgoutput")),
                                             _ident()))
        text += draw(ws) + "LOGICAL" + draw(ws) + plugin_text
    else:
        text += draw(ws) + "PHYSICAL"
    options: list[tuple[str, Any]] = []
    table = majors.major(major)
    if table.generic_options and draw(st.booleans()):
        # The parenthesized generic options (15+): names are folded or keywords lower-cased.
        choices: list[tuple[str, tuple[str, Any]]] = [("RESERVE_WAL", ("reserve_wal", None))]
        if logical:
            choices += [
                ("SNAPSHOT 'nothing'", ("snapshot", "nothing")),
                ("SNAPSHOT 'export'", ("snapshot", "export")),
                ("SNAPSHOT 'use'", ("snapshot", "use")),
            ]
            if "two_phase" in table.slot_options:
                choices += [
                    ("TWO_PHASE", ("two_phase", None)),
                    ("TWO_PHASE true", ("two_phase", True)),
                    ("two_phase false", ("two_phase", False)),
                ]
            if "failover" in table.slot_options:
                choices.append(("FAILOVER", ("failover", None)))
        picked = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3))
        text += draw(_ws(major, optional=True)) + _options(draw, major, [t for t, _ in picked])
        options = [o for _, o in picked]
    else:
        legacy: list[tuple[str, tuple[str, Any]]] = [("RESERVE_WAL", ("reserve_wal", None))]
        if logical:
            legacy += [("EXPORT_SNAPSHOT", ("snapshot", "export")),
                       ("NOEXPORT_SNAPSHOT", ("snapshot", "nothing")),
                       ("USE_SNAPSHOT", ("snapshot", "use"))]
            if "TWO_PHASE" in table.keywords:
                legacy.append(("TWO_PHASE", ("two_phase", None)))
        for kw, opt in draw(st.lists(st.sampled_from(legacy), max_size=2)):
            text += draw(ws) + kw
            options.append(opt)
    cmd = c.CreateReplicationSlot(slot, "logical" if logical else "physical", plugin, temporary, tuple(options))
    return text, cmd


@st.composite
def _drop_slot(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    slot_text, slot = draw(_ident())
    wait = draw(st.booleans())
    text = "DROP_REPLICATION_SLOT" + draw(_ws(major)) + slot_text + (draw(_ws(major)) + "WAIT" if wait else "")
    return text, c.DropReplicationSlot(slot, wait)


@st.composite
def _read_slot(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    slot_text, slot = draw(_ident())
    return "READ_REPLICATION_SLOT" + draw(_ws(major)) + slot_text, c.ReadReplicationSlot(slot)


@st.composite
def _alter_slot(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    slot_text, slot = draw(_ident())
    value = draw(st.sampled_from([("", None), (" true", True), (" false", False), (" 'on'", "on")]))
    text = ("ALTER_REPLICATION_SLOT" + draw(_ws(major)) + slot_text + draw(_ws(major, optional=True))
            + _options(draw, major, ["FAILOVER" + value[0]]))
    return text, c.AlterReplicationSlot(slot, (("failover", value[1]),))


_PGOUTPUT_OPTIONS = st.sampled_from([
    ("proto_version", ["1", "2", "3", "4"]),
    ("publication_names", ["pub", '"pub"', '"a","b"', "p1, p2"]),
    ("streaming", ["on", "off", "parallel", "true"]),
    ("two_phase", ["on", "off"]),
    ("binary", ["true", "false"]),
    ("messages", ["true", "false"]),
    ("origin", ["any", "none"]),
])


@st.composite
def _plugin_option(draw: st.DrawFn) -> tuple[str, tuple[str, str | None]]:
    name, values = draw(_PGOUTPUT_OPTIONS)
    quoted = draw(st.booleans())
    name_text = f'"{name}"' if quoted else name
    if draw(st.integers(0, 9)) == 9:
        return name_text, (name, None)
    value = draw(st.one_of(st.sampled_from(values), st.text(_quoted_chars, max_size=8)))
    return f"{name_text} {_string(value)}", (name, value)


@st.composite
def _start_logical(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    ws = _ws(major)
    slot_text, slot = draw(_ident())
    lsn_text, lsn = draw(_lsn())
    text = "START_REPLICATION" + draw(ws) + "SLOT" + draw(ws) + slot_text + draw(ws) + "LOGICAL" + draw(ws) + lsn_text
    opts = draw(st.lists(_plugin_option(), max_size=6))
    if opts:
        text += draw(_ws(major, optional=True)) + _options(draw, major, [t for t, _ in opts])
    return text, c.StartReplication("logical", slot, lsn, None, tuple(o for _, o in opts))


@st.composite
def _start_physical(draw: st.DrawFn, major: int) -> tuple[str, c.ReplicationCommand]:
    ws = _ws(major)
    text = "START_REPLICATION"
    slot = None
    if draw(st.booleans()):
        slot_text, slot = draw(_ident())
        text += draw(ws) + "SLOT" + draw(ws) + slot_text
    if draw(st.booleans()):
        text += draw(ws) + "PHYSICAL"
    lsn_text, lsn = draw(_lsn())
    text += draw(ws) + lsn_text
    tli = None
    if draw(st.booleans()):
        tli = draw(st.integers(1, (1 << 32) - 1))
        text += draw(ws) + "TIMELINE" + draw(ws) + str(tli)
    return text, c.StartReplication("physical", slot, lsn, tli)


#: The forms, by the command keyword that the major's table must know.
_FORMS = [
    ("IDENTIFY_SYSTEM", _identify_system),
    ("SHOW", _show),
    ("TIMELINE_HISTORY", _timeline_history),
    ("CREATE_REPLICATION_SLOT", _create_slot),
    ("DROP_REPLICATION_SLOT", _drop_slot),
    ("START_REPLICATION", _start_logical),
    ("START_REPLICATION", _start_physical),
    ("READ_REPLICATION_SLOT", _read_slot),
    ("ALTER_REPLICATION_SLOT", _alter_slot),
]


@st.composite
def command_cases(draw: st.DrawFn, server_major: int | None = None) -> CommandCase:
    """A command text and the command it means, for *server_major* (drawn when None)."""
    major = server_major if server_major is not None else draw(st.sampled_from(sorted(majors.MAJORS)))
    commands = majors.major(major).commands
    form = draw(st.sampled_from([f for keyword, f in _FORMS if keyword in commands]))
    text, cmd = draw(form(major))
    if draw(st.booleans()):
        text += draw(_ws(major, optional=True)) + ";"
    if draw(st.integers(0, 3)) == 3:
        text = draw(_ws(major)) + text + draw(_ws(major))
    return CommandCase(text, major, cmd)


#: The form that writes each command class.
_FORM_OF: dict[type[c.ReplicationCommand], Any] = {
    c.IdentifySystem: _identify_system,
    c.Show: _show,
    c.TimelineHistory: _timeline_history,
    c.CreateReplicationSlot: _create_slot,
    c.DropReplicationSlot: _drop_slot,
    c.ReadReplicationSlot: _read_slot,
    c.AlterReplicationSlot: _alter_slot,
}


def commands_of(cls: type[c.ReplicationCommand]) -> st.SearchStrategy[c.ReplicationCommand]:
    """Command objects of one class (for ``st.from_type``), as parsed from a drawn text."""
    newest = majors.newest().major
    if cls is c.StartReplication:
        return st.one_of(_start_logical(newest), _start_physical(newest)).map(lambda tc: tc[1])
    form = _FORM_OF.get(cls)
    if form is None:
        raise InvalidArgument(f"no strategy for {cls.__name__}")
    texts: st.SearchStrategy[tuple[str, c.ReplicationCommand]] = form(newest)
    return texts.map(lambda tc: tc[1])


def replication_commands(server_major: int | None = None) -> st.SearchStrategy[str]:
    """Replication command texts a walsender of *server_major* (10-18; by default any
    major, in a form the newest accepts too) parses."""
    return command_cases(server_major).map(lambda case: case.text)
