"""Authentication: trust, cleartext, md5 and SCRAM-SHA-256, with libpq (psycopg) as the
client, and the SCRAM exchange against scramp's client (libpq's empty user name too)."""

from __future__ import annotations

import base64

import pytest

from pgwire_spec.walsender import Scenario, ServerError, ServerState, SyncFakeWalsender
from pgwire_spec.walsender._auth import Authenticator, md5_password, saslprep
from pgwire_spec.wire import ErrorResponse, SASLInitialResponse, SASLResponse

from ._client import Client
from .scenarios import accounts

METHODS = ["trust", "password", "md5", "scram-sha-256"]


def scenario(method: str) -> Scenario:
    data = accounts(16)
    data["auth"] = {"method": method, "users": {"replicator": "s3cret", "other": "pässwörd"}}
    return Scenario.from_dict(data)


@pytest.mark.parametrize("method", METHODS)
def test_libpq_authenticates_with_every_method(method: str) -> None:
    import psycopg

    with SyncFakeWalsender(scenario(method)) as fake:
        for user, password in (("replicator", "s3cret"), ("other", "pässwörd")):
            dsn = f"host={fake.host} port={fake.port} dbname=postgres user={user} password={password}"
            with psycopg.connect(dsn, autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
                assert conn.info.parameter_status("server_version") == "16.4"
        kinds = [type(e.message).__name__ for e in fake.transcript.backend(1) if e.message is not None][:4]
    first = {"trust": "AuthenticationOk", "password": "AuthenticationCleartextPassword",
             "md5": "AuthenticationMD5Password", "scram-sha-256": "AuthenticationSASL"}[method]
    assert kinds[0] == first


@pytest.mark.parametrize("method", ["password", "md5", "scram-sha-256"])
def test_wrong_password_is_refused_with_28P01(method: str) -> None:
    import psycopg

    with SyncFakeWalsender(scenario(method)) as fake:
        dsn = f"host={fake.host} port={fake.port} dbname=postgres user=replicator password=wrong"
        with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "replicator"'):
            psycopg.connect(dsn)
        errors = fake.transcript.errors()
        # the server keeps serving
        with psycopg.connect(fake.dsn, autocommit=True) as conn:
            conn.execute("SELECT 1")
    assert errors[0].code == "28P01" and errors[0].severity == "FATAL"


def test_trust_with_users_refuses_others() -> None:
    import psycopg

    with SyncFakeWalsender(scenario("trust")) as fake:
        with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry"):
            psycopg.connect(f"host={fake.host} port={fake.port} dbname=postgres user=stranger")


def test_scram_with_scramp_client_and_libpqs_empty_user_name() -> None:
    scramp = pytest.importorskip("scramp")
    state = ServerState(scenario("scram-sha-256"))
    c = Client(state)
    out = c.startup("replicator")
    assert type(out[0]).__name__ == "AuthenticationSASL" and out[0].mechanisms == ("SCRAM-SHA-256",)
    client = scramp.ScramClient(["SCRAM-SHA-256"], "", "s3cret")  # libpq: n=, the startup user counts
    first = client.get_client_first()
    assert first.startswith("n,,n=,r=")
    c.send(SASLInitialResponse("SCRAM-SHA-256", first.encode()))
    (cont,) = c.pump()
    client.set_server_first(cont.data.decode())
    c.send(SASLResponse(client.get_client_final().encode()))
    out = c.pump()
    final = out[0]
    client.set_server_final(final.data.decode())  # verifies the server's signature
    assert type(out[1]).__name__ == "AuthenticationOk"
    assert type(out[-1]).__name__ == "ReadyForQuery"


def test_scram_wrong_proof_and_malformed_messages() -> None:
    scramp = pytest.importorskip("scramp")
    state = ServerState(scenario("scram-sha-256"))
    # wrong password
    c = Client(state)
    c.startup("replicator")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "", "nope")
    c.send(SASLInitialResponse("SCRAM-SHA-256", client.get_client_first().encode()))
    (cont,) = c.pump()
    client.set_server_first(cont.data.decode())
    c.send(SASLResponse(client.get_client_final().encode()))
    (err,) = c.pump()
    assert isinstance(err, ErrorResponse) and err.code == "28P01" and c.closed is not None
    # channel binding asked for without TLS, and garbage
    for data in (b"p=tls-server-end-point,,n=,r=abc", b"garbage"):
        c = Client(state)
        c.startup("replicator")
        c.send(SASLInitialResponse("SCRAM-SHA-256", data))
        (err,) = c.pump()
        assert isinstance(err, ErrorResponse) and err.code == "08P01" and c.closed is not None
    # another mechanism
    c = Client(state)
    c.startup("replicator")
    c.send(SASLInitialResponse("SCRAM-SHA-256-PLUS", b"p=x,,n=,r=abc"))
    (err,) = c.pump()
    assert err.code == "08P01"


def test_md5_formula() -> None:
    # the example of the docs' "md5" response, computed independently
    import hashlib

    salt = b"\x01\x02\x03\x04"
    inner = hashlib.md5(b"s3cretreplicator").hexdigest()
    assert md5_password("replicator", "s3cret", salt) == "md5" + hashlib.md5(inner.encode() + salt).hexdigest()


def test_saslprep() -> None:
    assert saslprep("I\u00adX") == "IX"          # soft hyphen mapped to nothing
    assert saslprep("user\u00a0x") == "user x"    # non-ASCII space to space
    assert saslprep("\u2168") == "IX"             # NFKC
    assert saslprep("a\u0007b") == "a\u0007b"    # prohibited: used as it is (PostgreSQL)


def test_authenticator_unknown_user_gets_a_full_exchange_then_fails() -> None:
    auth = Authenticator("scram-sha-256", "ghost", {"replicator": "x"})
    auth.start()
    step = auth.sasl_initial("SCRAM-SHA-256", b"n,,n=,r=clientnonce")
    attrs = dict(a.split("=", 1) for a in step.data.decode().split(","))
    assert attrs["r"].startswith("clientnonce") and int(attrs["i"]) == 4096 and base64.b64decode(attrs["s"])
    bad = f"c=biws,r={attrs['r']},p={base64.b64encode(bytes(32)).decode()}".encode()
    with pytest.raises(ServerError) as info:
        auth.sasl_response(bad)
    assert info.value.sqlstate == "28P01"


def test_refuse_auth_fault() -> None:
    import psycopg

    from pgwire_spec.walsender import Fault

    with SyncFakeWalsender(scenario("trust"), faults=[Fault("refuse_auth", user="replicator")]) as fake:
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(fake.dsn)
        # times=1: the next connection is let in
        with psycopg.connect(fake.dsn, autocommit=True) as conn:
            conn.execute("SELECT 1")
        assert "fault:refuse_auth" in fake.transcript.events()


