"""The pgoutput stream state machine: every legal (state, message tag) pair in one table.

States: ``idle`` between transactions; ``transaction`` after Begin; ``prepare`` after Begin
Prepare; ``stream`` between Stream Start and Stream Stop. A pair missing from the table is
a sequence violation (rule ``unexpected-message``). Checks that need more than the state
(relation cache, LSNs, stream xids) live in the decoder, keyed by the same tags.

Each message plays one role in the stream, named by its catalogue entry
(``pgoutput/_catalogue.py``, ``Facts.role``); the table says what each role does in each
state, and the (state, tag) pairs follow from it, so a new message kind needs no edit here.
"""

from __future__ import annotations

from typing import Final

from . import _catalogue

IDLE: Final = "idle"
TRANSACTION: Final = "transaction"
PREPARE: Final = "prepare"
STREAM: Final = "stream"

STATES: Final = (IDLE, TRANSACTION, PREPARE, STREAM)

#: role -> {state: next state}.
ROLES: Final[dict[str, dict[str, str]]] = {
    # Begin opens a transaction; Begin Prepare a prepared one; Stream Start a streamed block.
    "begin": {IDLE: TRANSACTION},
    "begin_prepare": {IDLE: PREPARE},
    "stream_start": {IDLE: STREAM},
    "commit": {TRANSACTION: IDLE},
    "prepare": {PREPARE: IDLE},
    "stream_stop": {STREAM: IDLE},
    # Messages that close a streamed or prepared transaction arrive between blocks.
    "between_blocks": {IDLE: IDLE},
    # Changes (and Origin, Relation, Type) may appear inside any transaction-like block.
    "change": {TRANSACTION: TRANSACTION, PREPARE: PREPARE, STREAM: STREAM},
    # Logical messages: inside any block, and non-transactional ones outside (docs: Message).
    "message": {IDLE: IDLE, TRANSACTION: TRANSACTION, PREPARE: PREPARE, STREAM: STREAM},
}


def _transitions() -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for tag, entry in _catalogue.BY_TAG.items():
        moves = ROLES.get(entry.facts.role)
        if moves is None:
            raise TypeError(f"pgoutput {entry.name}: its catalogue facts name no role of the state table "
                            f"(one of {sorted(ROLES)}), found {entry.facts.role!r}")
        out.update({(state, tag): nxt for state, nxt in moves.items()})
    return out


TRANSITIONS: Final[dict[tuple[str, str], str]] = _transitions()

#: What may come next, in words, per state (for error messages).
EXPECTED: Final[dict[str, str]] = {
    state: ", ".join(sorted({tag for (s, tag) in TRANSITIONS if s == state}))
    for state in STATES
}
