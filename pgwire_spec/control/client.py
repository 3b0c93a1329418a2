"""A thin client of the control plane (``spec/control.openapi.yaml``), standard library only."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import PgWireError
from ..lsn import format_lsn

__all__ = ["ControlClient", "ControlClientError"]


class ControlClientError(PgWireError):
    """The control plane answered with an error (``status``, its ``error`` text), or could not be reached."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"control plane: {message}" + (f" (HTTP {status})" if status else ""))


class ControlClient:
    """``ControlClient(url, token=None)``: one method per route."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                 timeout: float | None = None, ok: tuple[int, ...] = ()) -> tuple[int, bytes, Mapping[str, str]]:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            if exc.code in ok:
                return exc.code, raw, exc.headers
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode("utf-8", "replace")[:200] or exc.reason
            raise ControlClientError(exc.code, message) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlClientError(0, f"cannot reach {self.url}: {reason}") from None

    def _json(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        _, raw, _ = self._request(method, path, body, **kw)
        return json.loads(raw) if raw else None

    def status(self) -> dict[str, Any]:
        return dict(self._json("GET", "/v1/status"))

    def connections(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/v1/connections")["connections"])

    def faults(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/v1/faults")["faults"])

    def add_fault(self, fault: Mapping[str, Any], *, connection: int | None = None) -> int:
        """Add a fault (the scenario vocabulary: ``{"action": "disconnect", "after_messages": 0}``);
        its id."""
        return int(self._json("POST", "/v1/faults", {"fault": dict(fault), "connection": connection})["id"])

    def remove_fault(self, fault_id: int) -> None:
        self._request("DELETE", f"/v1/faults/{int(fault_id)}")

    def violations(self) -> list[dict[str, Any]]:
        """The protocol rules either side broke (the proxy's checks)."""
        return list(self._json("GET", "/v1/violations")["violations"])

    def transcript(self, offset: int = 0, limit: int = 1000) -> tuple[list[dict[str, Any]], int]:
        """One page of the transcript and the total number of entries so far."""
        _, raw, headers = self._request("GET", "/v1/transcript", query={"offset": offset, "limit": limit})
        lines = [json.loads(x) for x in raw.decode().splitlines() if x]
        return lines, int(headers.get("X-Total-Count", len(lines)))

    def iter_transcript(self, page: int = 1000) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            entries, total = self.transcript(offset, page)
            yield from entries
            offset += len(entries)
            if not entries or offset >= total:
                return

    def wait_confirmed(self, lsn: int | str, *, slot: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until a client confirms *lsn* (the slot's, or any connection's flush position);
        ControlClientError(408) on timeout."""
        text = format_lsn(lsn) if isinstance(lsn, int) else lsn
        status, raw, _ = self._request("GET", "/v1/wait", query={"lsn": text, "slot": slot, "timeout": timeout},
                                       timeout=timeout + 10)
        return dict(json.loads(raw))

    def replace_scenario(self, scenario: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return dict(self._json("PUT", "/v1/scenario", dict(scenario or {})))

    def stop(self) -> None:
        self._request("POST", "/v1/stop")
