"""The generated C decoders (pgwire_spec/_speedups.c) against the generated Python codec.

For every input both backends must give the same result: the same message (same classes,
same value types), or both a DecodeError from the same tracing path. The C decoder must
also accept everything the Python fast path accepts, and refuse anything else with its
private ``Invalid`` only. Inputs: the hand-built vectors with every truncation and many
mutations, the real PostgreSQL 15 stream, hypothesis-built messages and hypothesis bytes.

These tests use the extension directly, so they also run (and must pass) with
PGWIRE_SPEC_PURE_PYTHON=1, which only changes the backend the codec picks.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import os
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from construct import Const, FormatField, If, IfThenElse, PrefixedArray, Struct, this
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgwire_spec import DecodeError, PgOutputDecoder, _cgen, encode
from pgwire_spec._codegen import TupleValues, decode_traced
from pgwire_spec._primitives import Int16, StringBytes
from pgwire_spec.pgoutput import _cbuild, _codec, grammar, messages
from pgwire_spec.pgoutput import decoder as decoder_module
from pgwire_spec.pgoutput.messages import UNCHANGED, RelationColumn
from tests.pgoutput.vectors import VECTORS, Vector

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "pg15_sample.jsonl"

try:
    C_DECODERS: dict[int, Any] | None = _codec.load_c_decoders()
    C_MISSING = ""
except ModuleNotFoundError:
    C_DECODERS = None
    C_MISSING = "the C extension is not built (no C compiler when installing): pure-Python codec only"
except ImportError as exc:  # built, but from another grammar
    C_DECODERS = None
    C_MISSING = str(exc)

needs_c = pytest.mark.skipif(C_DECODERS is None, reason=C_MISSING or "C extension available")
PY_DECODERS = _codec.PY_DECODERS
TAGS = sorted(PY_DECODERS)
CONTEXTS = [(s, a, b) for s in (False, True) for a in (False, True) for b in (False, True)]


# -- comparing results ----------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (1 == True, b'' == bytearray() are not).
    The Python fast path's lazy TupleValues stands for the plain tuple of its values."""
    if type(a) is TupleValues:
        a = tuple(a)
    if type(b) is TupleValues:
        b = tuple(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, DecodeError):
        return str(a) == str(b) and a.as_dict() == b.as_dict()
    return bool(a == b)


def outcome(fast: dict[int, Any], data: bytes, ctx: tuple[bool, bool, bool]) -> tuple[Any, bool]:
    """What the codec yields with *fast* as its fast path: (message or DecodeError, whether
    the fast path itself accepted the input). A failed fast path goes straight to the
    tracing decoder, so a fast path that refuses valid input cannot hide behind the other."""
    in_stream, abort_tail, binary_ok = ctx
    if not data or data[0] not in fast:
        # no decoder to choose: the family's own error, the same for both backends
        try:
            return _codec.FAMILY.decode(data, in_stream, abort_tail, binary_ok), False
        except DecodeError as err:
            return err, False
    try:
        return fast[data[0]](data, in_stream, abort_tail, binary_ok), True
    except Exception as exc:
        if fast is C_DECODERS:
            speedups = importlib.import_module("pgwire_spec._speedups")
            assert type(exc) is speedups.Invalid, f"C decoder raised {exc!r} for {data!r}"
    try:
        return decode_traced(_codec.FAMILY.by_tag[data[0]], data, in_stream, abort_tail, binary_ok), False
    except DecodeError as err:
        return err, False


def check(data: bytes, ctx: tuple[bool, bool, bool]) -> Any:
    """Both backends agree on *data* in *ctx*; the result."""
    assert C_DECODERS is not None
    py, py_fast = outcome(PY_DECODERS, data, ctx)
    c, c_fast = outcome(C_DECODERS, data, ctx)
    assert same(c, py), (data, ctx, c, py)
    eager, _ = outcome(_codec.FAMILY.eager_decoders, data, ctx)
    assert same(c, eager), (data, ctx, c, eager)
    # The fast paths refuse the same bad input; they differ only on text that is not UTF-8,
    # which one hands to the tracing path and the other keeps (Python's lazy tuple values,
    # decoded like the tracing path does): then both decoded it, alike (checked above).
    if c_fast != py_fast:
        assert not isinstance(py, DecodeError), (data, ctx, py)
    return c


