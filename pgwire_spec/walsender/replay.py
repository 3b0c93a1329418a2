"""Recorded streams as scenarios: golden fixtures, walsender session captures, plain payload
lists and hypothesis-drawn streams, served byte for byte.

In a scenario file::

    replay: {fixture: fixtures/pg16-builtin.json.gz, group: p4-parallel}   # fixtures/README.md
    replay: {session: fixtures/sessions/pg16-session-p4-parallel-messages.json.gz}
    replay: {payloads: my_payloads.jsonl}     # one hex payload per line, or {"hex": …, "lsn": …}
    replay: {hex: ["42000000…", "52000040…"]}
    replay: {hypothesis: {seed: 7, protocol_version: 4, streaming: parallel}}   # strategies.streams

A fixture group gives the pgoutput payloads in stream order with the LSNs the server
reported (Relation and Type — and a Begin, Begin Prepare or Stream Start followed by an
Origin — go out at 0/0 as a walsender sends them: erratum E-ZERO-LSN); a session gives
the XLogData payloads with their exact dataStart. The persona follows the recording's
server version unless the scenario names one; the recording's publication and slot exist.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._resources import fixtures_dir
from ..lsn import parse_lsn
from .scenario import (
    AuthConfig,
    Publication,
    RawStream,
    Scenario,
    ScenarioError,
    ServerInfo,
    Slot,
    check_bounds,
)

#: The most messages a ``hypothesis:`` replay may ask for (draws are searched until one is
#: that long: bounded so a scenario cannot make loading run for minutes).
MAX_MIN_MESSAGES = 200

__all__ = ["Recording", "load_replay", "from_fixture", "from_session", "from_stream", "zero_lsn_rule"]


@dataclass(frozen=True, slots=True)
class Recording:
    stream: RawStream
    publications: tuple[str, ...]
    version: str | None = None
    system_id: str | None = None
    slot: str | None = None
    database: str | None = None


#: The most bytes a recording may hold (after gzip decompression).
MAX_RECORDING_BYTES = 256 << 20


def read_recording(path: Path, where: str) -> bytes:
    """A recording's bytes: a regular file (not a device, FIFO or folder) of at most
    MAX_RECORDING_BYTES, gunzipped when compressed, read without ever holding more."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError(where, "a regular recording file", f"{path}: not a regular file")
        if st.st_size > MAX_RECORDING_BYTES:
            raise ScenarioError(where, f"a recording of at most {MAX_RECORDING_BYTES:,} bytes",
                                f"{path}: {st.st_size:,} bytes")
        with open(path, "rb") as f:
            raw = f.read(MAX_RECORDING_BYTES + 1)
        if raw[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as g:
                raw = g.read(MAX_RECORDING_BYTES + 1)
    except OSError as exc:  # gzip.BadGzipFile included
        raise ScenarioError(where, "a readable recording file (optionally gzip-compressed)", str(exc)) from None
    except EOFError as exc:
        raise ScenarioError(where, "a whole gzip stream", str(exc)) from None
    if len(raw) > MAX_RECORDING_BYTES:
        raise ScenarioError(where, f"a recording of at most {MAX_RECORDING_BYTES:,} bytes once decompressed",
                            f"{path}: more")
    return raw


def _read_json(path: Path, where: str) -> Any:
    raw = read_recording(path, where)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ScenarioError(where, "JSON nested at most a few hundred levels", "deeper nesting") from None
    except ValueError as exc:
        raise ScenarioError(where, "JSON (optionally gzip-compressed)", str(exc)[:200]) from None
    check_bounds(data, where)
    return data


def zero_lsn_rule(tags: Sequence[str], lsns: Sequence[int]) -> list[int]:
    """Walsender write positions from the SQL interface's LSNs: 0/0 for Relation and Type,
    and for Begin / Begin Prepare / Stream Start when an Origin follows (erratum E-ZERO-LSN)."""
    out = []
    for i, (tag, lsn) in enumerate(zip(tags, lsns)):
        nxt = tags[i + 1] if i + 1 < len(tags) else ""
        if tag in ("R", "Y") or (tag in ("B", "b", "S") and nxt == "O"):
            out.append(0)
        else:
            out.append(lsn)
    return out


def _options_tuple(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), v) for k, v in options.items()))


