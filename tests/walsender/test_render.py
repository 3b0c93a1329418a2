"""What a client gets for what it negotiated: every stream decodes with the strict reference
decoder, and the server's rules (docs: "Logical Replication Message Formats"; spec/errata.yaml;
walsender.c's XLogData framing) hold."""

from __future__ import annotations

import itertools
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire_spec import PgOutputDecoder
from pgwire_spec.pgoutput import messages as m
from pgwire_spec.pgoutput._codec import SPEEDUPS
from pgwire_spec.walsender import Scenario, persona
from pgwire_spec.walsender._history import InsertRuns, compile_history
from pgwire_spec.walsender._render import Frames, NativeFrames, Notice, Write, render

RICH: dict[str, Any] = {
    "server": {"version": "16.4", "logical_decoding_work_mem": 4096},
    "publications": {"pub": ["public.a", "public.f", "public.u"], "other": ["public.hidden"]},
    "tables": {
        "public.a": {"columns": [{"name": "id", "type": "int8", "key": True}, {"name": "v", "type": "text"},
                                 {"name": "big", "type": "text"}, {"name": "amount", "type": "numeric(10,2)"},
                                 {"name": "tags", "type": "text[]"}],
                     "rows": [{"id": 1, "v": "one", "big": "B" * 100, "amount": "1.50", "tags": ["x"]}]},
        "public.f": {"replica_identity": "full", "columns": [{"name": "k", "type": "int4"}, {"name": "w", "type": "jsonb"}],
                     "rows": [{"k": 1, "w": {"a": 1}}]},
        "public.u": {"columns": [{"name": "id", "type": "int4", "key": True},
                                 {"name": "mood", "type": {"oid": 16500, "name": "mood", "namespace": "public"}}]},
        "public.hidden": {"columns": [{"name": "id", "type": "int4", "key": True}]},
    },
    "transactions": [
        {"changes": [{"insert": "public.a", "new": {"id": 2, "v": "two", "big": "C" * 100, "amount": 2, "tags": []}},
                     {"update": "public.a", "key": {"id": 1}, "new": {"v": "uno"}, "unchanged": ["big"]},
                     {"update": "public.a", "key": {"id": 2}, "new": {"id": 20}},
                     {"update": "public.f", "key": {"k": 1}, "new": {"w": {"b": 2}}},
                     {"insert": "public.u", "new": {"id": 1, "mood": "happy"}},
                     {"message": "pfx", "content": "in txn"}]},
        {"changes": [{"insert": "public.hidden", "new": {"id": 1}}]},  # nothing published: empty
        {"message": "nt", "content": "outside", "transactional": False},
        {"origin": {"name": "node1", "lsn": "0/1234"}, "changes": [{"delete": "public.f", "key": {"k": 1}}]},
        {"changes": [{"insert": "public.a", "new": {"id": 100 + i, "v": "x" * 30}} for i in range(40)]
                    + [{"subtransaction": [{"insert": "public.a", "new": {"id": 500 + i, "v": "y" * 30}}
                                           for i in range(40)], "rollback": True}]
                    + [{"insert": "public.a", "new": {"id": 900, "v": "after"}}]},
        {"abort": True, "changes": [{"insert": "public.a", "new": {"id": 1000 + i, "v": "z" * 30}} for i in range(40)]},
        {"prepare": "g1", "changes": [{"insert": "public.a", "new": {"id": 3, "v": "prepared"}}]},
        {"commit_prepared": "g1"},
        {"prepare": "g2", "changes": [{"insert": "public.a", "new": {"id": 4, "v": "rolled back"}}]},
        {"rollback_prepared": "g2"},
        {"changes": [{"truncate": ["public.a", "public.f"], "cascade": True, "restart_identity": True}]},
    ],
}


def _option_sets(major: int) -> list[list[tuple[str, str]]]:
    p = persona(major)
    out = []
    for proto in range(1, p.max_proto + 1):
        choices: list[list[tuple[str, str]]] = [[]]
        if major >= 14 and proto >= 2:
            choices.append([("streaming", "on")])
        if major >= 16 and proto >= 4:
            choices.append([("streaming", "parallel")])
        for streaming in choices:
            for extra in itertools.product(*[
                [[], [(name, "on")]] for name, since, need in
                (("two_phase", 15, 3), ("binary", 14, 1), ("messages", 14, 1)) if major >= since and proto >= need
            ]):
                opts = [("proto_version", str(proto)), ("publication_names", "pub"), *streaming]
                for e in extra:
                    opts += e
                out.append(opts)
    return out


