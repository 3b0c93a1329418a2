"""The fake walsender as a :class:`~pgwire_spec.control.server.ControlTarget`."""

from __future__ import annotations

from typing import Any

from ..walsender.faults import Fault
from ..walsender.server import FakeWalsender

__all__ = ["FakeTarget"]


class FakeTarget:
    kind = "fake"

    def __init__(self, server: FakeWalsender) -> None:
        self.server = server

    def describe(self) -> dict[str, Any]:
        return {"host": self.server.host, "port": self.server.port, "dsn": self.server.dsn}

    def connection_status(self) -> list[dict[str, Any]]:
        return [s.as_json() for s in self.server.state.status()]

    def add_fault(self, fault: Fault, *, connection: int | None = None) -> int:
        return self.server.add_fault(fault, connection=connection)

    def remove_fault(self, index: int) -> None:
        self.server.remove_fault(index)

    def fault_table(self) -> list[dict[str, Any]]:
        book = self.server.state.faults
        return [{"id": i, "fault": f.as_json(), "fired": book.fired[i], "removed": i in book.removed}
                for i, f in enumerate(book.faults)]

    def violations(self) -> list[dict[str, Any]]:
        return []  # the fake's own protocol is the reference; clients' mistakes are answered

    def transcript_page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        transcript = self.server.state.transcript
        if transcript is None:
            raise LookupError("this server does not record a transcript (start it with --transcript or --control)")
        return transcript.page(offset, limit)

    def confirmed_lsn(self, slot: str | None) -> int | None:
        state = self.server.state
        if slot is not None:
            s = state.slots.get(slot)
            return s.confirmed_flush if s is not None else None
        values = [c.positions[1] for c in state.connections.values()]
        values += [s.confirmed_flush for s in state.slots.values() if s.kind == "logical"]
        return max(values) if values else None

    async def replace_scenario(self, scenario: Any) -> None:
        await self.server.reset(scenario)