def vector_ctx(v: Vector) -> tuple[bool, bool, bool]:
    return v.in_stream, v.streaming == "parallel", True


# -- the generated source and the build -------------------------------------------------------


def test_generated_source_is_up_to_date() -> None:
    assert _cgen.SOURCE_PATH.read_text() == _cbuild.source(), (
        "pgwire_spec/_speedups.c is not what the grammar generates: "
        "run python -m pgwire_spec.pgoutput._cbuild"
    )


def test_generated_source_says_how_to_regenerate() -> None:
    head = _cgen.SOURCE_PATH.read_text()[:400]
    assert "GENERATED by pgwire_spec/_cgen.py" in head and "python -m pgwire_spec.pgoutput._cbuild" in head


def test_check_mode_reports_a_stale_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "_speedups.c"
    stale.write_text(_cbuild.source().replace("goto fail;", "goto fail; ", 1))
    monkeypatch.setattr(_cbuild, "SOURCE_PATH", stale)
    assert _cbuild.main(["--check"]) == 1
    assert _cbuild.main([]) == 0
    assert _cbuild.main(["--check"]) == 0
    assert stale.read_text() == _cbuild.source()


def test_generator_refuses_what_it_does_not_know() -> None:
    tag = "tag" / Const(b"X")
    with pytest.raises(TypeError, match="does not know"):
        _cgen.generate_c({"X": Struct(tag, "s" / StringBytes)}, {}, "test")
    with pytest.raises(TypeError, match="format"):
        _cgen.generate_c({"X": Struct(tag, "v" / FormatField("<", "H"))}, {}, "test")
    with pytest.raises(TypeError, match="nested struct"):  # a nested struct needs its dataclass
        _cgen.generate_c({"X": Struct(tag, "v" / PrefixedArray(Int16, Struct("a" / Int16)))}, {}, "test")
    with pytest.raises(TypeError, match="condition"):
        _cgen.generate_c({"X": Struct(tag, "a" / Int16, "v" / If(this.a > 1, Int16))}, {}, "test")
    with pytest.raises(TypeError, match="starts with its tag"):
        _cgen.generate_c({"X": Struct("a" / Int16)}, {}, "test")


def test_built_extension_is_current() -> None:
    if C_DECODERS is None and "another grammar" not in C_MISSING:
        pytest.skip(C_MISSING)
    assert "another grammar" not in C_MISSING, C_MISSING + " (pip install -e . --no-deps)"


def test_backend_follows_the_environment() -> None:
    pure = os.environ.get("PGWIRE_SPEC_PURE_PYTHON", "") not in ("", "0")
    expected = "python" if pure or C_DECODERS is None else "c"
    assert _codec.BACKEND == expected
    assert (_codec._DECODERS is _codec.PY_DECODERS) == (expected == "python")


@pytest.mark.parametrize("pure", ["1", ""])
def test_backend_in_a_fresh_interpreter(pure: str) -> None:
    env = dict(os.environ, PGWIRE_SPEC_PURE_PYTHON=pure)
    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c",
         "import pgwire_spec.pgoutput._codec as c; print(c.BACKEND)"],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )
    expected = "python" if pure or C_DECODERS is None else "c"
    assert out.stdout.strip() == expected


# -- differential: hand-built vectors ---------------------------------------------------------


@needs_c
@pytest.mark.parametrize("v", VECTORS, ids=[v.name for v in VECTORS])
def test_vectors_every_cut_and_context(v: Vector) -> None:
    assert same(check(v.data, vector_ctx(v)), v.message)
    for ctx in CONTEXTS:
        check(v.data, ctx)
        check(v.data + b"\x00", ctx)
        for cut in range(len(v.data)):
            check(v.data[:cut], ctx)


@needs_c
@pytest.mark.parametrize("v", VECTORS, ids=[v.name for v in VECTORS])
def test_vectors_every_byte_mutated(v: Vector) -> None:
    ctx = vector_ctx(v)
    for pos in range(len(v.data)):
        for value in {0x00, 0x01, 0x7F, 0x80, 0xFF, v.data[pos] ^ 0x01}:
            check(v.data[:pos] + bytes([value]) + v.data[pos + 1:], ctx)
        check(v.data[:pos] + v.data[pos + 1:], ctx)  # a byte missing
        check(v.data[:pos] + b"\x00" + v.data[pos:], ctx)  # a byte more


