"""Capability profiles: what a case needs, what a decoder claims, per-profile verdicts.

The limited decoder below is what the issue describes: protocol 1, text values only, a
stateless decoder of one payload (message level). It passes its profile; the same decoder
with one planted message-level bug (a Commit's trailing bytes ignored) fails it, and the
bug is named once."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.cli import main
from pgwire_spec.conformance import (
    FunctionAdapter,
    Profile,
    ProfileError,
    SubprocessAdapter,
    capability_rows,
    defects,
    discover,
    print_summary,
    run_cases,
)
from pgwire_spec.conformance.adapters.reference import decode_case as reference
from pgwire_spec.conformance.cases import builtin_cases, derived_malformed_cases, fixture_cases
from pgwire_spec.corpus.load import fixtures_root
from tests.conformance._limited_decoder import PROFILE, limited, planted

LIMITED = PROFILE


def _cases() -> list[Any]:
    cases = builtin_cases() + derived_malformed_cases()
    root = fixtures_root()
    if root is not None:  # real p1 text and p1 binary messages of PostgreSQL 16
        fx = fixture_cases(root / "pg16-builtin.json.gz")
        cases += [c for c in fx if c.id.startswith(("fixture/pg16/p1/", "fixture/pg16/p1-binary/"))]
    return cases


CASES = _cases()


def test_what_a_case_needs_comes_from_its_context_messages_and_rule() -> None:
    by_id = {c.id: c for c in CASES}
    assert by_id["stream/builtin/proto1"].needs.capabilities() == ("origin",)  # the stream has an Origin
    streamed = by_id["stream/builtin/proto2-streaming"].needs
    assert streamed.protocol_version == 2 and streamed.streaming == "on" and streamed.messages
    assert by_id["stream/builtin/proto3-two-phase"].needs.two_phase
    bytes_rule = by_id["malformed/derived/trailing-bytes/proto1/Commit-trailing"].needs
    assert bytes_rule.level == "message" and bytes_rule.capabilities() == ("protocol 1",)
    seq = next(c for c in CASES if c.error is not None and c.error.rule == "unexpected-message").needs
    assert seq.level == "stream"
    binary = next(c for c in CASES if c.id.startswith("fixture/pg16/p1-binary/") and c.description.startswith("Insert"))
    assert binary.needs.binary and "binary" in binary.needs.capabilities()


def test_profile_forms_and_errors() -> None:
    p = Profile.parse("protocol=1,2 streaming=on binary=yes level=message")
    assert p.protocol_versions == {1, 2} and p.streaming == "on" and p.binary and not p.messages
    assert Profile.parse(p.spec()) == p and Profile.from_json(p.to_json()) == p
    assert Profile.parse("all") == Profile() and Profile.parse("protocol=1-4").protocol_versions == {1, 2, 3, 4}
    assert Profile.from_json(LIMITED).label() == "protocol 1, text, message level"
    for bad, says in [("protocol=5", "expected some of 1, 2, 3, 4"), ("streaming=maybe", "off, on or parallel"),
                      ("binary=perhaps", "expected yes or no"), ("colour=red", "unknown capability"),
                      ("binary", "KEY=VALUE")]:
        with pytest.raises(ProfileError, match=says):
            Profile.parse(bad)
    with pytest.raises(ProfileError, match="unknown profile key 'stream'"):
        Profile.from_json({"stream": True})


def test_the_limited_decoder_conforms_to_its_profile() -> None:
    result = run_cases(FunctionAdapter(limited, name="limited"), CASES, strict=True)
    assert result.profile == Profile.from_json(LIMITED) and result.declared == result.profile
    assert result.ok, [v.reason for v in result.verdicts if v.status == "failed"][:5]
    assert result.count("passed") > 200 and result.count("failed") == 0
    # everything else is "not claimed", never a failure: streaming, binary, sequence rules
    assert result.count("not claimed") > 0
    rows = {r.name: r for r in capability_rows(result)}
    assert rows["protocol 1"].status == "conforms" and rows["protocol 1"].passed == rows["protocol 1"].judged
    for name in ("streaming on", "binary", "stream level", "origin"):
        assert rows[name].status == "not claimed", name
    out = io.StringIO()
    print_summary(result, out)
    text = out.getvalue()
    assert "profile: protocol 1, text, message level (declared by the decoder)" in text
    assert "conforms to its profile" in text and "defects" not in text


def test_one_planted_message_level_bug_fails_the_profile_and_is_named_once() -> None:
    result = run_cases(FunctionAdapter(planted, name="planted"), CASES, strict=True)
    assert not result.ok and result.count("failed") >= 1
    found = defects(v for v in result.verdicts if v.claimed)
    assert [d.title for d in found] == ["Commit: trailing-bytes not detected (accepted)"]
    assert found[0].example.case.id.startswith("malformed/derived/trailing-bytes/")
    out = io.StringIO()
    print_summary(result, out)
    text = out.getvalue()
    assert text.count("Commit: trailing-bytes not detected") == 1
    assert "does not conform to its profile (protocol 1, text, message level)" in text


def test_discovery_runs_everything_and_proposes_the_largest_profile() -> None:
    # claimed everything (no profile), run outside the claim too: what does it pass?
    result = run_cases(FunctionAdapter(lambda c, p: limited(c, p) if c.get("protocol_version") == 1
                                       and not c.get("binary") else reference(c, p), name="mixed"),
                       CASES, strict=True, profile=Profile.from_json(LIMITED), run_all=True)
    found = discover(result)
    # it decodes everything through the reference except protocol 1's sequence rules
    assert found is not None and found.level == "message"
    assert 1 in found.protocol_versions and found.binary and found.streaming == "parallel"
    rows = {r.name: r for r in capability_rows(result)}
    assert rows["binary"].status == "not claimed" and rows["binary"].outside_passed > 0


def test_skip_is_the_same_in_process_and_out_of_process(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "stream/builtin/proto4-parallel")
    claim = Profile()  # claim everything, so the decoder's own skip is what shows
    in_proc = run_cases(FunctionAdapter(limited, name="limited"), [case], profile=claim)
    script = Path(__file__).with_name("_limited_decoder.py")
    with SubprocessAdapter([sys.executable, str(script)]) as adapter:
        assert adapter.profile == Profile.from_json(LIMITED)  # from the hello
        out_proc = run_cases(adapter, [case], profile=claim)
    for result in (in_proc, out_proc):
        (v,) = result.verdicts
        assert v.status == "skipped" and v.reason == "skipped by the decoder: only protocol 1 with text values"
        assert not result.ok  # a claimed MUST case skipped: the claim is larger than the decoder


def test_cli_claim_and_discover(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    name = "tests.conformance._limited_decoder:planted"
    assert main(["conform", "--decoder", name, "--sources", "builtin,malformed", "--per-context", "2", "--strict",
                 "--report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "Commit: trailing-bytes not detected (accepted)" in out
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["profile"]["label"] == "protocol 1, text, message level"
    assert [d["kind"] for d in index["defects"]] == ["Commit"]
    assert index["defects"][0]["example"]["payloads"]
    html = (tmp_path / "report.html").read_text()
    assert "Profile: protocol 1, text, message level" in html and "<td class=\"k\">stream level</td>" in html
    # --claim overrides the declared profile; a claim larger than the decoder fails
    assert main(["conform", "--decoder", "tests.conformance._limited_decoder:limited", "--sources", "builtin,malformed", "--per-context", "2",
                 "--claim", "protocol=1 level=message"]) == 0
    assert "claimed on the command line" in capsys.readouterr().out
    assert main(["conform", "--decoder", "tests.conformance._limited_decoder:limited", "--sources", "builtin,malformed", "--per-context", "2",
                 "--claim", "protocol=1,2 streaming=on binary=yes messages=yes origin=yes level=message"]) == 1
    assert "skipped by the decoder: only protocol 1" in capsys.readouterr().out
    assert main(["conform", "--decoder", "tests.conformance._limited_decoder:limited", "--sources", "builtin,malformed", "--per-context", "2",
                 "--discover"]) == 0
    out = capsys.readouterr().out
    # it decodes logical messages and Origin too, though it does not claim them
    assert ("discovered: the largest profile it conforms to is protocol 1, text, logical messages, origin, "
            "message level") in out
    assert main(["conform", "--decoder", "reference", "--claim", "protocol=9"]) == 2
    assert "expected some of 1, 2, 3, 4" in capsys.readouterr().err
