"""The built-in capture workload, and users' SQL workloads.

A workload is a *setup* (run before the replication slots exist: schema, types,
publications) and *actions* (run after: the changes that are decoded). Each step is one
statement run in autocommit mode on a named connection, so a step list can hold explicit
``BEGIN``/``PREPARE TRANSACTION``/``COMMIT PREPARED`` and interleave two sessions.

The built-in workload reaches every message kind a server major can emit (see
``fixtures/README.md`` for the list, the errata of ``spec/errata.yaml`` for why each step
is there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import PgWireError

__all__ = [
    "Step",
    "Workload",
    "WorkloadError",
    "builtin_workload",
    "session_workload",
    "sql_workload",
    "split_sql",
    "SCHEMA",
    "MAIN_PUBLICATION",
    "WORKLOAD_VERSION",
    "SESSION_WORKLOAD_VERSION",
]

#: Bumped whenever the built-in workload changes (fixture headers record it).
WORKLOAD_VERSION = 2
#: The session workload's own version (fixtures/sessions/ headers record it).
SESSION_WORKLOAD_VERSION = 1
SCHEMA = "pgws"
MAIN_PUBLICATION = "pgws_all"


class WorkloadError(PgWireError):
    """A workload file that cannot be read or a step the server refused."""


@dataclass(frozen=True, slots=True)
class Step:
    """One statement on connection *conn* (``"a"`` or ``"b"``), for majors >= *min_major*."""

    sql: str
    conn: str = "a"
    min_major: int = 10


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    setup: tuple[Step, ...]
    actions: tuple[Step, ...]
    #: Extra publications: (name, minimum major, what it shows, {relation name: flag}).
    publications: tuple[tuple[str, int, str, dict[str, str]], ...] = ()

    def for_major(self, major: int) -> Workload:
        return Workload(
            self.name,
            tuple(s for s in self.setup if s.min_major <= major),
            tuple(s for s in self.actions if s.min_major <= major),
            tuple(p for p in self.publications if p[1] <= major),
        )


def _steps(text: str, conn: str = "a", min_major: int = 10) -> list[Step]:
    return [Step(s, conn, min_major) for s in split_sql(text)]


# =========================================================================================
# Setup: types, tables, publications
# =========================================================================================

_SETUP = f"""
CREATE SCHEMA {SCHEMA};
SET search_path = {SCHEMA};
CREATE TYPE {SCHEMA}.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN {SCHEMA}.posint AS integer CHECK (VALUE > 0);
CREATE TYPE {SCHEMA}.pair AS (a integer, b text);
-- A base type without send/receive functions: with binary = true its values stay 't'
-- while the other columns of the same tuple are 'b' (erratum E-BINARY-FALLBACK).
CREATE TYPE {SCHEMA}.nosend;
CREATE FUNCTION {SCHEMA}.nosend_in(cstring) RETURNS {SCHEMA}.nosend AS 'textin' LANGUAGE internal IMMUTABLE STRICT;
CREATE FUNCTION {SCHEMA}.nosend_out({SCHEMA}.nosend) RETURNS cstring AS 'textout' LANGUAGE internal IMMUTABLE STRICT;
CREATE TYPE {SCHEMA}.nosend (INPUT = {SCHEMA}.nosend_in, OUTPUT = {SCHEMA}.nosend_out, INTERNALLENGTH = VARIABLE, STORAGE = extended);
CREATE TABLE {SCHEMA}.t_basic (
    id integer PRIMARY KEY, name text, score numeric(10,2), flag boolean, mood {SCHEMA}.mood,
    qty {SCHEMA}.posint, pair {SCHEMA}.pair, tags text[], moods {SCHEMA}.mood[],
    at timestamptz, blob bytea, raw {SCHEMA}.nosend, big bigint, ratio double precision
);
CREATE TABLE {SCHEMA}.t_full (id integer, val text, n integer);
ALTER TABLE {SCHEMA}.t_full REPLICA IDENTITY FULL;
CREATE TABLE {SCHEMA}.t_index (id integer NOT NULL, code text NOT NULL, val text);
CREATE UNIQUE INDEX t_index_code ON {SCHEMA}.t_index (code);
ALTER TABLE {SCHEMA}.t_index REPLICA IDENTITY USING INDEX t_index_code;
CREATE TABLE {SCHEMA}.t_nothing (id integer, val text);
ALTER TABLE {SCHEMA}.t_nothing REPLICA IDENTITY NOTHING;
CREATE TABLE {SCHEMA}.t_toast (id integer PRIMARY KEY, small text, big text);
ALTER TABLE {SCHEMA}.t_toast ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE {SCHEMA}.t_toast_full (id integer, small text, big text);
ALTER TABLE {SCHEMA}.t_toast_full ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER TABLE {SCHEMA}.t_toast_full REPLICA IDENTITY FULL;
-- A replica-identity key stored out of line: EXTERNAL storage (never compressed), so a key of
-- 2.5 kB leaves the heap tuple (over the 2 kB TOAST threshold) and still fits a btree entry.
CREATE TABLE {SCHEMA}.t_toast_key (k text PRIMARY KEY, v text);
ALTER TABLE {SCHEMA}.t_toast_key ALTER COLUMN k SET STORAGE EXTERNAL;
CREATE TABLE {SCHEMA}.t_parent (id integer PRIMARY KEY);
CREATE TABLE {SCHEMA}.t_child (id integer PRIMARY KEY, parent_id integer REFERENCES {SCHEMA}.t_parent);
CREATE TABLE {SCHEMA}.t_serial (id serial PRIMARY KEY, v text);
CREATE TABLE {SCHEMA}.t_bulk (id integer PRIMARY KEY, payload text);
CREATE TABLE {SCHEMA}."Ünïcode tåble" ("ключ" integer PRIMARY KEY, "値" text);
SELECT pg_replication_origin_create('pgws_upstream');
"""

_SETUP_12 = f"""
CREATE TABLE {SCHEMA}.t_gen (id integer PRIMARY KEY, a integer, doubled integer GENERATED ALWAYS AS (a * 2) STORED);
"""

_SETUP_13 = f"""
CREATE TABLE {SCHEMA}.t_parted (id integer NOT NULL, region text NOT NULL, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE {SCHEMA}.t_parted_eu PARTITION OF {SCHEMA}.t_parted FOR VALUES IN ('eu');
CREATE TABLE {SCHEMA}.t_parted_us PARTITION OF {SCHEMA}.t_parted FOR VALUES IN ('us');
CREATE PUBLICATION pgws_root FOR TABLE {SCHEMA}.t_parted WITH (publish_via_partition_root = true);
"""

_SETUP_15 = f"""
CREATE TABLE {SCHEMA}.t_rowfilter (id integer PRIMARY KEY, amount integer, note text);
ALTER TABLE {SCHEMA}.t_rowfilter REPLICA IDENTITY FULL;
CREATE TABLE {SCHEMA}.t_collist (id integer PRIMARY KEY, visible text, secret text);
CREATE PUBLICATION pgws_filtered FOR TABLE {SCHEMA}.t_rowfilter WHERE (amount > 100), {SCHEMA}.t_collist (id, visible);
"""

_SETUP_18 = f"""
CREATE PUBLICATION pgws_gen FOR TABLE {SCHEMA}.t_gen WITH (publish_generated_columns = stored);
"""

_SETUP_LAST = f"""
CREATE PUBLICATION {MAIN_PUBLICATION} FOR ALL TABLES;
"""

# =========================================================================================
# Actions: the decoded changes, in the order they happen
# =========================================================================================

_BIG = "repeat(md5(g::text), 70)"  # 2,240 bytes: over the TOAST threshold, stored out of line

_KEY = "repeat(md5(g::text), 78)"  # 2,496 bytes: a key stored out of line (EXTERNAL storage)

_ACTIONS = f"""
-- A transaction with an xid and nothing published (DDL): Begin/Commit up to 14, skipped from 15.
CREATE TABLE {SCHEMA}.t_scratch (id integer);
-- Every column type; non-ASCII text; NULLs.
INSERT INTO {SCHEMA}.t_basic VALUES
  (1, 'héllo wörld ✓ 日本語', 12.50, true, 'happy', 7, ROW(1, 'x'), ARRAY['a', 'b,c', NULL], ARRAY['sad', 'ok']::{SCHEMA}.mood[],
   '2024-02-29 12:34:56.789+00', '\\x00ff10', 'no send function', 9223372036854775807, 0.1),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, '', 0, false, 'sad', 1, ROW(NULL, ''), '{{}}', '{{}}', 'infinity', '', '', -1, 'NaN');