@needs_c
def test_the_malformed_inputs_of_the_vector_tests() -> None:
    for data in (b"", b"Z", b"I\x00\x00\x40\x00N\x00\x01x", b"I\x00\x00\x40\x00X\x00\x00",
                 b"I\x00\x00\x40\x00N\x00\x01t\xff\xff\xff\xff", b"O" + b"\x00" * 8 + b"name",
                 b"D\x00\x00\x40\x00N\x00\x00", b"S\x00\x00\x00\x01\x02",
                 b"U\x00\x00\x40\x00K\x00\x00O\x00\x00N\x00\x00"):
        for ctx in CONTEXTS:
            assert isinstance(check(data, ctx), DecodeError)


@needs_c
def test_text_that_is_not_utf8_is_kept_through_surrogateescape() -> None:
    data = b"I\x00\x00\x40\x00N\x00\x02t\x00\x00\x00\x02\xff\xfeb\x00\x00\x00\x01\xff"
    msg = check(data, (False, False, True))
    assert msg.new_tuple == ("\udcff\udcfe", b"\xff")
    assert encode(msg) == data
    origin = b"O" + bytes(8) + b"caf\xe9\x00"
    assert check(origin, (False, False, False)).name == "caf\udce9"


# -- differential: the real stream ------------------------------------------------------------


def sample() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    return lines[0], lines[1:]


@needs_c
def test_real_stream_every_payload() -> None:
    header, cases = sample()
    in_stream = False
    for case in cases:
        options = header["option_sets"][case["set"]]
        data = bytes.fromhex(case["hex"])
        if data[:1] == b"S":
            in_stream = True
        ctx = (in_stream and data[:1] != b"S", False, options.get("binary") == "true")
        msg = check(data, ctx)
        assert not isinstance(msg, DecodeError), case
        assert encode(msg) == data
        if data[:1] == b"E":
            in_stream = False
        for other in CONTEXTS:
            check(data, other)


@needs_c
@pytest.mark.parametrize("strict", [True, False])
def test_real_stream_through_the_stateful_decoder(strict: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    header, cases = sample()

    def run(fast: dict[int, Any]) -> tuple[list[Any], list[Any]]:
        monkeypatch.setattr(decoder_module, "_DECODERS", fast)
        monkeypatch.setattr(decoder_module, "_EAGER_DECODERS",
                            fast if fast is C_DECODERS else _codec.FAMILY.eager_decoders)
        out: list[Any] = []
        warnings: list[Any] = []
        for index, options in enumerate(header["option_sets"]):
            # binary values without binary = true: refused when strict, warned when not
            dec = PgOutputDecoder(
                protocol_version=int(options["proto_version"]),
                streaming=options.get("streaming", "off"), binary=False, strict=strict,
            )
            for case in cases:
                if case["set"] != index:
                    continue
                try:
                    out.append(dec.decode(bytes.fromhex(case["hex"])))
                except DecodeError as err:
                    out.append(err)
            warnings.extend(dec.warnings)
        return out, warnings

    c_msgs, c_warn = run(C_DECODERS)  # type: ignore[arg-type]
    py_msgs, py_warn = run(PY_DECODERS)
    assert len(c_msgs) == len(py_msgs) == len(cases)
    for a, b in zip(c_msgs, py_msgs):
        assert same(a, b), (a, b)
    assert [w.as_dict() for w in c_warn] == [w.as_dict() for w in py_warn]


# -- differential: hypothesis -----------------------------------------------------------------



def text_of(nul: bool) -> st.SearchStrategy[str]:
    """Text the encoder writes and the decoder gives back: Unicode without surrogates, or
    any bytes through surrogateescape; without NUL for Strings (they end at NUL)."""
    chars = st.characters(exclude_categories=["Cs"], exclude_characters="" if nul else "\x00")
    raw = st.binary(max_size=12) if nul else st.binary(max_size=12).map(lambda b: b.replace(b"\0", b""))
    return st.one_of(st.text(chars, max_size=12), raw.map(lambda b: b.decode("utf-8", "surrogateescape")))


any_text = text_of(nul=True)
name_text = text_of(nul=False)
column_value = st.one_of(st.none(), st.just(UNCHANGED), any_text, st.binary(max_size=12))
tuple_data = st.lists(column_value, max_size=8).map(tuple)
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "prefix": name_text, "name": name_text, "namespace": name_text, "gid": name_text,
    "content": st.binary(max_size=16),
    "first_segment": st.booleans(),
    "replica_identity": st.sampled_from("dnfi"),
    "old_kind": st.sampled_from("KO"),
    "relation_ids": st.lists(st.integers(0, 2**32 - 1), max_size=5).map(tuple),
    "new_tuple": tuple_data, "old_tuple": tuple_data,
}


