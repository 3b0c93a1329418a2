"""The shape of a catalogue entry, and the lowering of one layer's grammar into entries.

A protocol layer (pgoutput, replication payloads, v3 wire) lowers each of its grammar's
layouts with :func:`lower_layer`: the fields, tag and conditions come from the grammar's
intermediate form (:mod:`pgwire_spec._ir`), and only what the grammar cannot hold comes from
the layer's :class:`Facts` table (the docs' section, the first server major that sends it,
the options that make a server send it, the errata, documented values of integer fields). A
layout without facts gets the defaults, so a layout added to a grammar appears in the
catalogue without an edit here; :mod:`pgwire_spec.catalogue` gathers every layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from . import _ir, majors

__all__ = ["Entry", "Facts", "MAJORS", "Layer", "lower_layer"]

#: The server majors the package knows (the per-major table).
MAJORS = majors.known()

Layer = Literal["pgoutput", "replication", "wire"]
Sender = Literal["backend", "frontend", "both"]


@dataclass(frozen=True)
class Facts:
    """What the grammar cannot say about one message."""

    #: the section of the PostgreSQL docs that describes it ("Stream Start")
    docs: str = ""
    #: the first server major that sends it
    since: int = MAJORS[0]
    #: the options a client must ask for before a server sends it (pgoutput)
    options: tuple[str, ...] = ()
    #: erratum ids of spec/errata.yaml
    errata: tuple[str, ...] = ()
    #: who sends it
    sender: Sender = "backend"
    #: values servers send in integer fields (the grammar reads any Int8)
    values: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: its role in the stream's state machine (pgoutput: a key of pgoutput/_state.py's ROLES)
    role: str = ""


@dataclass(frozen=True)
class Entry:
    """One message of one layer: its layout lowered, its class, and the facts about it."""

    name: str
    layer: Layer
    #: the tag byte, or None for the untagged startup-phase messages
    tag: str | None
    #: the frozen dataclass the codecs produce
    cls: type
    layout: _ir.Layout
    facts: Facts
    #: the lowest protocol_version a server sends it under (pgoutput), else None
    protocol: int | None = None

    @property
    def fields(self) -> tuple[_ir.Field, ...]:
        return self.layout.fields

    @property
    def options(self) -> tuple[str, ...]:
        return self.facts.options

    @property
    def streamed_xid(self) -> bool:
        """Whether it carries the streamed transaction's xid inside a streamed block."""
        return "in_stream" in self.layout.conditions

    @property
    def servers(self) -> range:
        """The server majors that send it."""
        return range(self.facts.since, MAJORS[-1] + 1)

    @property
    def servers_text(self) -> str:
        return f"{self.servers[0]}-{self.servers[-1]}"


def lower_layer(
    layer: Layer,
    layouts: Mapping[str, Any],
    classes: Mapping[str, type],
    facts: Mapping[str, Facts],
    *,
    default: Facts | None = None,
    protocol: Any = None,
) -> dict[str, Entry]:
    """The entries of one layer, in the grammar's order. *protocol*, if given, computes
    an entry's protocol version from its lowered layout and facts."""
    stale = set(facts) - set(layouts)
    if stale:
        raise TypeError(f"{layer}: facts for layouts the grammar does not have: {sorted(stale)}")
    out: dict[str, Entry] = {}
    for name, struct in layouts.items():
        cls = classes[name]
        lowered = _ir.lower(name, struct)
        tag = lowered.tag if lowered.tag is not None else getattr(cls, "tag", None)
        fact = facts.get(name, default if default is not None else Facts(docs=name))
        version = protocol(lowered, fact) if protocol is not None else None
        out[name] = Entry(name, layer, tag, cls, lowered, fact, version)
    return out
