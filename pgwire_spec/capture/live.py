"""Capture pgoutput streams from a live server through the SQL interface.

``pg_logical_slot_peek_binary_changes(slot, NULL, NULL, VARIADIC options)`` returns every
message of the slot as (lsn, xid, bare pgoutput payload); peeking does not consume, so one
slot is read once per option set. The stream position (``in_stream``) of each payload and
the expected decoding come from replaying the stream through :class:`PgOutputDecoder`.
A slot created with ``twophase = true`` (15+) serves the option sets with two_phase.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from .. import majors
from ..errors import DecodeError, PgWireError
from ..jsonform import to_json
from ..lsn import format_lsn, parse_lsn
from ..pgoutput.decoder import PgOutputDecoder
from ..servers import Provider, Server
from .elide import ELIDE_KEEP, dml_shape, elide
from .fixture import FixtureCase, FixtureFile, FixtureGroup
from .flags import NOTES, Flagger
from .options import OptionSet, option_sets
from .workload import MAIN_PUBLICATION, SCHEMA, Step, Workload

__all__ = ["CaptureError", "capture", "run_capture", "build_group", "elide", "ELIDE_KEEP", "Progress"]

Progress = Callable[[str], None]

class CaptureError(PgWireError):
    """A capture that could not run: a refused workload step, a slot that cannot be made, a
    physical recording that could not be made."""


@dataclass(frozen=True, slots=True)
class Row:
    """One row of ``pg_logical_slot_peek_binary_changes``: (lsn, xid, data)."""

    lsn: int
    xid: int
    data: bytes


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def build_group(
    name: str,
    opts: OptionSet,
    slot: str,
    rows: Sequence[Row],
    *,
    major: int,
    relation_flags: dict[str, str] | None = None,
    keep: int = ELIDE_KEEP,
) -> FixtureGroup:
    """The fixture group of one captured stream: decode, flag, elide."""
    ctx = opts.context()
    decoder = PgOutputDecoder(**ctx, strict=False)
    flagger = Flagger(ctx, relation_flags)
    cases: list[FixtureCase] = []
    shapes: list[tuple[Any, ...] | None] = []
    for index, row in enumerate(rows):
        lsn, xid, data = row.lsn, row.xid, row.data
        in_stream = decoder.in_stream
        try:
            msg = decoder.decode(data)
        except DecodeError as err:
            raise CaptureError(
                f"PostgreSQL {major}, option set {name}: payload #{index} (lsn {format_lsn(lsn)}, "
                f"{data[:48].hex()}…) does not decode: {err}"
            ) from None
        cases.append(FixtureCase(
            id=f"pg{major}/{name}/{index}", index=index, hex=data.hex(), in_stream=in_stream,
            lsn=format_lsn(lsn), xid=xid, expected=to_json(msg),
            flags=tuple(flagger.flags(msg, in_stream, data)),
        ))
        shapes.append(dml_shape(msg, in_stream))
    return FixtureGroup(
        name=name, options=opts.pgoutput_options(), context=ctx, slot=slot,
        cases=tuple(elide(cases, shapes, keep)), captured=len(rows),
    )


class _Session:
    """The workload's connections (``a``, ``b``) to one server."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conns: dict[str, psycopg.Connection[Any]] = {}

    def conn(self, name: str = "a") -> psycopg.Connection[Any]:
        c = self.conns.get(name)
        if c is None:
            try:
                c = psycopg.connect(self.server.dsn, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise CaptureError(f"cannot connect to {self.server.dsn}: {_first_line(exc)}") from None
            self.conns[name] = c
        return c

    def run(self, step: Step, what: str) -> None:
        try:
            self.conn(step.conn).execute(step.sql.encode("utf-8"))
        except psycopg.Error as exc:
            raise CaptureError(f"{what} step refused by the server: {_first_line(exc)}\n  {step.sql[:300]}") from None

    def close(self) -> None:
        for c in self.conns.values():
            try:
                c.close()
            except psycopg.Error:  # pragma: no cover
                pass
        self.conns.clear()


def _peek(conn: psycopg.Connection[Any], slot: str, opts: OptionSet) -> list[Row]:
    args: list[str] = []
    for k, v in opts.pgoutput_options().items():
        args += [k, v]
    cur = conn.execute(
        "SELECT lsn::text, xid::text::bigint, data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, VARIADIC %s::text[])",
        (slot, args),
    )
    return [Row(parse_lsn(lsn), int(xid), bytes(data)) for lsn, xid, data in cur]


def capture(
    server: Server,
    workload: Workload,
    *,
    provider: str | None = None,
    publication: str | None = None,
    progress: Progress | None = None,
    only: list[str] | None = None,
    exhaustive: bool = False,
) -> FixtureFile:
    """Run *workload* on *server* and capture every option set of its major.

    ``publication``: an existing publication to read (users' servers); by default the
    workload creates ``pgws_all`` FOR ALL TABLES. ``only``: capture just these option sets;
    ``exhaustive``: every accepted combination of options (see :func:`option_sets`).
    Slots (and, for the built-in workload, its schema and publications) are dropped after.
    """
    say = progress or (lambda _msg: None)
    wl = workload.for_major(server.major)
    builtin = wl.name.startswith("builtin")
    session = _Session(server)
    suffix = f"{os.getpid()}_{int(time.monotonic() * 1000) % 100000}"
    main_slot, tpc_slot = f"pgws_main_{suffix}", f"pgws_2pc_{suffix}"
    slots: list[str] = []
    created_pub = False
    pub = publication or MAIN_PUBLICATION
    started = time.monotonic()
    try:
        conn = session.conn("a")
        if builtin:
            _drop_builtin(conn)
        say(f"pg{server.major}: setup ({len(wl.setup)} statements)")
        for step in wl.setup:
            session.run(step, "setup")
        if not builtin and publication is None:
            has = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (pub,)).fetchone()
            if has is None:
                session.run(Step(f"CREATE PUBLICATION {pub} FOR ALL TABLES"), "publication")
                created_pub = True
        _create_slot(conn, main_slot, False)
        slots.append(main_slot)
        if majors.major(server.major).accepts("two_phase"):
            _create_slot(conn, tpc_slot, True)
            slots.append(tpc_slot)
        say(f"pg{server.major}: workload ({len(wl.actions)} statements)")
        for step in wl.actions:
            session.run(step, "workload")
        for name in list(session.conns):
            if name != "a":
                session.conns.pop(name).close()
        # Peeking reads up to the WAL flush position: make sure the workload's WAL is flushed
        # even on a server with synchronous_commit = off (an xid and no change: not decoded).
        for sql in ("BEGIN", "SET LOCAL synchronous_commit = on", "SELECT txid_current()", "COMMIT"):
            session.run(Step(sql), "flush")
        extra = tuple(p[0] for p in wl.publications)
        rel_flags = {p[0]: p[3] for p in wl.publications}
        candidates = option_sets(server.major, pub, extra, exhaustive=exhaustive)
        if only:
            unknown = sorted(set(only) - {o.name for o in candidates})
            if unknown:
                raise CaptureError(f"expected option sets among {[o.name for o in candidates]}, found {unknown}")
            candidates = [o for o in candidates if o.name in only]
        groups: list[FixtureGroup] = []
        seen: dict[tuple[bytes, ...], int] = {}
        rejected: dict[str, str] = {}
        equivalents: dict[int, list[str]] = {}
        for opts in candidates:
            slot = tpc_slot if opts.two_phase else main_slot
            try:
                rows = _peek(conn, slot, opts)
            except psycopg.Error as exc:
                rejected[opts.name] = _first_line(exc)
                say(f"pg{server.major}: {opts.name}: refused ({rejected[opts.name]})")
                continue
            key = tuple(r.data for r in rows)
            if key in seen and not opts.keep:
                equivalents.setdefault(seen[key], []).append(opts.name)
                say(f"pg{server.major}: {opts.name}: same bytes as {groups[seen[key]].name}")
                continue
            group = build_group(opts.name, opts, slot.rsplit("_", 2)[0], rows, major=server.major,
                                relation_flags=rel_flags.get(opts.publication))
            seen.setdefault(key, len(groups))
            groups.append(group)
            say(f"pg{server.major}: {opts.name}: {len(rows)} payloads, {len(group.cases)} cases kept")
        groups = [
            FixtureGroup(g.name, g.options, g.context, g.slot, g.cases, tuple(equivalents.get(i, ())), g.captured)
            for i, g in enumerate(groups)
        ]
        used = sorted({f for g in groups for c in g.cases for f in c.flags})
        say(f"pg{server.major}: captured {sum(len(g.cases) for g in groups)} cases in "
            f"{time.monotonic() - started:.1f} s")
        return FixtureFile(
            server_version=server.version, major=server.major, provider=provider or server.provider,
            workload=wl.name, captured_on=_dt.date.today().isoformat(), groups=tuple(groups),
            notes={f: NOTES[f] for f in used if f in NOTES}, rejected=rejected,
        )
    finally:
        try:
            conn2 = session.conn("a")
            for slot in slots:
                try:
                    conn2.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                except psycopg.Error:
                    pass
            if created_pub:
                conn2.execute(f"DROP PUBLICATION IF EXISTS {pub}")
            if builtin:
                _drop_builtin(conn2)
        except (psycopg.Error, CaptureError):
            pass
        session.close()


