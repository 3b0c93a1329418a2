"""Judging answers: every way an answer can be right or wrong, and the exit rule."""

from __future__ import annotations

from typing import Any

from pgwire_spec.conformance import CaseResult, judge, run_cases
from pgwire_spec.conformance.adapter import FunctionAdapter
from pgwire_spec.conformance.adapters.reference import decode_case
from pgwire_spec.conformance.cases import builtin_cases, derived_malformed_cases
from pgwire_spec.conformance.runner import first_difference

VALID = builtin_cases()[0]
BAD = next(c for c in derived_malformed_cases() if c.error.index > 0 and c.error.rule == "truncated")


def _answer(case: Any) -> CaseResult:
    return CaseResult(tuple(decode_case(case.context, case.payloads)))


def test_the_reference_passes_both_kinds() -> None:
    assert judge(VALID, _answer(VALID)).status == "passed"
    v = judge(BAD, _answer(BAD))
    assert v.status == "passed" and v.checks == ((v.checks[0][0], BAD.protocol_version, True),)


def test_a_different_message_fails_with_the_field_path() -> None:
    results = list(_answer(VALID).results)
    msg = dict(results[4]["message"])
    msg["new_tuple"] = [dict(x) for x in msg["new_tuple"]]
    msg["new_tuple"][1]["text"] = "other"
    results[4] = {"message": msg}
    v = judge(VALID, CaseResult(tuple(results)))
    assert v.status == "failed" and v.index == 4
    assert v.reason == "message #4 (Insert) differs at new_tuple[1].text"
    assert sum(1 for c in v.checks if not c[2]) == 1


def test_rejecting_valid_input_accepting_bad_input_wrong_place_wrong_rule() -> None:
    results = list(_answer(VALID).results)
    results[2] = {"error": {"message": "nope"}}
    v = judge(VALID, CaseResult(tuple(results[:3])))
    assert v.status == "failed" and v.reason.startswith("rejected message #2 (Type): nope")
    accepted = CaseResult(tuple({"message": {}} for _ in BAD.payloads))
    assert judge(BAD, accepted).reason.startswith("accepted message #")
    early = CaseResult(({"error": {"message": "x"}},))
    assert "which is valid" in judge(BAD, early).reason
    right_place = list(_answer(BAD).results)
    right_place[-1] = {"error": {"message": "x", "rule": "unknown-tuple-kind"}}
    assert judge(BAD, CaseResult(tuple(right_place))).reason == \
        "rejected with rule 'unknown-tuple-kind', expected 'truncated'"
    right_place[-1] = {"error": {"message": "x"}}  # no rule given: the place is what counts
    assert judge(BAD, CaseResult(tuple(right_place))).status == "passed"


def test_crash_and_skip() -> None:
    assert judge(VALID, CaseResult(crash="timeout: no answer within 1 s")).status == "failed"
    assert judge(VALID, CaseResult(skip="no streaming")).status == "skipped"


def test_should_cases_run_only_when_strict_and_exit_rule() -> None:
    should = next(c for c in derived_malformed_cases() if c.level == "SHOULD")
    ref = FunctionAdapter(decode_case)
    lax = run_cases(ref, [VALID, should])
    assert [v.status for v in lax.verdicts] == ["passed", "skipped"] and lax.ok
    strict = run_cases(ref, [VALID, should], strict=True)
    assert [v.status for v in strict.verdicts] == ["passed", "passed"] and strict.ok

    def tolerant(context: Any, payloads: Any) -> Any:  # never rejects anything
        return [{"message": {}} for _ in payloads]

    assert run_cases(FunctionAdapter(tolerant), [should]).ok  # SHOULD skipped: still ok
    assert not run_cases(FunctionAdapter(tolerant), [should], strict=True).ok
    assert not run_cases(FunctionAdapter(tolerant), [VALID]).ok
    assert not run_cases(FunctionAdapter(lambda c, p: [], name="x"), [VALID]).ok


def test_first_difference() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "a[1].b"
    assert first_difference({"a": 1}, {"a": 1, "c": 2}) == "c (unexpected)"
    assert first_difference([1], [1, 2]) == "(1 items expected, 2 found)"
    assert first_difference({"a": 1}, {"a": True}) == "a"
    assert first_difference({"a": 1}, {"a": 1}) is None
