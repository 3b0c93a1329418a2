"""Verification of fixture files: every case decodes under its recorded context, re-encodes
byte-identical, and equals its expected JSON; each group, replayed in order through
:class:`PgOutputDecoder`, is a valid stream whose ``in_stream`` positions are the recorded ones.

A failure names the case id, the byte offset and the field path.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._codegen import Codec
from ..errors import DecodeError, EncodeError, OptionError
from ..jsonform import to_json
from ..pgoutput._codec import FAMILY, decode_payload
from ..pgoutput.decoder import PgOutputDecoder
from .fixture import (
    EXPECTED_TEXT,
    FixtureCase,
    FixtureError,
    FixtureFile,
    FixtureGroup,
    document_format,
    expected_value,
    find_fixture_files,
    load_fixture_or_document,
    parse_fixture,
)

__all__ = ["Checked", "Mismatch", "VerifyReport", "verify_fixture", "verify_paths", "field_at", "json_diff"]

#: Decoder notes that are not violations (errata the decoder reports in every mode).
_NOTES_ONLY = {"stray-stream-abort"}


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One verification failure."""

    case_id: str
    #: ``decode``, ``encode``, ``json``, ``context``, ``sequence`` or ``format``.
    check: str
    detail: str
    offset: int | None = None
    field: str | None = None
    file: str | None = None

    def __str__(self) -> str:
        where = []
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        if self.field:
            where.append(f"field {self.field}")
        loc = f" ({', '.join(where)})" if where else ""
        return f"{self.case_id}: {self.check} mismatch{loc}: {self.detail}"


@dataclass
class VerifyReport:
    files: int = 0
    groups: int = 0
    cases: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds > 0 else 0.0


