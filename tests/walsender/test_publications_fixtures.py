"""The fake's stream for the capture workload's publication shapes equals what real
PostgreSQL 13-18 servers sent for them (the golden fixtures' ``pgws_root``,
``pgws_filtered`` and ``pgws_gen`` groups, pgwire_spec/capture/workload.py): the same
messages in the same order — Relation with the column subset, an UPDATE into the row filter
as Insert and out of it as Delete, partitions under the root's Relation, the published
generated column — compared field by field except what differs between any two servers
(OIDs, xids, LSNs, commit times)."""

from __future__ import annotations

import functools
import gzip
import json
from typing import Any

import pytest

from pgwire_spec import to_json
from pgwire_spec.walsender import Scenario, persona
from pgwire_spec.walsender._history import compile_history
from pgwire_spec.walsender._render import Write, render

from .scenarios import ROOT

#: The workload's tables and changes for each publication (workload.py's _SETUP_13/15/18 and
#: _ACTIONS_13/15 and the t_gen steps), as a scenario.
_TABLES: dict[str, Any] = {
    "pgws.t_parted": {"partition_by": "LIST (region)", "columns": [
        {"name": "id", "type": "int4", "key": True}, {"name": "region", "type": "text", "key": True},
        {"name": "v", "type": "text"}]},
    "pgws.t_parted_eu": {"partition_of": "pgws.t_parted", "for_values": "IN ('eu')"},
    "pgws.t_parted_us": {"partition_of": "pgws.t_parted", "for_values": "IN ('us')"},
    "pgws.t_rowfilter": {"replica_identity": "full", "columns": [
        {"name": "id", "type": "int4", "key": True}, {"name": "amount", "type": "int4"}, {"name": "note", "type": "text"}]},
    "pgws.t_collist": {"columns": [
        {"name": "id", "type": "int4", "key": True}, {"name": "visible", "type": "text"},
        {"name": "secret", "type": "text"}]},
    "pgws.t_gen": {"columns": [
        {"name": "id", "type": "int4", "key": True}, {"name": "a", "type": "int4"},
        {"name": "doubled", "type": "int4", "generated": "a * 2"}]},
}
_PUBLICATIONS: dict[str, Any] = {
    "pgws_root": {"tables": ["pgws.t_parted"], "publish_via_partition_root": True},
    "pgws_filtered": {"tables": [{"table": "pgws.t_rowfilter", "where": "amount > 100"},
                                 {"table": "pgws.t_collist", "columns": ["id", "visible"]}]},
    "pgws_gen": {"tables": ["pgws.t_gen"], "publish_generated_columns": "stored"},
}


def _txn(*changes: dict[str, Any]) -> dict[str, Any]:
    return {"changes": list(changes)}


_TRANSACTIONS: dict[str, list[dict[str, Any]]] = {
    "pgws_root": [
        _txn({"insert": "pgws.t_parted", "new": {"id": 1, "region": "eu", "v": "one"}},
             {"insert": "pgws.t_parted", "new": {"id": 2, "region": "us", "v": "two"}}),
        _txn({"update": "pgws.t_parted", "key": {"id": 1, "region": "eu"}, "new": {"v": "uno"}}),
        _txn({"delete": "pgws.t_parted", "key": {"id": 2, "region": "us"}}),
    ],
    "pgws_filtered": [
        _txn({"insert": "pgws.t_rowfilter", "new": {"id": 1, "amount": 50, "note": "filtered out"}},
             {"insert": "pgws.t_rowfilter", "new": {"id": 2, "amount": 150, "note": "passes"}}),
        _txn({"update": "pgws.t_rowfilter", "key": {"id": 1}, "new": {"amount": 200}}),
        _txn({"update": "pgws.t_rowfilter", "key": {"id": 2}, "new": {"amount": 10}}),
        _txn({"update": "pgws.t_rowfilter", "key": {"id": 1}, "new": {"note": "still in"}}),
        _txn({"insert": "pgws.t_collist", "new": {"id": 1, "visible": "shown", "secret": "hidden"}}),
        _txn({"update": "pgws.t_collist", "key": {"id": 1}, "new": {"secret": "hidden too"}}),
        _txn({"update": "pgws.t_collist", "key": {"id": 1}, "new": {"visible": "shown too"}}),
    ],
}

