"""Acceptance: real subscribers of 15, 16, 17 and 18 get from the fake what they get from a
real publisher of the same major with the same publications and the same data.

One combined publication shape per major (the docs' CREATE PUBLICATION): a row filter on a
REPLICA IDENTITY FULL table in two publications (OR-ed for inserts and updates; the second
publishes no deletes, so deletes see the first one's filter only), a column list with a row
filter on the key of a default-identity table, a partitioned table published through its
root, a schema published with TABLES IN SCHEMA (inserts and updates only), and on 18 a stored
generated column published with ``publish_generated_columns``. Seeded random transactions
update rows across the filters (into them: INSERT, out of them: DELETE), move keys and rows
between partitions; some come from a replication origin, which subscribers of 16+ (``origin =
none``) do not get. The same subscriber server subscribes, with copy_data
true and false, once to a database of its own cluster (the real publisher: its slot made
first, as a subscription to the same cluster must; the transactions committed after it and
before the subscription, as the fake's commit before table sync makes its slots) and once to
the fake; every subscriber table must end equal.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pgwire_spec.walsender import Scenario, SyncFakeWalsender, persona
from pgwire_spec.walsender._sql import Result, answer

pytestmark = [pytest.mark.live, pytest.mark.clients]

MAJORS = [15, 16, 17, 18]
TABLES = ("public.orders", "public.customers", "public.sales", "inv.stock")


def _shape(major: int) -> dict[str, Any]:
    """The scenario's publications and tables (no rows yet)."""
    pub_a: dict[str, Any] = {
        "tables": [
            {"table": "public.orders", "where": "amount > 100 AND status <> 'void'"},
            {"table": "public.customers", "columns": ["id", "name"], "where": "id > 50"},
            "public.sales",
        ],
        "publish_via_partition_root": True,
    }
    if major >= 18:
        pub_a["publish_generated_columns"] = "stored"
    return {
        "server": {"version": f"{major}.2"},
        "publications": {"pub_a": pub_a, "pub_b": {"tables": [{"table": "public.orders", "where": "amount < 10"}],
                                                   "schemas": ["inv"], "publish": ["insert", "update"]}},
        "tables": {
            "public.orders": {"replica_identity": "full", "columns": [
                {"name": "id", "type": "int4", "key": True}, {"name": "status", "type": "text"},
                {"name": "amount", "type": "int4"}]},
            "public.customers": {"columns": [
                {"name": "id", "type": "int4", "key": True}, {"name": "name", "type": "text"},
                {"name": "secret", "type": "text"}]},
            "public.sales": {"partition_by": "RANGE (id)", "columns": [
                {"name": "id", "type": "int4", "key": True}, {"name": "qty", "type": "int4"},
                {"name": "total", "type": "int4", "generated": "qty * 10"}]},
            "public.sales_low": {"partition_of": "public.sales", "for_values": "FROM (MINVALUE) TO (100)"},
            "public.sales_high": {"partition_of": "public.sales", "for_values": "FROM (100) TO (MAXVALUE)"},
            "inv.stock": {"columns": [{"name": "id", "type": "int4", "key": True}, {"name": "n", "type": "int4"}]},
        },
    }


def _publisher_ddl(major: int) -> str:
    gen = ", publish_generated_columns = stored" if major >= 18 else ""
    return f"""
    CREATE TABLE public.orders (id int4 PRIMARY KEY, status text, amount int4);
    ALTER TABLE public.orders REPLICA IDENTITY FULL;
    CREATE TABLE public.customers (id int4 PRIMARY KEY, name text, secret text);
    CREATE TABLE public.sales (id int4 PRIMARY KEY, qty int4, total int4 GENERATED ALWAYS AS (qty * 10) STORED)
        PARTITION BY RANGE (id);
    CREATE TABLE public.sales_low PARTITION OF public.sales FOR VALUES FROM (MINVALUE) TO (100);
    CREATE TABLE public.sales_high PARTITION OF public.sales FOR VALUES FROM (100) TO (MAXVALUE);
    CREATE PUBLICATION pub_a FOR TABLE public.orders WHERE (amount > 100 AND status <> 'void'),
        public.customers (id, name) WHERE (id > 50), public.sales
        WITH (publish_via_partition_root = true{gen});
    CREATE SCHEMA inv;
    CREATE TABLE inv.stock (id int4 PRIMARY KEY, n int4);
    CREATE PUBLICATION pub_b FOR TABLE public.orders WHERE (amount < 10), TABLES IN SCHEMA inv
        WITH (publish = 'insert, update');
    """