class _Recorder:
    """A tracer that keeps every (field, offset) an ``explain`` run reports."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, int]] = []

    def __call__(self, field: str, offset: int, expected: str) -> None:
        self.steps.append((field, offset))


def _trace(data: bytes, in_stream: bool, abort_tail: bool) -> tuple[Codec | None, list[tuple[str, int]]]:
    codec = FAMILY.by_tag.get(data[0]) if data else None
    if codec is None:
        return None, []
    rec = _Recorder()
    args: tuple[Any, ...] = (data, in_stream, abort_tail, True, rec) if _takes_binary_ok(codec) else (
        data, in_stream, abort_tail, rec)
    try:
        codec.explain(*args)
    except Exception:  # the trace up to the failure is what we want
        pass
    return codec, rec.steps


_BINARY_OK: dict[str, bool] = {}


def _takes_binary_ok(codec: Codec) -> bool:
    # The generated tracers gained a binary_ok parameter; accept both signatures.
    known = _BINARY_OK.get(codec.name)
    if known is None:
        known = _BINARY_OK[codec.name] = "binary_ok" in inspect.signature(codec.explain).parameters
    return known


def field_at(data: bytes, offset: int, in_stream: bool = False, abort_tail: bool = False) -> str | None:
    """The field path (``Insert.new_tuple[2].length``) of the byte at *offset* of *data*."""
    codec, steps = _trace(data, in_stream, abort_tail)
    if codec is None:
        return None
    best = None
    for name, off in steps:
        if off <= offset:
            best = name
        else:
            break
    return f"{codec.name}.{best}" if best else codec.name


def _offset_of(data: bytes, path: str, in_stream: bool, abort_tail: bool) -> int | None:
    """The byte offset where the field at JSON *path* (``new_tuple[2].text``) starts."""
    _codec, steps = _trace(data, in_stream, abort_tail)
    parts = path.split(".")
    while parts:
        prefix = ".".join(parts)
        for name, off in steps:
            if name == prefix or name.startswith(prefix + ".") or name.startswith(prefix + "["):
                return off
        parts.pop()
    return None


def json_diff(got: Any, want: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place where two JSON values differ: (path, got, want), or None."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got or key not in want:
                return (f"{path}.{key}".lstrip("."), got.get(key, "<absent>"), want.get(key, "<absent>"))
            d = json_diff(got[key], want[key], f"{path}.{key}")
            if d:
                return d
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (a, b) in enumerate(zip(got, want)):
            d = json_diff(a, b, f"{path}[{i}]")
            if d:
                return d
        if len(got) != len(want):
            return (f"{path}.length".lstrip("."), len(got), len(want))
        return None
    if got != want or type(got) is not type(want):
        return (path.lstrip("."), got, want)
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_case(case: FixtureCase, expected: dict[str, Any], data: bytes, msg: Any, abort_tail: bool,
                out: list[Mismatch], file: str) -> Any:
    """Re-encode *msg* and compare the bytes, then its JSON form with the *expected* one (the
    case's); the JSON form when the bytes matched (whatever the JSON comparison found), else None."""
    try:
        enc = FAMILY.encode(msg)
    except EncodeError as exc:
        out.append(Mismatch(case.id, "encode", str(exc), file=file))
        return None
    if enc != data:
        off = next((i for i, (a, b) in enumerate(zip(enc, data)) if a != b), min(len(enc), len(data)))
        out.append(Mismatch(
            case.id, "encode",
            f"re-encoded bytes differ: expected {data[off:off + 8].hex() or 'end'}, found {enc[off:off + 8].hex() or 'end'} "
            f"({len(data)} vs {len(enc)} bytes)",
            off, field_at(data, off, case.in_stream, abort_tail), file,
        ))
        return None
    got = to_json(msg)
    if got != expected:
        _json_mismatch(case, expected, data, msg, got, abort_tail, out, file)
    return got


def _json_mismatch(case: FixtureCase, expected: dict[str, Any], data: bytes, msg: Any, got: Any, abort_tail: bool,
                   out: list[Mismatch], file: str) -> None:
    diff = json_diff(got, expected)
    path = diff[0] if diff else ""
    name = type(msg).__name__
    at = _offset_of(data, path, case.in_stream, abort_tail) if path else None
    detail = (f"decoded {_short(diff[1])}, expected {_short(diff[2])}" if diff
              else "decoded JSON differs from the expected JSON")
    out.append(Mismatch(case.id, "json", detail, at, f"{name}.{path}" if path else name, file))


class Checked:
    """The payloads one verification run has decoded, re-encoded byte-identical and turned
    into their JSON form, by (abort_tail, in_stream) and hex text: ``(bytes, JSON form,
    expected text)``, the last a case's expected JSON text (cases read with
    ``expected_as_text``) found equal to that form, or None.

    Decoding, re-encoding and the JSON form are functions of the bytes and that context
    alone, and a corpus holds each payload many times (every option set of a capture sees
    the same transactions: 103k cases, 6k distinct payloads), so each distinct payload is
    decoded, re-encoded and converted once per run; every case is still compared with it
    (its expected JSON against the payload's JSON form, by value) and replayed in its
    group's stream; a case whose expected text is that text, byte for byte, has that value
    (no object built for it). :func:`verify_fixture` keeps one per file (what it holds is as large as
    the file's distinct payloads); nothing outlives the run: a new verification checks
    everything again.
    """

    __slots__ = ("_by_context",)

    def __init__(self) -> None:
        self._by_context: dict[tuple[bool, bool], dict[str, tuple[bytes, Any, Any]]] = {}

    def payloads(self, abort_tail: bool) -> tuple[dict[str, tuple[bytes, Any, Any]], dict[str, tuple[bytes, Any, Any]]]:
        """(outside a streamed block, inside one): the payloads checked under *abort_tail*."""
        by = self._by_context
        return (by.setdefault((abort_tail, False), {}), by.setdefault((abort_tail, True), {}))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused, then as it was. A fixture file parses into
    ~100k small JSON dicts and lists, and verifying a case makes a few more: no cycles,
    all freed by reference counting, which the collector would walk again and again while
    they are made (a third of the JSON parse, a fifth of the verification)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def verify_group(group: FixtureGroup, *, file: str = "", sequence: bool = True,
                 checked: Checked | None = None) -> list[Mismatch]:
    """Verify every case of *group*; with *sequence*, also replay it as a stream. *checked*:
    the payloads this run has checked already (:class:`Checked`; a new one by default)."""
    with collector_paused():
        return _verify_group(group, file, sequence, Checked() if checked is None else checked)


def _verify_group(group: FixtureGroup, file: str, sequence: bool, checked: Checked) -> list[Mismatch]:
    out: list[Mismatch] = []
    ctx = group.context
    try:
        decoder = PgOutputDecoder(
            protocol_version=ctx.get("protocol_version", 1), streaming=ctx.get("streaming", "off"),
            two_phase=bool(ctx.get("two_phase", False)), binary=bool(ctx.get("binary", False)),
            messages=bool(ctx.get("messages", False)), strict=False,
        )
    except (OptionError, TypeError) as exc:
        for case in group.cases:  # what reading the file would have refused, refused here
            expected_value(case, Path(file))
        return [Mismatch(f"{group.name}", "format", f"group context {ctx!r} is not a decoder context: {exc}", file=file)]
    abort_tail = decoder.streaming == "parallel"
    decoders = FAMILY.decoders
    warnings = decoder.warnings
    seen_warnings = 0
    payloads = checked.payloads(abort_tail)
    path = Path(file)
    for case in group.cases:
        # decoded, re-encoded byte-identical and in JSON form before, in this run?
        known = payloads[case.in_stream].get(case.hex)
        expected = case.expected
        if type(expected) is EXPECTED_TEXT:
            if known is not None and expected == known[2]:
                expected = known[1]  # the text of a case found equal to this payload's JSON form
            else:
                expected = expected_value(case, path)
        if known is not None:
            data = known[0]
        else:
            try:
                data = bytes.fromhex(case.hex)
            except ValueError as exc:
                out.append(Mismatch(case.id, "format", f"hex is not hex digits: {exc}", file=file))
                continue
            if not data:
                out.append(Mismatch(case.id, "format", "empty payload", file=file))
                continue
        msg = None
        if sequence:
            inside = decoder.in_stream
            if inside != case.in_stream:
                out.append(Mismatch(
                    case.id, "context",
                    f"recorded in_stream={case.in_stream}, but replaying the group puts this payload "
                    f"{'inside' if inside else 'outside'} a streamed block", file=file,
                ))
            try:
                if inside == case.in_stream:
                    msg = decoder.decode(data)
                else:
                    decoder.decode(data)
            except DecodeError:
                msg = None  # reported below by the stateless decode, with its offset
            if len(warnings) > seen_warnings:
                for w in warnings[seen_warnings:]:
                    if w.rule not in _NOTES_ONLY:
                        out.append(Mismatch(case.id, "sequence", str(w), w.offset, w.field, file))
                seen_warnings = len(warnings)
        if known is not None:
            if expected is not known[1] and known[1] != expected:  # by value, as _check_case compares
                _check_case(case, expected, data,
                            decoders[data[0]](data, case.in_stream, abort_tail) if msg is None else msg,
                            abort_tail, out, file)
            continue
        if msg is None:
            try:
                msg = decoders[data[0]](data, case.in_stream, abort_tail)
            except Exception:
                try:
                    msg = decode_payload(data, case.in_stream, abort_tail)
                except DecodeError as err:
                    out.append(Mismatch(case.id, "decode", f"{err.rule}: expected {err.expected}, found {err.found}",
                                        err.offset, err.field, file))
                    continue
        got = _check_case(case, expected, data, msg, abort_tail, out, file)
        if got is not None:
            text = case.expected
            payloads[case.in_stream][case.hex] = (data, got, text if text is not expected and got == expected else None)
    if sequence:
        decoder.finish()
        for w in warnings[seen_warnings:]:
            if w.rule not in _NOTES_ONLY and w.rule != "unterminated-stream":
                out.append(Mismatch(f"{group.name} (end)", "sequence", str(w), file=file))
    return out


def verify_fixture(fixture: FixtureFile, *, sequence: bool = True,
                   checked: Checked | None = None) -> tuple[int, list[Mismatch]]:
    """(cases verified, mismatches) for one fixture file."""
    file = str(fixture.path or "")
    out: list[Mismatch] = []
    n = 0
    checked = Checked() if checked is None else checked
    for group in fixture.groups:
        out += verify_group(group, file=file, sequence=sequence, checked=checked)
        n += len(group.cases)
    return n, out


def verify_paths(paths: Iterable[str | Path], *, sequence: bool = True) -> VerifyReport:
    """Verify every fixture file under *paths*; unreadable files are FixtureErrors."""
    files = find_fixture_files(list(paths))
    if not files:
        raise FixtureError(f"expected fixture files (*.json, *.json.gz) in {', '.join(map(str, paths))}, found none")
    report = VerifyReport()
    start = time.perf_counter()
    with collector_paused():
        _verify_files(files, report, sequence)
    report.seconds = time.perf_counter() - start
    return report


def _verify_files(files: list[Path], report: VerifyReport, sequence: bool) -> None:
    for path in files:
        _verify_file(path, report, sequence)


def _verify_file(path: Path, report: VerifyReport, sequence: bool) -> None:
    # one call per file: what a file is read into is freed before the next is read (tens
    # of MB for a physical recording), so the peak is one file's and its memory is reused
    doc = load_fixture_or_document(path, expected_as_text=True)
    if isinstance(doc, FixtureFile):
        n, mismatches = verify_fixture(doc, sequence=sequence)
        report.groups += len(doc.groups)
    elif document_format(doc) == "pgwire-spec/walsender-session":
        from .session_fixture import parse_session, verify_session

        n, mismatches = verify_session(parse_session(doc, path))
        report.groups += 1
    elif document_format(doc) == "pgwire-spec/physical-stream":
        from ..physical.recording import parse_recording, verify_recording

        recording = parse_recording(doc, path)
        del doc  # its ~30 MB of hex text, read into the recording's bytes
        n, problems = verify_recording(recording)
        mismatches = [Mismatch(str(path), "physical", p, file=str(path)) for p in problems]
        report.groups += 1
    else:
        fixture = parse_fixture(doc, path)
        n, mismatches = verify_fixture(fixture, sequence=sequence)
        report.groups += len(fixture.groups)
    report.files += 1
    report.cases += n
    report.mismatches += mismatches
