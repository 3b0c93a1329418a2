"""Judging answers: every way an answer can be right or wrong, and the exit rule."""

from __future__ import annotations

import functools
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.conformance import CaseResult, judge, open_decoder, run_cases
from pgwire_spec.conformance import cases as cases_module
from pgwire_spec.conformance.adapter import Adapter, FunctionAdapter, SubprocessAdapter
from pgwire_spec.conformance.adapters.reference import decode_case, decode_case_kept
from pgwire_spec.conformance.cases import Case, builtin_cases, derived_malformed_cases, fixture_cases, kind_of
from pgwire_spec.conformance.runner import first_difference
from tests.conformance._second_copy_wrong import case_key, second_copy_wrong

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


# -- repeated cases: the reference's answers are kept, a decoder under test sees every case --

PG16 = Path(__file__).resolve().parents[2] / "fixtures" / "pg16-builtin.json.gz"


def _pg16() -> dict[str, Any]:
    if not PG16.is_file():
        pytest.skip("no golden fixtures in this checkout (fixtures/)")
    return json.loads(gzip.decompress(PG16.read_bytes()))


@functools.cache
def _pg16_cases() -> list[Case]:
    """The fixture cases of one major (cases are frozen: shared by the tests below)."""
    if not PG16.is_file():
        pytest.skip("no golden fixtures in this checkout (fixtures/)")
    return fixture_cases(PG16)


def _same_answer(cases: list[Case]) -> list[list[Case]]:
    """The cases grouped by what a decoder is given (context and payloads), repeated ones only."""
    by: dict[tuple[Any, ...], list[Case]] = {}
    for c in cases:
        by.setdefault((*sorted(c.context.items()), *c.payloads), []).append(c)
    return [same for same in by.values() if len(same) > 1]


@pytest.mark.parametrize("which", [0, -1], ids=["first-seen", "last-seen"])
def test_a_wrong_expected_value_in_one_copy_fails_that_case_alone(tmp_path: Path, which: int) -> None:
    # The reference's answer to a case given the same context and payloads as an earlier one
    # is the kept one (decode_case_kept); each case is still judged against its own
    # expected JSON: a wrong value planted in one of them fails that case, first or last,
    # and no other.
    doc = _pg16()
    cases = _pg16_cases()
    # the largest such group whose messages under test have a field to plant a value in
    same = max((g for g in _same_answer(cases) if all(set(c.expected[c.checked[0]]) - {"type", "tag"} for c in g)),
               key=len)
    assert len(same) >= 2 and len({c.id for c in same}) == len(same)
    planted = same[which]
    ids = {f"fixture/{c['id']}": c for g in doc["groups"] for c in g["cases"]}
    field = next(k for k in ids[planted.id]["expected"] if k not in ("type", "tag"))
    ids[planted.id]["expected"][field] = "not what the server sent"
    path = tmp_path / "planted.json"
    path.write_text(json.dumps(doc))
    replanted = fixture_cases(path)
    assert [c.id for c in replanted] == [c.id for c in cases]
    c0 = next(c for c in replanted if c.id == same[0].id)
    assert decode_case_kept(c0.context, c0.payloads) is decode_case_kept(c0.context, c0.payloads)
    with open_decoder("reference", 10.0) as ref:
        result = run_cases(ref, replanted)
    failed = [v for v in result.verdicts if v.status != "passed"]
    assert [(v.case.id, v.reason) for v in failed] == [
        (planted.id, f"message #{planted.checked[0]} ({kind_of(planted.payloads[planted.checked[0]])}) "
                     f"differs at {field}")]
    assert result.count("passed") == len(cases) - 1


def test_the_kept_answers_are_the_references_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # decode_case_kept hands the answer of an earlier case given the same context and
    # payloads. A key missing part of what the decoder is given would go unseen by the
    # suite (the builder and the reference adapter would agree on the same wrong answers),
    # so: the cases of a major are the ones built with a fresh decode per case, and each
    # kept answer is what decode_case answers afresh.
    kept = _pg16_cases()
    assert len(_same_answer(kept)) > 100
    monkeypatch.setattr(cases_module, "reference_results", decode_case)
    assert fixture_cases(PG16) == kept
    for c in kept:
        assert decode_case_kept(c.context, c.payloads) == tuple(decode_case(c.context, c.payloads)), c.id
    # a context whose options are not of the types the suite gives them is not kept under
    # an equal key (1 == True), it is decoded each time
    c = kept[0]
    odd = {**c.context, "binary": int(c.context["binary"])}
    assert decode_case_kept(odd, c.payloads) is not decode_case_kept(odd, c.payloads)


@pytest.mark.parametrize("how", ["in-process", "subprocess"])
def test_a_decoder_under_test_is_given_every_case_in_order(how: str) -> None:
    # Only the reference's answers are kept: any other decoder is asked every case, in the
    # suite's order, so one wrong answer to the second copy of a case fails that copy alone.
    cases = _pg16_cases()[:1500]
    seen: dict[tuple[Any, ...], int] = {}
    second = set()
    for c in cases:
        key = case_key(c.context, c.payloads)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            second.add(c.id)
    assert len(second) > 50
    if how == "in-process":
        asked: list[tuple[Any, ...]] = []

        def recording(context: Any, payloads: Any) -> Any:
            asked.append(case_key(context, payloads))
            return second_copy_wrong(context, payloads)

        second_copy_wrong.__globals__["_SEEN"].clear()
        adapter: Adapter = FunctionAdapter(recording, name="second-copy-wrong")
    else:
        adapter = SubprocessAdapter([sys.executable, str(Path(__file__).with_name("_second_copy_wrong.py"))],
                                    timeout=60, start_timeout=120)
    with adapter:
        result = run_cases(adapter, cases)
    assert {v.case.id for v in result.verdicts if v.status == "failed"} == second
    assert all(v.reason.endswith("differs at planted (unexpected)") for v in result.verdicts if v.status == "failed")
    assert result.count("passed") == len(cases) - len(second)
    if how == "in-process":
        assert asked == [case_key(c.context, c.payloads) for c in cases]
