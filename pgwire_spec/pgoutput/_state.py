"""The pgoutput stream state machine: every legal (state, message tag) pair in one table.

States: ``idle`` between transactions; ``transaction`` after Begin; ``prepare`` after Begin
Prepare; ``stream`` between Stream Start and Stream Stop. A pair missing from the table is
a sequence violation (rule ``unexpected-message``). Checks that need more than the state
(relation cache, LSNs, stream xids) live in the decoder, keyed by the same tags.
"""

from __future__ import annotations

from typing import Final

IDLE: Final = "idle"
TRANSACTION: Final = "transaction"
PREPARE: Final = "prepare"
STREAM: Final = "stream"

STATES: Final = (IDLE, TRANSACTION, PREPARE, STREAM)

#: The tags of messages that may appear inside any transaction-like block.
_CHANGES = "ORYIUDTM"

TRANSITIONS: Final[dict[tuple[str, str], str]] = {
    # Begin opens a transaction; Begin Prepare a prepared one; Stream Start a streamed block.
    (IDLE, "B"): TRANSACTION,
    (IDLE, "b"): PREPARE,
    (IDLE, "S"): STREAM,
    # Messages that close a streamed or prepared transaction arrive between blocks.
    (IDLE, "c"): IDLE,
    (IDLE, "A"): IDLE,
    (IDLE, "p"): IDLE,
    (IDLE, "K"): IDLE,
    (IDLE, "r"): IDLE,
    # Non-transactional logical messages arrive outside any transaction (docs: Message).
    (IDLE, "M"): IDLE,
    (TRANSACTION, "C"): IDLE,
    (PREPARE, "P"): IDLE,
    (STREAM, "E"): IDLE,
    **{(state, tag): state for state in (TRANSACTION, PREPARE, STREAM) for tag in _CHANGES},
}

#: What may come next, in words, per state (for error messages).
EXPECTED: Final[dict[str, str]] = {
    state: ", ".join(sorted({tag for (s, tag) in TRANSITIONS if s == state}))
    for state in STATES
}
