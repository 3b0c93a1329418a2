"""Publications in scenarios: the model, its SQL expressions, partitions and generated
columns, and how several publications combine for one table (pgoutput.c's rules)."""

from __future__ import annotations

from typing import Any

import pytest

from pgwire_spec.walsender import Scenario, ScenarioError, load_scenario
from pgwire_spec.walsender._history import compile_history
from pgwire_spec.walsender._relsync import publication_tables, rel_sync
from pgwire_spec.walsender.publications import parse_expression

from .scenarios import EXAMPLES

TYPES = {"id": "int4", "name": "text", "amount": "numeric", "flag": "bool"}


@pytest.mark.parametrize(("text", "row", "value"), [
    ("amount > 100", {"amount": "100.5"}, True),
    ("amount > 100", {"amount": None}, None),
    ("amount > 100 OR name = 'x'", {"amount": None, "name": "x"}, True),
    ("amount > 100 AND name = 'x'", {"amount": None, "name": "y"}, False),   # NULL AND false
    ("amount > 100 AND name = 'x'", {"amount": None, "name": "x"}, None),    # NULL AND true
    ("NOT (id = 1)", {"id": None}, None),
    ("name IS NULL", {"name": None}, True),
    ("name IS NOT NULL", {"name": "a"}, True),
    ("name IN ('a', 'b')", {"name": "b"}, True),
    ("name NOT IN ('a', 'b')", {"name": "c"}, True),
    ("name IN ('a', NULL)", {"name": "c"}, None),
    ("id BETWEEN 1 AND 3", {"id": 3}, True),
    ("id NOT BETWEEN 1 AND 3", {"id": 4}, True),
    ("id % 2 = 0 AND id * 2 + 1 > 5", {"id": 4}, True),
    ("id / 2 = 1", {"id": 3}, True),                                        # integer division truncates
    ("name || '!' = 'a!'", {"name": "a"}, True),
    ("flag", {"flag": True}, True),
    ("flag = true", {"flag": "f"}, False),
    ("amount >= '1.5'", {"amount": 2}, True),                               # the literal takes the column's type
    ("id <> -3", {"id": -3}, False),
    ("name < 'b'", {"name": "B"}, True),                                    # the database's collation: C
    ('name COLLATE "C" < \'b\'', {"name": "a"}, True),
    ("name COLLATE ucs_basic >= 'b'", {"name": "B"}, False),               # code point order
])
def test_expressions_evaluate_as_the_server_does(text: str, row: dict[str, Any], value: Any) -> None:
    assert parse_expression(text, TYPES).value(row) is value


def test_expressions_print_as_pg_get_expr_does() -> None:
    e = parse_expression("amount > 100 AND name IS NOT NULL OR name IN ('x','y')", TYPES)
    assert e.deparsed == "(((amount > (100)::numeric) AND (name IS NOT NULL)) OR (name = ANY (ARRAY['x'::text, 'y'::text])))"
    assert e.columns == {"amount", "name"}
    assert parse_expression("id < 5", TYPES).deparsed == "(id < 5)"
    # as a real 15's pg_get_expr prints them
    assert parse_expression('name COLLATE "POSIX" >= \'B\'', TYPES).deparsed == '((name COLLATE "POSIX") >= \'B\'::text)'
    assert parse_expression("name COLLATE pg_catalog.ucs_basic < 'b'", TYPES).deparsed == \
        "((name COLLATE ucs_basic) < 'b'::text)"


@pytest.mark.parametrize(("text", "found"), [
    ("lower(name) = 'a'", "lower(name)"),
    ("name LIKE 'a%'", "name LIKE 'a%'"),
    ("nope > 1", "'nope'"),
    ("id >", "syntax error"),
    ("1; DROP TABLE t", "one SQL expression"),
    ('name COLLATE "en_US" < \'b\'', "it does not implement the ordering of locale collations"),
])
def test_an_expression_the_fake_cannot_evaluate_is_named(text: str, found: str) -> None:
    data = _scenario({"pub": {"tables": [{"table": "public.t", "where": text}]}})
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    assert info.value.path == "publications['pub'].tables[0].where"
    assert found in str(info.value)


