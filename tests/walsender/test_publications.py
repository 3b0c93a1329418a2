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
])
def test_expressions_evaluate_as_the_server_does(text: str, row: dict[str, Any], value: Any) -> None:
    assert parse_expression(text, TYPES).value(row) is value


def test_expressions_print_as_pg_get_expr_does() -> None:
    e = parse_expression("amount > 100 AND name IS NOT NULL OR name IN ('x','y')", TYPES)
    assert e.deparsed == "(((amount > 100) AND (name IS NOT NULL)) OR (name = ANY (ARRAY['x'::text, 'y'::text])))"
    assert e.columns == {"amount", "name"}
    assert parse_expression("id < 5", TYPES).deparsed == "(id < 5)"


@pytest.mark.parametrize(("text", "found"), [
    ("lower(name) = 'a'", "lower(name)"),
    ("name LIKE 'a%'", "name LIKE 'a%'"),
    ("nope > 1", "'nope'"),
    ("id >", "syntax error"),
    ("1; DROP TABLE t", "one SQL expression"),
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
