"""The per-major table: its entries agree with what the consumers used to state by hand,
and a new major is one new entry (a hypothetical PostgreSQL 19, derived from 18, served
by the command parser, the persona, the walsender core, the capture's option sets and the
strategies without any other edit)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec import majors
from pgwire_spec._strategies._commands import command_cases
from pgwire_spec.capture.options import SERVER_OPTIONS, option_sets
from pgwire_spec.errors import OptionError
from pgwire_spec.replication.commands import (
    SERVER_MAJORS,
    CreateReplicationSlot,
    StartReplication,
    format_command,
    is_replication_command,
    parse_command,
)
from pgwire_spec.replication.messages import XLogData
from pgwire_spec.walsender import PERSONAS, Scenario, ServerError, ServerState, persona
from pgwire_spec.wire import CopyBothResponse, DataRow, RowDescription
from tests.walsender._client import Client, xlog
from tests.walsender.scenarios import accounts


def test_the_table_covers_10_to_18_and_each_entry_knows_its_major() -> None:
    assert sorted(majors.MAJORS) == list(range(10, 19)) == list(SERVER_MAJORS)
    assert all(e.major == m for m, e in majors.MAJORS.items())
    assert majors.newest() is majors.MAJORS[18]
    with pytest.raises(OptionError, match="from 10 to 18, found 9"):
        majors.major(9)


@pytest.mark.parametrize(("feature", "first"), [
    ("truncate", 11), ("promote_function", 12), ("backup_manifest", 13), ("generic_options", 15),
    ("backup_copy_protocol", 15), ("terminated_tar", 15), ("manifest_system_identifier", 17),
    ("reports_search_path", 18), ("publication_filters", 15), ("publication_tables_attnames", 16),
    ("publish_generated_columns", 18), ("publication_tables_variadic", 16),
])
def test_features_arrive_in_their_major_and_stay(feature: str, first: int) -> None:
    assert [m for m, e in majors.MAJORS.items() if getattr(e, feature)] == list(range(first, 19))


def test_slot_options_and_pgoutput_options_by_major() -> None:
    # TWO_PHASE is a replication-grammar slot option from 15 (repl_gram.y), not 14.
    assert [m for m, e in majors.MAJORS.items() if "two_phase" in e.slot_options] == list(range(15, 19))
    assert [m for m, e in majors.MAJORS.items() if "failover" in e.slot_options] == [17, 18]
    assert majors.MAJORS[18].alter_slot_options == {"failover", "two_phase"}
    assert [e.max_proto for e in majors.MAJORS.values()] == [1, 1, 1, 1, 2, 3, 4, 4, 4]
    assert dict(SERVER_OPTIONS)[16] == (4, ("binary", "messages", "streaming", "two_phase", "origin"),
                                        ("on", "parallel"))
    assert majors.MAJORS[14].commands == {"IDENTIFY_SYSTEM", "SHOW", "TIMELINE_HISTORY", "CREATE_REPLICATION_SLOT",
                                          "DROP_REPLICATION_SLOT", "START_REPLICATION", "BASE_BACKUP"}


# -- a PostgreSQL 19 is one new entry -----------------------------------------------------


@pytest.fixture
def pg19() -> Iterator[majors.Major]:
    """A hypothetical 19: 18 and nothing else changed (what most new majors look like to
    the replication protocol), added to the table for the test only."""
    entry = majors.MAJORS[18].next(19)
    majors.MAJORS[19] = entry
    try:
        yield entry
    finally:
        del majors.MAJORS[19]


def test_a_19_entry_reaches_the_command_parser_and_formatter(pg19: majors.Major) -> None:
    text = "START_REPLICATION SLOT s LOGICAL 0/16B3748 (proto_version '4', publication_names 'pub')"
    cmd = parse_command(text, server_major=19)
    assert isinstance(cmd, StartReplication) and cmd.options_dict()["proto_version"] == "4"
    assert format_command(cmd, server_major=19) == text
    assert is_replication_command("ALTER_REPLICATION_SLOT s (FAILOVER)", server_major=19)
    slot = parse_command("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (TWO_PHASE, FAILOVER)", server_major=19)
    assert isinstance(slot, CreateReplicationSlot) and slot.two_phase and slot.failover
    with pytest.raises(OptionError, match="from 10 to 19, found 20"):
        parse_command("IDENTIFY_SYSTEM", server_major=20)


def test_a_19_entry_reaches_the_persona_and_the_capture(pg19: majors.Major) -> None:
    p = persona(19)
    assert 19 in PERSONAS and p.major == 19 and p.max_proto == 4
    opts = p.parse_options([("proto_version", "4"), ("publication_names", "pub"), ("streaming", "parallel")])
    assert opts.streaming == "parallel"
    assert [s.name for s in option_sets(19, "pub")] == [s.name for s in option_sets(18, "pub")]


def test_a_changed_19_entry_changes_what_the_consumers_do() -> None:
    """Each consumer reads the entry, not a version number: 19 without 'origin' refuses it."""
    majors.MAJORS[19] = majors.MAJORS[18].next(19, remove={"pgoutput_options": ["origin"]})
    try:
        with pytest.raises(ServerError, match="unrecognized pgoutput option: origin"):
            persona(19).parse_options([("proto_version", "4"), ("publication_names", "p"), ("origin", "none")])
        assert not any(s.origin for s in option_sets(19, "pub"))
        assert any(s.origin for s in option_sets(18, "pub"))
    finally:
        del majors.MAJORS[19]


def test_a_19_entry_serves_a_whole_walsender_conversation(pg19: majors.Major) -> None:
    data = accounts(18)
    data["server"]["version"] = "19.0"
    data["auth"] = {"method": "trust"}
    state = ServerState(Scenario.from_dict(data))
    c = Client(state)
    out = c.startup()
    params = {x.name: x.value for x in out if type(x).__name__ == "ParameterStatus"}
    assert params["server_version"] == "19.0" and "search_path" in params
    rd, row = c.query("IDENTIFY_SYSTEM")[:2]
    assert isinstance(rd, RowDescription) and rd.fields[1].type_oid == 20 and isinstance(row, DataRow)
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing', FAILOVER)")
    assert state.slots["s"].failover
    out = c.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '4', publication_names 'pub', "
                  "streaming 'parallel', messages 'true')")
    assert isinstance(out[0], CopyBothResponse)
    assert [chr(p.data[0]) for p in xlog(out) if isinstance(p, XLogData)] == ["B", "R", "I", "U", "D", "C"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_19_entry_reaches_the_strategies(data: st.DataObject) -> None:
    majors.MAJORS[19] = majors.MAJORS[18].next(19)
    try:
        case = data.draw(command_cases(19))
        assert case.server_major == 19
        assert parse_command(case.text, server_major=19) == case.command
    finally:
        del majors.MAJORS[19]
