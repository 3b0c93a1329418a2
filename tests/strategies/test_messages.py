"""Single messages and column values: what is drawn encodes, decodes back, and is what the
context allows; every message class is registered with hypothesis."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pgwire_spec import UNCHANGED, DecodeError, decode_message, encode
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.replication import commands as c
from pgwire_spec.replication import messages as r
from pgwire_spec.strategies import COLUMN_TYPES, ProtocolContext, column_values, contexts, pgoutput_messages
from tests.strategies._common import PREFIXED, decode_context, fast


@fast(300)
@given(pgoutput_messages())
def test_decode_of_encode_is_the_message(msg: m.PgOutputMessage) -> None:
    assert decode_message(encode(msg), **decode_context(msg)) == msg


@fast(300)
@given(pgoutput_messages(), st.data())
def test_bytes_that_decode_encode_back_to_themselves(msg: m.PgOutputMessage, data: st.DataObject) -> None:
    raw = bytearray(encode(msg))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        decoded = decode_message(bytes(raw), **decode_context(msg))
    except DecodeError:
        return
    assert encode(decoded) == bytes(raw)


@fast(200)
@given(contexts(), st.data())
def test_messages_fit_their_context(ctx: ProtocolContext, data: st.DataObject) -> None:
    msg = data.draw(pgoutput_messages(context=ctx))
    assert msg.tag in ctx.tags
    if isinstance(msg, PREFIXED) and msg.xid is not None:
        assert ctx.streaming != "off"
    if isinstance(msg, m.StreamAbort):
        assert (msg.abort_lsn is not None) == (ctx.streaming == "parallel")
    for _, values in _tuples(msg):
        assert ctx.binary or not any(isinstance(v, bytes) for v in values)


def _tuples(msg: object) -> list[tuple[str, m.TupleData]]:
    return [(f, getattr(msg, f)) for f in ("old_tuple", "new_tuple") if getattr(msg, f, None) is not None]


def test_a_type_the_context_cannot_send_is_refused_when_the_strategy_is_made() -> None:
    with pytest.raises(InvalidArgument):
        pgoutput_messages(m.StreamStart, context=ProtocolContext(protocol_version=1))


@fast(100)
@given(pgoutput_messages(m.Update, m.Delete))
def test_old_tuples_follow_the_replica_identity(msg: m.Update | m.Delete) -> None:
    # 'O' (FULL) is a whole row and never 'u'; 'K' is full width; Delete always has one.
    if msg.old_tuple is not None:
        assert UNCHANGED not in msg.old_tuple
    if isinstance(msg, m.Delete):
        assert msg.old_kind in ("K", "O")


# -- hypothesis registration ---------------------------------------------------------------

_REGISTERED = [
    *m.MESSAGE_TYPES.values(), m.PgOutputMessage, m.RelationColumn,
    r.XLogData, r.PrimaryKeepalive, r.StandbyStatusUpdate, r.HotStandbyFeedback, r.ReplicationMessage,
    c.IdentifySystem, c.Show, c.TimelineHistory, c.CreateReplicationSlot, c.DropReplicationSlot,
    c.ReadReplicationSlot, c.AlterReplicationSlot, c.StartReplication,
]


def test_the_setup_hook_is_the_hypothesis_entry_point() -> None:
    hooks = [e.value for e in importlib.metadata.entry_points(group="hypothesis")]
    assert "pgwire_spec.strategies:_hypothesis_setup_hook" in hooks


@pytest.mark.parametrize("first", [
    "import pgwire_spec.strategies",
    "from pgwire_spec.strategies import streams",
    "import pgwire_spec._strategies._streams",
    "import hypothesis",
])
def test_any_import_order_works(first: str) -> None:
    # Importing hypothesis runs this package's entry point, which loads the facade: the
    # facade must not import hypothesis before its hook exists (fresh interpreter).
    code = f"{first}\nfrom hypothesis import strategies as st\nfrom pgwire_spec import Insert\n" \
           "from pgwire_spec.strategies import streams\nassert isinstance(st.from_type(Insert).example(), Insert)\n" \
           "streams().example()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("cls", _REGISTERED, ids=lambda cls: cls.__name__)
def test_from_type_draws_valid_instances(cls: type) -> None:
    @fast(20)
    @given(st.from_type(cls))
    def check(value: object) -> None:
        assert isinstance(value, cls)
        if isinstance(value, m.PgOutputMessage):
            assert decode_message(encode(value), **decode_context(value)) == value
        elif isinstance(value, r.ReplicationMessage):
            assert r.decode_copy_data(r.encode_copy_data(value)) == value
        elif isinstance(value, c.ReplicationCommand):
            assert c.parse_command(c.format_command(value)) == value

    check()


# -- column values ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COLUMN_TYPES))
def test_column_values_have_the_asked_form(name: str) -> None:
    @fast(30)
    @given(column_values(name, binary=True, unchanged=True), column_values(COLUMN_TYPES[name], null=False))
    def check(b: object, t: object) -> None:
        assert b is None or b is UNCHANGED or isinstance(b, bytes)
        assert isinstance(t, str) and "\x00" not in t

    check()


def test_unchanged_only_for_toastable_types() -> None:
    @fast(60)
    @given(column_values("int4", unchanged=True))
    def check(v: object) -> None:
        assert v is not UNCHANGED

    check()


def test_an_unknown_column_type_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        column_values("no_such_type")