def from_fixture(path: str | Path, group: str | None = None, *, where: str = "replay") -> Recording:
    """A golden fixture file's group (default: the first) as a recording."""
    data = _read_json(Path(path), where)
    if not isinstance(data, dict) or data.get("format") != "pgwire-spec/pgoutput-fixtures":
        raise ScenarioError(where, "a pgwire-spec/pgoutput-fixtures file", str(path))
    groups = data.get("groups") or []
    if not groups:
        raise ScenarioError(where, "a fixture file with at least one group", "none")
    chosen = groups[0] if group is None else next((g for g in groups if g.get("name") == group), None)
    if chosen is None:
        names = ", ".join(g.get("name", "?") for g in groups)
        raise ScenarioError(f"{where}.group", f"one of {names}", repr(group))
    cases = sorted(chosen.get("cases") or [], key=lambda c: c["index"])
    payloads = tuple(bytes.fromhex(c["hex"]) for c in cases)
    tags = [c.get("tag") or chr(p[0]) for c, p in zip(cases, payloads)]
    lsns = zero_lsn_rule(tags, [parse_lsn(c["lsn"]) for c in cases])
    options = dict(chosen.get("options") or {})
    pubs = tuple(p.strip().strip('"') for p in str(options.get("publication_names", "pub")).split(","))
    server = data.get("server") or {}
    return Recording(RawStream(payloads, tuple((x, x) for x in lsns), _options_tuple(options)), pubs,
                     version=server.get("version"), slot=chosen.get("slot"))


def from_session(path: str | Path, *, where: str = "replay") -> Recording:
    """A walsender session capture as a recording: its XLogData payloads, exactly."""
    data = _read_json(Path(path), where)
    if not isinstance(data, dict) or data.get("format") != "pgwire-spec/walsender-session":
        raise ScenarioError(where, "a pgwire-spec/walsender-session file", str(path))
    payloads, lsns = [], []
    system_id = database = None
    from ..replication.messages import decode_copy_data
    from ..wire import CopyData, DataRow, decode_message

    for m in data.get("messages") or []:
        if m.get("dir") != "B":
            continue
        exp = m.get("expected") or {}
        if exp.get("type") == "DataRow" and system_id is None:
            msg = decode_message(bytes.fromhex(m["hex"]), "backend")
            if isinstance(msg, DataRow) and len(msg.values) == 4 and msg.values[0] and msg.values[0].isdigit():
                system_id = msg.values[0].decode()
                database = msg.values[3].decode() if msg.values[3] else None
        copy = m.get("copy") or {}
        if copy.get("type") != "XLogData":
            continue
        msg = decode_message(bytes.fromhex(m["hex"]), "backend")
        assert isinstance(msg, CopyData)
        x = decode_copy_data(msg.data)
        payloads.append(x.data)  # type: ignore[attr-defined]
        lsns.append((x.data_start, x.wal_end))  # type: ignore[attr-defined]
    options = dict(data.get("options") or {})
    pubs = tuple(p.strip().strip('"') for p in str(options.get("publication_names", "pub")).split(","))
    server = data.get("server") or {}
    return Recording(RawStream(tuple(payloads), tuple(lsns), _options_tuple(options)), pubs,
                     version=server.get("version"), system_id=system_id, slot=data.get("slot"), database=database)


