"""Conformance through the wire: replication clients streamed the cases by the fake walsender.

The session planning and the reading of what a client reported are tested on their own
(a dropped, repeated, changed or missing message each named); then real clients:
pg_recvlogical of every major found here (Debian's 15, the wheels' 16 and 18) passes every
case it can be put to, a pg_recvlogical whose output is tampered with is caught, a psycopg2
client of the jsonl kind decoding with the reference passes everything (malformed and
sequence cases included) and its planted bugs are caught, and npm's pg-logical-replication
as a whole client gets the same verdict, case by case, as its parser through the adapter
contract.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.conformance import AdapterError, Profile, open_client, open_decoder, run_cases
from pgwire_spec.conformance.adapters.wire import WireAdapter
from pgwire_spec.conformance.cases import builtin_cases, derived_malformed_cases, fixture_cases
from pgwire_spec.conformance.command import ClientCommandError
from pgwire_spec.conformance.wire import MAX_CASES, JsonlLines, plan_sessions, read_jsonl, read_pgrecvlogical
from pgwire_spec.corpus.load import fixtures_root
from pgwire_spec.lsn import format_lsn
from pgwire_spec.servers import ProviderError
from pgwire_spec.servers.system import find_system_bin_dir
from pgwire_spec.servers.wheel import find_wheel_bin_dirs

CLIENTS = Path(__file__).parent / "clients"
GROUPS = ("fixture/pg16/p1/", "fixture/pg16/p1-binary/", "fixture/pg16/p2-streaming/",
          "fixture/pg16/p4-parallel-two_phase-binary-messages/")


def _cases() -> list[Any]:
    cases = builtin_cases() + derived_malformed_cases()
    root = fixtures_root()
    if root is not None:
        cases += [c for c in fixture_cases(root / "pg16-builtin.json.gz") if c.id.startswith(GROUPS)]
    return cases


CASES = _cases()


def _recvlogicals() -> dict[int, str]:
    found: dict[int, str] = {}
    try:
        path = find_system_bin_dir(15) / "pg_recvlogical"
        if path.is_file():
            found[15] = str(path)
    except ProviderError:
        pass
    for _name, major, bin_dir in find_wheel_bin_dirs():
        if (bin_dir / "pg_recvlogical").is_file():
            found.setdefault(major, str(bin_dir / "pg_recvlogical"))
    return dict(sorted(found.items()))


RECVLOGICALS = _recvlogicals()
FIRST_RECVLOGICAL = next(iter(RECVLOGICALS.values()), "")


def _by_id(result: Any) -> dict[str, Any]:
    return {v.case.id: v for v in result.verdicts}


# -- the sans-IO part ------------------------------------------------------------------------------

VALID = [c for c in CASES if c.error is None][:12]


def test_a_pgrecvlogical_session_marks_each_case_and_negotiates_its_options() -> None:
    sessions = plan_sessions("pgrecvlogical", VALID)
    assert sum(len(s.cases) for s in sessions) == len(VALID)
    s = sessions[0]
    assert len(s.markers) == len(s.cases) + 1
    assert s.options["publication_names"] == "pub"
    for t in sessions:  # the case's own options: the markers are empty transactions, not logical messages
        assert t.options.get("messages", "off") == ("on" if t.cases[0].context.get("messages") else "off")
        assert all(p[:1] in b"BC" for p, who in zip(t.payloads, t.owner) if who is None)
    assert s.options["proto_version"] == str(s.cases[0].context["protocol_version"])
    assert list(s.lsns) == sorted(set(s.lsns))  # one dataStart each, growing


def _output(session: Any, edit: Any = None) -> bytes:
    lines = [p + b"\n" for p in session.payloads]
    if edit is not None:
        lines = edit(lines)
    return b"".join(lines)


def _first_with(sessions: list[Any], tag: bytes) -> tuple[Any, int, int]:
    for s in sessions:
        for k, (p, who) in enumerate(zip(s.payloads, s.owner)):
            if who is not None and p[:1] == tag and who[1] > 0:
                return s, k, who[0]
    raise AssertionError(f"no {tag!r} in the sessions")


def test_pg_recvlogical_output_read_back_case_by_case() -> None:
    sessions = plan_sessions("pgrecvlogical", VALID)
    s = sessions[0]
    whole = read_pgrecvlogical(s, _output(s), "")
    assert whole.resume is None and len(whole.answers) == len(s.cases)
    assert all(a.failure is None and a.crash is None for a in whole.answers.values())
    s, k, n = _first_with(sessions, b"I")

    def drop(lines: list[bytes]) -> list[bytes]:
        return lines[:k] + lines[k + 1:]

    def repeat(lines: list[bytes]) -> list[bytes]:
        return lines[:k] + [lines[k - 1]] + lines[k:]

    def change(lines: list[bytes]) -> list[bytes]:
        return lines[:k] + [lines[k][:-2] + b"\x00\n"] + lines[k + 1:]

    i = s.owner[k][1]
    dropped = read_pgrecvlogical(s, _output(s, drop), "").answers[n]
    assert dropped.index == i and "dropped" in (dropped.failure or "")
    repeated = read_pgrecvlogical(s, _output(s, repeat), "").answers[n]
    assert repeated.index == i and "repeated" in (repeated.failure or "")
    changed = read_pgrecvlogical(s, _output(s, change), "").answers[n]
    assert changed.index == i and "other bytes" in (changed.failure or "")
    # the client stopped within case n: it fails with how it stopped, the next ones run again
    cut = _output(s)[: sum(len(p) + 1 for p in s.payloads[:k])]
    stopped = read_pgrecvlogical(s, cut, "exit status 1; stderr: boom")
    assert "exit status 1" in (stopped.answers[n].crash or "")
    assert stopped.resume == (n + 1 if n + 1 < len(s.cases) else None)


def test_jsonl_lines_read_back_by_lsn() -> None:
    sessions = plan_sessions("jsonl", VALID)
    s, k, n = _first_with(sessions, b"I")
    i = s.owner[k][1]

    def lines(skip: int | None = None, twice: int | None = None, lsn: bool = True) -> JsonlLines:
        out = JsonlLines(s)
        for j, lsn_value in enumerate(s.lsns):
            case, index = s.owner[j]  # type: ignore[misc]
            if j == skip:
                continue
            entry = dict(s.cases[case].expected[index])
            line = ({"lsn": format_lsn(lsn_value)} if lsn else {}) | {"message": entry}
            text = (json.dumps(line) + "\n").encode()
            out.feed(b"a line that is not JSON\n" + text + (text if j == twice else b""))
        return out

    good = lines()
    assert good.done
    outcome = read_jsonl(good, "")
    assert outcome.resume is None and all(a.failure is None for a in outcome.answers.values())
    assert all(a.results == tuple({"message": m} for m in s.cases[c].expected[:len(a.results)])
               for c, a in outcome.answers.items())
    assert read_jsonl(lines(lsn=False), "").answers == outcome.answers  # by order without lsn
    dropped = read_jsonl(lines(skip=k), "").answers[n]
    assert dropped.index == i and "dropped" in (dropped.failure or "")
    twice = read_jsonl(lines(twice=k), "").answers[n]
    assert twice.index == i and "twice" in (twice.failure or "")
    last = len(s.payloads) - 1
    unfinished = read_jsonl(lines(skip=last), "exit status 3")
    assert not lines(skip=last).done
    assert "exit status 3" in (unfinished.answers[len(s.cases) - 1].crash or "")


def test_in_a_jsonl_session_the_cases_after_a_malformed_one_are_tainted() -> None:
    malformed = [c for c in CASES if c.error is not None and c.error.index < len(c.payloads)
                 and c.context == VALID[0].context][:3]
    assert malformed
    [s] = plan_sessions("jsonl", [VALID[0], malformed[0], VALID[0], *malformed[1:]])
    assert s.tainted == (False, False, True) + (True,) * (len(malformed) - 1)
    for n, c in enumerate(s.cases):  # a malformed case is sent up to its rejection
        assert s.sent[n] == (len(c.payloads) if c.error is None else c.error.index + 1)


def test_a_streamed_transaction_a_case_leaves_open_is_aborted_before_the_next_case() -> None:
    parallel = [c for c in CASES if c.id.startswith("fixture/pg16/p4-parallel-two_phase-binary-messages/")]
    # a case that ends between two segments, then one that opens the same xid again
    pair = next((a, b) for a, b in zip(parallel, parallel[1:])
                if [p[:1] for p in a.payloads] == [b"S", b"E"] and b.payloads[0][:1] == b"S"
                and b.payloads[0][1:5] == a.payloads[0][1:5])
    [s] = plan_sessions("jsonl", list(pair))
    fillers = [p for p, who in zip(s.payloads, s.owner) if who is None]
    assert fillers and {p[:1] for p in fillers} == {b"A"}
    assert fillers[0][1:5] == pair[0].payloads[0][1:5]  # the xid left open
    assert s.payloads.index(fillers[0]) == len(pair[0].payloads)  # between the two cases


def test_what_cannot_be_put_to_a_client_is_not_applicable() -> None:
    end = next(c for c in CASES if c.error is not None and c.error.index == len(c.payloads))
    bad = next(c for c in CASES if c.error is not None and c.error.index < len(c.payloads))
    adapter = WireAdapter([sys.executable, str(CLIENTS / "jsonl_psycopg2.py"), "{dsn}", "{slot}", "{options}"])
    assert adapter.kind == "jsonl"
    [answer] = adapter.run_batch([end])
    assert answer.not_applicable and "end of the stream" in answer.not_applicable
    assert adapter.sessions == 0
    if RECVLOGICALS:
        rl = WireAdapter(FIRST_RECVLOGICAL)
        assert rl.kind == "pgrecvlogical"
        assert "decodes none" in (rl.run_batch([bad])[0].not_applicable or "")


def test_an_unusable_client_command_is_a_typed_error() -> None:
    with pytest.raises(ClientCommandError, match="placeholders among"):
        WireAdapter("my-client {nope}")
    with pytest.raises(AdapterError, match="not found"):
        WireAdapter("/nonexistent/client {dsn}")
    with pytest.raises(AdapterError, match="client kind"):
        open_client("pg_recvlogical", "xml")


def test_a_client_that_stops_every_time_is_not_started_once_per_case() -> None:
    quits = WireAdapter([sys.executable, "-c", "import sys; sys.stderr.write('no luck'); sys.exit(4)", "{dsn}"])
    answers = quits.run_batch(VALID)
    assert quits.sessions == 3
    assert all("exit status 4; stderr: no luck" in (a.crash or "") for a in answers)


# -- real clients ------------------------------------------------------------------------------

pytest_clients = pytest.mark.clients


@pytest_clients
@pytest.mark.parametrize("major", list(RECVLOGICALS) or [None], ids=lambda m: f"pg{m}" if m else "none")
def test_pg_recvlogical_passes_every_case_it_can_be_put_to(major: int | None) -> None:
    if major is None:
        pytest.skip("no pg_recvlogical found (Debian package postgresql-15, or the extra 'servers')")
    adapter = WireAdapter(RECVLOGICALS[major])
    assert adapter.version.startswith(f"{major}.")
    result = run_cases(adapter, CASES)
    assert result.ok, [v.reason for v in result.verdicts if v.status == "failed"][:3]
    ran = [v for v in result.verdicts if v.claimed]
    assert result.count("passed") == sum(c.error is None for c in CASES) > 1000
    assert {v.status for v in ran if v.case.error is not None} == {"not applicable"}
    contexts = Counter(tuple(sorted(c.context.items())) for c in CASES if c.error is None)
    # batched: one client start per options context and MAX_CASES cases, not per case
    assert adapter.sessions == sum(-(-n // MAX_CASES) for n in contexts.values()) < len(CASES) / 50


@pytest_clients
@pytest.mark.parametrize("plant, what", [("drop", "dropped"), ("repeat", "repeated"), ("flip", "other bytes")])
def test_a_tampering_pg_recvlogical_is_caught(plant: str, what: str) -> None:
    if not RECVLOGICALS:
        pytest.skip("no pg_recvlogical found (Debian package postgresql-15, or the extra 'servers')")
    cases = [c for c in CASES if c.id.startswith("fixture/pg16/p1/")]
    command = [sys.executable, str(CLIENTS / "planted_recvlogical.py"), plant, FIRST_RECVLOGICAL]
    result = run_cases(WireAdapter(command, "pgrecvlogical"), cases)
    failed = [v for v in result.verdicts if v.status == "failed"]
    assert len(failed) == 1 and what in failed[0].reason, [v.reason for v in failed]
    assert result.count("passed") == len(cases) - 1


def _psycopg2_client(plant: str = "") -> list[str]:
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed (pip install -e .[test])")
    return [sys.executable, str(CLIENTS / "jsonl_psycopg2.py"), "{dsn}", "{slot}", "{options}", *([plant] if plant else [])]


@pytest_clients
def test_a_jsonl_client_decoding_with_the_reference_passes_everything() -> None:
    adapter = WireAdapter(_psycopg2_client(), profile=Profile())
    result = run_cases(adapter, CASES, strict=True)
    failed = [f"{v.case.id}: {v.reason}" for v in result.verdicts if v.status == "failed"]
    assert not failed, failed[:5]
    # a rejection due at the end of the stream, an empty payload (no XLogData can carry it)
    cannot = sum(c.error is not None and (c.error.index >= len(c.payloads) or not c.payloads[c.error.index])
                 for c in CASES)
    assert result.count("not applicable") == cannot > 0
    assert result.count("passed") == len(CASES) - cannot
    contexts = {tuple(sorted(c.context.items())) for c in CASES}
    assert adapter.sessions <= 2 * len(contexts)  # valid and malformed cases share sessions


@pytest_clients
@pytest.mark.parametrize("plant, what", [("drop-insert", "dropped"), ("repeat-commit", "twice"),
                                         ("bad-xid", "differs at xid")])
def test_a_jsonl_clients_planted_bug_is_caught(plant: str, what: str) -> None:
    cases = [c for c in CASES if c.id.startswith("fixture/pg16/p1/")]
    result = run_cases(WireAdapter(_psycopg2_client(plant)), cases)
    failed = [v for v in result.verdicts if v.status == "failed"]
    assert failed and all(what in v.reason for v in failed), [v.reason for v in failed]
    if plant == "bad-xid":  # the cases about a Begin (the others only need theirs decoded)
        assert {v.case.id for v in failed} == {c.id for c in cases if c.description.startswith("Begin")}
    else:
        assert len(failed) == 1


@pytest_clients
@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_pg_logical_replication_as_a_client_gets_its_parsers_verdicts() -> None:
    client = open_client("pg-logical-replication", timeout=20.0)
    assert client.profile is not None and not client.profile.binary  # PgoutputPlugin sends no binary option
    wire = _by_id(run_cases(client, CASES, strict=True))
    with open_decoder("pg-logical-replication") as parser:
        alone = _by_id(run_cases(parser, CASES, strict=True, profile=client.profile))
    judged = [k for k, v in wire.items() if v.claimed and v.status in ("passed", "failed")]
    assert len(judged) > 250
    assert {k: wire[k].status for k in judged} == {k: alone[k].status for k in judged}
    # what it gets wrong, through the wire as through its parser: an unchanged TOASTed value
    # ('u') comes back as a value, a message's trailing bytes are not noticed
    reasons = {wire[k].reason for k in judged if wire[k].status == "failed"}
    assert any("new_tuple" in r and ".kind" in r for r in reasons)
    assert any("trailing-bytes" in r for r in reasons)
    assert client.sessions < len(judged) / 5
    # a case needing an option PgoutputPlugin cannot send is not put to it (not even with --discover)
    binary = next(c for c in CASES if c.context.get("binary") and c.error is None)
    sessions = client.sessions
    assert "cannot send the pgoutput option binary" in (client.run_batch([binary])[0].not_applicable or "")
    assert client.sessions == sessions


@pytest_clients
def test_conform_client_on_the_command_line(tmp_path: Path) -> None:
    if not RECVLOGICALS:
        pytest.skip("no pg_recvlogical found (Debian package postgresql-15, or the extra 'servers')")
    run = subprocess.run([sys.executable, "-m", "pgwire_spec", "conform", "--client", FIRST_RECVLOGICAL,
                          "--sources", "builtin,malformed", "--per-context", "1", "--only", "stream/",
                          "--only", "malformed/derived/truncated/proto1/", "--report", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "conforms to its profile" in run.stdout and "not applicable" in run.stdout
    assert "not applicable: pg_recvlogical writes" in (tmp_path / "report.html").read_text()
    assert "not applicable: pg_recvlogical writes" in (tmp_path / "junit.xml").read_text()
    assert json.loads((tmp_path / "index.json").read_text())["summary"]["not applicable"] > 0
    bad = subprocess.run([sys.executable, "-m", "pgwire_spec", "conform", "--decoder", "reference",
                          "--client-kind", "jsonl"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--client-kind goes with --client" in bad.stderr
    missing = subprocess.run([sys.executable, "-m", "pgwire_spec", "conform", "--client", "/nonexistent/x"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "not found" in missing.stderr and "Traceback" not in missing.stderr


@pytest_clients
def test_a_jsonl_client_in_its_own_shape_says_so_in_its_hello(tmp_path: Path) -> None:
    """Its hello names it, claims protocol 1 and carries its shape inline; its messages are
    mapped by that table, and the field it does not report (xid) is not compared."""
    cases = [c for c in CASES if c.id.startswith(("fixture/pg16/p1/", "fixture/pg16/p2-streaming/"))]
    adapter = WireAdapter(_psycopg2_client("native"))
    assert (adapter.name, adapter.version) == ("camel-client", "0.1")
    assert adapter.profile is not None and adapter.profile.protocol_versions == frozenset({1})
    assert adapter.shape is not None and adapter.unreported is not None and "xid" in adapter.unreported["Begin"]
    assert "Begin: final_lsn, commit_time (not reported: xid)" in adapter.shape.compared()
    result = run_cases(adapter, cases)
    assert result.ok and result.count("passed") > 200
    assert result.count("passed") + result.count("not claimed") == len(cases)  # protocol 2's: outside the claim
    claimed = run_cases(adapter, cases, profile=Profile.parse("all"))  # --claim overrides the hello
    assert claimed.ok and claimed.count("passed") == len(cases)
    # the same table from a file (--client-shape), for a client without a hello
    path = tmp_path / "camel.json"
    path.write_text(json.dumps(adapter.shape.to_json()))
    assert open_client(" ".join(_psycopg2_client("native")), shape=str(path)).shape == adapter.shape
    with pytest.raises(AdapterError, match="client shape: expected one of pg-logical-replication or a JSON file"):
        open_client(" ".join(_psycopg2_client("native")), shape=str(tmp_path / "none.json"))
