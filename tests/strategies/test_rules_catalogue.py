"""spec/rules.yaml, the decoder and the strategies say the same thing: every rule the
reference decoder, the generated codec and the walsender checker can raise is catalogued,
and every violation the strategies apply is described with the rules it can give."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from hypothesis import given

from pgwire_spec.strategies import VIOLATIONS, MalformedStream, malformed_streams
from tests.strategies._common import fast

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = yaml.safe_load((ROOT / "spec" / "rules.yaml").read_text())
RULES = CATALOGUE["rules"]
DESCRIBED = CATALOGUE["violations"]

# Where the pgoutput and walsender rules are raised.
_SOURCES = [
    "pgwire_spec/pgoutput/decoder.py",
    "pgwire_spec/pgoutput/_codec.py",
    "pgwire_spec/_codegen.py",
    "pgwire_spec/_strategies/_walcheck.py",
]
_RAISE = re.compile(r"""(?:Fail|DecodeError|_violation)\(\s*['"]([a-z][a-z-]+)['"]""")
_NOT_INPUT = {"internal"}  # a code generator bug, never a property of the input


def _raised_rules() -> set[str]:
    found: set[str] = set()
    for path in _SOURCES:
        found |= set(_RAISE.findall((ROOT / path).read_text()))
    return found - _NOT_INPUT


def test_every_rule_raised_is_catalogued() -> None:
    raised = _raised_rules()
    assert {"truncated", "unknown-relation", "walsender-lsn-backwards"} <= raised  # the scan works
    assert raised - set(RULES) == set()


def test_every_catalogued_rule_is_complete() -> None:
    for name, rule in RULES.items():
        assert set(rule) >= {"description", "section", "level", "layer", "strict", "tolerant", "detected_by"}, name
        assert rule["level"] in ("MUST", "SHOULD"), name
        assert rule["layer"] in ("bytes", "sequence", "walsender"), name


def test_every_violation_is_described() -> None:
    assert set(DESCRIBED) == set(VIOLATIONS)
    for name, v in VIOLATIONS.items():
        d = DESCRIBED[name]
        assert v.rule in d["rules"], name
        assert all(r in RULES for r in d["rules"] + d.get("acceptable", [])), name
        assert d.get("framing", "any") == v.framing, name
        tolerant = str(RULES[v.rule]["tolerant"])
        assert v.tolerant in tolerant, (name, v.tolerant, tolerant)


@fast(150)
@given(malformed_streams(framing=None))
def test_cases_stay_inside_their_description(case: MalformedStream) -> None:
    d = DESCRIBED[case.violation]
    assert case.expected_rule in d["rules"]
    assert case.acceptable_rules <= set(d["rules"]) | set(d.get("acceptable", []))