def from_payloads_file(path: str | Path, *, where: str = "replay") -> Recording:
    """One payload per line: hex, or a JSON object with ``hex`` and optionally ``lsn``."""
    try:
        lines = read_recording(Path(path), where).decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ScenarioError(where, "a UTF-8 payload file", str(exc)) from None
    payloads, lsns = [], []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            if line.startswith("{"):
                obj = json.loads(line)
                payloads.append(bytes.fromhex(obj["hex"]))
                lsns.append(parse_lsn(obj["lsn"]) if "lsn" in obj else None)
            else:
                payloads.append(bytes.fromhex(line))
                lsns.append(None)
        except (ValueError, KeyError) as exc:
            raise ScenarioError(f"{where} line {n}", "a hex payload or {\"hex\": …, \"lsn\": …}", str(exc)) from None
    if all(x is not None for x in lsns):
        tags = [chr(p[0]) if p else "?" for p in payloads]
        zl = zero_lsn_rule(tags, [x or 0 for x in lsns])
        return Recording(RawStream(tuple(payloads), tuple((x, x) for x in zl)), ("pub",))
    return Recording(RawStream(tuple(payloads)), ("pub",))


def _find(name: Any, base: Path | None, roots: tuple[Path, ...] | None = None, where: str = "replay") -> Path:
    """The file *name* names: relative to the scenario's folder *base* (or the current
    directory); with *roots*, it must resolve (symbolic links followed) inside one of them
    or the shipped corpus."""
    path = Path(str(name))
    if roots is None:
        if path.is_absolute() or path.exists() or base is None:
            return path
        return base / path
    if not path.is_absolute():
        assert base is not None
        path = base / path
    resolved = path.resolve()
    allowed = (*roots, fixtures_dir().resolve())
    if not any(resolved.is_relative_to(r) for r in allowed):
        raise ScenarioError(where, "a file under the scenario's folder or the shipped corpus (allow others "
                            "with allow_paths / serve --allow-path)", str(name))
    return resolved


