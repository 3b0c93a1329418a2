"""Personas: what each major accepts, and the errors it gives with their SQLSTATEs."""

from __future__ import annotations

import pytest

from pgwire_spec.walsender import PERSONAS, ServerError, persona
from pgwire_spec.walsender.personas import split_identifiers

from ._client import TRANSCRIPTS


def _opts(**kw: str) -> list[tuple[str, str | None]]:
    return list({"proto_version": "1", "publication_names": "pub", **kw}.items())


@pytest.mark.parametrize(("major", "max_proto"), [(10, 1), (13, 1), (14, 2), (15, 3), (16, 4), (17, 4), (18, 4)])
def test_max_protocol_version(major: int, max_proto: int) -> None:
    p = persona(major)
    assert p.parse_options(_opts(proto_version=str(max_proto))).proto_version == max_proto
    with pytest.raises(ServerError) as info:
        p.parse_options(_opts(proto_version=str(max_proto + 1)))
    assert info.value.sqlstate == "0A000"
    assert info.value.message == (f"client sent proto_version={max_proto + 1} but server only supports "
                                  f"protocol {max_proto} or lower")


@pytest.mark.parametrize(("major", "option", "value", "accepted"), [
    (13, "binary", "true", False), (14, "binary", "true", True), (14, "messages", "on", True),
    (14, "two_phase", "on", False), (15, "two_phase", "on", True), (15, "origin", "none", False),
    (16, "origin", "none", True), (18, "origin", "any", True),
])
def test_options_by_major(major: int, option: str, value: str, accepted: bool) -> None:
    p = persona(major)
    opts = _opts(proto_version=str(p.max_proto), **{option: value})
    if accepted:
        p.parse_options(opts)
    else:
        with pytest.raises(ServerError) as info:
            p.parse_options(opts)
        assert (info.value.sqlstate, info.value.message) == ("XX000", f"unrecognized pgoutput option: {option}")


@pytest.mark.parametrize(("major", "kw", "sqlstate", "message"), [
    (16, {"streaming": "on"}, "22023", "requested proto_version=1 does not support streaming, need 2 or higher"),
    (16, {"proto_version": "3", "streaming": "parallel"}, "22023",
     "requested proto_version=3 does not support parallel streaming, need 4 or higher"),
    (15, {"proto_version": "3", "streaming": "parallel"}, "42601", "streaming requires a Boolean value"),
    (16, {"proto_version": "2", "two_phase": "on"}, "22023",
     "requested proto_version=2 does not support two-phase commit, need 3 or higher"),
    (16, {"proto_version": "x"}, "22023", "invalid proto_version"),
    (16, {"proto_version": "4", "origin": "some"}, "22023", 'unrecognized origin value: "some"'),
    (16, {"binary": "maybe"}, "42601", "binary requires a Boolean value"),
    (16, {"publication_names": 'a,"b'}, "42602", "invalid publication_names syntax"),
])
def test_option_errors(major: int, kw: dict[str, str], sqlstate: str, message: str) -> None:
    with pytest.raises(ServerError) as info:
        persona(major).parse_options(_opts(**kw))
    assert (info.value.sqlstate, info.value.message) == (sqlstate, message)


def test_missing_and_repeated_options() -> None:
    with pytest.raises(ServerError, match="proto_version option missing"):
        persona(16).parse_options([("publication_names", "pub")])
    with pytest.raises(ServerError, match='option "proto_version" missing'):
        persona(17).parse_options([("publication_names", "pub")])
    with pytest.raises(ServerError, match='option "publication_names" missing'):
        persona(18).parse_options([("proto_version", "1")])
    with pytest.raises(ServerError, match="conflicting or redundant options"):
        persona(16).parse_options([("proto_version", "1"), ("proto_version", "1"), ("publication_names", "p")])


def test_split_identifiers() -> None:
    assert split_identifiers('"pub"') == ["pub"]
    assert split_identifiers("a, B ,\"C,d\"") == ["a", "b", "C,d"]
    assert split_identifiers('"a""b"') == ['a"b']
    # only ASCII letters fold (scansup.c downcase_identifier in a UTF8 database)
    assert split_identifiers("ÄB,İx") == ["Äb", "İx"]
    assert split_identifiers("a,,b") is None and split_identifiers('"') is None and split_identifiers("") is None


@pytest.mark.parametrize(("major", "log"), [(14, "subscriber-pg14.log"), (15, "subscriber-pg15.log"),
                                             (16, "subscriber-pg16.log"), (17, "subscriber-pg17.log"),
                                             (18, "subscriber-pg18.log")])
def test_parameter_status_set_and_order_match_the_real_server(major: int, log: str) -> None:
    seen = []
    for line in (TRANSCRIPTS / log).read_text().splitlines():
        if line.startswith("[1] B ParameterStatus"):
            seen.append(line.split(" ", 3)[3].split("=", 1)[0])
        if line.startswith("[1] B K "):
            break
    ours = [n for n, _ in PERSONAS[major].parameter_status(
        version="x", user="u", application_name="s", client_encoding="UTF8", server_encoding="UTF8")]
    assert ours == seen


def test_result_shapes_and_commands_by_major() -> None:
    assert persona(15).timeline_type == 23 and persona(16).timeline_type == 20
    assert "READ_REPLICATION_SLOT" not in persona(14).commands and "READ_REPLICATION_SLOT" in persona(15).commands
    assert "ALTER_REPLICATION_SLOT" in persona(17).commands and "ALTER_REPLICATION_SLOT" not in persona(16).commands
    assert persona(14).sends_empty_transactions and not persona(15).sends_empty_transactions
    assert persona(17).missing_publication_is_error and not persona(18).missing_publication_is_error
    assert not persona(10).truncate and persona(11).truncate
    with pytest.raises(ValueError, match="10 to 18"):
        persona(9)