#: Fields that name server-local things (OIDs, xids, WAL positions, clocks).
_LOCAL = {"relation_id", "xid", "final_lsn", "commit_lsn", "end_lsn", "commit_time", "lsn", "relation_ids"}


def _non_empty(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without empty transactions (up to 14 every transaction of the workload is one)."""
    out: list[dict[str, Any]] = []
    for msg in msgs:
        if msg["type"] == "Commit" and out and out[-1]["type"] == "Begin":
            out.pop()
            continue
        if msg["type"] == "Commit" and len(out) > 1 and [x["type"] for x in out[-2:]] == ["Begin", "Origin"]:
            del out[-2:]
            continue
        out.append(msg)
    return out


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k not in _LOCAL}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


@functools.cache
def _groups(major: int) -> list[dict[str, Any]]:
    data = json.loads(gzip.decompress((ROOT / "fixtures" / f"pg{major}-builtin.json.gz").read_bytes()))
    return [g for g in data["groups"] if g["options"].get("publication_names", "").startswith("pgws_")
            and g["options"]["publication_names"] != "pgws_all"]


def _fixture(major: int, publication: str) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """The group's options, its messages but 18's stray Stream Aborts, and how many of those."""
    for group in _groups(major):
        if group["options"].get("publication_names") == publication:
            stray = [c for c in group["cases"] if "stray-stream-abort" in c.get("flags", ())]
            return (group["options"], [c["expected"] for c in group["cases"] if c not in stray], len(stray))
    raise AssertionError(f"no {publication} group in pg{major}")


def _gen_transactions(fixture: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """t_gen's changes as the fixture shows them (its steps are spread over the workload)."""
    out = []
    for msg in fixture:
        vals = [c.get("text") for c in msg.get("new_tuple") or []]
        if msg["type"] == "Insert":
            out.append(_txn({"insert": "pgws.t_gen", "new": {"id": int(vals[0]), "a": int(vals[1])}}))
        elif msg["type"] == "Update":
            out.append(_txn({"update": "pgws.t_gen", "key": {"id": int(vals[0])}, "new": {"a": int(vals[1])}}))
    return out


CASES = [(major, pub) for major in (13, 14, 15, 16, 17, 18) for pub in ("pgws_root", "pgws_filtered", "pgws_gen")
         if (pub != "pgws_filtered" or major >= 15) and (pub != "pgws_gen" or major >= 18)]


@pytest.mark.parametrize(("major", "publication"), CASES)
def test_the_fakes_stream_equals_a_real_servers(major: int, publication: str) -> None:
    options, expected, stray = _fixture(major, publication)
    # 18's stray Stream Abort (erratum E-PG18-STRAY-STREAM-ABORT) reaches the clients of every
    # publication, whether it has the aborted transaction's table or not (pgoutput.c does not
    # filter it); the fake sends it only as the fault stray_stream_abort.
    assert stray == (1 if major >= 18 else 0)
    transactions = (_gen_transactions(expected) if publication == "pgws_gen"
                    else _TRANSACTIONS[publication])
    sc = Scenario.from_dict({"server": {"version": f"{major}.1"}, "tables": _TABLES,
                             "publications": {publication: _PUBLICATIONS[publication]},
                             "transactions": transactions})
    p = persona(major)
    opts = p.parse_options([(k, str(v)) for k, v in options.items()])
    plan = render(compile_history(sc), p, opts, sc.server.start_lsn)
    got = [to_json(w.message) for w in plan.items if isinstance(w, Write) and w.message is not None]
    assert _normal(_non_empty(got)) == _normal(_non_empty(expected))
