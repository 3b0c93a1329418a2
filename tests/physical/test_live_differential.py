"""The fake against a real PostgreSQL 15, side by side: BASE_BACKUP's message skeleton and
the errors both give to the same bad commands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec import majors
from pgwire_spec.physical.capture import _Recorder, physical_settings
from pgwire_spec.servers import ProviderError, Server, provider
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.walsender.core import ServerState
from pgwire_spec.wire import (
    CommandComplete,
    CopyData,
    CopyOutResponse,
    DataRow,
    ErrorResponse,
    NoticeResponse,
    ReadyForQuery,
    RowDescription,
)

from .harness import Clock, connect, scenario

pytestmark = pytest.mark.live

try:
    find_system_bin_dir(15)
    HAVE_PG15 = True
except ProviderError:
    HAVE_PG15 = False


@pytest.fixture(scope="module")
def real15() -> Iterator[Server]:
    if not HAVE_PG15:
        pytest.skip("needs Debian's postgresql-15 (apt-get install postgresql-15; .ci/install does it)")
    prov = provider("system", 15, settings=physical_settings(majors.major(15)))
    with prov as server:
        yield server


def _real(server: Server, sql: str) -> list[Any]:
    rec = _Recorder(server, 16 << 20, "diff")
    try:
        out = rec.command(sql)
    finally:
        rec.close()
    return out


def _fake(tmp_path: Path, sql: str, version: str = "15.20") -> list[Any]:
    d = tmp_path / "dir"
    (d / "global").mkdir(parents=True, exist_ok=True)
    (d / "PG_VERSION").write_text("15\n")
    (d / "global" / "pg_control").write_bytes(bytes(8192))
    clock = Clock()
    state = ServerState(scenario(version=version, backup={"directory": str(d)}), clock=clock)
    pair = connect(state, clock)
    return pair.query(sql)


def _skeleton(messages: list[Any]) -> list[Any]:
    """Message kinds, with runs of archive/manifest data collapsed, result sets' columns,
    CopyData's type bytes, DataRow arity and which values are NULL."""
    out: list[Any] = []
    for m in messages:
        if isinstance(m, CopyData):
            item = ("CopyData", m.data[:1])
            if m.data[:1] == b"d" and out and out[-1] == item:
                continue
        elif isinstance(m, RowDescription):
            item = ("RowDescription", tuple((f.name, f.type_oid, f.type_size, f.type_modifier) for f in m.fields))
        elif isinstance(m, DataRow):
            item = ("DataRow", tuple(v is None for v in m.values))
        elif isinstance(m, CommandComplete):
            item = ("CommandComplete", m.command_tag)
        elif isinstance(m, (ErrorResponse, NoticeResponse)):
            item = (type(m).__name__, m.severity, m.code, m.message)
        else:
            item = (type(m).__name__,)
        out.append(item)
    return out


@pytest.mark.parametrize("sql", [
    "BASE_BACKUP (LABEL 'diff', PROGRESS, CHECKPOINT 'fast', WAIT 0, MANIFEST 'yes', TABLESPACE_MAP)",
    "BASE_BACKUP (LABEL 'diff', CHECKPOINT 'fast', WAIT 0)",
    "BASE_BACKUP (LABEL 'diff', MANIFEST 'yes', MANIFEST_CHECKSUMS 'SHA256')",
])
def test_base_backup_has_the_real_servers_shape(real15: Server, tmp_path: Path, sql: str) -> None:
    real = _skeleton(_real(real15, sql))
    fake = _skeleton(_fake(tmp_path, sql))
    assert fake == real
    assert ("CopyOutResponse",) in real and real[-1] == ("ReadyForQuery",)


@pytest.mark.parametrize("sql", [
    "BASE_BACKUP (MAX_RATE 31)",
    "BASE_BACKUP (MAX_RATE 2000000)",
    "BASE_BACKUP (LABEL 'a', LABEL 'b')",
    "BASE_BACKUP (MANIFEST 'perhaps')",
    "BASE_BACKUP (MANIFEST 'yes', MANIFEST_CHECKSUMS 'crc64')",
    "BASE_BACKUP (NOSUCH)",
    "BASE_BACKUP (CHECKPOINT 'lazy')",
    "BASE_BACKUP (WAIT 'sometimes')",
    "TIMELINE_HISTORY 7",
    'READ_REPLICATION_SLOT "nosuch"',
    "CREATE_REPLICATION_SLOT diff_s PHYSICAL (TWO_PHASE)",
    "START_REPLICATION 0/1000000 TIMELINE 9",
    'START_REPLICATION SLOT "nosuch" 0/1000000',
])
def test_the_same_bad_command_gets_the_same_answer(real15: Server, tmp_path: Path, sql: str) -> None:
    real = _skeleton(_real(real15, sql))
    fake = _skeleton(_fake(tmp_path, sql))
    assert fake == real
    assert real[-1] == ("ReadyForQuery",) and isinstance(_real(real15, "IDENTIFY_SYSTEM")[-1], ReadyForQuery)
    assert all(not isinstance(x, CopyOutResponse) for x in real)
