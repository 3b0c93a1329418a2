"""The proxy in front of a real PostgreSQL 16 (npm provider) that asks for passwords and
speaks TLS: ``ssl=on`` with a certificate made here (its own CA), pg_hba.conf asking
SCRAM-SHA-256 or md5 on TCP, and one role that may only come over TLS. psycopg2 and
pg_recvlogical authenticate through the proxy (channel binding off: the client talks plain
text to the proxy); the upstream DSN's sslmode decides whether the proxy speaks TLS to the
server, and verify-full checks the server's certificate against sslrootcert."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import select
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.lsn import format_lsn, parse_lsn
from pgwire_spec.servers import provider
from pgwire_spec.servers._base import server_user
from tests.proxy.test_upstream import proxied
from tests.walsender.conftest import need_program

pytestmark = [pytest.mark.live, pytest.mark.clients, pytest.mark.timeout(300)]

PASSWORD = "s3cret pass"  # a space: quoted in every DSN

#: pg_hba.conf (docs: "The pg_hba.conf File"): the superuser trusted on TCP for set-up,
#: SCRAM for "scram_user", md5 for "md5_user", and "tls_user" only over TLS.
HBA = """\
local all all trust
host all postgres 127.0.0.1/32 trust
hostssl all tls_user 127.0.0.1/32 scram-sha-256
hostssl replication tls_user 127.0.0.1/32 scram-sha-256
hostnossl all tls_user 127.0.0.1/32 reject
hostnossl replication tls_user 127.0.0.1/32 reject
host all scram_user 127.0.0.1/32 scram-sha-256
host replication scram_user 127.0.0.1/32 scram-sha-256
host all md5_user 127.0.0.1/32 md5
host replication md5_user 127.0.0.1/32 md5
"""


def _certificates(folder: Path) -> dict[str, Path]:
    """A CA, a server certificate it signed for 127.0.0.1 and localhost, and a second CA
    that signed nothing (for verify-full to refuse)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn: str) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
                .not_valid_after(now + dt.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256()))
        return key, cert

    ca_key, ca_cert = ca("pgwire-spec test CA")
    _, other_ca = ca("another CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name("127.0.0.1")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    files = {"ca": folder / "ca.crt", "other_ca": folder / "other-ca.crt", "cert": folder / "server.crt",
             "key": folder / "server.key"}
    files["ca"].write_bytes(ca_cert.public_bytes(pem))
    files["other_ca"].write_bytes(other_ca.public_bytes(pem))
    files["cert"].write_bytes(cert.public_bytes(pem))
    files["key"].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL,
                                               serialization.NoEncryption()))
    return files


