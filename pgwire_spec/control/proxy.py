"""The replication proxy as a :class:`~pgwire_spec.control.server.ControlTarget`."""

from __future__ import annotations

from typing import Any

from ..jsonform import to_json
from ..proxy.server import ReplicationProxy
from ..replication.messages import decode_copy_data
from ..walsender.faults import Fault
from ..wire import BackendReader, CopyData, FrontendReader

__all__ = ["ProxyTarget"]


class ProxyTarget:
    kind = "proxy"

    def __init__(self, proxy: ReplicationProxy) -> None:
        self.proxy = proxy
        #: per connection: its readers and the JSON of the exchanges decoded so far
        self._decoded: dict[int, tuple[FrontendReader, BackendReader, list[dict[str, Any]]]] = {}

    def describe(self) -> dict[str, Any]:
        up = self.proxy.upstream
        return {"host": self.proxy.host, "port": self.proxy.port, "dsn": self.proxy.dsn,
                "upstream": f"{up.get('host', 'localhost')}:{up.get('port', '5432')}"}

    def connection_status(self) -> list[dict[str, Any]]:
        return [s.status() for _, s in sorted(self.proxy.state.sessions.items())]

    def add_fault(self, fault: Fault, *, connection: int | None = None) -> int:
        return self.proxy.add_fault(fault, connection=connection)

    def remove_fault(self, index: int) -> None:
        self.proxy.remove_fault(index)

    def fault_table(self) -> list[dict[str, Any]]:
        book = self.proxy.state.faults
        return [{"id": i, "fault": f.as_json(), "fired": book.fired[i], "removed": i in book.removed}
                for i, f in enumerate(book.faults)]

    def violations(self) -> list[dict[str, Any]]:
        return [v.as_json() for v in self.proxy.state.violations]

    def transcript_page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        log = self.proxy.log
        return [self._entry(cid, i) for cid, i in log[offset:offset + limit]], len(log)

    def _entry(self, cid: int, index: int) -> dict[str, Any]:
        session = self.proxy._sessions[cid]
        front, back, done = self._decoded.setdefault(cid, (FrontendReader(), BackendReader(), []))
        while len(done) <= index:
            ex = session.exchanges[len(done)]
            reader = front if ex.direction == "F" else back
            entry: dict[str, Any] = {"connection": cid, "direction": ex.direction, "time": round(ex.time, 6)}
            try:
                reader.feed(ex.data)
                msg = reader.next_event()
                entry["message"] = to_json(msg)
                if isinstance(msg, CopyData):
                    try:
                        entry["payload"] = to_json(decode_copy_data(msg.data))
                    except Exception:  # not a replication payload (COPY of a table sync)
                        pass
            except Exception as exc:  # what the core reported as a violation
                entry["event"] = f"unreadable: {exc}"
            done.append(entry)
        return done[index]

    def confirmed_lsn(self, slot: str | None) -> int | None:
        confirmed = self.proxy.state.confirmed
        if slot is not None:
            return confirmed.get(slot)
        return max(confirmed.values()) if confirmed else None

    async def replace_scenario(self, scenario: Any) -> None:
        raise NotImplementedError("the proxy forwards to a real server: it has no scenario to replace")
