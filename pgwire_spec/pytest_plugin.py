"""pytest plugin of pgwire_spec (entry point ``pytest11``): fixtures for users' test suites.

``fake_walsender`` is a fixture factory: call it with a scenario (a file path, a YAML/JSON
text, a mapping or a :class:`pgwire_spec.walsender.Scenario`) and get a running fake
walsender (thread-backed, so plain and async tests alike can use it), stopped when the test
ends::

    def test_my_cdc_client(fake_walsender):
        server = fake_walsender("tests/scenarios/accounts.yaml")
        my_client.run(server.dsn, slot="s", publication="pub")
        assert [m.tag for m in server.transcript.pgoutput()] == ["B", "R", "I", "C"]

Keyword arguments go to :class:`~pgwire_spec.walsender.FakeWalsender` (``faults=[...]``,
``record=False``, ``port=…``). The module imports nothing heavy until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest


@pytest.fixture
def fake_walsender() -> Iterator[Callable[..., Any]]:
    """Factory: ``fake_walsender(scenario, **kwargs) -> SyncFakeWalsender`` (started)."""
    from .walsender import SyncFakeWalsender

    started: list[SyncFakeWalsender] = []

    def factory(scenario: Any, **kwargs: Any) -> SyncFakeWalsender:
        server = SyncFakeWalsender(scenario, **kwargs)
        server.start()
        started.append(server)
        return server

    try:
        yield factory
    finally:
        for server in reversed(started):
            server.stop()
