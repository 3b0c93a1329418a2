"""The protocol catalogue: every message of every layer, lowered once from the grammar.

For each message of pgoutput (:mod:`pgwire_spec.pgoutput.grammar`), of the streaming
replication CopyData payloads (:mod:`pgwire_spec.replication.grammar`) and of the v3
frontend/backend protocol (:mod:`pgwire_spec.wire.grammar`): its tag, layer, class and
fields (from the grammar's intermediate form), and the few facts the grammar cannot hold
(the docs' section, the server majors that send it, the protocol version and options that
make a server send it, the errata). Whether it carries the streamed xid is read from the
grammar (its ``in_stream`` condition).

Every layout of every grammar is lowered, so a layout added to a grammar appears here
without an edit; ``spec/pgoutput.yaml``, ``spec/replication.yaml`` and ``spec/REFERENCE.md``
are generated from this catalogue (``python -m pgwire_spec._spec``).

>>> from pgwire_spec import catalogue
>>> e = catalogue.entry("pgoutput", "RollbackPrepared")
>>> e.tag, e.protocol, e.options, e.servers_text
('r', 3, ('two_phase',), '15-18')
"""

from __future__ import annotations

from typing import Final

from . import _ir
from ._catalogue import MAJORS, Entry, Facts, Layer, lower_layer
from .pgoutput import _catalogue as _pg
from .replication import grammar as _repl_grammar
from .replication import messages as _repl_messages
from .wire import grammar as _wire_grammar
from .wire import messages as _wire_messages

__all__ = ["Entry", "Facts", "MAJORS", "CATALOGUE", "LAYERS", "entries", "entry", "by_class", "by_tag"]

#: The replication payloads' facts (docs: "Streaming Replication Protocol", START_REPLICATION).
_REPLICATION_FACTS: Final = {
    "XLogData": Facts("XLogData", errata=("E-ZERO-LSN",)),
    "PrimaryKeepalive": Facts("Primary keepalive message"),
    "StandbyStatusUpdate": Facts("Standby status update", sender="frontend"),
    "HotStandbyFeedback": Facts("Hot standby feedback message", sender="frontend"),
}


def _wire_facts() -> dict[str, Facts]:
    """The v3 messages' senders, from the grammar's tables (docs: "Message Formats")."""
    frontend = set(_wire_grammar.STARTUP_LAYOUTS) | set(_wire_grammar.FRONTEND_LAYOUTS)
    backend = set(_wire_grammar.BACKEND_LAYOUTS)
    out = {}
    for name in _wire_grammar.LAYOUTS:
        sender = "both" if name in frontend and name in backend else "frontend" if name in frontend else "backend"
        out[name] = Facts(name, sender=sender)  # type: ignore[arg-type]
    return out


def _wire_entries() -> dict[str, Entry]:
    out = lower_layer("wire", _wire_grammar.LAYOUTS, _wire_messages.MESSAGE_TYPES, _wire_facts())
    # The answers to SSLRequest and GSSENCRequest are one unframed byte, no layout (docs:
    # "SSL Session Encryption", "GSSAPI Session Encryption").
    for cls in (_wire_messages.SSLResponse, _wire_messages.GSSENCResponse):
        name = cls.__name__
        out[name] = Entry(name, "wire", None, cls, _ir.Layout(name, None, (), None), Facts(name))
    return out


_LAYERS: Final[dict[Layer, dict[str, Entry]]] = {
    "pgoutput": _pg.ENTRIES,
    "replication": lower_layer(
        "replication", _repl_grammar.LAYOUTS, _repl_messages.MESSAGE_TYPES, _REPLICATION_FACTS
    ),
    "wire": _wire_entries(),
}

#: The layers, in the order of the catalogue.
LAYERS: Final[tuple[Layer, ...]] = tuple(_LAYERS)

#: Every message of every layer, each layer in its grammar's (the docs') order.
CATALOGUE: Final[tuple[Entry, ...]] = tuple(e for layer in _LAYERS.values() for e in layer.values())

_BY_CLASS: Final = {e.cls: e for e in CATALOGUE}


def entries(layer: Layer | None = None) -> tuple[Entry, ...]:
    """The entries of one layer, or of all."""
    if layer is None:
        return CATALOGUE
    return tuple(_LAYERS[layer].values())


def entry(layer: Layer, name: str) -> Entry:
    """The entry of the message *name* (its class name) of *layer*."""
    return _LAYERS[layer][name]


def by_class(cls: type) -> Entry:
    """The entry of a message class."""
    return _BY_CLASS[cls]


def by_tag(layer: Layer, tag: str | None) -> tuple[Entry, ...]:
    """The entries of *layer* with this tag (v3 tags name several messages: 'R', 'p')."""
    return tuple(e for e in _LAYERS[layer].values() if e.tag == tag)
