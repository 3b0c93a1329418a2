"""The stream state machine, over every (state, message kind) pair of the table."""

from __future__ import annotations

import pytest

from pgwire_spec import (
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    DecodeError,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    PgOutputDecoder,
    Prepare,
    Relation,
    RelationColumn,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamPrepare,
    StreamStart,
    StreamStop,
    Truncate,
    Type,
    Update,
    encode,
)
from pgwire_spec.pgoutput import _state
from pgwire_spec.pgoutput.messages import MESSAGE_TYPES

REL = 16384
SXID = 900


def relation(xid=None):
    return Relation(xid, REL, "public", "t", "d", (RelationColumn(1, "id", 23, -1),))


PREFIX = {
    _state.IDLE: [Begin(100, 1, 10), relation(), Commit(0, 100, 120, 1), StreamStart(SXID, True), StreamStop()],
}
PREFIX[_state.TRANSACTION] = PREFIX[_state.IDLE] + [Begin(200, 2, 11)]
PREFIX[_state.PREPARE] = PREFIX[_state.IDLE] + [BeginPrepare(300, 340, 3, 12, "g")]
PREFIX[_state.STREAM] = PREFIX[_state.IDLE] + [StreamStart(SXID, False)]


def sample(tag: str, state: str):
    x = SXID if state == _state.STREAM else None
    return {
        "B": Begin(400, 4, 13),
        "M": LogicalMessage(x, 0, 150, "p", b"c"),
        "C": Commit(0, 200, 220, 2),
        "O": Origin(99, "o"),
        "R": relation(x),
        "Y": Type(x, 16500, "public", "mood"),
        "I": Insert(x, REL, ("1",)),
        "U": Update(x, REL, None, None, ("2",)),
        "D": Delete(x, REL, "K", ("2",)),
        "T": Truncate(x, 0, (REL,)),
        "S": StreamStart(SXID, False),
        "E": StreamStop(),
        "c": StreamCommit(SXID, 0, 500, 520, 5),
        "A": StreamAbort(SXID, SXID + 1),
        "b": BeginPrepare(600, 640, 6, 14, "h"),
        "P": Prepare(0, 300, 340, 3, 12, "g"),
        "K": CommitPrepared(0, 700, 720, 7, 12, "g"),
        "r": RollbackPrepared(0, 340, 800, 3, 8, 12, "g"),
        "p": StreamPrepare(0, 500, 540, 5, SXID, "s"),
    }[tag]


def decoder_in(state: str) -> PgOutputDecoder:
    d = PgOutputDecoder(protocol_version=4, streaming="on", two_phase=True, binary=True, messages=True)
    for msg in PREFIX[state]:
        d.decode(encode(msg))
    assert d.state == state
    return d


TAGS = sorted(cls.tag for cls in MESSAGE_TYPES.values())
PAIRS = [(s, t) for s in _state.STATES for t in TAGS]


def test_table_covers_known_states_and_tags_only() -> None:
    for state, tag in _state.TRANSITIONS:
        assert state in _state.STATES and tag in TAGS
    for nxt in _state.TRANSITIONS.values():
        assert nxt in _state.STATES


@pytest.mark.parametrize("state, tag", PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_every_state_and_message_pair(state: str, tag: str) -> None:
    d = decoder_in(state)
    msg = sample(tag, state)
    nxt = _state.TRANSITIONS.get((state, tag))
    if nxt is None:
        with pytest.raises(DecodeError) as info:
            d.decode(encode(msg))
        assert info.value.rule == "unexpected-message"
        assert info.value.index == len(PREFIX[state])
        assert d.state == state  # a rejected message leaves the decoder as it was
    else:
        assert d.decode(encode(msg)) == msg
        assert d.state == nxt


@pytest.mark.parametrize("state, tag", PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_lenient_mode_records_instead_of_raising(state: str, tag: str) -> None:
    d = decoder_in(state)
    d.strict = False
    msg = sample(tag, state)
    assert d.decode(encode(msg)) == msg
    legal = (state, tag) in _state.TRANSITIONS
    assert any(w.rule == "unexpected-message" for w in d.warnings) is (not legal)