CASES = [(major, opts) for major in (10, 11, 14, 15, 16, 18) for opts in _option_sets(major)]


def _stream(major: int, opts: list[tuple[str, str]], start: int | None = None,
            data: dict[str, Any] | None = None) -> tuple[list[Write], Any]:
    data = dict(data or RICH)
    data["server"] = {**data["server"], "version": f"{major}.4"}
    sc = Scenario.from_dict(data)
    options = persona(major).parse_options(opts)
    plan = render(compile_history(sc), persona(major), options, sc.server.start_lsn if start is None else start)
    writes = [it for it in plan.items if isinstance(it, Write)]
    return writes, options


@pytest.mark.parametrize(("major", "opts"), CASES, ids=lambda x: str(x) if isinstance(x, int) else
                         ",".join(f"{k}={v}" for k, v in x if k not in ("publication_names",)))
def test_every_stream_decodes_strictly_and_follows_the_servers_rules(major: int, opts: list[Any]) -> None:
    writes, options = _stream(major, opts)
    dec = PgOutputDecoder(**options.decoder_options(), strict=True)
    msgs = [dec.decode(w.payload) for w in writes]
    dec.finish()
    assert msgs == [w.message for w in writes]  # the bytes say what we meant
    tags = "".join(x.tag for x in msgs)
    last = 0
    for i, (w, msg) in enumerate(zip(writes, msgs)):
        nxt = msgs[i + 1].tag if i + 1 < len(msgs) else ""
        # zero-LSN rule: Relation and Type, and B/b/S when an Origin follows, are at 0/0
        zero = msg.tag in "RY" or (msg.tag in "BbS" and nxt == "O")
        assert (w.lsn == 0) == zero, (i, msg)
        if w.lsn:
            assert w.lsn >= last, "write positions never go back"
            last = w.lsn
    # Begin's final LSN is its Commit's commit LSN
    begins = [x for x in msgs if isinstance(x, m.Begin)]
    commits = [x for x in msgs if isinstance(x, m.Commit)]
    assert [b.final_lsn for b in begins] == [c.commit_lsn for c in commits]
    streaming = options.streaming != "off"
    assert ("S" in tags) == streaming
    if streaming:
        aborts = [x for x in msgs if isinstance(x, m.StreamAbort)]
        assert aborts, "the rolled-back subtransaction and the aborted transaction were streamed"
        assert all((a.abort_lsn is not None) == (options.streaming == "parallel") for a in aborts)
        assert any(a.subtransaction_xid != a.xid for a in aborts) and any(a.subtransaction_xid == a.xid for a in aborts)
    else:
        assert "A" not in tags
    assert ("b" in tags or "p" in tags) == options.two_phase
    assert ("r" in tags) == options.two_phase  # a rolled back prepared transaction is unseen without
    assert ("M" in tags) == options.messages
    assert ("T" in tags) == (major >= 11)
    assert "O" in tags
    assert ("Y" in tags)
    # binary: 'b' values exactly when asked for, and text for the user type and arrays of text too
    inserts = [x for x in msgs if isinstance(x, m.Insert)]
    has_bytes = any(isinstance(v, bytes) for x in inserts for v in x.new_tuple)
    assert has_bytes == options.binary
    # nothing of the aborted transaction or the rolled-back rows, unless streamed (then
    # Stream Abort discards them downstream)
    if not streaming and not options.binary:
        ids = {int(x.new_tuple[0]) for x in inserts}
        assert not ids & set(range(1000, 1040)) and not ids & set(range(500, 540))


def test_key_old_and_unchanged_tuples() -> None:
    writes, _ = _stream(16, [("proto_version", "1"), ("publication_names", "pub")])
    ups = [w.message for w in writes if isinstance(w.message, m.Update)]
    # unchanged TOAST column as 'u'; no old tuple when the key did not change
    assert ups[0].old_kind is None and ups[0].new_tuple[2] is m.UNCHANGED
    # key changed: 'K', full width, non-key columns NULL
    assert ups[1].old_kind == "K" and ups[1].old_tuple == ("2", None, None, None, None)
    # FULL: 'O' with the whole old row
    assert ups[2].old_kind == "O" and ups[2].old_tuple == ("1", '{"a": 1}')
    rel = next(w.message for w in writes if isinstance(w.message, m.Relation) and w.message.name == "f")
    assert rel.replica_identity == "f" and all(c.flags == 1 for c in rel.columns)
    rel = next(w.message for w in writes if isinstance(w.message, m.Relation) and w.message.name == "a")
    assert [c.flags for c in rel.columns] == [1, 0, 0, 0, 0] and rel.columns[3].type_modifier == (10 << 16 | 2) + 4
    typ = next(w.message for w in writes if isinstance(w.message, m.Type))
    assert (typ.type_oid, typ.namespace, typ.name) == (16500, "public", "mood")


