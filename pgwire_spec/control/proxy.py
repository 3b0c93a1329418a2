"""The replication proxy as a :class:`~pgwire_spec.control.server.ControlTarget`."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from typing import Any

from ..jsonform import to_json
from ..proxy.server import ReplicationProxy
from ..replication.messages import decode_copy_data
from ..walsender.faults import Fault
from ..wire import BackendReader, CopyData, FrontendReader

__all__ = ["ProxyTarget"]

#: Transcript entries kept decoded (the pages read last).
_CACHED = 4096


def _starts(log: list[list[int]]) -> list[int]:
    """Where each run of the transcript log starts, counted over every run."""
    at = 0
    out = []
    for _cid, _first, count in log:
        out.append(at)
        at += count
    return out


class ProxyTarget:
    kind = "proxy"

    def __init__(self, proxy: ReplicationProxy) -> None:
        self.proxy = proxy
        #: per connection: its readers and the index of the next message they read
        self._readers: dict[int, tuple[FrontendReader, BackendReader, list[int]]] = {}
        #: the entries decoded last (a page is read twice at most: bounded)
        self._cache: OrderedDict[tuple[int, int], dict[str, Any]] = OrderedDict()

    def describe(self) -> dict[str, Any]:
        up = self.proxy.upstream
        return {"host": self.proxy.host, "port": self.proxy.port, "dsn": self.proxy.dsn,
                "upstream": f"{up.get('host', 'localhost')}:{up.get('port', '5432')}",
                "backlog_peak_bytes": self.proxy.backlog_peak, "backpressure": self.proxy.backpressure}

    def connection_status(self) -> list[dict[str, Any]]:
        self.proxy.catch_up()
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
        self.proxy.catch_up()
        return [v.as_json() for v in self.proxy.state.violations]

    def transcript_page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        self.proxy.catch_up()
        log = self.proxy.log
        starts = list(_starts(log))
        out: list[dict[str, Any]] = []
        k = max(0, bisect.bisect_right(starts, offset) - 1)
        at = offset
        while k < len(log) and len(out) < limit:
            cid, first, count = log[k]
            skip = at - starts[k]
            take = min(count - skip, limit - len(out))
            if take > 0:
                out += self._entries(cid, first + skip, take)
                at += take
            k += 1
        return out, self.proxy.logged

    def _entries(self, cid: int, start: int, count: int) -> list[dict[str, Any]]:
        """Entries *start*… of connection *cid*, decoded in order from its spool (the
        startup and SASL messages read as the conversation left them)."""
        want = [self._cache.get((cid, i)) for i in range(start, start + count)]
        if all(e is not None for e in want):
            return want  # type: ignore[return-value]
        session = self.proxy._sessions.get(cid)
        if session is None or session.spool is None or session.spool.closed:
            # an old connection's (the proxy keeps the last ones)
            self._readers.pop(cid, None)
            return [{"connection": cid, "event": "no longer kept"} for _ in range(count)]
        spool = session.spool
        front, back, at = self._readers.get(cid) or (FrontendReader(), BackendReader(), [0])
        if at[0] > start:
            front, back, at = FrontendReader(), BackendReader(), [0]
        self._readers[cid] = (front, back, at)
        out = []
        for index, direction, time, data in spool.read(at[0], start + count - at[0]):
            reader = front if direction == "F" else back
            entry: dict[str, Any] = {"connection": cid, "direction": direction, "time": round(time, 6)}
            try:
                reader.feed(data)
                msg = reader.next_event()
                entry["message"] = to_json(msg)
                if isinstance(msg, CopyData):
                    try:
                        entry["payload"] = to_json(decode_copy_data(msg.data))
                    except Exception:  # not a replication payload (COPY of a table sync)
                        pass
            except Exception as exc:  # what the core reported as a violation
                entry["event"] = f"unreadable: {exc}"
            at[0] = index + 1
            if index >= start:
                out.append(entry)
                self._cache[(cid, index)] = entry
                while len(self._cache) > _CACHED:
                    self._cache.popitem(last=False)
        return out

    def confirmed_lsn(self, slot: str | None) -> int | None:
        self.proxy.catch_up()
        confirmed = self.proxy.state.confirmed
        if slot is not None:
            return confirmed.get(slot)
        return max(confirmed.values()) if confirmed else None

    async def replace_scenario(self, scenario: Any) -> None:
        raise NotImplementedError("the proxy forwards to a real server: it has no scenario to replace")
