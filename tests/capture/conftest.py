"""Shared fixtures of the capture tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pgwire_spec import cli
from tests._servers import pg_server  # noqa: F401  (the session-scoped server factory)


@pytest.fixture
def run_cli() -> Callable[..., int]:
    """``pgwire-spec`` in this process (the real main(), its error handling included)."""

    def run(*argv: str) -> int:
        return cli.main(list(argv))

    return run
