"""The fixture file format: Wycheproof-style, language-neutral JSON.

One file per capture (server major x workload); its *groups* are option sets (the decoding
context shared by their cases); each *case* is one pgoutput payload with the context it
needs (``in_stream``), its hex bytes, the expected decoding (``pgwire_spec.to_json``), the
server's LSN and xid, and flags explained in the file's ``notes``. ``spec/fixtures.schema.json``
is the JSON Schema; ``fixtures/README.md`` documents it for decoder authors.

Files are written with one case per line (diff-friendly) and may be gzip-compressed
(``.json.gz``); :func:`read_fixture` reads both.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_type_hints

from ..errors import PgWireError

try:  # JSON in C (BSD-3): a fixture file read straight into its FixtureCase objects, other
    # documents ~2x faster than orjson (a recording's hex text) and ~4x the standard library;
    # absent on PyPy
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - the standard library, then parse_fixture
    _msgspec = None

try:  # zlib-ng's inflate, ~4x the standard library's zlib on the corpus (130 MB of JSON)
    from zlib_ng.zlib_ng import decompressobj as _fast_inflater
    from zlib_ng.zlib_ng import error as _FastInflateError
except ImportError:  # pragma: no cover - the standard library alone
    _fast_inflater = None

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FixtureError",
    "FixtureCase",
    "FixtureGroup",
    "FixtureFile",
    "read_fixture",
    "write_fixture",
    "find_fixture_files",
]

FORMAT = "pgwire-spec/pgoutput-fixtures"
FORMAT_VERSION = 1


class FixtureError(PgWireError):
    """A fixture file that is missing, not JSON, or not in the fixture format."""


@dataclass(frozen=True, slots=True)
class FixtureCase:
    id: str
    #: Position of the payload in the captured stream (gaps: elided bulk rows).
    index: int
    hex: str
    in_stream: bool
    lsn: str
    xid: int
    expected: dict[str, Any]
    flags: tuple[str, ...] = ()
    #: How many identical-shaped payloads followed this one in the capture and were left out.
    elided_after: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id, "index": self.index, "tag": self.expected.get("tag"),
            "in_stream": self.in_stream, "lsn": self.lsn, "xid": self.xid, "hex": self.hex,
            "expected": self.expected,
        }
        if self.flags:
            d["flags"] = list(self.flags)
        if self.elided_after:
            d["elided_after"] = self.elided_after
        return d


@dataclass(frozen=True, slots=True)
class FixtureGroup:
    name: str
    #: The options sent to pgoutput, as text (``proto_version``, ``publication_names`` …).
    options: dict[str, str]
    #: The decoder context: protocol_version, streaming, two_phase, binary, messages.
    context: dict[str, Any]
    slot: str
    cases: tuple[FixtureCase, ...]
    #: Names of candidate option sets whose bytes were identical (not stored again).
    equivalent: tuple[str, ...] = ()
    #: Total payloads captured before elision.
    captured: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "options": self.options, "context": self.context,
            "slot": self.slot, "equivalent": list(self.equivalent), "captured": self.captured,
            "cases": [c.to_dict() for c in self.cases],
        }


@dataclass(frozen=True, slots=True)
class FixtureFile:
    server_version: str
    major: int
    provider: str
    workload: str
    captured_on: str
    groups: tuple[FixtureGroup, ...]
    notes: dict[str, str] = field(default_factory=dict)
    #: Option sets the server refused: name -> the server's error.
    rejected: dict[str, str] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)

    @property
    def cases(self) -> list[FixtureCase]:
        return [c for g in self.groups for c in g.cases]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "formatVersion": FORMAT_VERSION,
            "server": {"version": self.server_version, "major": self.major, "provider": self.provider},
            "workload": self.workload,
            "capturedOn": self.captured_on,
            "numberOfCases": sum(len(g.cases) for g in self.groups),
            "notes": self.notes,
            "rejected": self.rejected,
            "groups": [g.to_dict() for g in self.groups],
        }


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def render_fixture(fixture: FixtureFile) -> str:
    """The file text: indented header and groups, one case per line."""
    d = fixture.to_dict()
    groups = d.pop("groups")
    lines = ["{"]
    for key, value in d.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False, indent=None)},")
    lines.append('  "groups": [')
    for gi, g in enumerate(groups):
        cases = g.pop("cases")
        head = _dumps(g)[:-1]
        lines.append(f"    {head},\"cases\": [")
        for ci, c in enumerate(cases):
            lines.append("      " + _dumps(c) + ("," if ci < len(cases) - 1 else ""))
        lines.append("    ]}" + ("," if gi < len(groups) - 1 else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_fixture(fixture: FixtureFile, path: Path, *, compress: bool | None = None) -> Path:
    """Write *fixture* to *path* (gzip when the name ends in ``.gz`` or *compress*)."""
    return write_text(render_fixture(fixture), path, compress=compress)


def write_text(text: str, path: Path, *, compress: bool | None = None) -> Path:
    """Write a rendered fixture document (gzip when the name ends in ``.gz``)."""
    path = Path(path)
    if compress and not path.name.endswith(".gz"):
        path = path.with_name(path.name + ".gz")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        # mtime=0: the same capture gives the same bytes.
        data = gzip.compress(data, compresslevel=9, mtime=0)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise FixtureError(f"{where}: expected a field {key!r}, found none")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise FixtureError(f"{where}.{key}: expected {names}, found {type(value).__name__} {str(value)[:60]!r}")
    return value


def _need_header(doc: Any, where: str, version: int, fmt: str | None = None) -> dict[str, Any]:
    """Check a fixture document's ``format`` (when *fmt* is given) and ``formatVersion``;
    its ``server`` mapping."""
    if fmt is not None:
        found = _need(doc, "format", str, where)
        if found != fmt:
            raise FixtureError(f"{where}: expected format {fmt!r}, found {found!r}")
    found_version = _need(doc, "formatVersion", int, where)
    if found_version != version:
        raise FixtureError(f"{where}: expected formatVersion {version}, found {found_version}")
    server: dict[str, Any] = _need(doc, "server", dict, where)
    return server


def _need_direction(m: Any, where: str) -> str:
    """A recorded message's ``dir``: 'F' (client) or 'B' (server)."""
    direction: str = _need(m, "dir", str, where)
    if direction not in ("F", "B"):
        raise FixtureError(f"{where}.dir: expected 'F' or 'B', found {direction!r}")
    return direction