def int_range(fmt: str) -> st.SearchStrategy[int]:
    bits = 8 * struct.calcsize(fmt)
    if fmt[-1].islower():
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return st.integers(0, 2**bits - 1)


def field_strategy(layout: Any, name: str) -> st.SearchStrategy[Any]:
    """Integers over the range of their wire type in the layout; other fields by name."""
    node = next(sub.subcon for sub in layout.subcons if sub.name == name)
    if isinstance(node, IfThenElse):
        node = node.thensubcon
    if isinstance(node, FormatField):
        return int_range(node.fmtstr)
    return FIELDS[name]


FIELDS["columns"] = st.lists(
    st.builds(RelationColumn, **{f.name: field_strategy(grammar.RelationColumn, f.name)
                                 for f in dataclasses.fields(RelationColumn)}),
    max_size=5,
).map(tuple)


def message_strategy(name: str) -> st.SearchStrategy[Any]:
    cls = messages.MESSAGE_TYPES[name]
    layout = grammar.LAYOUTS[name]
    kwargs = {f.name: field_strategy(layout, f.name) for f in dataclasses.fields(cls)}
    if any(sub.name == "xid" and sub.subcon is grammar.StreamXid for sub in layout.subcons):
        kwargs["xid"] = st.none() | kwargs["xid"]  # present exactly in a streamed block
    if name == "Update":
        old = st.one_of(st.just((None, None)), st.tuples(st.sampled_from("KO"), tuple_data))
        return st.builds(lambda o, **kw: cls(old_kind=o[0], old_tuple=o[1], **kw), old,
                         **{k: v for k, v in kwargs.items() if k not in ("old_kind", "old_tuple")})
    if name == "StreamAbort":
        tail = st.one_of(st.just((None, None)), st.tuples(kwargs["abort_lsn"], kwargs["abort_time"]))
        return st.builds(lambda t, **kw: cls(abort_lsn=t[0], abort_time=t[1], **kw), tail,
                         xid=kwargs["xid"], subtransaction_xid=kwargs["subtransaction_xid"])
    return st.builds(cls, **kwargs)


any_message = st.one_of([message_strategy(name) for name in messages.MESSAGE_TYPES])


def natural_ctx(msg: Any) -> tuple[bool, bool, bool]:
    streamed = getattr(msg, "xid", None) is not None and any(
        sub.subcon is grammar.StreamXid for sub in grammar.LAYOUTS[type(msg).__name__].subcons
    )
    return streamed, getattr(msg, "abort_lsn", None) is not None, True


