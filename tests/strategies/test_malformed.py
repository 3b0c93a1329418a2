"""Malformed streams: the reference decoder accepts the prefix and rejects the first wrong
payload with the catalogued rule, strict; a tolerant decoder raises, warns or accepts as
catalogued. One test per violation, so a violation that stops working is named."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from pgwire_spec import DecodeError, PgOutputDecoder
from pgwire_spec._strategies._walcheck import WalsenderChecker
from pgwire_spec.strategies import VIOLATIONS, MalformedStream, malformed_streams
from tests.strategies._common import fast


def _decoder(case: MalformedStream, strict: bool) -> Any:
    if case.framing == "walsender":
        return WalsenderChecker(**case.options, strict=strict)
    return PgOutputDecoder(**case.options, strict=strict)


def _feed(decoder: Any, payload: bytes) -> None:
    (decoder.feed if isinstance(decoder, WalsenderChecker) else decoder.decode)(payload)


def run_strict(case: MalformedStream) -> DecodeError:
    """Feed everything; return the first error (there must be one)."""
    decoder = _decoder(case, strict=True)
    for i, payload in enumerate(case.payloads):
        try:
            _feed(decoder, payload)
        except DecodeError as err:
            assert i >= case.index, f"rejected payload {i} before the first wrong one ({case.index}): {err}"
            return err
    with pytest.raises(DecodeError) as info:
        decoder.finish()
    return info.value


def check_strict(case: MalformedStream) -> None:
    err = run_strict(case)
    assert (err.rule, err.index) == (case.expected_rule, case.index), (case.violation, err)
    assert case.expected_rule in case.acceptable_rules


def check_tolerant(case: MalformedStream) -> None:
    decoder = _decoder(case, strict=False)
    raised: DecodeError | None = None
    try:
        for payload in case.payloads:
            _feed(decoder, payload)
        decoder.finish()
    except DecodeError as err:
        raised = err
    early = [w for w in decoder.warnings if w.index is not None and w.index < case.index]
    assert early == [], early
    at = {(w.rule, w.index) for w in decoder.warnings}
    if case.tolerant == "raise":
        assert raised is not None and (raised.rule, raised.index) == (case.expected_rule, case.index)
    elif case.tolerant == "warn":
        assert (case.expected_rule, case.index) in at
        assert raised is None or raised.index > case.index  # noqa: PT017
    else:
        assert not any(i == case.index for _, i in at)
        assert raised is None or raised.index > case.index  # noqa: PT017


@pytest.mark.parametrize("name", list(VIOLATIONS))
def test_each_violation_gives_its_rule_at_its_index(name: str) -> None:
    framing = VIOLATIONS[name].framing if VIOLATIONS[name].framing != "any" else None

    @fast(30)
    @given(malformed_streams(violations=[name], framing=framing))
    def check(case: MalformedStream) -> None:
        assert case.violation == name
        check_strict(case)
        check_tolerant(case)

    check()


@fast(150)
@given(malformed_streams(framing=None))
def test_any_malformed_stream(case: MalformedStream) -> None:
    check_strict(case)
    check_tolerant(case)


@fast(60)
@given(malformed_streams(protocol_version=4, streaming="parallel", two_phase=True, binary=True, messages=True))
def test_a_fixed_context_is_kept(case: MalformedStream) -> None:
    assert case.options == {"protocol_version": 4, "streaming": "parallel", "two_phase": True,
                            "binary": True, "messages": True}
    check_strict(case)


def test_violations_that_cannot_happen_in_a_context_are_refused() -> None:
    from hypothesis.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        malformed_streams(violations=["xid-prefix-missing"], protocol_version=1)
    with pytest.raises(InvalidArgument):
        malformed_streams(violations=["no-such-violation"])