def _create_slot(conn: psycopg.Connection[Any], slot: str, twophase: bool) -> None:
    try:
        if twophase:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput', false, true)", (slot,))
        else:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    except psycopg.Error as exc:
        raise CaptureError(
            f"cannot create logical replication slot {slot} (needs wal_level = logical and a free "
            f"max_replication_slots): {_first_line(exc)}"
        ) from None


def _drop_builtin(conn: psycopg.Connection[Any]) -> None:
    """Drop what the built-in workload creates (a re-run on a user's server starts clean)."""
    for (gid,) in conn.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pgws\\_%'").fetchall():
        conn.execute(f"ROLLBACK PREPARED '{gid}'")
    for pub in ("pgws_all", "pgws_root", "pgws_filtered", "pgws_gen"):
        conn.execute(f"DROP PUBLICATION IF EXISTS {pub}")
    conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    conn.execute("SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin WHERE roname = 'pgws_upstream'")


def run_capture(
    prov: Provider,
    workload: Workload,
    *,
    progress: Progress | None = None,
    publication: str | None = None,
    only: list[str] | None = None,
    exhaustive: bool = False,
) -> FixtureFile:
    """Start *prov*'s server, capture *workload* on it, stop it (also on error or Ctrl-C)."""
    say = progress or (lambda _msg: None)
    say(f"{prov.describe()}: starting server")
    with prov as server:
        say(f"{prov.describe()}: PostgreSQL {server.version} on {server.host}:{server.port}")
        return capture(server, workload, provider=prov.describe(), publication=publication,
                       progress=progress, only=only, exhaustive=exhaustive)
