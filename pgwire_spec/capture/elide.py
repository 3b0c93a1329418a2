"""Elision of a captured stream: of a run of DML payloads of one shape (same tag, relation,
stream context, replica identity and tuple kinds), the corpus keeps a few at each end and
counts the rest. Sans-IO: capture and session recordings use it, and the verifier that
reads their files imports none of the capture's I/O.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from ..pgoutput.messages import tuple_kinds

__all__ = ["ELIDE_KEEP", "dml_shape", "elide"]

_C = TypeVar("_C", bound=Any)

#: Of a run of identical-shaped DML payloads, keep this many at each end.
ELIDE_KEEP = 3


def dml_shape(msg: Any, in_stream: bool) -> tuple[Any, ...] | None:
    """What makes two DML payloads "the same" for elision."""
    tag = msg.tag
    if tag not in "IUD":
        return None
    tuples = (getattr(msg, "old_tuple", None), getattr(msg, "new_tuple", None))
    return (tag, msg.relation_id, in_stream, getattr(msg, "old_kind", None),
            tuple(tuple_kinds(t) if t is not None else None for t in tuples))


def elide(cases: list[_C], shapes: list[tuple[Any, ...] | None], keep: int = ELIDE_KEEP) -> list[_C]:
    """Drop the middle of each run of more than ``2 * keep`` identical-shaped DML cases; the
    last kept case before a gap records how many were dropped (``elided_after``)."""
    out: list[_C] = []
    i = 0
    n = len(cases)
    while i < n:
        j = i + 1
        if shapes[i] is not None:
            while j < n and shapes[j] == shapes[i]:
                j += 1
        run = cases[i:j]
        if len(run) > 2 * keep:
            head = run[:keep]
            head[-1] = replace(head[-1], elided_after=len(run) - 2 * keep)
            out += head + run[-keep:]
        else:
            out += run
        i = j
    return out
