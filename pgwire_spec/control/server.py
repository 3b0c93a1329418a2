"""The control plane's HTTP server (aiohttp), on the event loop of the server it drives.

``spec/control.openapi.yaml`` documents every route. The server it drives — the fake
walsender or the proxy — is a :class:`ControlTarget`; nothing here touches the protocol
core. Loopback binds need no credentials; any other bind needs a token, sent as
``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web

from ..errors import PgWireError
from ..lsn import format_lsn, parse_lsn
from ..walsender.faults import parse_faults

__all__ = ["ControlTarget", "ControlServer", "ControlError", "is_loopback"]

#: The longest a long poll may wait, and the most transcript entries per page.
MAX_WAIT = 600.0
MAX_PAGE = 10_000
#: Largest request body (a scenario in YAML or JSON).
MAX_BODY = 16 << 20


class ControlError(PgWireError):
    """The control plane cannot start as asked (a non-loopback bind without a token …)."""


class ControlTarget(Protocol):
    """What the control plane drives (the fake walsender, the proxy)."""

    kind: str

    def describe(self) -> dict[str, Any]:
        """host, port, dsn (and for the proxy, upstream)."""

    def connection_status(self) -> list[dict[str, Any]]:
        """Every open connection (the Connection schema)."""

    def add_fault(self, fault: Any, *, connection: int | None = None) -> int:
        """Add a fault; its id. KeyError: no such connection."""

    def remove_fault(self, index: int) -> None:
        """KeyError: no such fault."""

    def fault_table(self) -> list[dict[str, Any]]:
        """Every fault (the FaultEntry schema)."""

    def violations(self) -> list[dict[str, Any]]:
        """The protocol rules broken so far (the proxy; the fake reports none)."""

    def transcript_page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Entries [offset, offset + limit) as JSON objects, and how many there are.
        LookupError when the target does not record."""

    def confirmed_lsn(self, slot: str | None) -> int | None:
        """The highest position confirmed: the slot's, or any connection's flush position."""

    async def replace_scenario(self, scenario: Any) -> None:
        """Start over on *scenario* (None: the current one). NotImplementedError: cannot."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _int(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=json.dumps({"error": f"{name}: expected an integer, found {raw!r}"}),
                                 content_type="application/json") from None
    if not lo <= value <= hi:
        raise web.HTTPBadRequest(text=json.dumps({"error": f"{name}: expected {lo} to {hi}, found {value}"}),
                                 content_type="application/json")
    return value


class ControlServer:
    """The HTTP API of ``spec/control.openapi.yaml`` for *target*, listening on
    ``host:port`` (port 0: a free one; ``url`` says which). *on_stop* is called by
    ``POST /v1/stop``."""

    def __init__(self, target: ControlTarget, *, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, on_stop: Callable[[], None] | None = None,
                 version: str = "") -> None:
        if not is_loopback(host) and not token:
            raise ControlError(f"the control plane on {host} (not a loopback address) needs a token: "
                               "--control-token or PGWIRE_SPEC_CONTROL_TOKEN")
        self.target = target
        self.host = host
        self.port = port
        self.token = token
        self.version = version
        self._on_stop = on_stop
        self._runner: web.AppRunner | None = None
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        app.add_routes([
            web.get("/v1/status", self._status),
            web.get("/v1/connections", self._connections),
            web.get("/v1/faults", self._faults),
            web.post("/v1/faults", self._add_fault),
            web.delete("/v1/faults/{id}", self._remove_fault),
            web.get("/v1/transcript", self._transcript),
            web.get("/v1/violations", self._violations),
            web.get("/v1/wait", self._wait),
            web.put("/v1/scenario", self._scenario),
            web.post("/v1/stop", self._stop),
        ])
        self.app = app

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> ControlServer:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ControlError(f"cannot listen on {self.host}:{self.port} for the control plane: "
                               f"{exc.strerror or exc}") from None
        self._runner = runner
        server = site._server
        if server is not None and getattr(server, "sockets", None):
            self.port = server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- middleware ------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if self.token:
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return _error(401, "expected the header Authorization: Bearer <the control token>")
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.content_type == "application/json" or exc.status < 400:
                raise
            return _error(exc.status, exc.reason)

    # -- routes ----------------------------------------------------------------------------
    async def _status(self, request: web.Request) -> web.Response:
        return web.json_response(self._describe())

    def _describe(self) -> dict[str, Any]:
        return {"kind": self.target.kind, "version": self.version, **self.target.describe()}

    async def _connections(self, request: web.Request) -> web.Response:
        return web.json_response({"connections": self.target.connection_status()})

    async def _faults(self, request: web.Request) -> web.Response:
        return web.json_response({"faults": self.target.fault_table()})

    async def _add_fault(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if not isinstance(body, Mapping) or "fault" not in body:
            return _error(400, 'expected a JSON object {"fault": {...}, "connection": ID or null}, '
                               f"found {_short(body)}")
        extra = sorted(set(body) - {"fault", "connection"})
        if extra:
            return _error(400, f"expected the keys fault and connection, found {extra[0]!r}")
        connection = body.get("connection")
        if connection is not None and (isinstance(connection, bool) or not isinstance(connection, int)):
            return _error(400, f"connection: expected a connection id (an integer) or null, found {_short(connection)}")
        try:
            (fault,) = parse_faults([body["fault"]], "fault")
        except PgWireError as exc:
            return _error(400, str(exc))
        try:
            index = self.target.add_fault(fault, connection=connection)
        except KeyError:
            return _error(404, f"no open connection {connection} (GET /v1/connections lists them)")
        except ValueError as exc:
            return _error(400, str(exc))
        return web.json_response({"id": index}, status=201)

    async def _remove_fault(self, request: web.Request) -> web.Response:
        raw = request.match_info["id"]
        try:
            self.target.remove_fault(int(raw))
        except (KeyError, ValueError):
            return _error(404, f"no fault {raw!r} (GET /v1/faults lists them)")
        return web.Response(status=204)

    async def _violations(self, request: web.Request) -> web.Response:
        return web.json_response({"violations": self.target.violations()})

    async def _transcript(self, request: web.Request) -> web.Response:
        offset = _int(request, "offset", 0, 0, 1 << 62)
        limit = _int(request, "limit", 1000, 1, MAX_PAGE)
        try:
            entries, total = self.target.transcript_page(offset, limit)
        except LookupError as exc:
            return _error(409, str(exc))
        body = "".join(json.dumps(e) + "\n" for e in entries)
        return web.Response(text=body, content_type="application/x-ndjson",
                            headers={"X-Total-Count": str(total), "X-Next-Offset": str(offset + len(entries))})

    async def _wait(self, request: web.Request) -> web.Response:
        raw = request.query.get("lsn")
        if raw is None:
            return _error(400, "lsn: expected a position like 0/16B3748, found nothing")
        try:
            lsn = parse_lsn(raw)
        except ValueError:
            return _error(400, f"lsn: expected a position like 0/16B3748, found {raw!r}")
        try:
            timeout = float(request.query.get("timeout", "30"))
        except ValueError:
            return _error(400, f"timeout: expected seconds, found {request.query.get('timeout')!r}")
        if not 0 <= timeout <= MAX_WAIT:
            return _error(400, f"timeout: expected 0 to {MAX_WAIT:g} seconds, found {timeout:g}")
        slot = request.query.get("slot")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            confirmed = self.target.confirmed_lsn(slot)
            if confirmed is not None and confirmed >= lsn:
                return web.json_response({"reached": True, "lsn": format_lsn(lsn),
                                          "confirmed_lsn": format_lsn(confirmed)})
            left = deadline - loop.time()
            if left <= 0:
                return web.json_response({"reached": False, "lsn": format_lsn(lsn),
                                          "confirmed_lsn": None if confirmed is None else format_lsn(confirmed)},
                                         status=408)
            await asyncio.sleep(min(0.01, left))

    async def _scenario(self, request: web.Request) -> web.Response:
        if request.content_type in ("application/yaml", "text/yaml", "application/x-yaml", "text/plain"):
            scenario: Any = await request.text()
            if not scenario.strip():
                scenario = None
        else:
            body = await _json_body(request)
            if not isinstance(body, Mapping):
                return _error(400, f"expected a scenario (a JSON object) or {{}}, found {_short(body)}")
            scenario = dict(body) or None
        try:
            await self.target.replace_scenario(scenario)
        except NotImplementedError as exc:
            return _error(409, str(exc))
        except PgWireError as exc:
            return _error(400, str(exc))
        return web.json_response(self._describe())

    async def _stop(self, request: web.Request) -> web.Response:
        if self._on_stop is not None:
            asyncio.get_running_loop().call_soon(self._on_stop)
        return web.json_response({"stopping": True}, status=202)


async def _json_body(request: web.Request) -> Any:
    text = await request.text()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise web.HTTPBadRequest(text=json.dumps({"error": f"expected a JSON body, found {exc.msg} at "
                                                           f"line {exc.lineno} column {exc.colno}"}),
                                 content_type="application/json") from None


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