def test_empty_transactions_until_14_only() -> None:
    for major, expect in ((14, True), (15, False)):
        writes, _ = _stream(major, [("proto_version", "1"), ("publication_names", "pub")])
        tags = "".join(w.message.tag for w in writes)
        assert ("BC" in tags) == expect


def test_two_phase_off_sends_the_prepared_transaction_at_commit_prepared() -> None:
    writes, _ = _stream(16, [("proto_version", "3"), ("publication_names", "pub")])
    msgs = [w.message for w in writes]
    i = next(k for k, x in enumerate(msgs) if isinstance(x, m.Insert) and x.new_tuple[1] == "prepared")
    assert isinstance(msgs[i - 1], m.Begin) and isinstance(msgs[i + 1], m.Commit)
    assert not any(isinstance(x, m.Insert) and x.new_tuple[1] == "rolled back" for x in msgs)


def test_origin_none_skips_transactions_from_an_origin() -> None:
    with_any, _ = _stream(16, [("proto_version", "4"), ("publication_names", "pub"), ("origin", "any")])
    with_none, _ = _stream(16, [("proto_version", "4"), ("publication_names", "pub"), ("origin", "none")])
    assert any(isinstance(w.message, m.Origin) for w in with_any)
    assert not any(isinstance(w.message, m.Origin) for w in with_none)
    assert len(with_none) < len(with_any)


def test_restart_position_skips_transactions_committed_before_it() -> None:
    opts = [("proto_version", "1"), ("publication_names", "pub")]
    full, _ = _stream(16, opts)
    commits = [w for w in full if isinstance(w.message, m.Commit)]
    # confirm the first commit's position (its end LSN, the XLogData position)
    rest, _ = _stream(16, opts, start=commits[0].lsn)
    first_rest = [w.message.xid for w in rest if isinstance(w.message, m.Begin)]
    first_full = [w.message.xid for w in full if isinstance(w.message, m.Begin)]
    assert first_rest == first_full[1:]
    # the Relation is sent again: it is the first change of this connection
    assert any(isinstance(w.message, m.Relation) and w.message.name == "f" for w in rest[:4])


def test_missing_publication_error_before_18_warning_from_18() -> None:
    opts = [("proto_version", "1"), ("publication_names", "pub,nope")]
    data = dict(RICH)
    for major, severity in ((17, "ERROR"), (18, "WARNING")):
        sc = Scenario.from_dict({**data, "server": {"version": f"{major}.0"}})
        plan = render(compile_history(sc), persona(major), persona(major).parse_options(opts), sc.server.start_lsn)
        notices = [it for it in plan.items if isinstance(it, Notice)]
        assert notices[0].error.severity == severity
        if severity == "ERROR":
            assert notices[0].error.sqlstate == "42704" and plan.items[-1] is notices[0]
        else:
            assert notices[0].error.message == 'skipped loading publication "nope"'
            assert any(isinstance(it, Write) for it in plan.items[1:])


#: The frames' implementations: by the C extension when it is built, and in Python.
FRAMES = ["python"] + (["c"] if SPEEDUPS is not None else [])