-- Default replica identity: an UPDATE not touching the key has no old tuple; one changing
-- the key sends a full-width 'K' tuple with 'n' for every non-key column.
UPDATE {SCHEMA}.t_basic SET name = 'updated ☃', score = 99.99 WHERE id = 1;
UPDATE {SCHEMA}.t_basic SET id = 10 WHERE id = 2;
DELETE FROM {SCHEMA}.t_basic WHERE id = 3;
-- REPLICA IDENTITY FULL: 'O' old tuples.
INSERT INTO {SCHEMA}.t_full VALUES (1, 'one', 1), (2, NULL, 2);
UPDATE {SCHEMA}.t_full SET val = 'uno' WHERE id = 1;
DELETE FROM {SCHEMA}.t_full WHERE id = 2;
-- REPLICA IDENTITY USING INDEX.
INSERT INTO {SCHEMA}.t_index VALUES (1, 'k1', 'v1');
UPDATE {SCHEMA}.t_index SET val = 'v1b' WHERE code = 'k1';
UPDATE {SCHEMA}.t_index SET code = 'k2' WHERE code = 'k1';
DELETE FROM {SCHEMA}.t_index WHERE code = 'k2';
-- REPLICA IDENTITY NOTHING (only inserts are allowed on a published table).
INSERT INTO {SCHEMA}.t_nothing VALUES (1, 'nothing');
-- Unchanged TOAST: 'u' in the new tuple; under FULL the old tuple is de-toasted.
INSERT INTO {SCHEMA}.t_toast SELECT g, 'small', {_BIG} FROM generate_series(1, 2) g;
UPDATE {SCHEMA}.t_toast SET small = 'changed' WHERE id = 1;
INSERT INTO {SCHEMA}.t_toast_full SELECT g, 'small', {_BIG} FROM generate_series(1, 1) g;
UPDATE {SCHEMA}.t_toast_full SET small = 'changed' WHERE id = 1;
DELETE FROM {SCHEMA}.t_toast WHERE id = 2;
-- An out-of-line key the UPDATE does not touch: 'u' for the key in the new tuple, and a 'K' old
-- tuple holding the key de-toasted (heapam.c: an external key value makes the old key logged).
INSERT INTO {SCHEMA}.t_toast_key SELECT {_KEY}, 'v' FROM generate_series(1, 2) g;
UPDATE {SCHEMA}.t_toast_key SET v = 'changed' WHERE k = repeat(md5('1'), 78);
DELETE FROM {SCHEMA}.t_toast_key WHERE k = repeat(md5('2'), 78);
-- Quoted non-ASCII identifiers.
INSERT INTO {SCHEMA}."Ünïcode tåble" VALUES (1, 'ünïcødé ✓');
-- Several changes in one transaction, with a savepoint released and one rolled back.
BEGIN;
INSERT INTO {SCHEMA}.t_parent VALUES (1), (2);
SAVEPOINT s1;
INSERT INTO {SCHEMA}.t_child VALUES (1, 1);
RELEASE SAVEPOINT s1;
SAVEPOINT s2;
INSERT INTO {SCHEMA}.t_child VALUES (2, 2);
ROLLBACK TO SAVEPOINT s2;
INSERT INTO {SCHEMA}.t_serial (v) VALUES ('a'), ('b');
COMMIT;
-- Logical messages: transactional (inside a transaction with a change) and not.
BEGIN;
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (20, 'with message');
SELECT pg_logical_emit_message(true, 'pgws', 'transactional ✓');
COMMIT;
SELECT pg_logical_emit_message(false, 'pgws', '\\x00ff00'::bytea);
SELECT pg_logical_emit_message(true, 'pgws-empty', '');
-- Repeated Relation: ANALYZE invalidates the relation cache, the next change re-sends it.
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (21, 'before analyze');
ANALYZE {SCHEMA}.t_basic;
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (22, 'after analyze');
-- A large transaction: streamed in several blocks when streaming is on.
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g;
-- Streamed subtransaction abort: Stream Abort (xid, subxid) with subxid != xid.
BEGIN;
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('y', 100) FROM generate_series(10001, 11000) g;
SAVEPOINT big;
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('z', 100) FROM generate_series(11001, 12000) g;
ROLLBACK TO SAVEPOINT big;
INSERT INTO {SCHEMA}.t_bulk VALUES (12001, 'after rollback to savepoint');
COMMIT;
-- Streamed whole-transaction abort: Stream Abort (xid, xid).
BEGIN;
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('r', 100) FROM generate_series(20001, 21200) g;
ROLLBACK;
-- A large transaction already rolled back when it is decoded, with a released subtransaction
-- holding a change: 18 discards it unstreamed, yet sends a Stream Abort (xid, subxid) to every
-- client, streaming or not (erratum E-PG18-STRAY-STREAM-ABORT); 14-17 stream it to a streaming
-- client and abort it as usual, and send nothing to the others.
BEGIN;
SAVEPOINT stray;
INSERT INTO {SCHEMA}.t_bulk VALUES (70000, 'in a released subtransaction');
RELEASE SAVEPOINT stray;
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('w', 100) FROM generate_series(70001, 71200) g;
ROLLBACK;
-- Two-phase: PREPARE then COMMIT PREPARED / ROLLBACK PREPARED.
BEGIN;
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (30, 'prepared then committed');
PREPARE TRANSACTION 'pgws_2pc_commit';
COMMIT PREPARED 'pgws_2pc_commit';
BEGIN;
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (31, 'prepared then rolled back');
PREPARE TRANSACTION 'pgws_2pc_rollback';
ROLLBACK PREPARED 'pgws_2pc_rollback';
-- A large prepared transaction: Stream Prepare with streaming and two_phase.
BEGIN;
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('p', 100) FROM generate_series(30001, 31200) g;
PREPARE TRANSACTION 'pgws_2pc_stream';
COMMIT PREPARED 'pgws_2pc_stream';
-- TRUNCATE: CASCADE (flags 1), RESTART IDENTITY (flags 2), several relations.
TRUNCATE {SCHEMA}.t_parent CASCADE;
TRUNCATE {SCHEMA}.t_serial, {SCHEMA}.t_nothing RESTART IDENTITY;
"""

_ORIGIN_SMALL = f"""
SELECT pg_replication_origin_session_setup('pgws_upstream');
BEGIN;
SELECT pg_replication_origin_xact_setup('0/1A2B3C4D', '2024-01-02 03:04:05+00');
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (40, 'from an origin');
COMMIT;
BEGIN;
SELECT pg_replication_origin_xact_setup('0/1A2B3D00', '2024-01-02 03:04:06+00');
INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('o', 100) FROM generate_series(40001, 41200) g;
COMMIT;
SELECT pg_replication_origin_session_reset();
"""

# Two sessions with large transactions at once: streamed blocks of two xids interleave.
_INTERLEAVED = [
    Step("BEGIN", "a"),
    Step(f"INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('a', 100) FROM generate_series(50001, 50800) g", "a"),
    Step("BEGIN", "b"),
    Step(f"INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('b', 100) FROM generate_series(60001, 60800) g", "b"),
    Step(f"INSERT INTO {SCHEMA}.t_bulk SELECT g, repeat('a', 100) FROM generate_series(50801, 51600) g", "a"),
    Step("COMMIT", "b"),
    Step("COMMIT", "a"),
]

_ACTIONS_12 = f"""
-- Generated columns: left out of Relation and TupleData (12+) unless published (18).
INSERT INTO {SCHEMA}.t_gen (id, a) VALUES (1, 21);
UPDATE {SCHEMA}.t_gen SET a = 50 WHERE id = 1;
"""

_ACTIONS_13 = f"""
-- A partitioned table: changes published as the partitions, or as the root (pgws_root).
INSERT INTO {SCHEMA}.t_parted VALUES (1, 'eu', 'one'), (2, 'us', 'two');
UPDATE {SCHEMA}.t_parted SET v = 'uno' WHERE id = 1;
DELETE FROM {SCHEMA}.t_parted WHERE id = 2;
"""

_ACTIONS_15 = f"""
-- Row filters: an UPDATE into the filter is sent as INSERT, out of it as DELETE (pgws_filtered).
INSERT INTO {SCHEMA}.t_rowfilter VALUES (1, 50, 'filtered out'), (2, 150, 'passes');
UPDATE {SCHEMA}.t_rowfilter SET amount = 200 WHERE id = 1;
UPDATE {SCHEMA}.t_rowfilter SET amount = 10 WHERE id = 2;
UPDATE {SCHEMA}.t_rowfilter SET note = 'still in' WHERE id = 1;
-- Column lists: 'secret' is never sent (pgws_filtered).
INSERT INTO {SCHEMA}.t_collist VALUES (1, 'shown', 'hidden');
UPDATE {SCHEMA}.t_collist SET secret = 'hidden too' WHERE id = 1;
UPDATE {SCHEMA}.t_collist SET visible = 'shown too' WHERE id = 1;
"""

_ACTIONS_LAST = f"""
-- The last transaction, so the capture ends on a committed change.
INSERT INTO {SCHEMA}.t_basic (id, name) VALUES (99, 'the end');
"""


def builtin_workload() -> Workload:
    """The built-in workload (filter it with :meth:`Workload.for_major`)."""
    setup = [
        *_steps(_SETUP),
        *_steps(_SETUP_12, min_major=12),
        *_steps(_SETUP_13, min_major=13),
        *_steps(_SETUP_15, min_major=15),
        *_steps(_SETUP_18, min_major=18),
        *_steps(_SETUP_LAST),
    ]
    actions = [
        *_steps(_ACTIONS),
        *_steps(_ORIGIN_SMALL),
        *_INTERLEAVED,
        *_steps(_ACTIONS_12, min_major=12),
        *_steps(_ACTIONS_13, min_major=13),
        *_steps(_ACTIONS_15, min_major=15),
        *_steps(_ACTIONS_LAST),
    ]
    publications = (
        ("pgws_root", 13, "publish_via_partition_root = true", {"t_parted": "partition-root"}),
        ("pgws_filtered", 15, "row filter and column list",
         {"t_rowfilter": "row-filter", "t_collist": "column-list"}),
        ("pgws_gen", 18, "publish_generated_columns = stored", {"t_gen": "generated-column-published"}),
    )
    return Workload(f"builtin-v{WORKLOAD_VERSION}", tuple(setup), tuple(actions), publications)


_SESSION_SETUP = f"""
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.t_session (id integer PRIMARY KEY, v text);
CREATE TABLE {SCHEMA}.t_full (id integer, v text);
ALTER TABLE {SCHEMA}.t_full REPLICA IDENTITY FULL;
CREATE PUBLICATION {MAIN_PUBLICATION} FOR ALL TABLES;
"""

_SESSION_ACTIONS = f"""
INSERT INTO {SCHEMA}.t_session VALUES (1, 'één ✓'), (2, NULL);
UPDATE {SCHEMA}.t_session SET v = 'two' WHERE id = 2;
UPDATE {SCHEMA}.t_session SET id = 3 WHERE id = 2;
DELETE FROM {SCHEMA}.t_session WHERE id = 3;
INSERT INTO {SCHEMA}.t_full VALUES (1, 'full');
UPDATE {SCHEMA}.t_full SET v = 'fuller';
BEGIN;
INSERT INTO {SCHEMA}.t_session VALUES (4, 'with a message');
SELECT pg_logical_emit_message(true, 'pgws', 'in a transaction');
COMMIT;
SELECT pg_logical_emit_message(false, 'pgws', 'outside');
-- large: streamed (with streaming), one subtransaction rolled back after it was streamed
BEGIN;
INSERT INTO {SCHEMA}.t_session SELECT g, repeat('s', 100) FROM generate_series(100, 1100) g;
SAVEPOINT sp;
INSERT INTO {SCHEMA}.t_session SELECT g, repeat('r', 100) FROM generate_series(2000, 3000) g;
ROLLBACK TO SAVEPOINT sp;
COMMIT;
TRUNCATE {SCHEMA}.t_full;
INSERT INTO {SCHEMA}.t_session VALUES (5, 'the end');
"""


def session_workload() -> Workload:
    """The smaller workload of recorded walsender sessions (whole conversations)."""
    return Workload(f"session-v{SESSION_WORKLOAD_VERSION}", tuple(_steps(_SESSION_SETUP)), tuple(_steps(_SESSION_ACTIONS)))


def sql_workload(actions: list[Path], setup: list[Path] | None = None) -> Workload:
    """A workload from users' SQL files: *setup* files run before the slots exist."""
    def read(paths: list[Path]) -> list[Step]:
        out: list[Step] = []
        for path in paths:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise WorkloadError(f"cannot read SQL workload {path}: {exc}") from None
            out += _steps(text)
        return out

    steps = read(actions)
    if not steps:
        raise WorkloadError(f"expected SQL statements in {', '.join(map(str, actions))}, found none")
    names = "+".join(Path(p).name for p in actions)
    return Workload(f"sql:{names}", tuple(read(setup or [])), tuple(steps))


_TOKEN = re.compile(
    r"""(?P<dollar>\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)|(?P<sq>'(?:[^']|'')*')|(?P<dq>"(?:[^"]|"")*")"""
    r"""|(?P<line>--[^\n]*)|(?P<block>/\*.*?\*/)|(?P<semi>;)""",
    re.S,
)


def split_sql(text: str) -> list[str]:
    """Split a SQL script into statements at top-level semicolons (quotes, dollar quotes
    and comments respected); comment-only pieces are dropped."""
    out: list[str] = []
    start = pos = 0
    buf: list[str] = []
    while True:
        m = _TOKEN.search(text, pos)
        if m is None:
            buf.append(text[start:])
            break
        kind = m.lastgroup
        if kind == "dollar":
            end = text.find(m.group(), m.end())
            pos = len(text) if end < 0 else end + len(m.group())
            continue
        if kind in ("line", "block"):
            buf.append(text[start:m.start()])
            start = pos = m.end()
            continue
        if kind == "semi":
            buf.append(text[start:m.start()])
            out.append("".join(buf))
            buf = []
            start = pos = m.end()
            continue
        pos = m.end()
    out.append("".join(buf))
    return [s.strip() for s in out if s.strip()]