#: The subscriber's tables: plain ones (its own total column is filled only where published).
SUBSCRIBER_DDL = """
CREATE TABLE public.orders (id int4 PRIMARY KEY, status text, amount int4);
CREATE TABLE public.customers (id int4 PRIMARY KEY, name text, secret text);
CREATE TABLE public.sales (id int4 PRIMARY KEY, qty int4, total int4);
CREATE SCHEMA inv;
CREATE TABLE inv.stock (id int4 PRIMARY KEY, n int4);
"""


class _Data:
    """Seeded random rows and transactions, as scenario changes and as the same SQL."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rows: dict[str, dict[int, dict[str, Any]]] = {t: {} for t in TABLES}
        self.initial: dict[str, list[dict[str, Any]]] = {}
        for t in TABLES:
            self.initial[t] = []
            for _ in range(8):
                r = self.new_row(t)
                self.rows[t][r["id"]] = r
                self.initial[t].append(r)
        #: ids used once: never drawn again
        self.taken: dict[str, set[int]] = {t: set(self.rows[t]) for t in TABLES}
        #: the transactions replayed from a replication origin: inserts of rows no later
        #: change touches (a subscriber that skips them stays consistent), never the last
        #: one (the test waits for the real subscriber to confirm the last)
        self.from_origin: set[int] = set()
        self.transactions = []
        for i in range(30):
            if i < 29 and self.rng.random() < 0.2:
                self.from_origin.add(i)
                self.transactions.append([self.origin_insert() for _ in range(self.rng.randint(1, 3))])
            else:
                self.transactions.append([self.change() for _ in range(self.rng.randint(1, 4))])

    def origin_insert(self) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        t = self.rng.choice(TABLES)
        r = self.new_row(t)
        self.taken[t].add(r["id"])
        return "insert", t, {}, r

    def free_id(self, t: str) -> int:
        top = {"public.orders": 400, "public.customers": 100, "public.sales": 200, "inv.stock": 100}[t]
        taken = getattr(self, "taken", {}).get(t, set())
        while True:
            i = self.rng.randrange(1, top)
            if i not in self.rows[t] and i not in taken:
                return i

    def new_row(self, t: str) -> dict[str, Any]:
        i = self.free_id(t)
        if t == "public.orders":
            return {"id": i, "status": self.rng.choice(["new", "paid", "void"]), "amount": self.rng.randrange(0, 200)}
        if t == "public.customers":
            return {"id": i, "name": self.rng.choice(["ann", "bob", "cy"]), "secret": f"s{i}"}
        if t == "inv.stock":
            return {"id": i, "n": self.rng.randrange(0, 9)}
        return {"id": i, "qty": self.rng.randrange(0, 9)}

    def change(self) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        """(kind, table, key, values); applied to the model as it is drawn."""
        t = self.rng.choice(TABLES)
        rows = self.rows[t]
        kind = self.rng.choice(["insert", "update", "update", "update", "delete"]) if rows else "insert"
        if kind == "insert":
            r = self.new_row(t)
            rows[r["id"]] = r
            self.taken[t].add(r["id"])
            return kind, t, {}, r
        key = self.rng.choice(sorted(rows))
        if kind == "delete":
            del rows[key]
            return kind, t, {"id": key}, {}
        if t == "public.orders":
            new = self.rng.choice([{"amount": self.rng.randrange(0, 200)},
                                   {"status": self.rng.choice(["new", "paid", "void"])}])
        elif t == "public.customers":
            new = self.rng.choice([{"id": self.free_id(t)}, {"name": self.rng.choice(["dee", "eve"])}])
        elif t == "inv.stock":
            new = self.rng.choice([{"id": self.free_id(t)}, {"n": self.rng.randrange(0, 9)}])
        else:
            new = self.rng.choice([{"id": self.free_id(t)}, {"qty": self.rng.randrange(0, 9)}])
        row = {**rows.pop(key), **new}
        rows[row["id"]] = row
        self.taken[t].add(row["id"])
        return kind, t, {"id": key}, new

    def scenario(self, major: int, origin: str) -> dict[str, Any]:
        data = _shape(major)
        for t in TABLES:
            data["tables"][t]["rows"] = self.initial[t]
        data["transactions"] = [{"changes": [
            {"insert": t, "new": v} if kind == "insert" else
            {"delete": t, "key": key} if kind == "delete" else
            {"update": t, "key": key, "new": v}
            for kind, t, key, v in txn], **({"origin": origin} if i in self.from_origin else {})}
            for i, txn in enumerate(self.transactions)]
        return data

    def load(self, conn: Any) -> None:
        for t in TABLES:
            for r in self.initial[t]:
                conn.execute(f"INSERT INTO {t} ({', '.join(r)}) VALUES ({', '.join(['%s'] * len(r))})",
                             list(r.values()))

    def replay(self, conn: Any, origin: str) -> None:
        for i, txn in enumerate(self.transactions):
            if i in self.from_origin:
                conn.execute("SELECT pg_replication_origin_session_setup(%s)", [origin])
            with conn.transaction():
                for kind, t, key, v in txn:
                    if kind == "insert":
                        conn.execute(f"INSERT INTO {t} ({', '.join(v)}) VALUES ({', '.join(['%s'] * len(v))})",
                                     list(v.values()))
                    elif kind == "delete":
                        conn.execute(f"DELETE FROM {t} WHERE id = %s", [key["id"]])
                    else:
                        sets = ", ".join(f"{c} = %s" for c in v)
                        conn.execute(f"UPDATE {t} SET {sets} WHERE id = %s", [*v.values(), key["id"]])
            if i in self.from_origin:
                conn.execute("SELECT pg_replication_origin_session_reset()")


def _catalog_differences(scenario: Scenario, major: int, queries: list[str], conn: Any) -> tuple[list[Any], int]:
    """Each catalog query the subscriber sent the fake, asked of the real publisher too (the
    fake's relation OIDs swapped for the real ones): column names and types, and rows
    (OIDs as relation names, in any order), must be the same."""
    fake_names = {t.oid: t.qualified_name for t in scenario.tables}
    real_oids = {name: oid for oid, name in conn.execute(
        "SELECT c.oid, n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname IN ('public', 'inv')").fetchall()}
    real_names = {oid: name for name, oid in real_oids.items()}
    out = []
    compared = 0
    for q in queries:
        if not q.lstrip().upper().startswith("SELECT") or "set_config" in q:
            continue
        compared += 1
        fake = answer(scenario, persona(major), scenario.server.version, q)
        assert isinstance(fake, Result)
        real_q = re.sub(r"\b\d{5,}\b", lambda m: str(real_oids[fake_names[int(m.group())]]), q)
        res = conn.pgconn.exec_(real_q.encode())
        real_cols = [(res.fname(j).decode(), res.ftype(j)) for j in range(res.nfields)]
        real_rows = [tuple(None if (v := res.get_value(i, j)) is None else v.decode() for j in range(res.nfields))
                     for i in range(res.ntuples)]

        def named(rows: Any, names: dict[int, str], cols: list[tuple[str, int]]) -> list[Any]:
            return sorted((tuple(names.get(int(v), v) if c == ("oid", 26) and v else v for v, c in zip(r, cols))
                           for r in rows), key=repr)

        if (list(fake.columns) != real_cols
                or named(fake.rows, fake_names, list(fake.columns)) != named(real_rows, real_names, real_cols)):
            out.append((q, list(fake.columns), named(fake.rows, fake_names, list(fake.columns)),
                        real_cols, named(real_rows, real_names, real_cols)))
    return out, compared


def _dsn(server: Any, db: str) -> str:
    return server.dsn.replace(f"dbname={server.dbname}", f"dbname={db}")


def _tables(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY id").fetchall()] for t in TABLES}


def _synced(conn: Any) -> bool:
    states = {s for (s,) in conn.execute("SELECT srsubstate FROM pg_subscription_rel").fetchall()}
    return states == {"r"}


def _wait(what: str, until: Any, timeout: float = 90.0, why: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {why()}" if why else ""))
        time.sleep(0.2)


@pytest.fixture
def databases(subscriber_server: Any, request: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """A publisher and two subscriber databases on the subscriber server of the major;
    dropped (subscriptions first) at the end."""
    import psycopg

    server = subscriber_server(request.node.callspec.params["major"])
    tag = uuid.uuid4().hex[:8]
    dbs = {"pub": f"p_{tag}", "real": f"sr_{tag}", "fake": f"sf_{tag}"}
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        for db in dbs.values():
            admin.execute(f"CREATE DATABASE {db}")
    try:
        yield server, dbs
    finally:
        for role in ("real", "fake"):
            try:
                with psycopg.connect(_dsn(server, dbs[role]), autocommit=True) as conn:
                    for (name,) in conn.execute("SELECT subname FROM pg_subscription").fetchall():
                        conn.execute(f"ALTER SUBSCRIPTION {name} DISABLE")
                        conn.execute(f"ALTER SUBSCRIPTION {name} SET (slot_name = NONE)")
                        conn.execute(f"DROP SUBSCRIPTION {name}")
            except psycopg.Error:
                pass
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            for (slot,) in admin.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                                         [dbs["pub"]]).fetchall():
                admin.execute("SELECT pg_drop_replication_slot(%s)", [slot])
            for (name,) in admin.execute("SELECT roname FROM pg_replication_origin WHERE roname = %s",
                                         [f"up_{dbs['pub']}"]).fetchall():
                admin.execute("SELECT pg_replication_origin_drop(%s)", [name])
            for db in dbs.values():
                admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


@pytest.mark.parametrize("copy_data", [True, False], ids=["copy_data", "no_copy"])
@pytest.mark.parametrize("major", MAJORS)
def test_subscriber_tables_equal_a_real_publishers(databases: Any, major: int, copy_data: bool) -> None:
    import psycopg

    server, dbs = databases
    data = _Data(seed=major * 10 + copy_data)
    origin = f"up_{dbs['pub']}"
    scenario = Scenario.from_dict(data.scenario(major, origin))
    slot = f"real_{dbs['pub']}"
    # 16+: transactions from a replication origin are not sent to these subscriptions
    options = f"copy_data = {str(copy_data).lower()}" + (", origin = none" if major >= 16 else "")
    with psycopg.connect(_dsn(server, dbs["pub"]), autocommit=True) as pub:
        pub.execute(_publisher_ddl(major))
        data.load(pub)
        pub.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", [slot])
        pub.execute("SELECT pg_replication_origin_create(%s)", [origin])
        # The real publisher's transactions commit after the subscription's slot and before
        # its table sync makes its own slots, as the fake's do: they commit when a client first
        # decodes, here the apply worker, which starts table sync only once it streams
        # (tablesync.c process_syncing_tables). With copy_data, table sync then copies what
        # they left and the apply worker skips them for tables not yet synced (worker.c
        # should_apply_changes_for_rel); without, the apply worker applies them.
        data.replay(pub, origin)
        (end,) = pub.execute("SELECT pg_current_wal_lsn()").fetchone()
        with SyncFakeWalsender(scenario) as fake:
            with psycopg.connect(_dsn(server, dbs["real"]), autocommit=True) as real, \
                    psycopg.connect(_dsn(server, dbs["fake"]), autocommit=True) as faked:
                for conn in (real, faked):
                    conn.execute(SUBSCRIBER_DDL)
                real.execute(f"CREATE SUBSCRIPTION s_real CONNECTION '{_dsn(server, dbs['pub'])}' "
                             f"PUBLICATION pub_a, pub_b WITH (create_slot = false, slot_name = '{slot}', "
                             f"{options})")
                conninfo = fake.dsn.replace("'", "''")
                faked.execute(f"CREATE SUBSCRIPTION s_fake CONNECTION '{conninfo}' PUBLICATION pub_a, pub_b "
                              f"WITH ({options})")
                _wait("the real subscriber's table sync", lambda: _synced(real))
                _wait("the real subscriber to confirm the publisher's last change", lambda: pub.execute(
                    "SELECT confirmed_flush_lsn >= %s FROM pg_replication_slots WHERE slot_name = %s",
                    [end, slot]).fetchone()[0], why=lambda: (end, pub.execute(
                        "SELECT confirmed_flush_lsn, active FROM pg_replication_slots WHERE slot_name = %s",
                        [slot]).fetchone(), real.execute("SELECT * FROM pg_stat_subscription").fetchall(),
                        _tables(real), _tables(pub)))
                expected = _tables(real)
                try:
                    _wait("the fake's subscriber to hold what the real one holds",
                          lambda: _synced(faked) and _tables(faked) == expected, timeout=60)
                except AssertionError:
                    pass
                time.sleep(0.5)  # and nothing more arrives
                got = _tables(faked)
                publisher = _tables(pub)
                queries = fake.transcript.queries()
                tags = [m.tag for m in fake.transcript.pgoutput() if m is not None]
                errors = fake.transcript.errors()
                catalog, compared = _catalog_differences(scenario, major, queries, pub)
    assert got == expected, [dict(e.fields).get("M") for e in errors]
    # the catalog queries got a real publisher's answers: publications, table list, and per
    # table (with copy_data) its relation, column list, columns and row filters
    assert catalog == []
    assert compared >= (2 + 4 * len(TABLES) if copy_data else 2), queries
    # the shape did filter: the publisher holds rows the subscribers never got
    assert publisher["public.orders"] != expected["public.orders"]
    # column list: the secret never arrives; on 18 the generated total does
    assert all(r[2] is None for r in expected["public.customers"])
    assert all((r[2] is not None) == (major >= 18) for r in expected["public.sales"])
    if copy_data:
        assert any("WHERE" in q and q.startswith("COPY (SELECT") for q in queries), queries
        assert any(q.startswith("COPY (SELECT id, qty") and "public.sales" in q for q in queries), queries
    else:
        assert not any(q.startswith("COPY") for q in queries)
    assert {"I", "U", "D"} <= set(tags)
    # origin = none (16+): the origin's transactions never came; 15 gets them with an Origin
    assert data.from_origin and ("O" in tags) == (major < 16)


#: Row filters of every supported form over columns of several types.
FILTERS = ["amount > 100", "amount > 1.5", "amount >= '1.5'", "id <> -3", "id > 100", "big > 100", "id > 1.5",
           "f8 > 1", "name = 'x'", "vc = 'x'", "name IN ('a','b')", "name NOT IN ('a','b')", "id BETWEEN 1 AND 3",
           "id NOT BETWEEN 1 AND 3", "flag", "flag = true", "NOT (id = 1)", "note IS NULL", "note IS NOT NULL",
           "id % 2 = 0 AND id * 2 + 1 > 5 OR name || '!' = 'a!'"]


@pytest.mark.parametrize("major", [16])
def test_row_filters_print_as_the_servers_pg_get_expr(subscriber_server: Any, major: int) -> None:
    """The fake answers the subscriber's pg_get_expr(gpt.qual, …) with the server's text
    (ruleutils.c), casts the parser added included."""
    import psycopg

    from pgwire_spec.walsender.publications import parse_expression

    server = subscriber_server(major)
    db = f"f_{uuid.uuid4().hex[:8]}"
    types = {"id": "int4", "big": "int8", "name": "text", "amount": "numeric", "flag": "bool", "note": "text",
             "vc": "varchar", "f8": "float8"}
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    try:
        with psycopg.connect(_dsn(server, db), autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id int4 PRIMARY KEY, big int8, name text, amount numeric, flag bool, "
                         "note text, vc varchar(10), f8 float8)")
            real, fake = [], []
            for i, text in enumerate(FILTERS):
                conn.execute(f"CREATE PUBLICATION p{i} FOR TABLE t WHERE ({text}) WITH (publish = 'insert')")
                (printed,) = conn.execute("SELECT rowfilter FROM pg_publication_tables WHERE pubname = %s",
                                          [f"p{i}"]).fetchone()
                real.append(printed)
                fake.append(parse_expression(text, types).deparsed)
    finally:
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    assert fake == real
