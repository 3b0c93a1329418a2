"""Oracles: the reference holds on real input; planted bugs are caught by the right oracle."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec import encode
from pgwire_spec.conformance.adapter import FunctionAdapter
from pgwire_spec.conformance.adapters.reference import decode_case
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.fuzz.oracles import DifferentialOracle, ReferenceOracle, signature_path
from pgwire_spec.pgoutput import _codec
from pgwire_spec.pgoutput.messages import Begin, Insert


def test_reference_oracle_accepts_valid_and_rejects_garbage_quietly() -> None:
    o = ReferenceOracle(json_every=1)
    for s in builtin_streams():
        assert o.check_stream(s.options, s.payloads) is None
    assert o.check_payload(encode(Begin(1, 2, 3)), False, False) is None
    assert o.check_payload(b"B\x00", False, False) is None
    assert o.check_payload(b"", False, False) is None
    assert o.check_payload(b"\xff" * 9, True, True) is None
    assert o.accepted >= 1 and o.rejected == 3


def test_an_exception_that_is_not_a_decode_error_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(data: bytes, *args: Any) -> Any:
        raise ZeroDivisionError("planted")

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("I"), broken)
    o = ReferenceOracle()
    sig, oracle, detail = o.check_payload(encode(Insert(None, 1, ("x",))), False, False)
    assert oracle == "exception" and sig.startswith("exception:ZeroDivisionError:I:")
    assert "planted" in detail


def test_an_accepted_payload_that_reencodes_differently_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _codec.FAMILY.decoders[ord("B")]

    def lossy(data: bytes, *args: Any) -> Any:
        msg = real(data, *args)
        return Begin(msg.final_lsn, msg.commit_time, msg.xid ^ 1)

    monkeypatch.setitem(_codec.FAMILY.decoders, ord("B"), lossy)
    monkeypatch.setitem(_codec._DECODERS, ord("B"), lossy)  # the C path, when built
    v = ReferenceOracle().check_payload(encode(Begin(1, 2, 3)), False, False)
    assert v is not None and v[1] == "roundtrip" and v[0] == "roundtrip:B:xid"


def test_the_c_and_python_decoders_must_agree() -> None:
    """With the C decoders built, each payload is decoded by both; a disagreement is a
    ``backend`` violation (here a fake C table stands in for a broken build)."""
    real = _codec.FAMILY.decoders
    o = ReferenceOracle()
    o._c = {**real, ord("B"): lambda data, *a: Begin(0, 0, 0)}
    v = o.check_payload(encode(Begin(1, 2, 3)), False, False)
    assert v is not None and v[0] == "backend:c-decodes:B"
    o._c = {**real, ord("C"): lambda data, *a: Begin(0, 0, 0)}
    v = o.check_payload(b"C\x00\x01", False, False)
    assert v is not None and v[0] == "backend:c-accepts:C:truncated"
    o._c = dict(real)
    assert o.check_payload(encode(Begin(1, 2, 3)), False, False) is None


def test_differential_oracle_agrees_with_itself_and_catches_a_tolerant_decoder() -> None:
    same = DifferentialOracle(FunctionAdapter(decode_case, name="ref"))
    s = builtin_streams()[0]
    assert same.check_stream(s.options, s.payloads) is None
    bad = list(s.payloads)
    bad[4] = bad[4] + b"\x00"  # an Insert with a trailing byte

    def tolerant(context: Any, payloads: Any) -> list[dict[str, Any]]:
        return decode_case(context, [p[:-1] if p[:1] == b"I" and p.endswith(b"\x00") else p for p in payloads])

    v = DifferentialOracle(FunctionAdapter(tolerant)).check_stream(s.options, bad)
    assert v is not None and v[0] == "diff:accepts:I:trailing-bytes"


def test_signature_paths_drop_element_numbers() -> None:
    assert signature_path("new_tuple[12].length") == "new_tuple[].length"
    assert signature_path(None) == ""


def test_signature_paths_drop_counts() -> None:
    assert signature_path("new_tuple (14 items expected, 0 found)") == "new_tuple (length)"
