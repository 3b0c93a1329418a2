"""A client's own shape mapped to the JSON form by its table (sans-IO): the shipped
pg-logical-replication table on the objects its parser returns, a table read from JSON, and
what a client's object or a table that cannot be read is told."""

from __future__ import annotations

import pytest

from pgwire_spec.conformance.shapes import PG_LOGICAL_REPLICATION, Shape, ShapeError, compare_only, map_entry

RELATION = {"tag": "relation", "relationOid": 16384, "schema": "public", "name": "t", "replicaIdentity": "default",
            "columns": [{"flags": 1, "name": "id", "typeOid": 23, "typeMod": -1},
                        {"flags": 0, "name": "0", "typeOid": 17, "typeMod": -1},
                        {"flags": 0, "name": "big", "typeOid": 25, "typeMod": -1}],
            "keyColumns": ["id"]}


def test_pg_logical_replication_objects_map_to_the_json_form() -> None:
    ours = PG_LOGICAL_REPLICATION.to_ours
    begin = ours({"tag": "begin", "commitLsn": "00000000/016B3748", "commitTime": 946684800000123, "xid": 750})
    assert begin == {"type": "Begin", "tag": "B", "final_lsn": "0/16B3748", "commit_time": 123, "xid": 750}
    # in the relation's column order, whatever the object's key order; a missing key is 'u'
    insert = ours({"tag": "insert", "relation": RELATION, "new": {"0": {"type": "Buffer", "data": [0, 255]}, "id": "1"}})
    assert insert["new_tuple"] == [{"kind": "t", "text": "1"}, {"kind": "b", "hex": "00ff"}, {"kind": "u"}]
    update = ours({"tag": "update", "relation": RELATION, "key": {"id": "1"}, "old": None,
                   "new": {"id": "2", "0": None, "big": "x"}})
    assert update["old_kind"] == "K" and update["old_tuple"] == [{"kind": "t", "text": "1"}, {"kind": "n"}, {"kind": "n"}]
    assert ours({"tag": "delete", "relation": RELATION, "old": {"id": "1", "0": None, "big": "y"}})["old_kind"] == "O"
    truncate = ours({"tag": "truncate", "cascade": True, "restartIdentity": True, "relations": [RELATION]})
    assert (truncate["options"], truncate["relation_ids"]) == (3, [16384])
    assert ours(RELATION)["columns"][1] == {"flags": 0, "name": "0", "type_oid": 17, "type_modifier": -1}
    assert "xid" in PG_LOGICAL_REPLICATION.unreported["Insert"]


def test_what_cannot_be_mapped_says_what_was_expected() -> None:
    with pytest.raises(ShapeError, match="expected tag among begin, commit.*found 'stream_start'"):
        PG_LOGICAL_REPLICATION.to_ours({"tag": "stream_start"})
    with pytest.raises(ShapeError, match=r"Begin.final_lsn from 'commitLsn' \(lsn\): cannot read"):
        PG_LOGICAL_REPLICATION.to_ours({"tag": "begin", "commitLsn": "zz", "commitTime": 0, "xid": 1})
    assert "unmapped" in map_entry({"native": {"tag": "?"}}, PG_LOGICAL_REPLICATION)["message"]
    assert "no shape was declared" in map_entry({"native": {}}, None)["message"]["unmapped"]
    with pytest.raises(ShapeError, match="unknown encoding 'hexx'"):
        Shape.from_json({"name": "x", "kind_key": "k", "messages": [
            {"type": "Begin", "tag": "B", "theirs": "b", "fields": [["xid", "x", "hexx"]]}]})
    with pytest.raises(ShapeError, match="expected {name, kind_key, messages"):
        Shape.from_json({"name": "x"})


def test_a_table_reads_back_from_json_and_leaves_out_what_is_not_reported() -> None:
    assert Shape.from_json(PG_LOGICAL_REPLICATION.to_json()) == PG_LOGICAL_REPLICATION
    want = {"type": "Insert", "tag": "I", "xid": None, "relation_id": 1, "new_tuple": []}
    assert compare_only(want, PG_LOGICAL_REPLICATION.unreported) == {k: v for k, v in want.items() if k != "xid"}
