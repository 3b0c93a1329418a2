"""Real clients graded by the client-conformance catalogue against the fake walsender:
pg_recvlogical (Debian's postgresql-15; 16 and 18 from the PyPI server wheels with
PGWIRE_SPEC_ALL_MAJORS=1), a psycopg2 LogicalReplicationConnection client written as
psycopg2's documentation shows, npm's pg-logical-replication written as its README shows,
a real PostgreSQL subscriber (15; 16, 17 and 18 with PGWIRE_SPEC_ALL_MAJORS=1: its apply
worker is the client, what it applied read back from its tables), and a planted
misbehaving client that must fail exactly the cases its bugs break. The clients run side
by side (each case has its own fake server), so the test takes about as long as the
slowest client. With PGWIRE_SPEC_CONFORM_REPORT=DIR the reports (junit.xml, index.json,
report.html, table.md) are written there: the README's table comes from such a run."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.clientconf import CASES, ClientResult, markdown_table, run_client, write_reports
from pgwire_spec.servers import Provider, ProviderError, provider
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.servers.wheel import find_wheel_bin_dirs

pytestmark = [pytest.mark.clients, pytest.mark.timeout(600)]

CLIENTS = Path(__file__).parent / "clients"
ALL_MAJORS = os.environ.get("PGWIRE_SPEC_ALL_MAJORS") == "1"
#: Subscriber majors graded: 15 by default, 15-18 with PGWIRE_SPEC_ALL_MAJORS=1.
SUBSCRIBER_MAJORS = [15, 16, 17, 18] if ALL_MAJORS else [15]
#: The launcher starts an apply worker at most once per wal_retrieve_retry_interval (5 s by
#: default, launcher.c): 1 s lets each case's new subscription start within its window.
SUBSCRIBER_SETTINGS = {"wal_retrieve_retry_interval": "1s"}


def _pg_recvlogicals() -> dict[str, tuple[str, dict[str, str] | None]]:
    """pg_recvlogical by major: Debian's 15; with every major, the wheels' 16 and 18 (the
    npm builds carry no client programs)."""
    out: dict[str, tuple[str, dict[str, str] | None]] = {}
    try:
        path = find_system_bin_dir(15) / "pg_recvlogical"
        if path.is_file():
            out["pg_recvlogical 15"] = (str(path), None)
    except ProviderError:
        found = shutil.which("pg_recvlogical")
        if found:
            out["pg_recvlogical"] = (found, None)
    if ALL_MAJORS:
        for _dist, major, bin_dir in sorted(find_wheel_bin_dirs(), key=lambda found: found[1]):
            name = f"pg_recvlogical {major}"
            if name not in out and (bin_dir / "pg_recvlogical").is_file():
                env = {**os.environ, "LD_LIBRARY_PATH": str(bin_dir.parent / "lib")}
                out[name] = (str(bin_dir / "pg_recvlogical"), env)
    return out


def _grades(result: ClientResult) -> dict[str, str]:
    return {g.case: g.status for g in result.grades}


def _explain(result: ClientResult) -> str:
    lines = [f"{result.name}:"]
    for g in result.grades:
        lines.append(f"  {g.status} {g.case}: {g.reason}")
        lines.extend("    " + e for e in g.evidence)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def subscribers() -> Iterator[dict[int, Any]]:
    started: dict[int, Provider] = {}
    try:
        for major in SUBSCRIBER_MAJORS:
            kind = "system" if major == 15 else "npm"
            prov = provider(kind, major, settings=SUBSCRIBER_SETTINGS)
            try:
                prov.start()
            except ProviderError as exc:
                if major == 15:
                    pytest.skip(f"no PostgreSQL 15 to run a subscriber (Debian's postgresql-15): {exc}")
                raise
            started[major] = prov
        yield {m: p.server for m, p in started.items()}
    finally:
        for prov in started.values():
            prov.stop()


@pytest.fixture(scope="module")
def results(subscribers: dict[int, Any]) -> dict[str, ClientResult]:
    recvlogicals = _pg_recvlogicals()
    if not recvlogicals:
        pytest.skip("pg_recvlogical not found (Debian package postgresql-15 or postgresql-client)")
    commands: dict[str, tuple[str, dict[str, str] | None]] = {}
    for name, (path, env) in recvlogicals.items():
        # -s/-F 1: its status and fsync intervals (10 s by default) fit the cases' windows;
        # protocol version 2 with streaming: the streamed-transaction case applies
        commands[name] = (f"{path} -d '{{dsn}}' -S {{slot}} --start -o proto_version=2 -o streaming=on "
                          f"-o publication_names=pub -s 1 -F 1 -f /dev/null", env)
    commands["psycopg2"] = (f"{sys.executable} {CLIENTS / 'psycopg2_client.py'} '{{dsn}}' {{slot}}", None)
    if shutil.which("node") and shutil.which("npm"):
        from pgwire_spec.conformance.adapters.pg_logical_replication import install

        commands["pg-logical-replication"] = (
            f"node {CLIENTS / 'node_client.js'} {install()} {{host}} {{port}} {{user}} {{slot}}", None)
    for major, server in subscribers.items():
        commands[f"subscriber {major}"] = (
            f"{sys.executable} {CLIENTS / 'subscriber_client.py'} '{{dsn}}' {{slot}} '{server.dsn}'", None)
    commands["planted"] = (f"{sys.executable} {CLIENTS / 'planted_client.py'} {{host}} {{port}} {{slot}}", None)
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {name: pool.submit(run_client, cmd, name=name, env=env) for name, (cmd, env) in commands.items()}
        out = {name: f.result() for name, f in futures.items()}
    table = markdown_table(list(out.values()))
    print(table)
    for r in out.values():
        print(_explain(r))
    where = os.environ.get("PGWIRE_SPEC_CONFORM_REPORT")
    if where:
        write_reports(list(out.values()), where)
        Path(where, "table.md").write_text(table + "\n\n" + "\n\n".join(_explain(r) for r in out.values()) + "\n")
    return out


def test_planted_client_fails_exactly_what_its_bugs_break(results: dict[str, ClientResult]) -> None:
    r = results["planted"]
    assert _grades(r) == {
        "keepalive-reply": "failed",        # never answers replyRequested
        "idle-feedback": "failed",          # no feedback without a Commit
        "positions": "failed",              # acknowledges a Commit 1.5 s before it applies it
        "reset-resume": "passed",           # resumes after what it received in full
        "stream-subxact-abort": "not applicable",  # protocol version 1: nothing streamed
        "slot-invalidated": "passed",       # one attempt a second
        "sender-timeout": "passed",         # silent after its last Commit: dropped, reconnects, resumes
        "shutdown": "failed",               # ignores the server's CopyDone: the connection hangs
        "slot-held": "passed",              # one attempt a second, then resumes
        "slot-missing": "passed",           # one attempt a second
        "slot-active": "passed",
    }, _explain(r)
    ack = next(g for g in r.grades if g.case == "positions")
    assert "before the client reported it applied" in ack.reason
    assert any(line.startswith(">") and " F CopyData r " in line for line in ack.evidence)
    timeout = next(g for g in r.grades if g.case == "sender-timeout")
    assert "terminated by wal_sender_timeout" in timeout.reason and "reconnected" in timeout.reason


def test_pg_recvlogical(results: dict[str, ClientResult]) -> None:
    for name, r in results.items():
        if name.startswith("pg_recvlogical"):
            grades = _grades(r)
            # no applied hook: duplicates and what it applied are not judged; it waits 5 s
            # between attempts
            assert grades == dict.fromkeys(grades, "passed"), _explain(r)
            assert len(grades) == len(CASES)


def test_psycopg2_documented_pattern(results: dict[str, ClientResult]) -> None:
    r = results["psycopg2"]
    grades = _grades(r)
    # send_feedback() only queues the position until the next status interval (1 s), which
    # falls within the reset case's pause after the Commit: the reset loses no acknowledgement
    assert grades == dict.fromkeys(grades, "passed"), _explain(r)


def test_pg_logical_replication_readme_pattern(results: dict[str, ClientResult]) -> None:
    r = results.get("pg-logical-replication")
    if r is None:
        pytest.skip("node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
    grades = _grades(r)
    # What its README's example does: keepalives asking for a reply wait for its 10 s
    # timer; its plugin cannot ask for streaming; the resubscribe loop retries every 100 ms;
    # the server's CopyDone is neither answered nor ends the connection.
    assert grades["keepalive-reply"] == "failed", _explain(r)
    assert grades["stream-subxact-abort"] == "not applicable", _explain(r)
    for cid in ("slot-missing", "slot-active", "slot-invalidated", "slot-held"):
        grade = next(g for g in r.grades if g.case == cid)
        assert grade.status == "failed" and "hot loop" in grade.reason, _explain(r)
    assert grades["shutdown"] == "failed", _explain(r)
    assert grades["idle-feedback"] == "passed", _explain(r)


def test_subscribers(results: dict[str, ClientResult]) -> None:
    for name, r in results.items():
        if name.startswith("subscriber"):
            grades = _grades(r)
            assert grades == dict.fromkeys(grades, "passed"), _explain(r)
            stream = next(g for g in r.grades if g.case == "stream-subxact-abort")
            assert "16 row changes" in stream.reason  # read back from its table


def test_reports(results: dict[str, ClientResult], tmp_path: Path) -> None:
    from xml.etree import ElementTree as ET

    paths = write_reports(list(results.values()), tmp_path)
    suites = ET.parse(paths["junit"]).getroot()
    for suite in suites:
        r = results[suite.get("name", "")]
        assert int(suite.get("failures", "-1")) == r.count("failed")
        failed = {tc.get("name") for tc in suite if tc.find("failure") is not None}
        assert failed == {g.case for g in r.grades if g.status == "failed"}
    index = json.loads(paths["index"].read_text())
    assert [c["name"] for c in index["clients"]] == list(results)
    planted = next(c for c in index["clients"] if c["name"] == "planted")["grades"]
    assert all(g["evidence"] for g in planted if g["status"] == "failed")


def test_a_case_window_opens_when_the_client_connects() -> None:
    """A client slow to start (here 5 s, longer than the case's 4 s window; an interpreter
    or JVM on a loaded machine) is still judged on what it does once connected."""
    from pgwire_spec.clientconf import case
    from pgwire_spec.clientconf.runner import run_case
    from pgwire_spec.conformance.command import check_command

    found = _pg_recvlogicals()
    if not found:
        pytest.skip("pg_recvlogical not found (Debian package postgresql-15 or postgresql-client)")
    path, env = next(iter(found.values()))
    late = case("idle-feedback")
    assert late.window < 5
    command = (f"sh -c \"sleep 5; exec {path} -d '{{dsn}}' -S {{slot}} --start -o proto_version=1 "
               f"-o publication_names=pub -s 1 -F 1 -f /dev/null\"")
    grade, _ = run_case(check_command(command), late, env=env)
    assert grade.status == "passed", grade
