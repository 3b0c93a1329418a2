"""The pytest plugin: ``fake_walsender`` in a user's test suite (a real pytest run)."""

from __future__ import annotations

from typing import Any

from .scenarios import ACCOUNTS

pytest_plugins = ["pytester"]


def test_fake_walsender_fixture_in_a_users_suite(pytester: Any) -> None:
    pytester.makepyfile(test_user=f'''
import psycopg2, psycopg2.extras

def test_stream(fake_walsender):
    server = fake_walsender({str(ACCOUNTS)!r})
    conn = psycopg2.connect(server.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    cur = conn.cursor()
    cur.create_replication_slot("s", output_plugin="pgoutput")
    cur.start_replication(slot_name="s", decode=False,
                          options={{"proto_version": "1", "publication_names": "pub"}})
    tags = []
    def consume(msg):
        tags.append(chr(msg.payload[0]))
        if tags[-1] == "C":
            raise StopIteration
    try:
        cur.consume_stream(consume)
    except StopIteration:
        pass
    conn.close()
    assert tags == ["B", "R", "I", "U", "D", "C"]
    assert [m.tag for m in server.transcript.pgoutput()] == tags

def test_stopped_afterwards(fake_walsender):
    a = fake_walsender({str(ACCOUNTS)!r})
    b = fake_walsender({str(ACCOUNTS)!r}, record=False)
    assert a.port != b.port
''')
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
