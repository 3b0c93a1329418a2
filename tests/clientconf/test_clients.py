"""Real clients graded by the client-conformance catalogue against the fake walsender:
pg_recvlogical (Debian's postgresql-15), a psycopg2 LogicalReplicationConnection client
written as psycopg2's documentation shows, and a planted misbehaving client that must fail
exactly the cases its bugs break. The clients run side by side (each case has its own fake
server), so the test takes about as long as the slowest client."""

from __future__ import annotations

import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pgwire_spec.clientconf import ClientResult, markdown_table, run_client
from pgwire_spec.servers import ProviderError
from pgwire_spec.servers.system import find_system_bin_dir

pytestmark = pytest.mark.clients

CLIENTS = Path(__file__).parent / "clients"


def _pg_recvlogical() -> str | None:
    found = shutil.which("pg_recvlogical")
    if found:
        return found
    try:
        path = find_system_bin_dir(15) / "pg_recvlogical"
    except ProviderError:
        return None
    return str(path) if path.is_file() else None


def _grades(result: ClientResult) -> dict[str, str]:
    return {g.case: g.status for g in result.grades}


def _explain(result: ClientResult) -> str:
    lines = [f"{result.name}:"]
    for g in result.grades:
        lines.append(f"  {g.status} {g.case}: {g.reason}")
        lines.extend("    " + e for e in g.evidence)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def results() -> dict[str, ClientResult]:
    recvlogical = _pg_recvlogical()
    if recvlogical is None:
        pytest.skip("pg_recvlogical not found (Debian package postgresql-15 or postgresql-client)")
    commands = {
        # -s/-F 1: its status and fsync intervals (10 s by default) fit the cases' windows
        "pg_recvlogical": f"{recvlogical} -d '{{dsn}}' -S {{slot}} --start -o proto_version=1 "
                          f"-o publication_names=pub -s 1 -F 1 -f /dev/null",
        "psycopg2": f"{sys.executable} {CLIENTS / 'psycopg2_client.py'} '{{dsn}}' {{slot}}",
        "planted": f"{sys.executable} {CLIENTS / 'planted_client.py'} {{host}} {{port}} {{slot}}",
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {name: pool.submit(run_client, cmd, name=name) for name, cmd in commands.items()}
        out = {name: f.result() for name, f in futures.items()}
    print(markdown_table(list(out.values())))
    for r in out.values():
        print(_explain(r))
    return out


def test_planted_client_fails_exactly_what_its_bugs_break(results: dict[str, ClientResult]) -> None:
    r = results["planted"]
    assert _grades(r) == {
        "keepalive-reply": "failed",   # never answers replyRequested
        "idle-feedback": "failed",     # no feedback without a Commit
        "positions": "failed",         # acknowledges a Commit 1.5 s before it applies it
        "reset-resume": "passed",      # resumes after what it received in full
        "shutdown": "failed",          # ignores the server's CopyDone: the connection hangs
        "slot-missing": "passed",      # one attempt a second
        "slot-active": "passed",
    }, _explain(r)
    ack = next(g for g in r.grades if g.case == "positions")
    assert "before the client reported it applied" in ack.reason
    assert any(line.startswith(">") and " F CopyData r " in line for line in ack.evidence)


def test_pg_recvlogical(results: dict[str, ClientResult]) -> None:
    r = results["pg_recvlogical"]
    grades = _grades(r)
    # no applied hook: duplicates are not judged; it waits 5 s between attempts
    assert grades == dict.fromkeys(grades, "passed"), _explain(r)
    assert len(grades) == 7


def test_psycopg2_documented_pattern(results: dict[str, ClientResult]) -> None:
    r = results["psycopg2"]
    grades = _grades(r)
    # send_feedback() only queues the position until the next status interval, and the
    # documented loop resumes from the slot: the reset loses the acknowledgement of the
    # transaction applied just before it, which the server sends again.
    assert grades.pop("reset-resume") == "failed", _explain(r)
    resume = next(g for g in r.grades if g.case == "reset-resume")
    assert "twice" in resume.reason
    assert grades == dict.fromkeys(grades, "passed"), _explain(r)


def test_reports(results: dict[str, ClientResult], tmp_path: Path) -> None:
    import json
    from xml.etree import ElementTree as ET

    from pgwire_spec.clientconf import write_reports

    paths = write_reports(list(results.values()), tmp_path)
    suites = ET.parse(paths["junit"]).getroot()
    for suite in suites:
        r = results[suite.get("name", "")]
        assert int(suite.get("failures", "-1")) == r.count("failed")
        failed = {tc.get("name") for tc in suite if tc.find("failure") is not None}
        assert failed == {g.case for g in r.grades if g.status == "failed"}
    index = json.loads(paths["index"].read_text())
    assert [c["name"] for c in index["clients"]] == list(results)
    planted = index["clients"][2]["grades"]
    assert all(g["evidence"] for g in planted if g["status"] == "failed")
