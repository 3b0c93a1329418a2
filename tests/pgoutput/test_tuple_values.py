"""TupleValues, the generated Python codec's lazy TupleData: its column kinds and lengths are
checked when the message is decoded, its values decoded on first access, and it behaves as
the tuple of those values (equality both ways, hash, order, repr, indexing, pickling)."""

from __future__ import annotations

import copy
import pickle

import pytest

from pgwire_spec import DecodeError, PgOutputDecoder, encode
from pgwire_spec._codegen import TupleValues
from pgwire_spec.pgoutput import _codec
from pgwire_spec.pgoutput import decoder as decoder_module
from pgwire_spec.pgoutput.messages import UNCHANGED, Begin, Insert, Relation, RelationColumn, Update

INSERT = _codec.PY_DECODERS[ord("I")]
UPDATE = _codec.PY_DECODERS[ord("U")]
VALUES = ("1", None, b"\x00\x01", UNCHANGED, "Zoë 北京")


def lazy(values: tuple[object, ...]) -> TupleValues:
    msg = INSERT(encode(Insert(None, 16384, values)), False, False, True)
    assert type(msg.new_tuple) is TupleValues
    return msg.new_tuple  # type: ignore[no-any-return]


def test_behaves_as_the_tuple_of_its_values() -> None:
    t = lazy(VALUES)
    assert len(t) == 5 and t.raw[2] == 5
    assert t == VALUES and VALUES == t and not (t != VALUES)
    assert t == lazy(VALUES) and t != lazy(VALUES[:-1]) and t != list(VALUES)
    assert hash(t) == hash(VALUES)
    assert repr(t) == repr(VALUES)
    assert tuple(t) == VALUES and list(t) == list(VALUES)
    assert t[0] == "1" and t[-1] == "Zoë 北京" and t[1:3] == (None, b"\x00\x01")
    assert type(t[1:3]) is tuple
    assert "1" in t and t.index(None) == 1 and t.count(UNCHANGED) == 1
    assert list(reversed(t)) == list(reversed(VALUES))
    assert t + ("x",) == VALUES + ("x",) and ("x",) + t == ("x",) + VALUES
    assert lazy(("a",)) < lazy(("b",)) and lazy(("b",)) >= ("a",)
    assert pickle.loads(pickle.dumps(t)) == VALUES and type(pickle.loads(pickle.dumps(t))) is tuple
    assert copy.deepcopy(t) == VALUES
    assert TupleValues(VALUES) == t and len(TupleValues(VALUES)) == 5
    # a tuple to isinstance, as the C decoder's plain tuples are; C code that reads a real
    # tuple's storage does not take it for one (it iterates it, or refuses it)
    assert isinstance(t, tuple) and type(t) is TupleValues
    assert "{}|{}|{}|{}|{}".format(*t) == "{}|{}|{}|{}|{}".format(*VALUES)


def test_messages_compare_equal_across_backends() -> None:
    data = encode(Insert(None, 7, VALUES))
    py = INSERT(data, False, False, True)
    plain = Insert(None, 7, VALUES)
    assert py == plain and plain == py and hash(py) == hash(plain)
    assert repr(py) == repr(plain)


def test_values_are_decoded_on_first_access_only() -> None:
    t = lazy(VALUES)
    assert t._values is None  # nothing decoded yet: len() and the arity check need no values
    first = t[0]
    assert t._values == VALUES and t[0] is first


def test_text_that_is_not_utf8_is_kept_as_the_tracing_pass_keeps_it() -> None:
    raw = b"I\x00\x00\x00\x07N\x00\x01t\x00\x00\x00\x02\xff\xfe"
    fast = INSERT(raw, False, False, True)
    traced = _codec.explain_payload(raw, False, False)
    assert fast == traced and fast.new_tuple[0] == "\udcff\udcfe"
    assert encode(fast) == raw


def test_a_reused_buffer_does_not_change_decoded_values() -> None:
    buf = bytearray(encode(Insert(None, 7, ("abc",))))
    msg = INSERT(buf, False, False, True)
    buf[-3:] = b"xyz"
    assert msg.new_tuple == ("abc",)


def test_bad_columns_are_refused_when_decoding_not_when_reading() -> None:
    rel = Relation(None, 7, "public", "t", "d", (RelationColumn(0, "a", 25, -1),))
    good = encode(Insert(None, 7, ("abc",)))
    for bad in (good[:-1], good + b"\x00", good[:8] + b"x" + good[9:], good[:9] + b"\xff\xff\xff\xff"):
        d = PgOutputDecoder()
        d.decode(bytes.fromhex("420000000000000001000000000000000000000007"))
        d.decode(encode(rel))
        with pytest.raises(DecodeError):
            d.decode(bad)
        with pytest.raises(_codec.BAD_INPUT):
            INSERT(bad, False, False, True)


def test_update_with_old_and_new_tuple() -> None:
    msg = Update(None, 7, "O", ("a", None), ("b", UNCHANGED))
    got = UPDATE(encode(msg), False, False, True)
    assert type(got.old_tuple) is TupleValues and got == msg


def _rows(monkeypatch: pytest.MonkeyPatch, read: bool, count: int) -> list[type]:
    """The types of new_tuple a stateful decoder with the Python codec hands a reader that
    reads every value (*read*) or none, row after row."""
    monkeypatch.setattr(decoder_module, "_DECODERS", _codec.PY_DECODERS)
    monkeypatch.setattr(decoder_module, "_EAGER_DECODERS", _codec.FAMILY.eager_decoders)
    d = PgOutputDecoder()
    d.decode(encode(Begin(100, 1, 5)))
    d.decode(encode(Relation(None, 16384, "public", "t", "d",
                             (RelationColumn(1, "a", 23, -1), RelationColumn(0, "b", 25, -1)))))
    types = []
    for i in range(count):
        msg = d.decode(encode(Insert(None, 16384, (str(i), None))))
        types.append(type(msg.new_tuple))
        if read:
            assert tuple(msg.new_tuple) == (str(i), None)
    return types


def test_a_reader_of_every_value_gets_them_decoded_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    window = decoder_module._WINDOW
    types = _rows(monkeypatch, True, window + decoder_module._EAGER_SPAN + window + 2)
    assert set(types[:window]) == {TupleValues}
    # nearly every row read: the rows after the window decoded at once, until a new window
    eager = types[window:window + decoder_module._EAGER_SPAN]
    assert set(eager) == {tuple}
    rest = types[window + decoder_module._EAGER_SPAN:]
    assert set(rest[:window]) == {TupleValues} and set(rest[window:]) == {tuple}


def test_a_reader_that_skips_rows_keeps_the_lazy_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(_rows(monkeypatch, False, 3 * decoder_module._WINDOW)) == {TupleValues}
