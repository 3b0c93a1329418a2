"""verify-fixtures: planted mismatches are reported with case id, byte offset and field
path; bad inputs are clear errors."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pgwire_spec.capture import FixtureError, read_fixture, verify_paths, write_fixture
from pgwire_spec.capture.verify import field_at

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PG16 = FIXTURES / "pg16-builtin.json.gz"


def _doc() -> dict:
    return json.loads(gzip.decompress(PG16.read_bytes()))


def _write(tmp_path: Path, doc: dict, name: str = "planted.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _find(doc: dict, group: str, tag: str) -> dict:
    g = next(g for g in doc["groups"] if g["name"] == group)
    return next(c for c in g["cases"] if c["tag"] == tag)


def test_a_flipped_byte_is_reported_with_id_offset_and_field(tmp_path: Path) -> None:
    doc = _doc()
    case = _find(doc, "p1", "I")
    data = bytearray.fromhex(case["hex"])
    # relation_id starts at offset 1 (no xid prefix outside a stream)
    data[4] ^= 0x01
    case["hex"] = data.hex()
    report = verify_paths([_write(tmp_path, doc)])
    bad = {m.check: m for m in report.mismatches if m.case_id == case["id"]}
    # the changed OID decodes, but not to the expected JSON; and no Relation describes it
    assert set(bad) == {"json", "sequence"}
    assert bad["json"].offset == 1 and bad["json"].field == "Insert.relation_id"
    assert "unknown-relation" in bad["sequence"].detail


def test_a_wrong_expected_value_is_reported_with_its_field_path(tmp_path: Path) -> None:
    doc = _doc()
    case = _find(doc, "p1", "I")
    case["expected"]["new_tuple"][1]["text"] = "not what the server sent"
    report = verify_paths([_write(tmp_path, doc)])
    assert len(report.mismatches) == 1
    m = report.mismatches[0]
    assert (m.case_id, m.check, m.field) == (case["id"], "json", "Insert.new_tuple[1].text")
    data = bytes.fromhex(case["hex"])
    # tag, relation_id, 'N', column count, then column 0 ('t', length 1, "1"): column 1 at 15
    assert m.offset == 1 + 4 + 1 + 2 + (1 + 4 + 1)
    assert field_at(data, m.offset) == "Insert.new_tuple[1].kind"


def test_a_truncated_payload_is_a_decode_mismatch(tmp_path: Path) -> None:
    doc = _doc()
    case = _find(doc, "p1", "R")
    case["hex"] = case["hex"][:20]
    report = verify_paths([_write(tmp_path, doc)], sequence=False)
    m = next(m for m in report.mismatches if m.case_id == case["id"])
    assert m.check == "decode" and m.offset is not None and m.field.startswith("Relation.")


def test_a_wrong_stream_context_is_reported(tmp_path: Path) -> None:
    doc = _doc()
    g = next(g for g in doc["groups"] if g["name"] == "p4-streaming")
    case = next(c for c in g["cases"] if c["in_stream"] and c["tag"] == "I")
    case["in_stream"] = False
    report = verify_paths([_write(tmp_path, doc)])
    checks = {m.check for m in report.mismatches if m.case_id == case["id"]}
    assert "context" in checks


def test_cli_prints_id_offset_field_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cli: Callable[..., int]) -> None:
    doc = _doc()
    case = _find(doc, "p2-streaming", "C")
    case["expected"]["end_lsn"] = "0/0"
    path = _write(tmp_path, doc)
    assert run_cli("verify-fixtures", str(path)) == 1
    out = capsys.readouterr().out
    assert f"{case['id']}: json mismatch (byte offset 10, field Commit.end_lsn)" in out
    assert "1 mismatch(es) in 1 case(s)" in out


def test_cli_passes_on_the_corpus(capsys: pytest.CaptureFixture[str], run_cli: Callable[..., int]) -> None:
    assert run_cli("verify-fixtures", str(FIXTURES)) == 0
    assert "all match" in capsys.readouterr().out


def test_cli_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cli: Callable[..., int]) -> None:
    assert run_cli("verify-fixtures", "--json", str(PG16)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["files"] == 1 and report["cases"] == len(read_fixture(PG16).cases)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize("content, message", [
    (b"{not json", "expected a fixture file (JSON, optionally gzip), found invalid data"),
    (b'{"format": "other"}', "expected format 'pgwire-spec/pgoutput-fixtures', found 'other'"),
    (b'{"format": "pgwire-spec/pgoutput-fixtures", "formatVersion": 1, "server": {"version": "16.1", "major": 16}, '
     b'"workload": "w", "groups": [{"name": "g", "options": {}, "context": {"protocol_version": 1}, '
     b'"cases": [{"id": "x"}]}]}', "groups[0].cases[0]: expected a field 'index', found none"),
    (gzip.compress(b"[]")[:-4], "found invalid data"),
    # a bit flipped inside the deflate stream (zlib.error, neither OSError nor ValueError)
    (_flip(gzip.compress(b'{"a": 1}' * 1000, mtime=0), 20), "found invalid data: Error -3 while decompressing"),
])
def test_corrupt_fixture_files_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cli: Callable[..., int],
                                                content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(FixtureError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        read_fixture(path)
    assert run_cli("verify-fixtures", str(path)) == 1
    err = capsys.readouterr().err
    assert err.startswith("pgwire-spec verify-fixtures: error:") and "Traceback" not in err


def test_missing_paths_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cli: Callable[..., int]) -> None:
    assert run_cli("verify-fixtures", str(tmp_path / "nope.json")) == 1
    assert f"fixture path {tmp_path / 'nope.json'} does not exist" in capsys.readouterr().err
    assert run_cli("verify-fixtures", str(tmp_path)) == 1
    assert "expected fixture files" in capsys.readouterr().err


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    fx = read_fixture(PG16)
    for name in ("copy.json", "copy.json.gz"):
        path = write_fixture(fx, tmp_path / name)
        again = read_fixture(path)
        assert again.groups == fx.groups and again.notes == fx.notes
        assert verify_paths([path]).ok
    # the same capture gives the same bytes (no gzip timestamp)
    assert write_fixture(fx, tmp_path / "a.json.gz").read_bytes() == write_fixture(fx, tmp_path / "b.json.gz").read_bytes()
    assert write_fixture(fx, tmp_path / "c.json.gz").read_bytes() == PG16.read_bytes()


def test_the_schema_accepts_the_corpus_and_rejects_a_broken_case() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((FIXTURES.parent / "spec" / "fixtures.schema.json").read_text())
    doc = _doc()
    jsonschema.validate(doc, schema)
    doc["groups"][0]["cases"][0]["hex"] = "zz"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_fixture_documents_read_as_the_standard_library_reads_them(tmp_path: Path) -> None:
    from pgwire_spec.capture.fixture import load_document

    # the fast parser's document is the standard library's, value for value
    assert load_document(PG16) == _doc()
    # what only the standard library accepts is still read: a lone surrogate escape in a
    # value, a byte order mark before the document
    doc = _doc()
    _find(doc, doc["groups"][0]["name"], "I")["expected"]["note"] = "\ud800"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(doc))
    assert load_document(path)["groups"][0]["cases"] == doc["groups"][0]["cases"]
    path.write_bytes(b"\xef\xbb\xbf{}")
    assert load_document(path) == {}
    # an integer beyond 64 bits, a number beyond a double, a key given twice: their values
    text = b'{"big": 1180591620717411303424, "huge": 1e400, "twice": 1, "twice": [2]}'
    path.write_bytes(text)
    assert load_document(path) == json.loads(text) and type(load_document(path)["big"]) is int
    path.write_bytes(b'{"format": NaN, "x": [1,}')
    with pytest.raises(FixtureError, match="expected a fixture file .* found invalid data: Expecting value"):
        load_document(path)


def test_verifying_imports_no_capture_or_server_code() -> None:
    # verify-fixtures starts without psycopg (capture, the providers): a user's run pays
    # only for what the checks use
    import subprocess
    import sys

    code = ("import sys, pgwire_spec.cli.verify_fixtures as v; from pgwire_spec.cli import build_parser; "
            "build_parser('verify-fixtures'); print(sorted(m for m in sys.modules if m.startswith('psycopg')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _repeated_payload(doc: dict) -> list[dict]:
    """Every case, over the file's groups, of one Insert payload that several option sets
    recorded (same bytes, outside a streamed block, no parallel streaming)."""
    seen: dict[str, list[dict]] = {}
    for g in doc["groups"]:
        if g["context"].get("streaming") == "parallel":
            continue
        for c in g["cases"]:
            if c["tag"] == "I" and not c["in_stream"]:
                seen.setdefault(c["hex"], []).append(c)
    return max(seen.values(), key=len)


@pytest.mark.parametrize("which", [0, -1], ids=["first-seen", "last-seen"])
def test_a_payload_checked_once_per_run_still_compares_every_case(tmp_path: Path, which: int) -> None:
    # A payload recorded by several option sets is decoded, re-encoded and put in JSON form
    # once per run; each of its cases is still compared with that form: a wrong expected
    # value is found in the case that holds it, whether it comes first or last, and in
    # no other case.
    doc = _doc()
    cases = _repeated_payload(doc)
    assert len(cases) > 3
    planted = cases[which]
    planted["expected"]["new_tuple"][1]["text"] = "not what the server sent"
    report = verify_paths([_write(tmp_path, doc)])
    assert [(m.case_id, m.check, m.field) for m in report.mismatches] == [
        (planted["id"], "json", "Insert.new_tuple[1].text")]
    # the bytes, too, are checked for each case: a flipped byte in one copy is found there
    doc = _doc()
    cases = _repeated_payload(doc)
    data = bytearray.fromhex(cases[which]["hex"])
    data[-1] ^= 0x01
    cases[which]["hex"] = data.hex()
    report = verify_paths([_write(tmp_path, doc)], sequence=False)
    assert {m.case_id for m in report.mismatches} == {cases[which]["id"]}


def test_gzip_files_read_as_the_standard_library_reads_them(tmp_path: Path) -> None:
    from pgwire_spec.capture.fixture import load_document

    # two gzip members (the standard library reads on after the first), trailing garbage
    text = json.dumps({"a": [1, 2]}).encode()
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(text[:5]) + gzip.compress(text[5:]))
    assert load_document(path) == {"a": [1, 2]}
    path.write_bytes(gzip.compress(text) + b"junk")
    with pytest.raises(FixtureError, match="found invalid data: Not a gzipped file"):
        load_document(path)


def test_fixture_files_read_typed_as_parse_fixture_reads_them(tmp_path: Path) -> None:
    pytest.importorskip("msgspec", reason="the typed reading needs msgspec (a base dependency on CPython)")
    from pgwire_spec.capture import FixtureFile
    from pgwire_spec.capture.fixture import load_document, load_fixture_or_document, parse_fixture

    # msgspec reads a file straight into its cases: the same FixtureFile as parse_fixture's
    typed = load_fixture_or_document(PG16)
    assert isinstance(typed, FixtureFile) and typed == parse_fixture(load_document(PG16), PG16)
    doc = _doc()
    del doc["groups"][0]["captured"], doc["notes"]  # defaults
    path = _write(tmp_path, doc)
    assert isinstance(load_fixture_or_document(path), FixtureFile)
    assert read_fixture(path) == parse_fixture(load_document(path), path)
    # what it does not take as typed (converted by parse_fixture), parse_fixture reads
    doc["groups"][0]["slot"] = 7
    doc["groups"][0]["cases"][0]["flags"] = None
    path = _write(tmp_path, doc)
    assert not isinstance(load_fixture_or_document(path), FixtureFile)
    fx = read_fixture(path)
    assert fx == parse_fixture(load_document(path), path)
    assert fx.groups[0].slot == "7" and fx.groups[0].cases[0].flags == ()


def test_expected_text_is_compared_by_value_and_must_be_an_object(tmp_path: Path) -> None:
    # The verifier reads each case's expected JSON as text and compares it with a text
    # already found equal to the payload's JSON form; a text that differs (keys in another
    # order, other spacing) is still compared by value, and one that is not a JSON object
    # is the error reading the file would give, even in a case whose hex is not hex.
    def _small() -> dict:  # a few option sets: enough for payloads seen several times
        doc = _doc()
        doc["groups"] = [g for g in doc["groups"] if g["context"].get("streaming") != "parallel"][:4]
        return doc

    doc = _small()
    cases = _repeated_payload(doc)
    assert len(cases) > 2
    cases[-1]["expected"] = dict(reversed(list(cases[-1]["expected"].items())))
    path = _write(tmp_path, doc)
    path.write_text(path.read_text().replace('"new_tuple": [', '"new_tuple" :[\n', 1))
    assert verify_paths([path]).ok
    from pgwire_spec.capture.fixture import load_document, parse_fixture

    for which in (0, -1):
        doc = _small()
        cases = _repeated_payload(doc)
        cases[which]["expected"] = [cases[which]["expected"]]
        cases[which]["hex"] = "zz"
        path = _write(tmp_path, doc)
        with pytest.raises(FixtureError) as parsing:
            parse_fixture(load_document(path), path)
        assert ".expected: expected dict, found list" in str(parsing.value)
        with pytest.raises(FixtureError) as verifying:
            verify_paths([path])
        assert str(verifying.value) == str(parsing.value)
    # in a group whose context no decoder takes (its cases are not decoded) too
    doc = _small()
    doc["groups"][0]["context"]["protocol_version"] = 99
    assert [m.check for m in verify_paths([_write(tmp_path, doc)]).mismatches] == ["format"]
    doc["groups"][0]["cases"][-1]["expected"] = 7
    with pytest.raises(FixtureError, match=r"cases\[\d+\]\.expected: expected dict, found int"):
        verify_paths([_write(tmp_path, doc)])


def test_the_command_as_its_own_process_reports_as_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              run_cli: Callable[..., int]) -> None:
    # From the shell the command owns its process and tunes it for the run (the allocator):
    # the same report as main() called in a process it does not own, a planted mismatch included
    import os
    import subprocess
    import sys

    doc = _doc()
    doc["groups"] = doc["groups"][:3]
    _find(doc, doc["groups"][1]["name"], "I")["expected"]["new_tuple"][1]["text"] = "planted"
    path = _write(tmp_path, doc)
    sessions = FIXTURES / "sessions" / "pg16-session-p4-parallel-messages.json.gz"
    assert run_cli("verify-fixtures", "--json", str(path), str(sessions)) == 1
    inside = json.loads(capsys.readouterr().out)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "verify-fixtures", "--json", str(path), str(sessions)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stderr
    outside = json.loads(proc.stdout)
    del inside["seconds"], outside["seconds"]
    assert outside == inside and [m["field"] for m in inside["mismatches"]] == ["Insert.new_tuple[1].text"]
