"""PgOutputDecoder: the checks beyond the state table, and the bugs other decoders had
(the ``seen_in_other_decoders`` notes of spec/errata.yaml)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec import (
    UNCHANGED,
    Begin,
    Commit,
    DecodeError,
    Delete,
    Insert,
    LogicalMessage,
    OptionError,
    PgOutputDecoder,
    Relation,
    RelationColumn,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    Update,
    decode_message,
    encode,
)

REL = 16384


def rel(identity: str = "d", ncols: int = 2, xid=None) -> Relation:
    cols = tuple(RelationColumn(1 if i == 0 else 0, f"c{i}", 23, -1) for i in range(ncols))
    return Relation(xid, REL, "public", "t", identity, cols)


def run(msgs, **options):
    d = PgOutputDecoder(**options)
    out = [d.decode(encode(m)) for m in msgs]
    return d, out


def rule_of(msgs, **options) -> tuple[str, int]:
    with pytest.raises(DecodeError) as info:
        run(msgs, **options)
    return info.value.rule, info.value.index


def test_a_plain_transaction_decodes_and_finishes() -> None:
    msgs = [Begin(100, 1, 5), rel(), Insert(None, REL, ("1", "a")), Commit(0, 100, 140, 1)]
    d, out = run(msgs)
    assert out == msgs
    d.finish()
    assert d.warnings == []


def test_dml_before_its_relation() -> None:
    assert rule_of([Begin(100, 1, 5), Insert(None, REL, ("1", "a"))]) == ("unknown-relation", 1)


def test_column_count_mismatch() -> None:
    msgs = [Begin(100, 1, 5), rel(ncols=2), Insert(None, REL, ("1", "a", "x"))]
    assert rule_of(msgs) == ("column-count-mismatch", 2)


def test_repeated_and_changed_relations_are_accepted() -> None:
    msgs = [Begin(100, 1, 5), rel(), rel(), Insert(None, REL, ("1", "a")), rel(ncols=3),
            Insert(None, REL, ("1", "a", None)), Commit(0, 100, 150, 1)]
    run(msgs)


def test_a_relation_resent_unchanged_is_the_message_decoded_before() -> None:
    d = PgOutputDecoder(protocol_version=2, streaming=True)
    d.decode(encode(Begin(100, 1, 5)))
    first = d.decode(encode(rel()))
    assert d.decode(bytearray(encode(rel()))) == first  # not bytes: decoded, not remembered
    assert d.decode(encode(rel())) is first and d.relations[REL] is first
    changed = d.decode(encode(rel(ncols=3)))
    assert len(changed.columns) == 3 and d.relations[REL] is changed
    d.decode(encode(Commit(0, 100, 140, 1)))
    # inside a streamed block the same bytes read otherwise (an xid prefix): never mixed up
    d.decode(encode(StreamStart(7, True)))
    streamed = encode(rel(xid=7))
    assert d.decode(streamed).xid == 7 and d.decode(streamed).xid == 7
    d.decode(encode(StreamStop()))
    d.decode(encode(Begin(200, 1, 6)))
    assert d.decode(encode(rel())) is first
    d.reset()
    d.decode(encode(Begin(100, 1, 5)))
    assert d.decode(encode(rel())) is not first


def test_binary_values_need_binary_true() -> None:
    msgs = [Begin(100, 1, 5), rel(), Insert(None, REL, (b"\x00\x00\x00\x01", "a"))]
    assert rule_of(msgs) == ("binary-not-negotiated", 2)
    run(msgs, binary=True)


def test_unchanged_toast_is_not_null() -> None:
    # electric #1482 treated 'u' as NULL
    msg = decode_message(encode(Update(None, REL, None, None, ("1", UNCHANGED))))
    assert msg.new_tuple[1] is UNCHANGED and msg.new_tuple[1] is not None


def test_commit_lsn_must_match_begin() -> None:
    assert rule_of([Begin(100, 1, 5), Commit(0, 101, 150, 1)]) == ("commit-lsn-mismatch", 1)


def test_nonzero_flags_strict_only() -> None:
    msgs = [Begin(100, 1, 5), Commit(1, 100, 150, 1)]
    assert rule_of(msgs) == ("nonzero-flags", 1)
    d, out = run(msgs, strict=False)
    assert out[1].flags == 1  # kept, so it re-encodes
    assert encode(out[1]) == encode(msgs[1])


def test_old_tuple_needs_full_identity() -> None:
    msgs = [Begin(100, 1, 5), rel("d"), Delete(None, REL, "O", ("1", "a"))]
    assert rule_of(msgs) == ("old-tuple-without-full-identity", 2)
    run([Begin(100, 1, 5), rel("f"), Delete(None, REL, "O", ("1", "a")), Commit(0, 100, 150, 1)])


def test_truncate_of_unknown_relation() -> None:
    assert rule_of([Begin(100, 1, 5), Truncate(None, 1, (999,))]) == ("unknown-relation", 1)


def test_transactional_message_outside_transaction() -> None:
    assert rule_of([LogicalMessage(None, 1, 5, "p", b"")], messages=True) == (
        "transactional-message-outside-transaction", 0)
    run([LogicalMessage(None, 0, 5, "p", b"")], messages=True)


def test_messages_must_be_negotiated() -> None:
    assert rule_of([LogicalMessage(None, 0, 5, "p", b"")]) == ("message-not-negotiated", 0)
    assert rule_of([StreamStart(7, True)], protocol_version=2) == ("message-not-negotiated", 0)


def streamed(xid: int = 700, sub: int = 701):
    return [
        StreamStart(xid, True), rel(xid=xid), Insert(xid, REL, ("1", "a")), StreamStop(),
        StreamStart(xid + 10, True), Insert(xid + 10, REL, ("9", "z")), StreamStop(),
        StreamStart(xid, False), Insert(sub, REL, ("2", "b")), StreamStop(),
        StreamAbort(xid, sub),  # subtransaction abort: the transaction goes on
        StreamStart(xid, False), Insert(xid, REL, ("3", "c")), StreamStop(),
        StreamCommit(xid, 0, 900, 950, 9),
        StreamAbort(xid + 10, xid + 10),
    ]


def test_interleaved_streams_and_subtransaction_abort() -> None:
    # go-pq-cdc #166 discarded the whole xid on a subtransaction abort
    d, out = run(streamed(), protocol_version=2, streaming="on")
    assert d.open_streams == set()
    d.finish()


def test_xid_prefix_only_inside_a_streamed_block() -> None:
    # pglogrepl #66 expected the prefix outside streamed blocks too
    msgs = [Begin(100, 1, 5), rel(), Insert(None, REL, ("1", "a")), Commit(0, 100, 150, 1)]
    run(msgs, protocol_version=2, streaming="on")


def test_stream_xids_must_be_open() -> None:
    assert rule_of([StreamStart(5, False)], protocol_version=2, streaming="on") == ("stream-xid-not-open", 0)
    assert rule_of([StreamCommit(5, 0, 1, 2, 3)], protocol_version=2, streaming="on") == ("stream-xid-not-open", 0)
    msgs = [StreamStart(5, True), StreamStop(), StreamStart(5, True)]
    assert rule_of(msgs, protocol_version=2, streaming="on") == ("stream-xid-already-open", 2)


def test_stream_abort_tail_follows_streaming_parallel_not_protocol_version() -> None:
    # Npgsql read the tail from the protocol version alone
    short = encode(StreamAbort(5, 6))
    long = encode(StreamAbort(5, 6, 1000, 2000))
    assert len(short) == 9 and len(long) == 25
    assert decode_message(short, protocol_version=4, streaming="on") == StreamAbort(5, 6)
    assert decode_message(long, protocol_version=4, streaming="parallel") == StreamAbort(5, 6, 1000, 2000)
    with pytest.raises(DecodeError) as info:
        decode_message(long, protocol_version=4, streaming="on")
    assert info.value.rule == "trailing-bytes"


def test_pg18_stray_stream_abort_without_streaming_is_not_an_error() -> None:
    d, out = run([StreamAbort(5, 6)])
    assert out == [StreamAbort(5, 6)]
    assert [w.rule for w in d.warnings] == ["stray-stream-abort"]


@pytest.mark.parametrize(("streaming", "tail"), [("on", ()), ("parallel", (1000, 2000))])
def test_pg18_stray_stream_abort_of_a_never_streamed_xid_with_streaming(streaming: str, tail: tuple[int, ...]) -> None:
    # 18 sends (xid, subxid) for a transaction it discarded unstreamed, to streaming clients too
    # (erratum E-PG18-STRAY-STREAM-ABORT); a whole-transaction abort of such an xid it never sends.
    d, out = run([StreamAbort(5, 6, *tail)], protocol_version=4, streaming=streaming)
    assert out == [StreamAbort(5, 6, *tail)] and [w.rule for w in d.warnings] == ["stray-stream-abort"]
    assert d.open_streams == set()
    d.finish()
    assert rule_of([StreamAbort(5, 5, *tail)], protocol_version=4, streaming=streaming) == ("stream-xid-not-open", 0)


def test_finish_reports_an_unterminated_transaction() -> None:
    d, _ = run([Begin(100, 1, 5)])
    with pytest.raises(DecodeError) as info:
        d.finish()
    assert info.value.rule == "unterminated-transaction"


def test_strict_error_leaves_the_decoder_usable() -> None:
    d = PgOutputDecoder()
    d.decode(encode(Begin(100, 1, 5)))
    with pytest.raises(DecodeError):
        d.decode(b"I\x00")
    d.decode(encode(rel()))
    d.decode(encode(Commit(0, 100, 150, 1)))
    assert d.state == "idle"


@pytest.mark.parametrize(
    "options",
    [dict(protocol_version=0), dict(protocol_version=5), dict(streaming="on"),
     dict(protocol_version=3, streaming="parallel"), dict(two_phase=True, protocol_version=2),
     dict(streaming="sometimes", protocol_version=2)],
)
def test_impossible_option_sets_are_refused(options) -> None:
    with pytest.raises(OptionError):
        PgOutputDecoder(**options)


def test_streaming_accepts_booleans() -> None:
    assert PgOutputDecoder(protocol_version=2, streaming=True).streaming == "on"
    assert PgOutputDecoder(streaming=False).streaming == "off"


CONTEXTS = [
    dict(protocol_version=1),
    dict(protocol_version=2, streaming="on", in_stream=True),
    dict(protocol_version=4, streaming="parallel"),
]


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(CONTEXTS))
def test_any_bytes_give_a_message_or_a_decode_error(data: bytes, ctx) -> None:
    try:
        msg = decode_message(data, **ctx)
    except DecodeError:
        return
    assert encode(msg) == data  # whatever is accepted re-encodes to itself


TAGS = b"BMCORYIUDTSEcAbPKrp"


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from(list(TAGS)), st.binary(max_size=48), st.sampled_from(CONTEXTS))
def test_tagged_garbage_gives_a_message_or_a_decode_error(tag: int, body: bytes, ctx) -> None:
    data = bytes([tag]) + body
    try:
        msg = decode_message(data, **ctx)
    except DecodeError as err:
        assert err.rule and err.expected and err.found
        return
    assert encode(msg) == data


@settings(max_examples=500, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=24), max_size=12))
def test_stateful_decoder_never_raises_anything_else(payloads) -> None:
    d = PgOutputDecoder(protocol_version=4, streaming="parallel", two_phase=True, binary=True,
                        messages=True, strict=False)
    for p in payloads:
        try:
            d.decode(p)
        except DecodeError:
            pass


def test_two_phase_flags_must_be_zero_in_strict_mode() -> None:
    from pgwire_spec import CommitPrepared, RollbackPrepared

    opts = dict(protocol_version=3, two_phase=True)
    assert rule_of([CommitPrepared(1, 10, 20, 1, 5, "g")], **opts) == ("nonzero-flags", 0)
    assert rule_of([RollbackPrepared(2, 10, 20, 1, 2, 5, "g")], **opts) == ("nonzero-flags", 0)
    run([CommitPrepared(0, 10, 20, 1, 5, "g")], **opts)