@pytest.fixture(scope="module")
def secured() -> Iterator[dict[str, Any]]:
    """PostgreSQL 16 with ssl=on and the pg_hba.conf above; roles, a table, a publication."""
    pytest.importorskip("cryptography", reason="cryptography is in the test extra")
    import psycopg

    # not under pytest's folder: the server's user must be able to reach the files
    folder = Path(tempfile.mkdtemp(prefix="pgws-tls-"))
    files = _certificates(folder)
    (folder / "pg_hba.conf").write_text(HBA)
    # the server reads these as its own user; it refuses a key others may read
    user = server_user()
    for p in [folder, *files.values(), folder / "pg_hba.conf"]:
        if user is not None:
            os.chown(p, user[1], user[2])
    files["key"].chmod(0o600)
    folder.chmod(0o755)
    prov = provider("npm", 16, settings={
        "ssl": "on", "ssl_cert_file": str(files["cert"]), "ssl_key_file": str(files["key"]),
        "hba_file": str(folder / "pg_hba.conf"), "password_encryption": "scram-sha-256"})
    try:
        server = prov.start()
        name = f"auth_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for role in ("scram_user", "tls_user"):
                conn.execute(f"CREATE ROLE {role} LOGIN REPLICATION PASSWORD '{PASSWORD}'")
            conn.execute("SET password_encryption = 'md5'")
            conn.execute(f"CREATE ROLE md5_user LOGIN REPLICATION PASSWORD '{PASSWORD}'")
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text)")
            conn.execute(f"CREATE PUBLICATION pub FOR TABLE {name}")
            conn.execute(f"GRANT SELECT ON {name} TO scram_user, tls_user, md5_user")
            stored = dict(conn.execute("SELECT rolname, left(rolpassword, 6) FROM pg_authid "
                                       "WHERE rolname LIKE '%\\_user'").fetchall())
        assert stored["scram_user"] == stored["tls_user"] == "SCRAM-" and stored["md5_user"].startswith("md5")
        yield {"server": server, "files": files, "table": name}
    finally:
        prov.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _upstream(secured: dict[str, Any], role: str, **extra: str) -> str:
    server = secured["server"]
    parts = [f"host={server.host}", f"port={server.port}", "dbname=postgres", f"user={role}",
             f"password='{PASSWORD}'"] + [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


def _insert(secured: dict[str, Any], first: int, n: int) -> int:
    import psycopg

    with psycopg.connect(secured["server"].dsn, autocommit=True) as conn:
        with conn.transaction():
            for i in range(first, first + n):
                conn.execute(f"INSERT INTO {secured['table']} VALUES (%s, %s)", (i, f"row {i}"))
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        return parse_lsn(row[0])


@pytest.mark.parametrize("role", ["scram_user", "md5_user"])
def test_psycopg2_authenticates_through_the_proxy(secured: dict[str, Any], role: str) -> None:
    """SCRAM-SHA-256 (SASL, channel binding off) and md5 pass through; the stream is the
    server's."""
    extras = pytest.importorskip("psycopg2.extras", reason="psycopg2-binary is in the test extra")
    slot = f"{role}_{uuid.uuid4().hex[:6]}"
    first = 1000 if role == "md5_user" else 100
    with proxied(_upstream(secured, role, sslmode="disable")) as proxy:
        conn = extras.LogicalReplicationConnection(proxy.dsn)
        try:
            cur = conn.cursor()
            cur.create_replication_slot(slot, output_plugin="pgoutput")
            _insert(secured, first, 3)
            cur.start_replication(slot_name=slot, decode=False,
                                  options={"proto_version": "1", "publication_names": "pub"})
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < 6 and time.monotonic() < deadline:
                msg = cur.read_message()
                if msg is None:
                    select.select([cur], [], [], 0.2)
                    continue
                got.append(msg.payload)
        finally:
            conn.close()
        assert [p[:1] for p in got] == [b"B", b"R", b"I", b"I", b"I", b"C"]
        assert proxy.violations == []
    _drop(secured, slot)


def _drop(secured: dict[str, Any], slot: str) -> None:
    import psycopg

    with psycopg.connect(secured["server"].dsn, autocommit=True) as conn:
        for _ in range(50):
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            if row is None:
                return
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            conn.execute("SELECT pg_sleep(0.1)")


def _recvlogical_tags(data: bytes) -> list[str]:
    """The pgoutput messages pg_recvlogical wrote, each followed by a newline, by tag. A
    payload may hold a newline byte itself (a Relation's OID, a binary value), so the pieces
    between newlines are joined until they make one whole message."""
    from pgwire_spec import PgOutputDecoder
    from pgwire_spec.errors import DecodeError

    decoder = PgOutputDecoder(protocol_version=1)
    tags: list[str] = []
    pieces = data.split(b"\n")
    assert pieces[-1] == b"", f"the output does not end with a newline: {data[-40:]!r}"
    message = b""
    for piece in pieces[:-1]:
        message += piece
        try:
            tags.append(decoder.decode(message).tag)
        except DecodeError:
            message += b"\n"  # not a whole message yet: the newline was inside it
            continue
        message = b""
    assert message == b"", f"what pg_recvlogical wrote ends with a part of a message: {message[:40]!r}"
    return tags


@pytest.mark.parametrize("sslmode", ["require", "verify-full"])
def test_pg_recvlogical_through_the_proxy_with_tls_to_the_server(secured: dict[str, Any], sslmode: str,
                                                                  tmp_path: Path) -> None:
    """tls_user may only come over TLS: pg_recvlogical reaches it through the proxy when
    the upstream DSN asks for TLS (require, or verify-full against the test CA), and the
    server sees an encrypted walsender connection."""
    recvlogical = need_program("pg_recvlogical")
    extra = {"sslmode": sslmode}
    if sslmode == "verify-full":
        extra["sslrootcert"] = str(secured["files"]["ca"])
    slot = f"tls_{sslmode.replace('-', '_')}"
    with proxied(_upstream(secured, "tls_user", **extra)) as proxy:
        base = [recvlogical, "-d", proxy.dsn, "-S", slot, "--no-loop"]
        subprocess.run(base + ["--create-slot", "-P", "pgoutput"], check=True, timeout=60, capture_output=True)
        end = _insert(secured, 2000 + 10 * len(sslmode), 4)
        out = tmp_path / "out.bin"
        proc = subprocess.Popen(base + ["--start", "-o", "proto_version=1", "-o", "publication_names=pub",
                                        "-E", format_lsn(end), "-f", str(out)], stderr=subprocess.PIPE, text=True)
        try:
            assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
        assert _recvlogical_tags(out.read_bytes()) == ["B", "R", "I", "I", "I", "I", "C"]
        assert proxy.violations == []
    _drop(secured, slot)


def test_the_server_refuses_tls_user_without_tls_and_verify_full_refuses_a_foreign_ca(
        secured: dict[str, Any]) -> None:
    """The checks above can fail: over plain text the server refuses tls_user (its
    pg_hba.conf line), and verify-full against a CA that did not sign the server's
    certificate makes the proxy refuse the upstream; either way the client reads one
    FATAL saying why."""
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2-binary is in the test extra")
    with proxied(_upstream(secured, "tls_user", sslmode="disable")) as proxy:
        with pytest.raises(psycopg2.OperationalError, match="no encryption|pg_hba.conf rejects"):
            psycopg2.connect(proxy.dsn).close()
    with proxied(_upstream(secured, "tls_user", sslmode="verify-full",
                           sslrootcert=str(secured["files"]["other_ca"]))) as proxy:
        with pytest.raises(psycopg2.OperationalError, match="cannot reach the upstream server.*certificate"):
            psycopg2.connect(proxy.dsn).close()
    # and the same role over TLS is fine: the walsender connections it had were encrypted
    with proxied(_upstream(secured, "tls_user", sslmode="require")) as proxy:
        conn = psycopg2.connect(proxy.dsn)
        try:
            cur = conn.cursor()
            cur.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            assert cur.fetchone() == (True,)
        finally:
            conn.close()
