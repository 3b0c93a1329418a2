"""The error types of pgwire_spec.

One root, :class:`PgWireError`. Decoding failures are :class:`DecodeError`: they carry the
byte offset, the field path, the message tag, the protocol context and a stable *rule* name
(see ``spec/rules.yaml``) so that tests and third-party conformance runs can assert on what
went wrong, not on an error text.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PgWireError",
    "DecodeError",
    "EncodeError",
    "CommandSyntaxError",
    "OptionError",
]


class PgWireError(Exception):
    """Root of every error this package raises on purpose."""


class DecodeError(PgWireError, ValueError):
    """Bytes that are not a valid message (or not valid at this point of a stream).

    Attributes:
        rule: stable name of the violated rule (``truncated``, ``unknown-message-tag``, …).
        offset: byte offset inside the payload where the problem was found.
        field: dotted field path, e.g. ``Insert.new_tuple[3].length``.
        tag: the message tag (one character) or ``None`` when unknown.
        expected / found: what the decoder expected and what it found, in words.
        index: position of the payload in a stream (set by stream decoders), else ``None``.
        context: protocol context (protocol_version, streaming, in_stream …).
    """

    def __init__(
        self,
        rule: str,
        *,
        expected: str,
        found: str,
        offset: int | None = None,
        field: str | None = None,
        tag: str | None = None,
        index: int | None = None,
        context: dict[str, Any] | None = None,
    ) -> None:
        self.rule = rule
        self.expected = expected
        self.found = found
        self.offset = offset
        self.field = field
        self.tag = tag
        self.index = index
        self.context = dict(context or {})
        # The text is made when read (str()), not here: fuzzing rejects millions of inputs.
        super().__init__(rule)

    def __str__(self) -> str:
        return self._text()

    def _text(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"message #{self.index}")
        if self.tag is not None:
            where.append(f"tag {self.tag!r}")
        if self.field:
            where.append(f"field {self.field}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        head = ", ".join(where)
        ctx = ""
        if self.context:
            ctx = " [" + ", ".join(f"{k}={v}" for k, v in self.context.items()) + "]"
        return f"{self.rule}: expected {self.expected}, found {self.found}" + (
            f" ({head})" if head else ""
        ) + ctx

    def with_index(self, index: int) -> DecodeError:
        """Return the same error placed at stream position *index*."""
        self.index = index
        return self

    def as_dict(self) -> dict[str, Any]:
        """The error's stable JSON form (used by the CLI and the conformance suite)."""
        return {
            "rule": self.rule,
            "expected": self.expected,
            "found": self.found,
            "offset": self.offset,
            "field": self.field,
            "tag": self.tag,
            "index": self.index,
        }


class EncodeError(PgWireError, ValueError):
    """A message object that cannot be encoded (a field out of range, a wrong type)."""


class CommandSyntaxError(PgWireError, ValueError):
    """A replication command text that does not parse.

    Attributes: ``position`` (character offset), ``expected`` and ``found``; ``truncated``:
    the identifiers the lexer cut to NAMEDATALEN-1 bytes before the error (as a command's).
    """

    truncated: tuple[tuple[str, str], ...] = ()

    def __init__(self, *, expected: str, found: str, position: int, text: str = "") -> None:
        self.expected = expected
        self.found = found
        self.position = position
        self.text = text
        super().__init__(f"syntax error at position {position}: expected {expected}, found {found}")


class OptionError(PgWireError, ValueError):
    """A protocol option set that no server accepts (e.g. streaming with protocol 1)."""
