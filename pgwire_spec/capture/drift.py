"""Drift check: compare a fresh capture with the stored fixtures of the same major.

Both sides are normalised first: LSNs become ``X/X``, timestamps 0, xids and user OIDs
(>= 16384: relations, types) their order of first appearance, and the hex bytes their
length (every renumbered field is fixed-width). What remains must be equal: the same option
sets, the same payloads in the same order with the same decoded content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fixture import FixtureCase, FixtureFile, FixtureGroup

__all__ = ["Drift", "normalize_case", "compare"]

_LSN = {"final_lsn", "commit_lsn", "end_lsn", "lsn", "prepare_lsn", "abort_lsn",
        "prepare_end_lsn", "rollback_end_lsn"}
_TIME = {"commit_time", "prepare_time", "rollback_time", "abort_time"}
_XID = {"xid", "subtransaction_xid"}
_OID = {"relation_id", "type_oid"}
_FIRST_USER_OID = 16384


@dataclass(frozen=True, slots=True)
class Drift:
    """One difference between the stored and the live capture."""

    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


class _Numbering:
    def __init__(self) -> None:
        self.xids: dict[int, int] = {}
        self.oids: dict[int, int] = {}

    def xid(self, v: Any) -> Any:
        if not isinstance(v, int) or v == 0:
            return v
        return "xid#" + str(self.xids.setdefault(v, len(self.xids) + 1))

    def oid(self, v: Any) -> Any:
        if not isinstance(v, int) or v < _FIRST_USER_OID:
            return v
        return "oid#" + str(self.oids.setdefault(v, len(self.oids) + 1))


def _norm(obj: Any, num: _Numbering, key: str = "") -> Any:
    if isinstance(obj, dict):
        return {k: _norm(v, num, k) for k, v in obj.items()}
    if isinstance(obj, list):
        if key == "relation_ids":
            return [num.oid(v) for v in obj]
        return [_norm(v, num, key) for v in obj]
    if key in _LSN and isinstance(obj, str):
        return "X/X"
    if key in _TIME and isinstance(obj, int):
        return 0
    if key in _XID:
        return num.xid(obj)
    if key in _OID:
        return num.oid(obj)
    return obj


def normalize_case(case: FixtureCase, num: _Numbering) -> tuple[Any, ...]:
    """What must not drift in a case."""
    return (case.index, case.in_stream, len(case.hex) // 2, case.elided_after,
            _norm(case.expected, num), tuple(case.flags))


def _group_key(group: FixtureGroup) -> list[tuple[Any, ...]]:
    num = _Numbering()
    return [normalize_case(c, num) for c in group.cases]


def compare(stored: FixtureFile, live: FixtureFile, *, limit: int = 5) -> list[Drift]:
    """The differences between *stored* and *live* (empty: no drift); at most *limit* per group."""
    out: list[Drift] = []
    where = f"pg{stored.major}"
    if stored.major != live.major:
        return [Drift(where, f"stored major {stored.major}, live major {live.major}")]
    if stored.workload != live.workload:
        out.append(Drift(where, f"workload {stored.workload!r} stored, {live.workload!r} live"))
    s_groups = {g.name: g for g in stored.groups}
    l_groups = {g.name: g for g in live.groups}
    for name in sorted(set(s_groups) - set(l_groups)):
        out.append(Drift(f"{where}/{name}", "option set stored but not captured live (now same bytes as "
                         "another set, or refused)"))
    for name in sorted(set(l_groups) - set(s_groups)):
        out.append(Drift(f"{where}/{name}", "option set captured live but not stored"))
    if stored.rejected.keys() != live.rejected.keys():
        out.append(Drift(where, f"refused option sets differ: stored {sorted(stored.rejected)}, "
                         f"live {sorted(live.rejected)}"))
    for name in [n for n in s_groups if n in l_groups]:
        sg, lg = s_groups[name], l_groups[name]
        if sg.options != lg.options:
            out.append(Drift(f"{where}/{name}", f"options {sg.options} stored, {lg.options} live"))
        if sg.captured != lg.captured:
            out.append(Drift(f"{where}/{name}", f"{sg.captured} payloads stored, {lg.captured} live"))
        sk, lk = _group_key(sg), _group_key(lg)
        shown = 0
        for i, (a, b) in enumerate(zip(sk, lk)):
            if a != b and shown < limit:
                out.append(Drift(f"{sg.cases[i].id}", f"stored {_brief(a)} != live {_brief(b)}"))
                shown += 1
        if len(sk) != len(lk):
            out.append(Drift(f"{where}/{name}", f"{len(sk)} cases stored, {len(lk)} live"))
    return out


def _brief(key: tuple[Any, ...]) -> str:
    index, in_stream, size, elided, expected, flags = key
    text = f"#{index} {expected.get('type')} ({size} bytes{', in stream' if in_stream else ''}) {expected}"
    return text if len(text) <= 200 else text[:197] + "..."
