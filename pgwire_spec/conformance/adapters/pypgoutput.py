"""Adapter for pypgoutput (PyPI): its message classes, as its reader uses them.

Run out of process (``python -m pgwire_spec.conformance.adapters.pypgoutput``): pypgoutput
reads a String byte by byte until a NUL and loops forever when there is none, so the runner
must be able to kill it.

pypgoutput's reader (``LogicalReplicationReader.transform_raw``) dispatches on the tag to
``Begin``, ``Commit``, ``Relation``, ``Insert``, ``Update``, ``Delete`` and ``Truncate`` and
drops everything else; each class decodes one payload and is given no protocol context.
This adapter does the same and translates what each object exposes into the JSON form of
spec/message.schema.json. A tag the reader drops is reported as a rejection, naming it.

Its profile (:data:`PROFILE`) is what pypgoutput's reader supports: protocol 1 (it
negotiates ``proto_version '1'`` and no option), text values, no logical messages, no
Origin, and message level (each class decodes one payload; nothing checks the sequence).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ...lsn import datetime_to_timestamp, format_lsn

__all__ = ["decode_case", "PROFILE"]

#: The capabilities pypgoutput's reader has (see the module's docstring).
PROFILE = {"protocol_versions": [1], "streaming": "off", "two_phase": False, "binary": False,
           "messages": False, "origin": False, "level": "message"}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pypgoutput")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _lsn(value: int) -> Any:
    return format_lsn(value) if 0 <= value < 1 << 64 else value


def _tuple(td: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for col in td.column_data:
        kind = col.col_data_category
        if kind == "t":
            out.append({"kind": "t", "text": col.col_data})
        elif kind in ("n", "u"):
            out.append({"kind": kind})
        else:  # pragma: no cover - pypgoutput only builds n, u and t
            out.append({"kind": str(kind)})
    return out


def _form(msg: Any) -> dict[str, Any]:
    name = type(msg).__name__
    if name == "Begin":
        return {"type": "Begin", "tag": "B", "final_lsn": _lsn(msg.lsn),
                "commit_time": datetime_to_timestamp(msg.commit_ts), "xid": msg.tx_xid}
    if name == "Commit":
        return {"type": "Commit", "tag": "C", "flags": msg.flags, "commit_lsn": _lsn(msg.lsn_commit),
                "end_lsn": _lsn(msg.lsn), "commit_time": datetime_to_timestamp(msg.commit_ts)}
    if name == "Relation":
        return {"type": "Relation", "tag": "R", "xid": None, "relation_id": msg.relation_id,
                "namespace": msg.namespace, "name": msg.relation_name,
                "replica_identity": msg.replica_identity_setting,
                "columns": [{"flags": c.part_of_pkey, "name": c.name, "type_oid": c.type_id,
                             "type_modifier": c.atttypmod} for c in msg.columns]}
    if name == "Insert":
        return {"type": "Insert", "tag": "I", "xid": None, "relation_id": msg.relation_id,
                "new_tuple": _tuple(msg.new_tuple)}
    if name == "Update":
        old = msg.old_tuple
        return {"type": "Update", "tag": "U", "xid": None, "relation_id": msg.relation_id,
                "old_kind": msg.optional_tuple_identifier,
                "old_tuple": None if old is None else _tuple(old), "new_tuple": _tuple(msg.new_tuple)}
    if name == "Delete":
        return {"type": "Delete", "tag": "D", "xid": None, "relation_id": msg.relation_id,
                "old_kind": msg.message_type, "old_tuple": _tuple(msg.old_tuple)}
    if name == "Truncate":
        return {"type": "Truncate", "tag": "T", "xid": None, "options": msg.option_bits,
                "relation_ids": list(msg.relation_ids)}
    raise TypeError(name)  # pragma: no cover


def decode_case(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    from pypgoutput import decoders

    classes = {b"B": decoders.Begin, b"C": decoders.Commit, b"R": decoders.Relation,
               b"I": decoders.Insert, b"U": decoders.Update, b"D": decoders.Delete,
               b"T": decoders.Truncate}
    out: list[dict[str, Any]] = []
    for payload in payloads:
        cls = classes.get(payload[:1])
        if cls is None:
            out.append({"error": {"message": f"pypgoutput has no decoder for tag {payload[:1]!r} "
                                             "(its reader drops the message)"}})
            return out
        try:
            out.append({"message": _form(cls(payload))})
        except Exception as exc:  # noqa: BLE001 - how pypgoutput rejects input
            out.append({"error": {"message": f"{type(exc).__name__}: {exc}"}})
            return out
    return out


if __name__ == "__main__":
    from ..adapter import serve

    sys.exit(serve(decode_case, name="pypgoutput", version=_version(), profile=PROFILE))
