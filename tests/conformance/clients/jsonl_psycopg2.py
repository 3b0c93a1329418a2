"""A replication client of the ``jsonl`` kind, as a user of ``pgwire-spec conform --client``
would write one: psycopg2's LogicalReplicationConnection streams, the reference decoder
(strict, one per connection, as a consumer keeps it) decodes, and each XLogData becomes one
JSON line: ``{"lsn": …, "message": …}`` or ``{"lsn": …, "error": {"message", "rule"}}``.
After a rejection it starts its decoder afresh (as a consumer that gives up on what it was
reading and waits for the next transaction), so the cases after it are read as alone.

A planted bug can be asked for (the suite must catch it): ``drop-insert`` never reports
the session's 3rd Insert, ``repeat-commit`` reports the 2nd Commit twice, ``bad-xid`` reports
every Begin's xid plus one. ``native`` prints a hello line first (its name, a protocol-1
profile, and its shape inline) and then each message in its own shape, as a client library's
objects would be: keys in camelCase under ``kind``, no ``xid`` (a field it does not report).

Usage: jsonl_psycopg2.py DSN SLOT OPTIONS_JSON [PLANT]
"""

import dataclasses
import json
import sys

import psycopg2
import psycopg2.extras

from pgwire_spec import PgOutputDecoder
from pgwire_spec.errors import DecodeError
from pgwire_spec.jsonform import to_json
from pgwire_spec.lsn import format_lsn
from pgwire_spec.pgoutput import messages


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _shape() -> dict:
    kinds = [c for c in vars(messages).values()
             if isinstance(c, type) and dataclasses.is_dataclass(c) and isinstance(getattr(c, "tag", None), str)]
    return {"name": "camel", "kind_key": "kind", "messages": [
        {"type": c.__name__, "tag": c.tag, "theirs": c.__name__,
         "fields": [[f.name, _camel(f.name), "same"] for f in dataclasses.fields(c) if f.name != "xid"]}
        for c in kinds]}


def _native(message: dict) -> dict:
    return {"kind": message["type"], **{_camel(k): v for k, v in message.items() if k not in ("type", "tag", "xid")}}


def main() -> None:
    dsn, slot, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    plant = sys.argv[4] if len(sys.argv) > 4 else ""
    decoder = PgOutputDecoder(
        strict=True, protocol_version=int(options["proto_version"]),
        streaming={"on": "on", "parallel": "parallel"}.get(options.get("streaming", "off"), "off"),
        two_phase=options.get("two_phase") == "on", binary=options.get("binary") == "on",
        messages=options.get("messages") == "on")
    if plant == "native":
        print(json.dumps({"contract": 1, "name": "camel-client", "version": "0.1", "shape": _shape(),
                          "profile": {"protocol_versions": [1], "level": "stream"}}), flush=True)
    conn = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    cur = conn.cursor()
    cur.start_replication(slot_name=slot, decode=False, options=options)
    seen: dict[str, int] = {}

    def consume(msg: "psycopg2.extras.ReplicationMessage") -> None:
        lsn = format_lsn(msg.data_start)
        try:
            line = {"lsn": lsn, "message": to_json(decoder.decode(msg.payload))}
        except DecodeError as err:
            line = {"lsn": lsn, "error": {"message": str(err), "rule": err.rule}}
            decoder.reset()
        kind = line.get("message", {}).get("type", "")
        seen[kind] = seen.get(kind, 0) + 1
        if plant == "drop-insert" and kind == "Insert" and seen[kind] == 3:
            return
        if plant == "bad-xid" and kind == "Begin":
            line["message"]["xid"] += 1
        if plant == "native" and "message" in line:
            line = {"lsn": lsn, "native": _native(line["message"])}
        print(json.dumps(line), flush=True)
        if plant == "repeat-commit" and kind == "Commit" and seen[kind] == 2:
            print(json.dumps(line), flush=True)
        msg.cursor.send_feedback(flush_lsn=msg.data_start)

    cur.consume_stream(consume)


if __name__ == "__main__":
    main()
