"""The findings of the fuzz campaigns against pypgoutput and pg-logical-replication
(``fuzz/findings/<decoder>/``): one minimised regression fixture per root cause, with that
cause in one line. Each still fails, with its signature, against the pinned version of its
decoder replayed through the shipped adapter; the reference's recorded answer is still the
reference's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pgwire_spec.capture.fixture import read_fixture
from pgwire_spec.conformance.adapters import open_decoder
from pgwire_spec.conformance.adapters.reference import decode_case as reference
from pgwire_spec.fuzz.findings import read_regression
from pgwire_spec.fuzz.oracles import DifferentialOracle
from pgwire_spec.fuzz.shards import finding_id

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

FINDINGS = Path(__file__).resolve().parents[2] / "fuzz" / "findings"
TARGETS = ("pypgoutput", "pg-logical-replication")


def _files(target: str) -> list[Path]:
    return sorted((FINDINGS / target).glob("F*.json"))


def test_each_finding_is_a_minimised_fixture_with_its_root_cause() -> None:
    for target in TARGETS:
        files = _files(target)
        assert len(files) >= 8, f"{target}: {len(files)} findings"
        causes = set()
        for path in files:
            fx = read_fixture(path)
            f, _ = read_regression(str(path), [])
            assert f.id == path.stem == finding_id(f.signature)
            assert f.target == target and f.kind == "stream"
            cause = fx.notes["root-cause"]
            assert cause and "\n" not in cause and len(cause) < 300
            causes.add(cause)
            # the recorded answer of the reference is today's
            ref = reference(f.context, f.payloads)
            recorded = [c.expected for c in fx.groups[0].cases]
            assert [r.get("message", "error") for r in ref][:len(recorded)] == \
                   [e if "error" not in e and "not-reached" not in e else "error" for e in recorded][:len(ref)]
        assert len(causes) == len(files)  # one fixture per root cause


def _still_fails(target: str) -> None:
    with open_decoder(target, timeout=1.0) as adapter:
        oracle = DifferentialOracle(adapter)
        for path in _files(target):
            f, _ = read_regression(str(path), [])
            got = oracle.check_stream(f.context, f.payloads)
            assert got is not None and got[0] == f.signature, (path.name, f.signature, got)


def test_the_pypgoutput_findings_still_fail() -> None:
    pytest.importorskip("pypgoutput", reason="pypgoutput is not installed (pip install -e .[test])")
    _still_fails("pypgoutput")


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_the_pg_logical_replication_findings_still_fail() -> None:
    _still_fails("pg-logical-replication")
