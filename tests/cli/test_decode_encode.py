"""pgwire-spec decode / encode: formats, errors without tracebacks, round trips."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from pgwire_spec import RollbackPrepared, StandbyStatusUpdate, XLogData, encode, from_json
from pgwire_spec.cli import main
from tests.pgoutput.vectors import VECTORS

PROTO1 = [v for v in VECTORS if v.protocol_version == 1 and not v.in_stream]


def stream_hex() -> list[str]:
    by_name = {v.name: v for v in VECTORS}
    order = ["begin", "relation", "insert", "update-key", "delete-key", "commit"]
    return [by_name[n].data.hex() for n in order]


def test_decode_hex_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.hex"
    f.write_text("# a comment\n" + "\n".join(stream_hex()) + "\n")
    assert main(["decode", str(f)]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["type"] for x in lines] == ["Begin", "Relation", "Insert", "Update", "Delete", "Commit"]
    assert err == ""


def test_decode_lenient_reports_violations_as_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.hex"
    f.write_text("\n".join(stream_hex()[1:]) + "\n")  # no Begin
    assert main(["decode", str(f)]) == 1
    assert main(["decode", str(f), "--lenient"]) == 0
    out, err = capsys.readouterr()
    assert "warning: unexpected-message" in err


def test_decode_raw_copydata_frames(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_name = {v.name: v for v in VECTORS}
    payloads = [by_name["begin"].message, by_name["relation"].message, by_name["insert"].message]
    frames = b""
    for m in payloads:
        body = encode(XLogData(0, 0, 1, encode(m)))
        frames += b"d" + struct.pack(">i", len(body) + 4) + body
    frames += b"c\x00\x00\x00\x04"  # CopyDone is skipped
    f = tmp_path / "s.bin"
    f.write_bytes(frames)
    assert main(["decode", "--format", "raw", str(f)]) == 1  # the stream ends inside a transaction
    out, err = capsys.readouterr()
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["message"]["type"] for x in lines] == ["Begin", "Relation", "Insert"]
    assert "unterminated-transaction" in err


def test_decode_rollback_prepared_is_pgoutput_not_a_status_update(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'r' is also a standby status update's tag: the layer is given, never guessed.
    f = tmp_path / "rp.hex"
    f.write_text(encode(RollbackPrepared(0, 0x10, 0x20, 1, 2, 777, "gid-1")).hex() + "\n")
    assert main(["decode", "--protocol-version", "3", "--two-phase", str(f)]) == 0
    out, err = capsys.readouterr()
    (obj,) = [json.loads(x) for x in out.splitlines()]
    assert obj["type"] == "RollbackPrepared" and obj["gid"] == "gid-1" and obj["xid"] == 777
    assert err == ""


def test_decode_copydata_layer_reads_replication_payloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    begin = {v.name: v for v in VECTORS}["begin"].message
    f = tmp_path / "c.hex"
    f.write_text("\n".join([
        encode(StandbyStatusUpdate(1, 2, 3, 4, False)).hex(),
        encode(XLogData(0, 0, 1, encode(begin))).hex(),
    ]) + "\n")
    assert main(["decode", "--layer", "copydata", str(f)]) == 1  # ends inside a transaction
    out, err = capsys.readouterr()
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["type"] for x in lines] == ["StandbyStatusUpdate", "XLogData"]
    assert lines[1]["message"]["type"] == "Begin"
    assert "unterminated-transaction" in err


def test_decode_wire_layer_reads_every_v3_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pgwire_spec.wire import CopyBothResponse, CopyData, CopyDone, encode_message

    body = encode(XLogData(0, 0, 1, b"x"))
    f = tmp_path / "w.bin"
    f.write_bytes(
        encode_message(CopyBothResponse(0, ())) + encode_message(CopyData(body)) + encode_message(CopyDone())
    )
    assert main(["decode", "--format", "raw", "--layer", "wire", str(f)]) == 0
    out, _ = capsys.readouterr()
    assert [json.loads(x)["type"] for x in out.splitlines()] == ["CopyBothResponse", "CopyData", "CopyDone"]


def test_decode_raw_stream_cut_inside_a_message_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.bin"
    f.write_bytes(b"d\x00\x00\x00\x10abc")
    assert main(["decode", "--format", "raw", str(f)]) == 1
    _, err = capsys.readouterr()
    assert "truncated" in err and "Traceback" not in err


def test_decode_wire_layer_needs_a_raw_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.hex"
    f.write_text("00\n")
    assert main(["decode", "--layer", "wire", str(f)]) == 2
    assert "--format raw" in capsys.readouterr().err


def test_decode_error_names_index_offset_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.hex"
    f.write_text(stream_hex()[0] + "\n" + "49000040004e00027400000009" + "\n")
    assert main(["decode", str(f)]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1  # what decoded before the error is kept
    detail = json.loads(err.splitlines()[-1])["error"]
    assert detail == {"rule": "length-out-of-range", "expected": "a length from 0 to 0", "found": "9",
                      "offset": 9, "field": "Insert.new_tuple[0].length", "tag": "I", "index": 1}


def test_decode_rejects_non_hex_without_traceback(tmp_path: Path) -> None:
    f = tmp_path / "bad.hex"
    f.write_text("zz\n")
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "decode", str(f)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "expected a line of hex digits" in proc.stderr


def test_missing_file_is_a_clear_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "decode", "/nonexistent/x.hex"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "No such file" in proc.stderr


def test_encode_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pgwire_spec import to_json

    f = tmp_path / "m.jsonl"
    f.write_text("".join(json.dumps(to_json(v.message)) + "\n" for v in VECTORS))
    assert main(["encode", str(f)]) == 0
    out = capsys.readouterr().out.split()
    assert out == [v.data.hex() for v in VECTORS]


def test_encode_bad_json_names_the_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "m.jsonl"
    f.write_text('{"type": "Begin", "final_lsn": "0/1", "commit_time": 1}\n')
    assert main(["encode", str(f)]) == 1
    err = capsys.readouterr().err
    assert "line 1" in err and "xid" in err


def test_help_for_every_command() -> None:
    from pgwire_spec.cli import COMMANDS

    for name in COMMANDS:
        proc = subprocess.run([sys.executable, "-m", "pgwire_spec", name, "--help"], capture_output=True, text=True)
        assert proc.returncode == 0, (name, proc.stderr)
        assert "usage: pgwire-spec " + name in proc.stdout


def test_from_json_rejects_unknown_types() -> None:
    from pgwire_spec import DecodeError

    with pytest.raises(DecodeError) as info:
        from_json({"type": "Nope"})
    assert info.value.rule == "invalid-json"


def test_a_folder_or_a_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    for args, said in ((["decode", str(tmp_path)], "Is a directory"), (["encode", str(tmp_path / "nope")], "No such file")):
        proc = subprocess.run([sys.executable, "-m", "pgwire_spec", *args], capture_output=True, text=True)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and said in proc.stderr and str(tmp_path) in proc.stderr


def test_every_option_of_every_command_has_help() -> None:
    import argparse

    from pgwire_spec.cli import COMMANDS, build_parser

    for name in COMMANDS:
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        bare = [a.option_strings or [a.dest] for a in sub._actions if not a.help and a.help is not argparse.SUPPRESS]
        assert not bare, (name, bare)


def test_verify_fixtures_from_a_sub_folder_finds_the_corpus() -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "verify-fixtures", "--no-sequence"],
                          capture_output=True, text=True, cwd=root / "tests" / "cli",
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert f"corpus: {root / 'fixtures'} (checkout)" in proc.stderr and "all match" in proc.stdout