HYP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@needs_c
@HYP
@given(msg=any_message, ctx=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_hypothesis_messages(msg: Any, ctx: tuple[bool, bool, bool]) -> None:
    data = encode(msg)
    assert same(check(data, natural_ctx(msg)), msg)
    check(data, ctx)


@needs_c
@HYP
@given(msg=any_message, data=st.data())
def test_hypothesis_truncated_and_mutated(msg: Any, data: st.DataObject) -> None:
    raw = encode(msg)
    ctx = natural_ctx(msg)
    cut = data.draw(st.integers(0, len(raw)))
    check(raw[:cut], ctx)
    pos = data.draw(st.integers(0, len(raw) - 1))
    byte = data.draw(st.integers(0, 255))
    mode = data.draw(st.sampled_from(["set", "insert", "delete"]))
    if mode == "set":
        mutated = raw[:pos] + bytes([byte]) + raw[pos + 1:]
    elif mode == "insert":
        mutated = raw[:pos] + bytes([byte]) + raw[pos:]
    else:
        mutated = raw[:pos] + raw[pos + 1:]
    check(mutated, ctx)
    check(mutated, data.draw(st.sampled_from(CONTEXTS)))


@needs_c
@settings(max_examples=500, deadline=None)
@given(tag=st.sampled_from(TAGS), body=st.binary(max_size=48), ctx=st.sampled_from(CONTEXTS))
def test_hypothesis_random_bytes(tag: int, body: bytes, ctx: tuple[bool, bool, bool]) -> None:
    check(bytes([tag]) + body, ctx)


# -- the C functions themselves ---------------------------------------------------------------


def speedups() -> Any:
    return importlib.import_module("pgwire_spec._speedups")


@needs_c
def test_signature_and_inputs() -> None:
    fast = C_DECODERS
    assert fast is not None
    v = next(v for v in VECTORS if v.name == "insert-non-ascii-binary-streamed")
    fn = fast[v.data[0]]
    assert same(fn(v.data, True, False), v.message)  # binary_ok defaults to True
    with pytest.raises(speedups().Invalid):
        fn(v.data, True, False, False)
    for wrapped in (bytearray(v.data), memoryview(v.data)):
        assert same(fn(wrapped, 1, 0, 1), v.message)  # values are bytes, not views
    with pytest.raises(TypeError):
        fn(v.data, True)
    with pytest.raises(TypeError):
        fn("text", True, False)
    assert issubclass(speedups().Invalid, ValueError)
    assert not issubclass(speedups().Invalid, DecodeError)


@needs_c
def test_every_message_class_has_a_c_decoder() -> None:
    assert C_DECODERS is not None
    assert {fn.__name__ for fn in C_DECODERS.values()} == {f"decode_{n}" for n in messages.MESSAGE_TYPES}
    assert set(C_DECODERS) == set(PY_DECODERS)


@needs_c
def test_a_failed_setup_changes_nothing() -> None:
    mod = speedups()
    classes: dict[str, type] = dict(messages.MESSAGE_TYPES)
    classes["RelationColumn"] = RelationColumn
    wrong = dataclasses.make_dataclass("Begin", ["final_lsn", "xid"], frozen=True, slots=True)
    plain = type("Commit", (), {})
    try:
        for bad in ({**classes, "Begin": wrong}, {**classes, "Commit": plain},
                    {k: v for k, v in classes.items() if k != "RelationColumn"}):
            with pytest.raises(TypeError, match="setup"):
                mod.setup(bad, UNCHANGED)
            data = VECTORS[0].data
            assert type(C_DECODERS[data[0]](data, False, False)) is messages.Begin  # type: ignore[index]
    finally:
        mod.setup(classes, UNCHANGED)


@pytest.mark.parametrize(
    "data",
    [
        b"I\x00\x00\x40\x00N\xff\xff",  # 65535 columns announced, none present
        b"I\x00\x00\x40\x00N\xff\xff" + b"n" * 100,
        b"T\xff\xff\xff\xff\x00",  # 2**32 - 1 relations
        b"T\xff\xff\xff\xff\x00" + b"\x00" * 100,
        b"R\x00\x00\x40\x00s\x00t\x00d\xff\xff" + b"\x00" * 100,  # 65535 columns, 10 bytes each
    ],
)
@needs_c
def test_counts_are_bounded_by_the_bytes_left(data: bytes) -> None:
    fn = C_DECODERS[data[0]]  # type: ignore[index]
    tracemalloc.start()
    try:
        with pytest.raises(speedups().Invalid):
            fn(data, False, False, True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4096 + 16 * len(data)


def _inputs() -> list[tuple[bytes, tuple[bool, bool, bool]]]:
    out = []
    for v in VECTORS:
        ctx = vector_ctx(v)
        out.append((v.data, ctx))
        out.extend((v.data[:cut], ctx) for cut in range(0, len(v.data), 3))
        out.append((v.data + b"\x00", ctx))
    return out


@needs_c
def test_no_references_leak() -> None:
    fast = C_DECODERS
    assert fast is not None
    inputs = _inputs()

    def run_all() -> None:
        for data, (s, a, b) in inputs:
            try:
                fast[data[0]](data, s, a, b) if data else None
            except ValueError:
                pass

    watched: list[Any] = [None, True, False, UNCHANGED, RelationColumn, *messages.MESSAGE_TYPES.values()]
    run_all()
    gc.collect()
    before = [sys.getrefcount(o) for o in watched]
    tracemalloc.start()
    try:
        run_all()
        gc.collect()
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(20):
            run_all()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    after = [sys.getrefcount(o) for o in watched]
    assert after == before, [(o, b, a) for o, b, a in zip(watched, before, after) if a != b]
    assert end - start < 20_000, f"{end - start} bytes held after 20 x {len(inputs)} decodes"


def test_decode_payload_with_either_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The codec's own entry point explains failures alike whichever backend is active."""
    backends: list[tuple[str, dict[int, Callable[..., Any]]]] = [("python", PY_DECODERS)]
    if C_DECODERS is not None:
        backends.append(("c", C_DECODERS))
    for backend, fast in backends:
        monkeypatch.setattr(_codec, "BACKEND", backend)
        monkeypatch.setattr(_codec, "_DECODERS", fast)
        for v in VECTORS:
            s, a, b = vector_ctx(v)
            assert same(_codec.decode_payload(v.data, s, a, b), v.message)
            with pytest.raises(DecodeError) as info:
                _codec.decode_payload(v.data[:-1], s, a, b)
            assert info.value.rule in {"truncated", "string-unterminated", "length-out-of-range"}


# -- the writers the fake walsender uses ------------------------------------------------------

LSNS = st.integers(0, 2**64 - 1)


@needs_c
@HYP
@given(items=st.lists(st.tuples(LSNS, st.binary(max_size=40)), max_size=12), ts=st.integers(-(2**63), 2**63 - 1),
       data=st.data())
def test_xlog_frames_and_span_equal_the_frame_encoder(items: list[tuple[int, bytes]], ts: int,
                                                      data: st.DataObject) -> None:
    """xlog_frames is frames.xlog_data joined (dataStart = walEnd), for any range of a plan's
    lists; xlog_span is where those frames reach a size."""
    from pgwire_spec.replication import frames

    lsns, payloads = [i[0] for i in items], [i[1] for i in items]
    start = data.draw(st.integers(0, len(items)))
    stop = data.draw(st.integers(start, len(items)))
    want = [frames.xlog_data(lsn, lsn, ts, p) for lsn, p in items[start:stop]]
    assert speedups().xlog_frames(lsns, payloads, start, stop, frames.send_time(ts)) == b"".join(want)
    size = data.draw(st.integers(0, 400))
    ends = [start + k + 1 for k in range(len(want)) if sum(map(len, want[:k + 1])) >= size]
    want_j = max(ends[0] if ends else stop, min(start + 1, stop))  # one frame at least
    assert speedups().xlog_span(lsns, payloads, start, stop, size) == want_j


@needs_c
def test_xlog_writers_refuse_what_is_no_plan() -> None:
    mod, stamp = speedups(), b"\x00" * 8
    for args, error in [
        (([1], [b"x"], 0, 2, stamp), IndexError),  # past the lists
        (([1], [b"x"], 1, 0, stamp), IndexError),
        (([1], [b"x"], -1, 1, stamp), IndexError),
        (([1], [None], 0, 1, stamp), TypeError),  # a Notice's place
        (([-1], [b"x"], 0, 1, stamp), OverflowError),  # no LSN
        (([1], [b"x"], 0, 1, b"\x00"), TypeError),  # no sendTime
        (((1,), [b"x"], 0, 1, stamp), TypeError),
        (([1], [b"x"], 0, 1), TypeError),
    ]:
        with pytest.raises(error):
            mod.xlog_frames(*args)
    with pytest.raises(TypeError):
        mod.xlog_span([1], [None], 0, 1, 10)
    with pytest.raises(TypeError):
        mod.encode_text_rows(b"I", ("a",), (int,), (), str, [{}])  # tuples of different lengths
    with pytest.raises(TypeError):
        mod.encode_text_rows(b"I", ("a",), (int,), (str,), str, ({},))  # rows: a list