def load_replay(spec: Any, where: str = "replay", *, base: Path | None = None,
                roots: tuple[Path, ...] | None = None) -> Recording:
    """The ``replay:`` section of a scenario (relative paths: from the current directory,
    then from *base*, the scenario file's directory; with *roots* only from *base*, and
    the file must lie under one of *roots* or the shipped corpus)."""
    if isinstance(spec, str):
        spec = {"fixture": spec} if "fixture" in spec or spec.endswith(".json.gz") else {"payloads": spec}
    if not isinstance(spec, Mapping):
        raise ScenarioError(where, "a mapping like {fixture: path, group: name}", repr(spec))
    keys = set(spec)
    allowed = {"fixture", "group", "session", "payloads", "hex", "hypothesis", "options"}
    if keys - allowed:
        raise ScenarioError(where, f"keys among {', '.join(sorted(allowed))}", f"unknown key {sorted(keys - allowed)[0]!r}")
    sources = keys & {"fixture", "session", "payloads", "hex", "hypothesis"}
    if len(sources) != 1:
        raise ScenarioError(where, "exactly one of fixture, session, payloads, hex, hypothesis",
                            ", ".join(sorted(sources)) or "none")
    if "fixture" in spec:
        rec = from_fixture(_find(spec["fixture"], base, roots, where), spec.get("group"), where=where)
    elif "session" in spec:
        rec = from_session(_find(spec["session"], base, roots, where), where=where)
    elif "hypothesis" in spec:
        args = spec["hypothesis"] or {}
        if not isinstance(args, Mapping):
            raise ScenarioError(f"{where}.hypothesis", "a mapping like {seed: 7, protocol_version: 2}", repr(args))
        kwargs = dict(args)
        seed = kwargs.pop("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
            raise ScenarioError(f"{where}.hypothesis.seed", "an integer from 0 to 2^64-1", repr(seed)[:80])
        least = kwargs.get("min_messages", 8)
        if isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= MAX_MIN_MESSAGES:
            raise ScenarioError(f"{where}.hypothesis.min_messages", f"an integer from 1 to {MAX_MIN_MESSAGES}",
                                repr(least)[:80])
        try:
            stream = draw_stream(seed, **kwargs)
        except Exception as exc:  # a wrong argument: TypeError, hypothesis' InvalidArgument, ...
            if isinstance(exc, ScenarioError):
                raise
            raise ScenarioError(f"{where}.hypothesis", "arguments of pgwire_spec.strategies.streams",
                                f"{type(exc).__name__}: {exc}"[:200]) from None
        sc = from_stream(stream)
        assert sc.raw is not None
        rec = Recording(sc.raw, ("pub",))
    elif "payloads" in spec:
        rec = from_payloads_file(_find(spec["payloads"], base, roots, where), where=where)
    else:
        items = spec["hex"]
        if not isinstance(items, list):
            raise ScenarioError(f"{where}.hex", "a list of hex payloads", repr(items))
        try:
            rec = Recording(RawStream(tuple(bytes.fromhex(str(h)) for h in items)), ("pub",))
        except ValueError as exc:
            raise ScenarioError(f"{where}.hex", "hex payloads", str(exc)) from None
    if "options" in spec:
        opts = spec["options"]
        if not isinstance(opts, Mapping):
            raise ScenarioError(f"{where}.options", "a mapping of pgoutput options", repr(opts))
        rec = Recording(RawStream(rec.stream.payloads, rec.stream.lsns, _options_tuple(opts)), rec.publications,
                        rec.version, rec.system_id, rec.slot, rec.database)
    return rec


def scenario_from_recording(rec: Recording, *, server: ServerInfo | None = None,
                            auth: AuthConfig | None = None, name: str = "replay") -> Scenario:
    """A scenario serving *rec*: its persona, publications and slot."""
    if server is None:
        kw: dict[str, Any] = {}
        if rec.version:
            kw["version"] = rec.version.split()[0]
        if rec.system_id:
            kw["system_id"] = rec.system_id
        if rec.database:
            kw["database"] = rec.database
        if rec.stream.lsns:
            nonzero = [a for a, _ in rec.stream.lsns if a]
            if nonzero:
                kw["start_lsn"] = max(0, (min(nonzero) - 8) & ~7)
        server = ServerInfo(**kw)
    slots = (Slot(rec.slot),) if rec.slot else ()
    return Scenario(server=server, auth=auth or AuthConfig(),
                    publications=tuple(Publication(p, None) for p in rec.publications),
                    slots=slots, raw=rec.stream, name=name)


def from_stream(stream: Any, *, server: ServerInfo | None = None, auth: AuthConfig | None = None,
                publications: Sequence[str] = ("pub",)) -> Scenario:
    """A scenario serving a stream drawn from ``pgwire_spec.strategies.streams`` (its
    ``.payloads``, ``.write_lsns`` and ``.options``)."""
    payloads = tuple(bytes(p) for p in stream.payloads)
    lsns = getattr(stream, "write_lsns", None)
    options = dict(getattr(stream, "options", {}) or {})
    pg_options = {"proto_version": str(options.get("protocol_version", 1))}
    for key in ("streaming", "two_phase", "binary", "messages"):
        value = options.get(key)
        if value not in (None, False, "off"):
            pg_options[key] = "on" if value is True else str(value)
    raw = RawStream(payloads, tuple((x, x) for x in lsns) if lsns is not None else None, _options_tuple(pg_options))
    rec = Recording(raw, tuple(publications))
    return scenario_from_recording(rec, server=server, auth=auth, name="hypothesis")


def draw_stream(seed: int, min_messages: int = 8, **kwargs: Any) -> Any:
    """One stream from ``pgwire_spec.strategies.streams(**kwargs)`` with at least
    *min_messages* messages, the same for the same *seed* (and the same hypothesis and
    pgwire-spec versions): the first such draw of a generator seeded with *seed*, not shrunk."""
    import random

    import hypothesis  # first: the strategies module registers itself when hypothesis loads
    from hypothesis import HealthCheck, Phase, find, settings

    from ..strategies import streams

    del hypothesis
    return find(
        streams(**kwargs), lambda s: len(s.payloads) >= min_messages,
        settings=settings(phases=[Phase.generate], database=None, max_examples=2000, deadline=None,
                          suppress_health_check=list(HealthCheck)),
        random=random.Random(seed),
    )
