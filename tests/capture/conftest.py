"""Shared fixtures of the capture tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pgwire_spec import cli
from tests._servers import pg_server  # noqa: F401  (the session-scoped server factory)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """``pgwire-spec`` with only the subcommands under test registered (the real main(),
    its error handling included; other subcommands may be mid-change in the tree)."""
    monkeypatch.setattr(cli, "COMMANDS", {"capture": "capture", "verify-fixtures": "verify_fixtures"})

    def run(*argv: str) -> int:
        return cli.main(list(argv))

    return run
