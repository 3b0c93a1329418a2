"""The planted-bug mutants (pgwire_spec/fuzz/planted.py): the bug-free control answers as
the reference does; each planted bug shows on a small witness stream, through the same
differential oracle the fuzz campaigns use; the engines find them."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec import encode
from pgwire_spec.conformance.adapter import FunctionAdapter
from pgwire_spec.conformance.adapters import open_decoder
from pgwire_spec.conformance.adapters.reference import decode_case as reference
from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.fuzz import planted
from pgwire_spec.fuzz.oracles import DifferentialOracle
from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard
from pgwire_spec.pgoutput import messages as m

RID, RID2 = 16384, 16390
COLS = (m.RelationColumn(1, "id", 23, -1), m.RelationColumn(0, "note", 25, -1))
B = encode(m.Begin(0x1000, 1, 700))
C = encode(m.Commit(0, 0x1000, 0x1080, 1))
R = encode(m.Relation(None, RID, "public", "t", "d", COLS))
R2 = encode(m.Relation(None, RID2, "public", "u", "d", COLS[:1]))
INS = encode(m.Insert(None, RID, ("1", "x")))
P1: dict[str, Any] = {"protocol_version": 1}
STREAM: dict[str, Any] = {"protocol_version": 2, "streaming": "on"}
PARALLEL: dict[str, Any] = {"protocol_version": 4, "streaming": "parallel"}


def _tx(*payloads: bytes) -> list[bytes]:
    return [B, R, *payloads, C]


def _streamed(*changes: m.PgOutputMessage) -> list[bytes]:
    return [encode(m.StreamStart(900, True)), encode(m.Relation(900, RID, "public", "t", "d", COLS)),
            *map(encode, changes), encode(m.StreamStop())]


#: bug -> (context, payloads): a stream on which the mutant and the reference disagree
WITNESSES: dict[str, tuple[dict[str, Any], list[bytes]]] = {
    "insert-trailing-bytes": (P1, _tx(INS + b"\x00")),
    "text-length-off-by-one": (P1, _tx(INS[:-6] + b"t\x00\x00\x00\x02x")),
    "binary-not-consumed": ({"protocol_version": 1, "binary": True},
                            _tx(encode(m.Insert(None, RID, (b"\x00\x00\x00\x01", "x"))))),
    "unchanged-as-text": (P1, _tx(encode(m.Update(None, RID, None, None, ("1", m.UNCHANGED))))),
    "null-reads-length": (P1, _tx(encode(m.Insert(None, RID, (None, "x"))))),
    "string-unterminated-loop": (P1, [B, R[:8] + b"public"]),
    "lsn-signed": (P1, [encode(m.Begin(1 << 63, 1, 700)), R, INS, encode(m.Commit(0, 1 << 63, (1 << 63) + 8, 1))]),
    "stream-xid-missing": (STREAM, _streamed(m.Insert(900, RID, ("1", "x")))),
    "stream-abort-tail-ignored": (PARALLEL, [*_streamed(m.Insert(900, RID, ("1", "x"))),
                                             encode(m.StreamAbort(900, 900, 0x2000, 5))]),
    "relation-cache-last": (P1, _tx(R2, INS)),
    "commit-flags-ignored": (P1, [B, R, INS, encode(m.Commit(1, 0x1000, 0x1080, 1))]),
    "replica-identity-unchecked": (P1, [B, R.replace(b"t\x00d", b"t\x00x"), INS, C]),
    "delete-kind-unchecked": (P1, _tx(encode(m.Delete(None, RID, "K", ("1", None))).replace(b"K", b"X", 1))),
    "truncate-count-ignored": (P1, _tx(encode(m.Truncate(None, 0, (RID,))).replace(b"\x00\x00\x00\x01", b"\x00\x00\x00\x02", 1))),
    "message-content-unbounded": ({"protocol_version": 1, "messages": True},
                                  _tx(encode(m.LogicalMessage(None, 1, 0x1000, "p", b"abc"))[:-7]
                                      + b"\x00\x00\x00\x04abc")),
    "update-key-as-new": (P1, _tx(encode(m.Update(None, RID, "K", ("1", None), ("2", "x"))))),
    "empty-tuple-crash": (P1, [B, encode(m.Relation(None, RID, "public", "t", "d", ())),
                               encode(m.Insert(None, RID, ())), C]),
    "commit-lsns-swapped": (P1, [B, R, INS, C]),
}


def _shape(results: list[dict[str, Any]]) -> list[Any]:
    """The messages, and where the first rejection is (its wording is the decoder's own)."""
    return [r.get("message", "rejected") for r in results]


def _verdict(bug: str, context: dict[str, Any], payloads: list[bytes]) -> Any:
    adapter = FunctionAdapter(getattr(planted, bug.replace("-", "_")), name=bug, timeout=0.5)
    return DifferentialOracle(adapter).check_stream(context, payloads)


def test_every_planted_bug_has_a_witness_and_a_target() -> None:
    assert len(planted.BUGS) >= 15 and set(WITNESSES) == set(planted.BUGS)
    for bug in planted.BUGS:
        with open_decoder(planted.target(bug), 1.0) as adapter:
            assert adapter.name == planted.target(bug)


@pytest.mark.parametrize("bug", sorted(planted.BUGS))
def test_the_planted_bug_shows_on_its_witness_and_the_control_agrees(bug: str) -> None:
    context, payloads = WITNESSES[bug]
    # the reference and the bug-free control answer the same
    assert _verdict(planted.CONTROL, context, payloads) is None
    assert _shape(planted.control(context, payloads)) == _shape(reference(context, payloads))
    found = _verdict(bug, context, payloads)
    assert found is not None, f"{bug}: the mutant answers like the reference"


def test_the_control_agrees_with_the_reference_on_the_builtin_corpus() -> None:
    for s in builtin_streams():
        assert _shape(planted.control(s.options, s.payloads)) == _shape(reference(s.options, s.payloads)), s.name


def test_the_mutate_engine_finds_a_planted_bug_and_stops_there() -> None:
    streams = builtin_streams()
    c = Campaign(target=planted.target("insert-trailing-bytes"), engines=("mutate",), corpus=("builtin",),
                 budget=30, shards_per_core=1, case_timeout=5.0, stop_on_finding=True)
    r = run_shard(plan_shards(c, 1)[0], streams)
    assert [f.signature for f in r.findings] == ["diff:accepts:I:trailing-bytes"]
    assert 0 < r.findings[0].seconds < r.seconds + 0.01 < 30
    # the control: the same engine and seed for 3,000 cases, nothing
    ctl = Campaign(target=planted.target(planted.CONTROL), engines=("mutate",), corpus=("builtin",),
                   cases=3_000, shards_per_core=1, case_timeout=5.0)  # no false hang on a busy machine
    r = run_shard(plan_shards(ctl, 1)[0], streams)
    assert r.cases == 3_000 and r.findings == ()


def test_an_unknown_bug_is_named() -> None:
    with pytest.raises(ValueError, match="unknown planted bug 'nope'"):
        planted.decode_case("nope", {}, [B])
