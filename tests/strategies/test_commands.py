"""Replication command texts: written independently of the parser, each with the command it
means; pgwire_spec.replication.commands must parse every one to that command, for the
server major it was written for and for the newest."""

from __future__ import annotations

from hypothesis import given

from pgwire_spec._strategies._commands import CommandCase, command_cases
from pgwire_spec.replication.commands import format_command, is_replication_command, parse_command
from pgwire_spec.strategies import replication_commands
from tests.strategies._common import fast


@fast(400)
@given(command_cases())
def test_every_text_parses_to_the_command_it_was_written_for(case: CommandCase) -> None:
    assert is_replication_command(case.text, server_major=case.server_major)
    assert parse_command(case.text, server_major=case.server_major) == case.command
    assert parse_command(case.text) == case.command


@fast(200)
@given(command_cases())
def test_a_parsed_command_formats_to_a_text_that_parses_back(case: CommandCase) -> None:
    parsed = parse_command(case.text.strip(), server_major=case.server_major)
    assert parsed is not None
    again = format_command(parsed, server_major=case.server_major)
    assert parse_command(again, server_major=case.server_major) == case.command


@fast(100)
@given(replication_commands(server_major=14))
def test_texts_for_an_old_major_parse_there(text: str) -> None:
    assert parse_command(text, server_major=14) is not None
