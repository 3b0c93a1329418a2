"""Field maps of pgoutput payloads, read from the generated codec's tracing decoder.

``explain`` (see :mod:`pgwire_spec._codegen`) reports every field's path and offset before
reading it; recording those calls gives the layout of a concrete payload without a second
description of the grammar. The mutation engine and the malformed conformance cases use
the map to cut at field boundaries and to tamper with lengths, counts, kinds and strings.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..pgoutput._codec import FAMILY

__all__ = ["Field", "field_map", "TAGS"]

#: Every pgoutput message tag the reference knows, as byte values.
TAGS: tuple[int, ...] = tuple(sorted(FAMILY.by_tag))

_SIZE = re.compile(r"\((\d+) bytes?\)")


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a payload: where it starts, how many bytes its head takes, what it is.

    ``kind`` is ``tag``, ``int``, ``length`` (Int32 before a value), ``count`` (an element
    count), ``kind-byte`` (a TupleData kind or K/O/N marker), ``char``, ``bool`` or
    ``string`` (NUL-terminated; ``size`` includes the NUL).
    """

    offset: int
    size: int
    path: str
    kind: str


def _classify(path: str, expected: str) -> tuple[str, int]:
    leaf = path.rsplit(".", 1)[-1]
    if leaf == "tag":
        return "tag", 1
    if expected.startswith("String"):
        return "string", 0
    if leaf == "length":
        return "length", 4
    if leaf in ("count", "relation_count"):
        return "count", 4 if "UInt32" in expected else 2
    if leaf in ("kind", "old_kind", "new_tag"):
        return "kind-byte", 1
    if expected.startswith("Byte1"):
        return "char", 1
    if "0 or 1" in expected:
        return "bool", 1
    match = _SIZE.search(expected)
    return "int", int(match.group(1)) if match else 1


def _trace(payload: bytes, in_stream: bool, abort_tail: bool, tr: Callable[[str, int, str], None]) -> None:
    """Run the tracing decoder of *payload*'s tag. Extra context flags the codec grew after
    ``abort_tail`` (e.g. ``binary_ok``) are passed permissively: the map should reach as
    far into the bytes as possible."""
    codec = FAMILY.by_tag[payload[0]]
    extra = _EXTRA.get(codec.name)
    if extra is None:
        names = list(inspect.signature(codec.explain).parameters)
        extra = _EXTRA[codec.name] = len(names) - 4
    codec.explain(payload, in_stream, abort_tail, *([True] * extra), tr)


_EXTRA: dict[str, int] = {}


def field_map(payload: bytes, in_stream: bool = False, abort_tail: bool = False) -> tuple[Field, ...]:
    """The fields of *payload* in order, as far as the tracing decoder gets.

    A payload that does not decode still has a map up to the field that failed.
    """
    if not payload or payload[0] not in FAMILY.by_tag:
        return (Field(0, 1, "tag", "tag"),) if payload else ()
    seen: list[tuple[str, int, str]] = []
    try:
        _trace(payload, in_stream, abort_tail, lambda f, o, e: seen.append((f, o, e)))
    except Exception:  # noqa: BLE001 - a partial map is what we want for bad input
        pass
    out = []
    for path, offset, expected in seen:
        if not path:  # the end-of-message check
            continue
        kind, size = _classify(path, expected)
        if kind == "string":
            end = payload.find(b"\x00", offset)
            size = (end - offset + 1) if end >= 0 else len(payload) - offset
        out.append(Field(offset, size, path, kind))
    return tuple(out)
