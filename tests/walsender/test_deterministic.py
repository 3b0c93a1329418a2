"""The core has no clock, process id or randomness of its own: given fixed ones, one
connection replays byte for byte; given the real ones, the parts that depend on them
differ."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.wire import AuthenticationMD5Password, BackendKeyData, PasswordMessage

from ._client import Client
from .scenarios import accounts

START = "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')"


def _scenario() -> Scenario:
    data = accounts(16)
    data["auth"] = {"method": "md5", "users": {"replicator": "s3cret"}}
    data["keepalive"] = {"interval": 1.0, "reply_requested": True}
    return Scenario.from_dict(data)


def _counting_bytes() -> Callable[[int], bytes]:
    counter = itertools.count()
    return lambda n: bytes((next(counter) * 7) & 0xFF for _ in range(n))


def _conversation(**kw: Any) -> tuple[bytes, list[Any]]:
    mono = [1000.0]
    wall = [1_700_000_000.0]

    def tick() -> float:
        wall[0] += 0.25
        return wall[0]

    state = ServerState(_scenario(), clock=lambda: mono[0], **({"wall_clock": tick} | kw))
    c = Client(state, clock=mono[0])
    out = c.startup("replicator")
    salt = next(m for m in out if isinstance(m, AuthenticationMD5Password)).salt
    inner = hashlib.md5(b"s3cret" + b"replicator").hexdigest().encode()
    c.send(PasswordMessage(b"md5" + hashlib.md5(inner + salt).hexdigest().encode()))
    out += c.pump()
    out += c.query("IDENTIFY_SYSTEM")
    out += c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out += c.query(START)
    for _ in range(3):
        c.clock += 1.5
        mono[0] = c.clock
        out += c.pump()
    out += c.status(0, 0, reply=True)
    out += c.copy_done()
    out += c.terminate()
    return c.raw, out


def test_one_connection_replays_identically() -> None:
    raw1, out1 = _conversation(pid=4242, random_bytes=_counting_bytes())
    raw2, _ = _conversation(pid=4242, random_bytes=_counting_bytes())
    assert raw1 == raw2 and len(raw1) > 1000
    key = next(m for m in out1 if isinstance(m, BackendKeyData))
    assert key.process_id == 4242


def test_randomness_reaches_the_wire() -> None:
    raw1, _ = _conversation(pid=4242, random_bytes=_counting_bytes())
    raw2, _ = _conversation(pid=4242, random_bytes=lambda n: b"\xaa" * n)
    raw3, _ = _conversation(pid=4243, random_bytes=_counting_bytes())
    assert raw1 != raw2 and raw1 != raw3
