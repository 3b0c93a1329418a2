"""The fake answers what a real server answered: the client side of each reference
transcript (real subscribers of 14-18, pg_recvlogical, psycopg2) is replayed against the
fake with the persona of the transcript's server, and every answer is compared with the
real one, message by message — row shapes, type OIDs and values — except the values that
belong to one server instance (system id, WAL positions, snapshot names)."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.walsender import Scenario, ServerState

from ._client import CLOSE, Client, Exchange, notation, transcript_exchanges

TRANSCRIPTS = {
    "subscriber-pg14.log": 14,
    "subscriber-pg15.log": 15,
    "subscriber-pg16.log": 16,
    "subscriber-pg17.log": 17,
    "subscriber-pg18.log": 18,
    "pg_recvlogical-pg16.log": 16,
    "psycopg2-pg16.log": 16,
}

_VERSIONS = {14: "14.23", 15: "15.18", 16: "16.14", 17: "17.10", 18: "18.4"}


def transcript_scenario(major: int) -> Scenario:
    """The transcripts' workload: public.accounts (OID 16385), three initial rows."""
    return Scenario.from_dict({
        "server": {"version": _VERSIONS[major]},
        "publications": {"pub": ["public.accounts"]},
        "tables": {"public.accounts": {
            "oid": 16385,
            "columns": [{"name": "id", "type": "int4", "key": True}, {"name": "name", "type": "text"},
                        {"name": "amount", "type": "numeric"}],
            "rows": [{"id": i, "name": f"n{i}", "amount": i} for i in (1, 2, 3)],
        }},
    })


def _instance_values(ex: Exchange, answer: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Blank what differs between server instances: IDENTIFY_SYSTEM's system id and xlogpos,
    CREATE_REPLICATION_SLOT's consistent point and snapshot name (kept: NULL or not)."""
    out = []
    for kind, value in answer:
        if kind == "DataRow" and ex.sql.startswith("IDENTIFY_SYSTEM"):
            value = ["<sysid>", value[1], "<lsn>", value[3]]
        elif kind == "DataRow" and ex.sql.startswith("CREATE_REPLICATION_SLOT"):
            value = [value[0], "<lsn>", None if value[2] is None else "<snapshot>", value[3]]
        out.append((kind, value))
    return out


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_fake_answers_every_query_of_the_transcript_as_the_real_server(name: str) -> None:
    major = TRANSCRIPTS[name]
    state = ServerState(transcript_scenario(major))
    clients: dict[int, Client] = {}
    compared = 0
    for ex in transcript_exchanges(name):
        client = clients.get(ex.connection)
        if ex.sql == CLOSE:
            if client is not None:
                client.terminate()
                assert client.closed is not None
            continue
        if client is None:
            client = clients[ex.connection] = Client(state)
            app = "pg_recvlogical" if name.startswith("pg_recvlogical") else "s"
            client.startup("replicator", application_name=app)
        ours = notation(client.query(ex.sql))
        theirs = ex.answer
        if ex.sql.startswith("START_REPLICATION"):
            # the stream itself is compared elsewhere; the transcript's client may end it
            assert ours[:1] == [("W", None)]
            if ("c", None) in theirs:
                ours = [("W", None)] + notation(client.copy_done())
            else:
                continue
        if not theirs or theirs[-1][0] != "ReadyForQuery":
            ours = ours[:len(theirs)]  # the recording ended before the server's last messages
        assert _instance_values(ex, ours) == _instance_values(ex, theirs), ex.sql
        compared += 1
    assert compared >= (5 if name.startswith("subscriber") else 1)


def test_every_sql_text_of_the_transcripts_is_answered() -> None:
    """No query a real client sent gets "not answered" from the fake."""
    from pgwire_spec.replication.commands import parse_command
    from pgwire_spec.walsender import persona
    from pgwire_spec.walsender._sql import answer

    for name, major in TRANSCRIPTS.items():
        sc = transcript_scenario(major)
        for ex in transcript_exchanges(name):
            if ex.sql != CLOSE and parse_command(ex.sql, server_major=major) is None:
                answer(sc, persona(major), sc.server.version, ex.sql)  # raises ServerError if not
