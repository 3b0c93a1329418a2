"""Scenarios: the issue's example as written, the other sources, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.errors import PgWireError
from pgwire_spec.walsender import (
    EmitMessage,
    RowDelete,
    RowInsert,
    RowUpdate,
    Scenario,
    ScenarioError,
    Subtransaction,
    TableTruncate,
    Transaction,
    load_scenario,
)

from .scenarios import EXAMPLES, ISSUE_EXAMPLE, accounts

ROOT = Path(__file__).resolve().parents[2]


def test_the_issue_example_loads_as_written() -> None:
    s = load_scenario(ISSUE_EXAMPLE)
    assert s.server.version == "16.4" and s.server.major == 16
    assert s.server.system_id == "7400000000000000001" and s.server.timeline == 1
    assert s.auth.method == "scram-sha-256" and s.auth.passwords == {"replicator": "s3cret"}
    assert [p.name for p in s.publications] == ["pub"] and s.publications[0].tables == ("public.accounts",)
    t = s.table("public.accounts")
    assert [(c.name, c.type.oid, c.key) for c in t.columns] == [("id", 23, True), ("name", 25, False),
                                                                ("amount", 1700, False)]
    assert t.replica_identity == "d" and t.initial_rows == [{"id": 1, "name": "alice", "amount": "10.50"}]
    (txn,) = s.history
    assert isinstance(txn, Transaction)
    assert [type(c) for c in txn.changes] == [RowInsert, RowUpdate, RowDelete]
    assert s.final_rows("public.accounts") == [{"id": 2, "name": "robert", "amount": "4"}]


def test_the_example_file_is_the_issue_example() -> None:
    assert load_scenario(EXAMPLES / "accounts.yaml") == load_scenario(ISSUE_EXAMPLE)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")) + sorted(EXAMPLES.glob("*.json")),
                         ids=lambda p: p.name)
def test_every_example_scenario_loads(path: Path) -> None:
    s = load_scenario(path)
    assert s.publications


def test_sources_agree_yaml_json_mapping_path(tmp_path: Path) -> None:
    data = accounts(16)
    p = tmp_path / "s.json"
    p.write_text(json.dumps(data))
    assert load_scenario(json.dumps(data)) == load_scenario(data) == load_scenario(p).__class__.from_dict(data)
    assert Scenario.from_file(p).history == load_scenario(ISSUE_EXAMPLE).history


def test_every_change_kind_and_two_phase() -> None:
    s = Scenario.from_dict({
        "publications": {"pub": "all"},
        "tables": {
            "a": {"columns": [{"name": "id", "type": "int8", "key": True}, {"name": "v", "type": "text"}]},
            "b": {"replica_identity": "full", "columns": [{"name": "x", "type": "int4"}], "rows": [{"x": 1}]},
        },
        "transactions": [
            {"changes": [{"insert": "a", "new": {"id": 1, "v": "one"}},
                         {"subtransaction": [{"insert": "a", "new": {"id": 2, "v": "two"}}], "rollback": True},
                         {"subtransaction": [{"insert": "a", "new": {"id": 3, "v": "three"}}]},
                         {"message": "p", "content": "hello"},
                         {"update": "b", "key": {"x": 1}, "new": {"x": 5}}]},
            {"message": "nt", "content_hex": "00ff", "transactional": False},
            {"prepare": "g1", "changes": [{"insert": "a", "new": {"id": 4, "v": "four"}}]},
            {"prepare": "g2", "changes": [{"insert": "a", "new": {"id": 5, "v": "five"}}]},
            {"commit_prepared": "g1"},
            {"rollback_prepared": "g2"},
            {"abort": True, "changes": [{"delete": "a", "key": {"id": 1}}]},
            {"origin": {"name": "node1", "lsn": "0/AB"}, "changes": [{"truncate": ["b"], "cascade": True}]},
        ],
    })
    kinds = [type(h).__name__ for h in s.history]
    assert kinds == ["Transaction", "EmitMessage", "Transaction", "Transaction", "CommitPrepared",
                     "RollbackPrepared", "Transaction", "Transaction"]
    first = s.history[0]
    assert isinstance(first, Transaction)
    assert isinstance(first.changes[1], Subtransaction) and first.changes[1].rollback
    assert isinstance(first.changes[3], EmitMessage) and first.changes[3].content == b"hello"
    assert isinstance(s.history[1], EmitMessage) and s.history[1].content == b"\x00\xff"
    last = s.history[-1]
    assert isinstance(last, Transaction) and last.origin == ("node1", 0xAB)
    assert isinstance(last.changes[0], TableTruncate) and last.changes[0].cascade
    # rolled back subtransaction, rolled back prepared and aborted transaction leave nothing
    assert sorted(r["id"] for r in s.final_rows("a")) == [1, 3, 4]
    assert s.final_rows("b") == []


@pytest.mark.parametrize(("data", "path", "found"), [
    ({"server": {"version": "9.6"}}, "server.version", "'9.6'"),
    ({"server": {"system_id": "abc"}}, "server.system_id", "'abc'"),
    ({"auth": {"method": "ident"}}, "auth.method", "'ident'"),
    ({"auth": {"method": "md5"}}, "auth.users", "none"),
    ({"bogus": 1}, "", "unknown key 'bogus'"),
    ({"tables": {"t": {"columns": [{"name": "a", "type": "int77"}]}}}, "tables['t'].columns[0].type", "int77"),
    ({"tables": {"t": {"columns": [{"name": "a", "type": "int4"}], "rows": [{"a": "x"}]}}},
     "tables['t'].rows[0].a", "'x'"),
    ({"tables": {"t": {"columns": [{"name": "a", "type": "int4"}], "rows": [{"b": 1}]}}},
     "tables['t'].rows[0]", "'b'"),
    ({"publications": {"p": ["nope"]}}, "publications['p'][0]", "'nope'"),
    ({"tables": {"t": {"columns": [{"name": "a", "type": "int4", "key": True}]}},
      "transactions": [{"changes": [{"update": "t", "key": {"a": 9}, "new": {"a": 1}}]}]},
     "transactions[0].changes[0].key", "no such row"),
    ({"tables": {"t": {"replica_identity": "nothing", "columns": [{"name": "a", "type": "int4"}], "rows": [{"a": 1}]}},
      "publications": {"p": ["t"]},
      "transactions": [{"changes": [{"delete": "t", "key": {"a": 1}}]}]},
     "transactions[0].changes[0]", "replica_identity nothing"),
    ({"transactions": [{"commit_prepared": "g"}]}, "transactions[0]", "'g'"),
    ({"transactions": [{"message": "p", "transactional": True}]}, "transactions[0].transactional", "true"),
    ({"transactions": [{"changes": [{"wat": 1}]}]}, "transactions[0].changes[0]", "{'wat': 1}"),
    ({"faults": [{"action": "explode"}]}, "faults[0]", "explode"),
    ({"tables": {"t": {"columns": [{"name": "m", "type": {"oid": 16385, "name": "mood", "enum": ["sad", "ok"]}}]}},
      "transactions": [{"changes": [{"insert": "t", "new": {"m": "meh"}}]}]},
     "transactions[0].changes[0].new.m", "'meh'"),
    ({"tables": {"t": {"columns": [{"name": "m", "type": {"oid": 16385, "name": "mood", "enum": ["sad", "ok"]}}]},
                 "u": {"columns": [{"name": "m", "type": {"oid": 16385, "name": "mood", "enum": ["ok"]}}]}}},
     "tables['public.u'].columns[0].type", "['ok']"),
    ({"replay": {"fixture": "/nonexistent.json.gz"}}, "replay", "No such file"),
])
def test_bad_scenarios_say_where_and_what(data: dict[str, Any], path: str, found: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    err = info.value
    assert isinstance(err, PgWireError)
    assert err.path == path
    assert found in err.found or found in str(err)


def test_missing_file_and_bad_yaml() -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario("does/not/exist.yaml")
    with pytest.raises(ScenarioError, match="valid YAML or JSON"):
        load_scenario("a: [1,\nb: }")


def test_file_errors_name_the_file_the_line_and_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server:\n  version: 16\ntables:\n  - name: t\n    columns: [a int\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    assert info.value.path.startswith(f"{bad}, line ") and "<unicode string>" not in str(info.value)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("server:\n  version: 99\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(wrong)
    assert info.value.path == f"{wrong}: server.version" and "99" in info.value.found
    with pytest.raises(ScenarioError, match="found a directory"):
        load_scenario(tmp_path)


def test_final_rows_without_initial_rows_skip_changes_to_missing_rows() -> None:
    s = load_scenario(ISSUE_EXAMPLE)
    # a subscriber with copy_data = false never had alice: deleting her is a no-op
    assert s.final_rows("accounts", include_initial=False) == [{"id": 2, "name": "robert", "amount": "4"}]


def _schema_validator() -> Any:
    import jsonschema

    schema = json.loads((ROOT / "spec" / "scenario.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_follow_the_schema(path: Path) -> None:
    import yaml

    errors = [e.message for e in _schema_validator().iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_the_schema_rejects_what_the_loader_rejects() -> None:
    import yaml

    v = _schema_validator()
    assert not list(v.iter_errors(yaml.safe_load(ISSUE_EXAMPLE)))
    for bad in ({"auth": {"method": "ident"}}, {"tables": {"t": {"columns": []}}}, {"bogus": 1},
                {"transactions": [{"changes": [{"insert": "t"}]}]}, {"faults": [{"action": "explode"}]}):
        assert list(v.iter_errors(bad)), bad
        with pytest.raises(ScenarioError):
            Scenario.from_dict(bad)


def test_the_python_api_builds_scenarios_from_dataclasses() -> None:
    from pgwire_spec.walsender import Column, Publication, ServerInfo, ServerState, Table, resolve_type

    from ._client import Client, xlog

    table = Table("public", "t", 16384, (Column("id", resolve_type("int4"), key=True),
                                         Column("v", resolve_type("text"))), "d", rows=((("id", 1), ("v", "a")),))
    s = Scenario(server=ServerInfo(version="15.4"), publications=(Publication("pub", ("public.t",)),),
                 tables=(table,), history=(Transaction((RowInsert("public.t", (("id", 2), ("v", "b"))),
                                                         RowUpdate("public.t", (("id", 1),), (("v", "z"),)))),))
    assert s.final_rows("t") == [{"id": 1, "v": "z"}, {"id": 2, "v": "b"}]
    c = Client(ServerState(s))
    c.startup()
    c.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")
    out = c.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')")
    assert [chr(p.data[0]) for p in xlog(out) if p.tag == "w"] == ["B", "R", "I", "U", "C"]