@pytest.mark.parametrize("kind", FRAMES)
def test_frames_cut_as_the_plan_grows_equal_each_write_framed_alone(kind: str) -> None:
    """The shared frames of a plan rendered a few items at a time, a WARNING among them
    (18's missing publication), are each Write framed alone, sent the first time or again;
    a Notice is no frame and a run stops before it; a span reaches the size asked for."""
    from pgwire_spec.replication import frames

    sc = Scenario.from_dict({**RICH, "server": {"version": "18.0"}})
    options = persona(18).parse_options([("proto_version", "1"), ("publication_names", "pub,nope")])
    plan = render(compile_history(sc), persona(18), options, sc.server.start_lsn, lazy=True)
    fr: Frames | NativeFrames = Frames() if kind == "python" else NativeFrames(plan)
    while not plan.done:
        plan.grow(len(plan.items) + 3)
        fr.extend(plan)
    items = list(plan.items)
    assert any(isinstance(it, Notice) for it in items) and len(fr) == len(items)
    i = 0
    while i < len(items):
        stop = fr.next_notice(i)
        assert all(isinstance(it, Write) for it in items[i:stop])
        for a in range(i, stop):
            for b in range(a + 1, min(stop, a + 4) + 1):
                want = b"".join(frames.xlog_data(w.lsn, w.lsn, 7, w.payload) for w in items[a:b])  # type: ignore[union-attr]
                assert fr.run(a, b, frames.send_time(7)) == want
            sizes = list(itertools.accumulate(len(frames.xlog_data(0, 0, 0, w.payload)) for w in items[a:stop]))  # type: ignore[union-attr]
            for size in (0, 1, sizes[0], sizes[0] + 1, sizes[-1], sizes[-1] + 1):
                want_j = next((a + 1 + k for k, total in enumerate(sizes) if total >= size), stop)
                assert fr.span(a, stop, size) == max(want_j, a + 1)
        if stop < len(items):
            assert isinstance(items[stop], Notice)
        # sent again (a warm stream): the same bytes
        want = b"".join(frames.xlog_data(w.lsn, w.lsn, 9, w.payload) for w in items[i:stop])  # type: ignore[union-attr]
        assert stop == i or fr.run(i, stop, frames.send_time(9)) == want
        i = stop + 1
    assert type(plan.frames()) is (NativeFrames if SPEEDUPS is not None else Frames)


# -- the Insert encoder of plain transactions (the bulk of a stream) ---------------------------

_ENCODER_TYPES = ("int2", "int4", "int8", "oid", "text", "varchar(10)", "bpchar", "name", "bool", "numeric",
                  "float8", "date", "jsonb", "uuid", "int4[]", "bytea", "char")


def _columns(types: tuple[str, ...]) -> tuple[Any, ...]:
    from pgwire_spec.walsender.scenario import Column
    from pgwire_spec.walsender.types import resolve_type

    return tuple(Column(f'c "{i}"', resolve_type(t)) for i, t in enumerate(types))


def _expected(oid: int, columns: tuple[Any, ...], row: dict[str, Any]) -> bytes:
    from pgwire_spec.pgoutput._codec import encode

    return encode(m.Insert(None, oid, tuple(c.type.text(row.get(c.name)) for c in columns)))


#: The Insert encoders: the C extension's writer when built, and the pure-Python ones.
NATIVE = [None] + ([SPEEDUPS.encode_text_rows] if SPEEDUPS is not None else [])


@pytest.mark.parametrize("native", NATIVE, ids=["python", "c"][:len(NATIVE)])
@pytest.mark.parametrize("width", [0, 1, 3, len(_ENCODER_TYPES), 70])  # 70: past the unrolled form
def test_insert_encoder_equals_the_codec(width: int, native: Any) -> None:
    """The payload of a top-level text Insert, written out per relation or by the C
    extension, is the codec's encoding of the same Insert, for every type's values, NULLs,
    non-ASCII and lone surrogates, values given in another Python type (a numeric string
    for an int, a bool, an int past 64 bits)."""
    from pgwire_spec.walsender._render import _insert_encoders

    types = tuple(itertools.islice(itertools.cycle(_ENCODER_TYPES), width))
    columns = _columns(types)
    samples: dict[str, list[Any]] = {
        "int2": [0, -32768, "17"], "int4": [2**31 - 1, " 5 "], "int8": [-(2**63), 10**18, 2**63 - 1], "oid": [4294967295],
        "text": ["", "é ✓", "a\udcff", "y" * 5000], "varchar(10)": ["x"], "bpchar": ["ab"], "name": ["n"], "bool": [True, "off"],
        "numeric": [1, "2.50"], "float8": [1.5, 7], "date": ["2024-01-02"], "jsonb": [{"a": [1]}],
        "uuid": ["12345678-1234-5678-1234-567812345678"], "int4[]": [[1, None, 3]], "bytea": [b"\x00\xff"],
        "char": ["c"],
    }
    encoder, encode_run = _insert_encoders(16400, columns, native=native)
    rows = []
    for r in range(6):
        row: dict[str, Any] = {}
        for i, (c, t) in enumerate(zip(columns, types)):
            values = samples[t]
            row[c.name] = None if (r + i) % 5 == 4 else values[(r + i) % len(values)]
        if r == 5:
            row = {c.name: row[c.name] for c in columns if row[c.name] is not None}  # missing keys are NULL
        assert encoder(row) == _expected(16400, columns, row)
        rows.append(row)
    # no NULL at all (the one-struct path) and a second row of the same lengths (its kept format)
    row = {c.name: samples[t][0] for c, t in zip(columns, types)}
    assert encoder(row) == encoder(dict(row)) == _expected(16400, columns, row)
    # a mapping that is no dict is encoded by the reference loop
    assert encode_run([MappingProxyType(row)]) == [_expected(16400, columns, row)]
    # a run of rows: each as alone, whichever path each one takes
    rows += [row, dict(row)]
    assert encode_run(rows) == [_expected(16400, columns, r) for r in rows]


