"""Scenarios the walsender tests share, built with the Python API (plain mappings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scenarios"
ACCOUNTS = EXAMPLES / "accounts.yaml"

#: The scenario of the issue, as written there.
ISSUE_EXAMPLE = """\
server: {version: "16.4", system_id: "7400000000000000001", timeline: 1, database: postgres}
auth: {method: scram-sha-256, users: {replicator: s3cret}}   # trust | password | md5 | scram-sha-256
publications: {pub: [public.accounts]}
tables:
  public.accounts:
    replica_identity: default          # default | full | index | nothing
    columns: [{name: id, type: int4, key: true}, {name: name, type: text}, {name: amount, type: numeric}]
    rows: [{id: 1, name: alice, amount: "10.50"}]     # initial rows, served by COPY to table sync
transactions:
  - changes:
      - {insert: public.accounts, new: {id: 2, name: bob, amount: "3"}}
      - {update: public.accounts, key: {id: 2}, new: {id: 2, name: robert, amount: "4"}}
      - {delete: public.accounts, key: {id: 1}}
"""


def accounts(major: int = 16, **server: Any) -> dict[str, Any]:
    """The issue's example for a server of *major*."""
    import yaml

    data = yaml.safe_load(ISSUE_EXAMPLE)
    data["server"]["version"] = f"{major}.4"
    data["server"].update(server)
    return dict(data)


def items(major: int = 16, *, small: int = 30, big: int = 2001, initial: int = 5, auth: str = "scram-sha-256",
          rollback_in_big: bool = True) -> dict[str, Any]:
    """Many small transactions, one big one (streamed with streaming on: about 1,000 rows
    overflow logical_decoding_work_mem = 64kB) holding a rolled-back subtransaction, then
    updates and deletes."""
    pad = "x" * 40
    txns: list[dict[str, Any]] = []
    for i in range(small):
        txns.append({"changes": [{"insert": "public.items", "new": {"id": 100 + i, "payload": f"small {i} {pad}",
                                                                      "n": i}}]})
    big_changes: list[dict[str, Any]] = [
        {"insert": "public.items", "new": {"id": 1000 + i, "payload": f"big {i} {pad}", "n": i}} for i in range(big)
    ]
    if rollback_in_big:
        big_changes.insert(big // 2, {"subtransaction": [
            # big enough that part of it is streamed before the rollback: a Stream Abort
            {"insert": "public.items", "new": {"id": 900000 + i, "payload": f"rolled back {pad}", "n": -1}}
            for i in range(max(50, big // 3))
        ], "rollback": True})
    txns.append({"changes": big_changes})
    last: list[dict[str, Any]] = []
    if small >= 2:
        last += [{"update": "public.items", "key": {"id": 100}, "new": {"payload": "updated", "n": -100}},
                 {"delete": "public.items", "key": {"id": 101}}]
    if initial >= 2:
        last.append({"update": "public.items", "key": {"id": 1}, "new": {"id": 5000, "payload": "key changed"}})
    if last:
        txns.append({"changes": last})
    txns.append({"abort": True, "changes": [{"insert": "public.items", "new": {"id": 777777, "payload": "aborted"}}]})
    txns.append({"changes": [{"insert": "public.items", "new": {"id": 99, "payload": "last", "n": 99}}]})
    return {
        "server": {"version": f"{major}.4"},
        "auth": {"method": auth, "users": {"replicator": "s3cret"}},
        "publications": {"pub": ["public.items"]},
        "tables": {"public.items": {
            "columns": [{"name": "id", "type": "int8", "key": True}, {"name": "payload", "type": "text"},
                        {"name": "n", "type": "int4"}],
            "rows": [{"id": i, "payload": f"initial {i}", "n": i} for i in range(initial)],
        }},
        "transactions": txns,
    }
