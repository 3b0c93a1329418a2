"""Findings: merged by signature, minimised, written in the fixtures format, replayed by id."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec import encode
from pgwire_spec.capture.fixture import read_fixture
from pgwire_spec.cli import main
from pgwire_spec.fuzz.findings import (
    ReplayError,
    merge_findings,
    minimise,
    read_regression,
    replay,
    write_regression,
)
from pgwire_spec.fuzz.oracles import ReferenceOracle
from pgwire_spec.fuzz.shards import Campaign, Finding, ShardResult
from pgwire_spec.pgoutput import _codec
from pgwire_spec.pgoutput.messages import Begin, Commit, Insert, Relation, RelationColumn


def _planted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder bug: any Insert whose tuple holds the text 'boom' crashes."""
    real = _codec.FAMILY.decoders[ord("I")]

    def planted(data: bytes, *args: Any) -> Any:
        if b"boom" in data:
            raise AttributeError("planted")
        return real(data, *args)

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("I"), planted)
    # the stream decoder takes the C path first when it is built: plant it there too
    monkeypatch.setitem(_codec._DECODERS, ord("I"), planted)


def _finding(payloads: tuple[bytes, ...], kind: str = "payload", ctx: dict[str, Any] | None = None) -> Finding:
    oracle = ReferenceOracle()
    case = ("p", payloads[0], False, False, ()) if kind == "payload" else ("s", ctx, payloads, ())
    from pgwire_spec.fuzz.shards import check_case

    sig, name, detail = check_case(oracle, case)
    return Finding(sig, name, detail, "mutate", "reference", 0, 0, kind,
                   {"in_stream": False, "abort_tail": False} if kind == "payload" else dict(ctx or {}), payloads)


def test_merge_counts_each_signature_once() -> None:
    f = Finding("a", "exception", "", "mutate", "reference", 0, 1, "payload", {}, (b"x",))
    g = replace(f, signature="b", shard=1)
    r0 = ShardResult(0, "mutate", 1, findings=(f,))
    r1 = ShardResult(1, "mutate", 2, findings=(replace(f, shard=1, count=3), g))
    merged = merge_findings([r1, r0])
    assert [(x.signature, x.count, x.shard) for x in merged] == [("a", 4, 0), ("b", 1, 1)]


def test_minimise_a_payload_keeps_the_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    _planted(monkeypatch)
    big = encode(Insert(None, 16384, ("aaaaaaaaaaaaaaa", "xx boom yy", None, "1234567890")))
    f = _finding((big,))
    small = minimise(f, ReferenceOracle())
    assert small.minimised is not None
    (data,) = small.minimised
    assert b"boom" in data and len(data) < len(big) // 2
    assert ReferenceOracle().check_payload(data, False, False)[0] == f.signature


def test_minimise_a_stream_drops_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    _planted(monkeypatch)
    rel = Relation(None, 1, "public", "t", "d", (RelationColumn(1, "a", 25, -1),))
    payloads = tuple(encode(m) for m in (Begin(1, 0, 5), rel, Insert(None, 1, ("fine",)), Insert(None, 1, ("boom",)),
                                         Commit(0, 1, 2, 0)))
    ctx = {"protocol_version": 1, "streaming": "off", "two_phase": False, "binary": False, "messages": False}
    f = _finding(payloads, "stream", ctx)
    small = minimise(f, ReferenceOracle())
    assert small.minimised is not None and len(small.minimised) < len(payloads)


def test_regression_fixture_is_in_the_fixture_format_and_replays(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _planted(monkeypatch)
    f = minimise(_finding((encode(Insert(None, 7, ("boom",))),)), ReferenceOracle())
    path = write_regression(f, tmp_path / "findings", Campaign(name="t"))
    assert path.name == f"{f.id}.json"
    fx = read_fixture(path)  # the golden fixtures' own reader accepts it
    assert fx.provider == "fuzz" and fx.groups[0].cases[0].flags == ("fuzz-finding", "oracle-exception")
    assert fx.notes["signature"] == f.signature
    back, where = read_regression(f.id, [tmp_path])
    assert where == path and back.signature == f.signature and back.payloads == f.minimised
    assert replay(back, say=lambda m: None) is True
    assert main(["fuzz", "--replay", f.id, "--out", str(tmp_path)]) == 1
    assert "still fails (same signature)" in capsys.readouterr().out
    monkeypatch.undo()  # the bug fixed
    assert main(["fuzz", "--replay", f.id, "--out", str(tmp_path)]) == 0
    assert "passes now" in capsys.readouterr().out


def test_replay_of_an_unknown_id_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ReplayError, match="no regression fixture"):
        read_regression("Fdeadbeef00", [tmp_path])
    assert main(["fuzz", "--replay", "Fdeadbeef00", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no regression fixture for 'Fdeadbeef00'" in err and "Traceback" not in err