@pytest.mark.parametrize("native", NATIVE, ids=["python", "c"][:len(NATIVE)])
def test_insert_encoder_refuses_what_the_type_refuses(native: Any) -> None:
    from pgwire_spec.walsender._render import _insert_encoders
    from pgwire_spec.walsender.types import TypeValueError

    encoder, encode_run = _insert_encoders(16400, _columns(("int4", "text")), native=native)
    for bad in (True, "one", 1.5):
        with pytest.raises(TypeValueError):
            encoder({'c "0"': bad, 'c "1"': "x"})
        with pytest.raises(TypeValueError):
            encode_run([{'c "0"': 1, 'c "1"': "x"}, {'c "0"': bad, 'c "1"': "x"}])


def test_an_enum_is_sent_in_binary_as_its_label() -> None:
    """proto.c logicalrep_write_tuple: binary for a type with a send function, and an enum's
    (enum_send) is its label's text; a user type without labels stays text."""
    data = {**RICH, "tables": {**RICH["tables"], "public.u": {"columns": [
        {"name": "id", "type": "int4", "key": True},
        {"name": "mood", "type": {"oid": 16500, "name": "mood", "enum": ["sad", "happy"]}}]}}}
    for binary, want in (("true", b"happy"), ("false", "happy")):
        writes, _ = _stream(16, [("proto_version", "1"), ("publication_names", "pub"), ("binary", binary)], data=data)
        relid = next(w.message.relation_id for w in writes if isinstance(w.message, m.Relation)
                     and w.message.name == "u")
        moods = [w.message.new_tuple[1] for w in writes if isinstance(w.message, m.Insert)
                 and w.message.relation_id == relid]
        assert moods == [want]


def test_insert_runs_end_where_the_table_or_the_kind_changes() -> None:
    """A run holds the inserts into one table in a row; any other change ends it and is a
    run of its own; a transaction's runs are made once with the history (none when a
    subtransaction was rolled back: its changes are filtered first)."""
    from pgwire_spec.walsender._history import ChangeEvent

    a, b = object(), object()
    kinds = [("insert", a), ("insert", a), ("update", a), ("insert", a), ("insert", b), ("insert", b),
             ("insert", a), ("delete", b), ("message", None)]
    changes = [ChangeEvent(k, 100 + i, 7, t, new={"i": i}) for i, (k, t) in enumerate(kinds)]  # type: ignore[arg-type]
    runs = InsertRuns.of(changes)
    assert runs.ends == [2, 2, 3, 4, 6, 6, 7, 8, 9]
    assert runs.lsns == [100 + i for i in range(9)] and runs.news == [{"i": i} for i in range(9)]
    assert InsertRuns.of([]).ends == []
    history = compile_history(Scenario.from_dict(RICH))
    txns = [ev for ev in history.events if hasattr(ev, "rollbacks")]
    assert any(t.rollbacks for t in txns) and any(not t.rollbacks for t in txns)
    for t in txns:
        assert (t.inserts is None) == t.rollbacks
        assert t.inserts is None or t.inserts == InsertRuns.of(t.items)  # type: ignore[arg-type]


_VALUES = st.one_of(st.none(), st.integers(), st.text(), st.booleans(), st.floats(allow_nan=False),
                    st.binary(max_size=8))


@pytest.mark.skipif(SPEEDUPS is None, reason="the C extension is not built: the pure-Python encoders only")
@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), _VALUES), max_size=6))
def test_c_insert_encoder_equals_the_python_loop(rows: list[dict[str, Any]]) -> None:
    """The C extension's rows are the pure-Python encoder's, or both refuse the same value
    with the same error: ints of any size, any text (surrogates too), bools, floats and
    bytes in int8, text and numeric columns, NULLs and missing keys."""
    from pgwire_spec.walsender._render import _insert_encoders

    columns = tuple(c for c in _columns(("int8", "text", "numeric")))
    columns = tuple(type(c)(n, c.type) for n, c in zip("abc", columns))
    outcomes = []
    for native in NATIVE:
        _one, encode_run = _insert_encoders(16400, columns, native=native)
        try:
            outcomes.append(encode_run(list(rows)))
        except Exception as exc:  # noqa: BLE001 - compared between the two encoders
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]
