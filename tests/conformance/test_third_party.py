"""Real third-party decoders through their shipped adapters: pypgoutput (PyPI) and the npm
package pg-logical-replication (its pgoutput parser in Node, installed into a cache dir by
the adapter). The reference decoder, run on the same cases, is the control: it passes them
all, so every failure below is the third-party decoder's."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from pgwire_spec.conformance import Profile, defects, open_decoder, run_cases
from pgwire_spec.conformance.cases import builtin_cases, derived_malformed_cases, fixture_cases
from pgwire_spec.corpus.load import fixtures_root

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]


def _cases() -> list[Any]:
    cases = builtin_cases() + [c for c in derived_malformed_cases() if "/proto1/" in c.id]
    root = fixtures_root()
    if root is not None:
        fx = fixture_cases(root / "pg16-builtin.json.gz")
        cases += [c for c in fx if c.id.startswith(("fixture/pg16/p1/", "fixture/pg16/p1-binary/"))]
    return cases


CASES = _cases()


def _verdicts(name: str) -> dict[str, Any]:
    """Every case, whatever the decoder claims: the facts below include what it lacks."""
    with open_decoder(name, timeout=1.0) as adapter:
        result = run_cases(adapter, CASES, strict=True, profile=Profile())
    return {v.case.id: v for v in result.verdicts}


def _declared(name: str) -> Any:
    with open_decoder(name, timeout=1.0) as adapter:
        return run_cases(adapter, CASES, strict=True)


def test_the_reference_passes_every_case_the_others_are_judged_on() -> None:
    verdicts = _verdicts("reference")
    assert {v.status for v in verdicts.values()} == {"passed"}


def test_pypgoutput_gaps_are_reported_as_facts() -> None:
    pytest.importorskip("pypgoutput", reason="pypgoutput is not installed (pip install -e .[test])")
    v = _verdicts("pypgoutput")
    # what it knows, it decodes: text Inserts of protocol 1 pass
    text_inserts = [x for k, x in v.items() if k.startswith("fixture/pg16/p1/") and x.case.description.startswith("Insert")]
    assert text_inserts and sum(x.status == "passed" for x in text_inserts) > 0.9 * len(text_inserts)
    # no Origin, Type, logical message or streaming messages
    assert "no decoder for tag b'O'" in v["stream/builtin/proto1"].reason
    assert "no decoder for tag b'S'" in v["stream/builtin/proto2-streaming"].reason
    # truncated and padded input accepted
    assert v["malformed/derived/truncated/proto1/Commit-cut-10"].reason.startswith("accepted message #1")
    assert v["malformed/derived/trailing-bytes/proto1/Commit-trailing"].status == "failed"
    # a String without its NUL: it reads on forever
    assert any("timeout" in x.reason for x in v.values())
    # 'b' values are skipped without reading them: the tuple comes out short
    if any(k.startswith("fixture/pg16/p1-binary/") for k in v):
        assert any("new_tuple (" in x.reason and "items expected" in x.reason
                   for k, x in v.items() if k.startswith("fixture/pg16/p1-binary/"))


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_pg_logical_replication_gaps_are_reported_as_facts() -> None:
    v = _verdicts("pg-logical-replication")
    p1 = [x for k, x in v.items() if k.startswith("fixture/pg16/p1/")]
    assert p1 and sum(x.status == "passed" for x in p1) > 0.9 * len(p1)
    # no streaming (protocol >= 2) and no two-phase messages
    assert "unknown pgoutput message" in v["stream/builtin/proto2-streaming"].reason
    assert "unknown pgoutput message" in v["stream/builtin/proto3-two-phase"].reason
    # it checks lengths (truncation is rejected) but not the end of a message
    assert v["malformed/derived/truncated/proto1/Commit-cut-10"].status == "passed"
    assert v["malformed/derived/trailing-bytes/proto1/Commit-trailing"].reason.startswith("accepted")


def test_pypgoutput_per_profile_defects() -> None:
    pytest.importorskip("pypgoutput", reason="pypgoutput is not installed (pip install -e .[test])")
    result = _declared("pypgoutput")
    assert result.profile.label() == "protocol 1, text, message level" and result.profile_source == "declared"
    # streaming, binary and the sequence rules are not claimed, so not failures
    assert result.count("not claimed") > 0
    assert all(v.needs.protocol_version == 1 and not v.needs.binary for v in result.verdicts if v.claimed)
    titles = {d.title for d in defects(v for v in result.verdicts if v.claimed)}
    assert "Commit: trailing-bytes not detected (accepted)" in titles
    assert any(t.startswith("Type: valid message rejected") for t in titles)


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_pg_logical_replication_per_profile_defects() -> None:
    result = _declared("pg-logical-replication")
    assert result.profile.label() == "protocol 1, binary, logical messages, origin, message level"
    titles = {d.title for d in defects(v for v in result.verdicts if v.claimed)}
    assert "Commit: trailing-bytes not detected (accepted)" in titles
