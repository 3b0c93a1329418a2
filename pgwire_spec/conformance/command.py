"""A client's command line with ``{placeholder}`` words, as ``conform --client`` and
``conform-client`` take it: split like a shell would, each placeholder checked against the
names the caller fills in, a typed error for an unusable line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..errors import PgWireError

__all__ = ["ClientCommandError", "PLACEHOLDERS", "check_command"]

#: The placeholders every client command may use.
PLACEHOLDERS = ("dsn", "slot", "host", "port", "user", "password")


class ClientCommandError(PgWireError, ValueError):
    """The client's command line cannot be used (empty, an unknown placeholder)."""


def check_command(command: str | Sequence[str], placeholders: Sequence[str] = PLACEHOLDERS) -> list[str]:
    """The command's words (placeholders unfilled); a typed error for an unusable one."""
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as exc:
        raise ClientCommandError(f"expected a shell-like client command line, found {command!r} ({exc})") from None
    if not words:
        raise ClientCommandError("expected a client command line, found an empty one")
    values = {k: "" for k in placeholders}
    for w in words:
        try:
            w.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ClientCommandError(f"expected placeholders among {{{'}, {'.join(placeholders)}}} in the client "
                                     f"command, found {w!r} ({exc!r})") from None
    return words