def read_fixture(path: str | Path) -> FixtureFile:
    """Read and check the structure of one fixture file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    found = load_fixture_or_document(path)
    return found if isinstance(found, FixtureFile) else parse_fixture(found, path)


def load_document(path: Path) -> Any:
    """The JSON document of a fixture file (gzip or not); FixtureError if it is not one."""
    return _document(_read(path), path)


def load_fixture_or_document(path: Path, *, expected_as_text: bool = False) -> Any:
    """A pgoutput fixture file as its :class:`FixtureFile`, when msgspec reads it with every
    field of its JSON type; else the file's JSON document (:func:`load_document`), which
    :func:`parse_fixture` (or another format's parser) reads and says what is wrong with.

    *expected_as_text*: each case's ``expected`` is left as its JSON text (a
    :data:`EXPECTED_TEXT`, not yet known to be an object), which :func:`expected_value`
    reads; what the verifier asks for, which compares most cases' text with a text it has
    read and checked already (building the ~100k objects was most of a file's reading)."""
    raw = _read(path)
    if _msgspec is not None:
        fixture = _typed_fixture(raw, path, expected_as_text)
        if fixture is not None:
            return fixture
    return _document(raw, path)


#: The type of a case's ``expected`` read as JSON text (``expected_as_text``): msgspec's
#: Raw, or a class of which nothing is an instance when msgspec is absent.
EXPECTED_TEXT: type = _msgspec.Raw if _msgspec is not None else type("NoExpectedText", (), {})


def expected_value(case: Any, path: Path) -> dict[str, Any]:
    """A case's expected JSON value, read now when it was left as text; a FixtureError,
    the one :func:`parse_fixture` raises, when it is not a JSON object."""
    expected = case.expected
    if type(expected) is not EXPECTED_TEXT:
        return expected  # type: ignore[no-any-return]
    value = _msgspec.json.decode(expected)
    if type(value) is not dict:
        parse_fixture(load_document(path), path)  # names the file, the case and the field
        raise FixtureError(f"{path}: case {case.id}: expected: expected dict, found {type(value).__name__}")
    return value


def _read(path: Path) -> bytes:
    """A fixture file's bytes, gunzipped when they are gzip."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FixtureError(f"fixture file {path} does not exist") from None
    except OSError as exc:
        raise FixtureError(f"cannot read fixture file {path}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = _gunzip(raw)
        except (OSError, EOFError, ValueError, zlib.error) as exc:  # zlib.error: a corrupt deflate stream
            raise _invalid(path, exc) from None
    return raw


def _document(raw: bytes, path: Path) -> Any:
    try:
        return _loads(raw)
    except ValueError as exc:
        raise _invalid(path, exc) from None


def _invalid(path: Path, exc: Exception) -> FixtureError:
    return FixtureError(f"{path}: expected a fixture file (JSON, optionally gzip), found invalid data: {exc}")


def _gunzip(raw: bytes) -> bytes:
    """The content of gzip data: by zlib-ng when it holds one whole member, else by the
    standard library, so that what is accepted (several members, trailing zeros) and the
    error a user reads stay the standard library's."""
    if _fast_inflater is not None:
        inflater = _fast_inflater(31)  # 16 + 15: a gzip header and trailer, 32 KB window
        try:
            out: bytes = inflater.decompress(raw)
        except _FastInflateError:
            pass
        else:
            if inflater.eof and not inflater.unused_data:
                return out
    return gzip.decompress(raw)


def _loads(raw: bytes) -> Any:
    """The JSON value of *raw*: by msgspec when it accepts the text (the standard library's
    value: integers of any size, duplicate keys the last), else by the standard library, so
    that what is accepted (a lone surrogate escape, NaN, a byte order mark, 1e400) and the
    error a user reads stay the standard library's."""
    if _msgspec is not None:
        try:
            return _msgspec.json.decode(raw)
        except _msgspec.DecodeError:  # ValidationError too (1e400)
            pass
    return json.loads(raw)


def document_format(doc: Any) -> Any:
    return doc.get("format") if isinstance(doc, dict) else None


def _fast_case(c: Any) -> FixtureCase | None:
    """The case, when every field is there with its JSON type (the common case: one type
    test per field); else None."""
    try:
        cid, index, hx, inside = c["id"], c["index"], c["hex"], c["in_stream"]
        lsn, xid, expected = c["lsn"], c["xid"], c["expected"]
        flags = c.get("flags", ())
        elided = c.get("elided_after", 0)
    except (KeyError, TypeError, AttributeError):
        return None
    if not (type(cid) is str and type(index) is int and type(hx) is str and type(inside) is bool
            and type(lsn) is str and type(xid) is int and type(expected) is dict
            and type(elided) is int):
        return None
    if flags:
        if type(flags) is not list or not all(type(f) is str for f in flags):
            return None
        flags = tuple(flags)
    else:
        flags = ()
    # positional: a third less than by keyword, ~100k times per corpus read
    return FixtureCase(cid, index, hx, inside, lsn, xid, expected, flags, elided)


def _checked_case(c: Any, cw: str) -> FixtureCase:
    """The case, or the FixtureError naming its first missing or mistyped field."""
    flags = c.get("flags", []) if isinstance(c, dict) else []
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise FixtureError(f"{cw}.flags: expected a list of strings, found {flags!r}")
    return FixtureCase(
        id=_need(c, "id", str, cw), index=_need(c, "index", int, cw), hex=_need(c, "hex", str, cw),
        in_stream=_need(c, "in_stream", bool, cw), lsn=_need(c, "lsn", str, cw),
        xid=_need(c, "xid", int, cw), expected=_need(c, "expected", dict, cw),
        flags=tuple(flags), elided_after=int(c.get("elided_after", 0)),
    )


def parse_fixture(doc: Any, path: Path) -> FixtureFile:
    """A :class:`FixtureFile` from its JSON document."""
    where = str(path)
    server = _need_header(doc, where, FORMAT_VERSION, FORMAT)
    groups = []
    for gi, g in enumerate(_need(doc, "groups", list, where)):
        gw = f"{where}: groups[{gi}]"
        cases = []
        for ci, c in enumerate(_need(g, "cases", list, gw)):
            case = _fast_case(c)
            if case is None:  # something is missing or mistyped: say what, with _need
                case = _checked_case(c, f"{gw}.cases[{ci}]")
            cases.append(case)
        context = _need(g, "context", dict, gw)
        _need(context, "protocol_version", int, gw + ".context")
        groups.append(FixtureGroup(
            name=_need(g, "name", str, gw), options=_need(g, "options", dict, gw), context=context,
            slot=str(g.get("slot", "")), cases=tuple(cases), equivalent=tuple(g.get("equivalent", ())),
            captured=int(g.get("captured", len(cases))),
        ))
    return _file(server, _need(server, "version", str, where + ".server"), _need(server, "major", int, where + ".server"),
                 _need(doc, "workload", str, where), str(doc.get("capturedOn", "")), groups,
                 dict(doc.get("notes", {})), dict(doc.get("rejected", {})), path)


def _file(server: dict[str, Any], version: str, major: int, workload: str, captured_on: str,
          groups: list[FixtureGroup], notes: dict[str, str], rejected: dict[str, str], path: Path) -> FixtureFile:
    return FixtureFile(server_version=version, major=major, provider=str(server.get("provider", "")),
                       workload=workload, captured_on=captured_on, groups=tuple(groups), notes=notes,
                       rejected=rejected, path=path)


#: msgspec's decoders of the fixture format, made on first use: expected_as_text -> decoder
_TYPED: dict[bool, Any] = {}


def _typed_decoder(expected_as_text: bool = False) -> Any:
    """The fixture document as msgspec types: each field with the JSON type parse_fixture
    wants (no conversion: what needs one is left to parse_fixture), cases as FixtureCase
    (*expected_as_text*: as FixtureCase's fields with ``expected`` as its JSON text);
    ``format`` first in every file written, so another format fails at its first key."""
    decoder = _TYPED.get(expected_as_text)
    if decoder is None:
        case: Any = FixtureCase
        if expected_as_text:
            hints = get_type_hints(FixtureCase)
            case = _msgspec.defstruct("FixtureCaseText", [
                (f.name, EXPECTED_TEXT if f.name == "expected" else hints[f.name],
                 *(() if f.default is MISSING else (f.default,))) for f in fields(FixtureCase)],
                # no cycles (strings, numbers, the text): nothing for the collector to walk
                gc=False)
        group = _msgspec.defstruct("FixtureGroupDocument", [
            ("name", str), ("options", dict), ("context", dict), ("cases", list[case]),
            ("slot", str, ""), ("equivalent", tuple[str, ...], ()), ("captured", int, None)])
        doc = _msgspec.defstruct("FixtureDocument", [
            ("format", Literal[FORMAT]), ("formatVersion", int), ("server", dict), ("workload", str),
            ("groups", list[group]), ("capturedOn", str, ""), ("notes", dict, None), ("rejected", dict, None)])
        decoder = _TYPED[expected_as_text] = _msgspec.json.Decoder(doc)
    return decoder


def _typed_fixture(raw: bytes, path: Path, expected_as_text: bool = False) -> FixtureFile | None:
    """The FixtureFile of *raw* when msgspec reads it and parse_fixture's checks hold; else
    None (another format, or something parse_fixture should name)."""
    try:
        d = _typed_decoder(expected_as_text).decode(raw)
    except _msgspec.DecodeError:  # malformed or mistyped (ValidationError is one)
        return None
    server = d.server
    version, major = server.get("version"), server.get("major")
    if d.formatVersion != FORMAT_VERSION or type(version) is not str or type(major) is not int:
        return None
    groups = []
    for g in d.groups:
        if type(g.context.get("protocol_version")) is not int:
            return None
        groups.append(FixtureGroup(g.name, g.options, g.context, g.slot, tuple(g.cases), g.equivalent,
                                   len(g.cases) if g.captured is None else g.captured))
    return _file(server, version, major, d.workload, d.capturedOn, groups,
                 {} if d.notes is None else d.notes, {} if d.rejected is None else d.rejected, path)


def find_fixture_files(paths: list[str | Path]) -> list[Path]:
    """The fixture files named by *paths* (files, or directories searched recursively)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(x for x in p.rglob("*")
                          if x.is_file() and (x.name.endswith(".json") or x.name.endswith(".json.gz")))
        elif p.exists():
            out.append(p)
        else:
            raise FixtureError(f"fixture path {p} does not exist")
    return out