def _scenario(pubs: dict[str, Any], version: str = "16.4", **tables: Any) -> dict[str, Any]:
    base = {"public.t": {"columns": [{"name": "id", "type": "int4", "key": True}, {"name": "name", "type": "text"},
                                     {"name": "amount", "type": "numeric"}]}}
    base.update(tables)
    return {"server": {"version": version}, "publications": pubs, "tables": base}


@pytest.mark.parametrize(("pubs", "version", "path", "expected"), [
    ({"p": {"tables": [{"table": "public.t", "columns": ["id"]}]}}, "14.9", "publications['p'].tables[0].columns",
     "a server of 15+"),
    ({"p": {"tables": [{"table": "public.t", "where": "id > 1"}]}}, "14.9", "publications['p'].tables[0].where",
     "a server of 15+"),
    ({"p": {"schemas": ["public"]}}, "14.9", "publications['p'].schemas", "a server of 15+"),
    ({"p": {"tables": ["public.t"], "publish_generated_columns": "stored"}}, "17.2",
     "publications['p'].publish_generated_columns", "a server of 18+"),
    ({"p": {"tables": ["public.t"], "publish_via_partition_root": True}}, "12.9",
     "publications['p'].publish_via_partition_root", "a server of 13+"),
    ({"p": {"tables": [{"table": "public.t", "columns": ["nope"]}]}}, "16.4", "publications['p'].tables[0].columns[0]",
     "a column of public.t"),
    ({"p": {"schemas": ["nowhere"]}}, "16.4", "publications['p'].schemas[0]", "a schema of the scenario's tables"),
    ({"p": {"tables": ["public.t", "public.t"]}}, "16.4", "publications['p'].tables[1]", "each table once"),
    ({"p": {"all_tables": True, "tables": ["public.t"]}}, "16.4", "publications['p']", "all_tables, or tables"),
])
def test_publications_the_server_would_refuse(pubs: dict[str, Any], version: str, path: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(_scenario(pubs, version))
    assert info.value.path == path and expected in info.value.expected


def _parted(**extra: Any) -> dict[str, Any]:
    return {
        "public.m": {"partition_by": "LIST (region)", "columns": [
            {"name": "id", "type": "int4", "key": True}, {"name": "region", "type": "text", "key": True},
            {"name": "v", "type": "int4"}], "rows": [{"id": 1, "region": "eu", "v": 1}, {"id": 2, "region": "us"}]},
        "public.m_eu": {"partition_of": "public.m", "for_values": "IN ('eu')"},
        "public.m_us": {"partition_of": "public.m", "for_values": "IN ('us', 'ca')"},
        **extra,
    }


def test_partitions_route_rows_and_hold_them() -> None:
    s = Scenario.from_dict({**_scenario({"p": {"tables": ["public.m"]}}, **_parted()), "transactions": [
        {"changes": [{"insert": "public.m", "new": {"id": 3, "region": "ca"}},
                     {"update": "public.m", "key": {"id": 1, "region": "eu"}, "new": {"region": "us"}}]}]})
    assert s.table("public.m").relkind == "p" and [t.name for t in s.leaves(s.table("public.m"))] == ["m_eu", "m_us"]
    assert s.table("public.m").rows == () and len(s.table("public.m_eu").rows) == 1
    events = compile_history(s).events[0].items
    # a row moving to another partition is a DELETE from one and an INSERT into the other
    assert [(e.kind, e.table.name) for e in events] == [("insert", "m_us"), ("delete", "m_eu"), ("insert", "m_us")]
    assert sorted(r["id"] for r in s.final_rows("public.m")) == [1, 2, 3]
    assert s.final_rows("public.m_eu") == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"insert": "public.m", "new": {"id": 3, "region": "fr"}}, "a row some partition of public.m accepts"),
    ({"insert": "public.m_eu", "new": {"id": 3, "region": "us"}}, "a row within the bound of public.m_eu"),
])
def test_rows_no_partition_accepts_are_refused(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({**_scenario({}, **_parted()), "transactions": [{"changes": [change]}]})
    assert expected in info.value.expected and info.value.path == "transactions[0].changes[0]"


def test_range_partitions_with_minvalue_and_maxvalue() -> None:
    s = load_scenario(EXAMPLES / "publications.yaml")
    sales = s.table("public.sales")
    assert s.route(sales, {"id": -5}).name == "sales_low"  # type: ignore[union-attr]
    assert s.route(sales, {"id": 100}).name == "sales_high"  # type: ignore[union-attr]
    assert s.route(sales, {"id": None}) is None


def test_generated_columns_are_computed_and_never_written() -> None:
    s = load_scenario(EXAMPLES / "publications.yaml")
    assert s.final_rows("public.sales") == [{"id": 105, "qty": 2, "total": 20}]
    data = {**_scenario({}), "tables": {"public.g": {"columns": [
        {"name": "id", "type": "int4", "key": True}, {"name": "g", "type": "int4", "generated": "id * 2"}],
        "rows": [{"id": 1, "g": 5}]}}}
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    assert info.value.path == "tables['public.g'].rows[0].g" and "generated" in info.value.expected


@pytest.mark.parametrize(("pub", "path", "expected"), [
    # a filter on a non-identity column of a table publishing updates (default identity)
    ({"tables": [{"table": "public.t", "where": "amount > 1"}]}, "transactions[0].changes[0]",
     "a row filter of publication 'p' on replica identity columns only"),
    # the same publication without updates and deletes is fine
    ({"tables": [{"table": "public.t", "where": "amount > 1"}], "publish": "insert"}, None, None),
    ({"tables": [{"table": "public.t", "columns": ["name"]}]}, "transactions[0].changes[0]",
     "a column list of publication 'p' covering the replica identity"),
])
def test_updates_the_server_refuses_for_a_publication(pub: dict[str, Any], path: str | None,
                                                      expected: str | None) -> None:
    data = {**_scenario({"p": pub}), "transactions": [
        {"changes": [{"update": "public.t", "key": {"id": 1}, "new": {"name": "b"}}]}]}
    data["tables"]["public.t"]["rows"] = [{"id": 1, "name": "a"}]
    if path is None:
        Scenario.from_dict(data)
        return
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    assert info.value.path == path and expected in info.value.expected  # type: ignore[operator]


def test_several_publications_combine_as_pgoutput_combines_them() -> None:
    s = load_scenario(EXAMPLES / "publications.yaml")
    orders = s.table("public.orders")
    pubs = s.publications
    sync = rel_sync(s, orders, pubs, 18)
    # both publish orders with a filter: OR-ed per action
    assert [f.text for f in sync.filters["insert"]] == ["amount > 100 AND status <> 'void'", "amount < 10"]
    assert sync.passes("insert", {"amount": 5, "status": "x"}) and not sync.passes("insert", {"amount": 50})
    # a third publication of the whole table without a filter: no filter at all
    from pgwire_spec.walsender.publications import Publication

    sync = rel_sync(s, orders, (*pubs, Publication("all", None)), 18)
    assert sync.filters["insert"] == () and sync.passes("insert", {"amount": 50})
    # a partition through the via-root publication: published as the root, generated column on 18 only
    low = s.table("public.sales_low")
    sync = rel_sync(s, low, pubs, 18)
    assert sync.publish_as.name == "sales" and [c.name for c in sync.columns] == ["id", "qty", "total"]
    assert [c.name for c in rel_sync(s, low, pubs, 17).columns] == ["id", "qty"]
    # the column list; a second publication with another list is the walsender's error
    customers = s.table("public.customers")
    assert [c.name for c in rel_sync(s, customers, pubs, 18).columns] == ["id", "name"]
    assert rel_sync(s, customers, pubs, 18).error is None
    assert "different column lists" in (rel_sync(s, customers, (*pubs, Publication("all", None)), 18).error or "")


def test_pg_get_publication_tables_per_major() -> None:
    s = Scenario.from_dict(_scenario({"root": {"tables": ["public.m"], "publish_via_partition_root": True},
                                      "leaves": {"tables": ["public.m"]},
                                      "cols": {"tables": [{"table": "public.t", "columns": ["id", "amount"]}]},
                                      "all": "all"}, **_parted()))

    def rows(pub: str, major: int) -> list[tuple[str, Any]]:
        p = s.publication(pub)
        assert p is not None
        return [(r.table.name, r.attrs) for r in publication_tables(s, p, major)]

    assert rows("root", 16) == [("m", (1, 2, 3))]
    assert rows("leaves", 16) == [("m_eu", (1, 2, 3)), ("m_us", (1, 2, 3))]
    assert rows("cols", 15) == [("t", (1, 3))] and rows("cols", 16) == [("t", (1, 3))]
    assert rows("all", 15) == [("t", None), ("m_eu", None), ("m_us", None)]


# ------------------------------------------------------------------------------------------
# The catalog answers and table sync's COPY (the live test compares them with real servers)
# ------------------------------------------------------------------------------------------


def _answer(sql: str, major: int = 16) -> Any:
    from pgwire_spec.walsender import persona
    from pgwire_spec.walsender._sql import answer

    s = load_scenario(EXAMPLES / "publications.yaml")
    return answer(s, persona(major), f"{major}.1", sql)


def test_table_sync_copies_the_filtered_rows_of_every_partition() -> None:
    from pgwire_spec.walsender._sql import CopyOut

    ans = _answer("COPY (SELECT id, status, amount FROM ONLY public.orders WHERE "
                  "((amount > 100) AND (status <> 'void'::text)) OR (amount < 10)) TO STDOUT")
    assert isinstance(ans, CopyOut) and ans.where is not None
    assert [r for t in ans.sources for r in t.initial_rows if ans.where.matches(r)] == [
        {"id": 1, "status": "paid", "amount": 150}]
    ans = _answer("COPY (SELECT id, qty, total FROM public.sales) TO STDOUT WITH (FORMAT binary)")
    assert isinstance(ans, CopyOut) and ans.binary and [t.name for t in ans.sources] == ["sales_low", "sales_high"]
    assert [c.name for c in ans.columns] == ["id", "qty", "total"]


@pytest.mark.parametrize(("sql", "code"), [
    ("COPY public.nope TO STDOUT", "42P01"),
    ("COPY (SELECT nope FROM public.orders) TO STDOUT", "42703"),
    ("COPY public.orders FROM STDIN", "0A000"),
    ("COPY (SELECT id FROM public.orders WHERE lower(status) = 'x') TO STDOUT", "0A000"),
    ("COPY (SELECT id FROM public.orders) TO STDOUT WITH (FORMAT csv)", "0A000"),
    ("COPY (SELECT id FROM public.orders) TO STDOUT WITH (FORMAT nope)", "22023"),
    ("COPY (SELECT FROM", "42601"),
])
def test_a_copy_the_fake_cannot_serve_is_a_clear_error(sql: str, code: str) -> None:
    from pgwire_spec.walsender import ServerError

    with pytest.raises(ServerError) as info:
        _answer(sql)
    assert info.value.sqlstate == code


def test_the_subscribers_catalog_queries_see_the_publications() -> None:
    s = load_scenario(EXAMPLES / "publications.yaml")
    oid = {t.name: t.oid for t in s.tables}
    # 16+: one call for both publications; the partitioned table via its root only
    tables = _answer("SELECT DISTINCT n.nspname, c.relname, gpt.attrs FROM pg_class c JOIN pg_namespace n "
                     "ON n.oid = c.relnamespace JOIN ( SELECT (pg_get_publication_tables(VARIADIC "
                     "array_agg(pubname::text))).* FROM pg_publication WHERE pubname IN ( 'pub_main', 'pub_small' )) "
                     "AS gpt ON gpt.relid = c.oid", 18)
    assert sorted(tables.rows) == [("public", "customers", "1 2"), ("public", "orders", "1 2 3"),
                                   ("public", "sales", "1 2 3")]
    lists = _answer("SELECT DISTINCT (CASE WHEN (array_length(gpt.attrs, 1) = c.relnatts) THEN NULL ELSE gpt.attrs "
                    "END) FROM pg_publication p, LATERAL pg_get_publication_tables(p.pubname) gpt, pg_class c "
                    f"WHERE gpt.relid = {oid['customers']} AND c.oid = gpt.relid AND p.pubname IN ( 'pub_main' )")
    assert lists.rows == (("1 2",),)
    quals = _answer("SELECT DISTINCT pg_get_expr(gpt.qual, gpt.relid) FROM pg_publication p, LATERAL "
                    f"pg_get_publication_tables(p.pubname) gpt WHERE gpt.relid = {oid['orders']} "
                    "AND p.pubname IN ( 'pub_main', 'pub_small' )")
    assert sorted(quals.rows) == [("((amount > 100) AND (status <> 'void'::text))",), ("(amount < 10)",)]
    rel = _answer("SELECT c.oid, c.relreplident, c.relkind FROM pg_catalog.pg_class c INNER JOIN "
                  "pg_catalog.pg_namespace n ON (c.relnamespace = n.oid) WHERE n.nspname = 'public' "
                  "AND c.relname = 'sales'")
    assert rel.rows == ((str(oid["sales"]), "d", "p"),)
    # 17 asks for the columns that are not generated; 18 for all, flagged
    cols17 = _answer("SELECT a.attnum, a.attname, a.atttypid, a.attnum = ANY(i.indkey) FROM pg_catalog.pg_attribute a "
                     "LEFT JOIN pg_catalog.pg_index i ON (i.indexrelid = pg_get_replica_identity_index("
                     f"{oid['sales']})) WHERE a.attnum > 0::pg_catalog.int2 AND NOT a.attisdropped AND "
                     f"a.attgenerated = '' AND a.attrelid = {oid['sales']} ORDER BY a.attnum", 17)
    assert [r[1] for r in cols17.rows] == ["id", "qty"]
    cols18 = _answer("SELECT a.attnum, a.attname, a.atttypid, a.attnum = ANY(i.indkey), a.attgenerated != '' "
                     "FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_index i ON (i.indexrelid = "
                     f"pg_get_replica_identity_index({oid['sales']})) WHERE a.attnum > 0::pg_catalog.int2 AND NOT "
                     f"a.attisdropped AND a.attrelid = {oid['sales']} ORDER BY a.attnum", 18)
    assert [(r[1], r[4]) for r in cols18.rows] == [("id", "f"), ("qty", "f"), ("total", "t")]


def test_different_column_lists_stop_the_walsender() -> None:
    from pgwire_spec.walsender import persona
    from pgwire_spec.walsender._render import Notice, render

    s = Scenario.from_dict({**_scenario({"a": {"tables": [{"table": "public.t", "columns": ["id", "name"]}]},
                                         "b": {"tables": [{"table": "public.t", "columns": ["id"]}]}}),
                            "transactions": [{"changes": [{"insert": "public.t", "new": {"id": 1}}]}]})
    p = persona(16)
    plan = render(compile_history(s), p, p.parse_options([("proto_version", "4"), ("publication_names", "a,b")]),
                  s.server.start_lsn)
    notices = [it for it in plan.items if isinstance(it, Notice)]
    assert [(n.error.sqlstate, n.error.message) for n in notices] == [
        ("0A000", 'cannot use different column lists for table "public.t" in different publications')]
