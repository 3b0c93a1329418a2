"""The proxy's asyncio shell: accepts clients on loopback, opens one upstream connection per
client (TLS when the DSN's sslmode asks for it), pumps both directions through the sans-IO
:class:`~pgwire_spec.proxy.core.ProxySession`, plays pauses, closes and shaping
(bandwidth, latency), and writes each streamed session as a fixture when asked.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import PgWireError
from ..walsender.faults import Fault
from ..walsender.server import conninfo_value, reset_connection
from ..wire import ErrorResponse, encode_message
from .core import Close, Forward, Pause, ProxySession, ProxyState, Violation
from .record import write_session_apart

__all__ = ["ReplicationProxy", "ProxyError", "parse_upstream"]

#: Bytes read per call from either side.
READ = 1 << 16
#: A stream's bytes forwarded and not yet read by the core, per connection, at most: past it
#: the core catches up before the next read (the checks then slow the stream down).
BACKLOG = 32 << 20
#: Bytes the core reads at a time while the stream leaves the proxy idle, and how long the
#: server must have been quiet for that (seconds).
SLICE = 1 << 16
IDLE = 0.005
#: Ended connections whose recording stays readable (the control plane's transcript); an
#: older one's spool is closed (one descriptor each).
KEEP_ENDED = 64
_SSL_REQUEST = struct.pack("!II", 8, 80877103)


class ProxyError(PgWireError):
    """The proxy cannot start as asked (a DSN it cannot use, an address it cannot bind)."""


def parse_upstream(dsn: str) -> dict[str, str]:
    """The upstream's libpq connection string (or URI) as a mapping."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except Exception as exc:  # psycopg.ProgrammingError: the text of a bad conninfo
        raise ProxyError(f"--upstream: expected a libpq connection string like 'host=db port=5432 "
                         f"dbname=app', found {dsn!r} ({exc})") from None
    sslmode = params.get("sslmode", "prefer")
    if sslmode not in ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"):
        raise ProxyError(f"--upstream: expected sslmode among disable, allow, prefer, require, verify-ca, "
                         f"verify-full, found {sslmode!r}")
    if "," in params.get("host", "") or "," in params.get("port", ""):
        raise ProxyError("--upstream: expected one host and port, found a list")
    return params


class ReplicationProxy:
    """``async with ReplicationProxy(upstream_dsn) as proxy:`` clients connect to
    ``proxy.dsn``; ``proxy.violations`` lists what either side broke; ``record`` (a
    folder) receives one session fixture per streamed connection."""

    kind = "proxy"

    def __init__(self, upstream: str, *, host: str = "127.0.0.1", port: int = 0,
                 faults: Sequence[Fault] = (), record: str | Path | None = None, reply_timeout: float = 10.0,
                 bandwidth: int | None = None, latency: float | None = None, validate: bool = True,
                 keep: bool = True) -> None:
        self.upstream = parse_upstream(upstream)
        if bandwidth is not None and bandwidth < 1:
            raise ProxyError(f"--bandwidth: expected bytes per second >= 1, found {bandwidth}")
        if latency is not None and latency < 0:
            raise ProxyError(f"--latency: expected seconds >= 0, found {latency}")
        self.record_dir = Path(record) if record is not None else None
        self.keep = keep
        spool_dir = str(self.record_dir) if self.record_dir is not None else None
        if self.record_dir is not None:
            try:
                self.record_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ProxyError(f"--record: cannot create {self.record_dir}: {exc.strerror or exc}") from None
        self.state = ProxyState(list(faults), reply_timeout=reply_timeout, record=keep or record is not None,
                                validate=validate,
                                spool_file=lambda _id: tempfile.TemporaryFile(dir=spool_dir))  # noqa: SIM115
        self.recorded: list[Path] = []
        self.bandwidth = bandwidth
        self.latency = latency
        self._host = host
        self._port = port
        self.host = host
        self.port = port
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writes: set[asyncio.Future[Path | None]] = set()
        self._ended: deque[ProxySession] = deque()
        self._links: dict[int, tuple[asyncio.StreamWriter, asyncio.StreamWriter | None]] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        #: the recorded messages in arrival order, run by run: [connection, first index, count]
        self.log: list[list[int]] = []
        self.logged = 0
        #: the largest backlog a connection's core had (bytes forwarded, not read yet), and
        #: how many times the bound made the stream wait for the checks
        self.backlog_peak = 0
        self.backpressure = 0
        self._counts: dict[int, int] = {}
        self._sessions: dict[int, ProxySession] = {}

    # -- where -----------------------------------------------------------------------------
    @property
    def dsn(self) -> str:
        """The upstream DSN with the proxy's address (no ssl settings: clients talk plain text)."""
        keep = {k: v for k, v in self.upstream.items()
                if k not in ("host", "hostaddr", "port") and not k.startswith("ssl") and k != "channel_binding"}
        parts = [f"host={self.host}", f"port={self.port}"] + [f"{k}={conninfo_value(v)}" for k, v in keep.items()]
        return " ".join(parts)

    @property
    def violations(self) -> list[Violation]:
        return list(self.state.violations)

    # -- life cycle ------------------------------------------------------------------------
    async def start(self) -> ReplicationProxy:
        try:
            self._server = await asyncio.start_server(self._client, self._host, self._port, limit=READ,
                                                      reuse_address=True)
        except OSError as exc:
            raise ProxyError(f"cannot listen on {self._host}:{self._port}: {exc.strerror or exc}") from None
        self.host, self.port = self._server.sockets[0].getsockname()[:2]
        return self

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        if self._writes:  # the recordings being written when the clients went
            await asyncio.gather(*self._writes, return_exceptions=True)
        for session in self._sessions.values():
            if session.spool is not None:
                session.spool.close()

    def catch_up(self) -> None:
        """Every connection's core reads what it deferred: violations, positions and the
        transcript are then up to date (the control plane asks this before it answers)."""
        self.state.catch_up()
        for session in self.state.sessions.values():
            self._note(session)

    async def __aenter__(self) -> ReplicationProxy:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    # -- faults at run time ----------------------------------------------------------------
    def add_fault(self, fault: Fault, *, connection: int | None = None) -> int:
        index = self.state.add_fault(fault, connection=connection, now=time.monotonic())
        for wake in self._wakes.values():
            wake.set()  # faults due at once act without waiting for the server's next message
        return index

    def remove_fault(self, index: int) -> None:
        self.state.remove_fault(index)

    # -- one client ------------------------------------------------------------------------
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = writer.get_extra_info("peername")
        session = self.state.connect(peer[0] if peer else "?")
        self._sessions[session.id] = session
        _nodelay(writer)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            upstream = await self._connect_upstream()
        except (TimeoutError, OSError, ProxyError) as exc:
            # answer once the client sent its startup packet (its SSLRequest answered 'N'),
            # so that libpq shows the reason
            msg = f"pgwire-spec proxy: cannot reach the upstream server: {exc}"
            loop = asyncio.get_running_loop()
            try:
                while session.phase == "startup":
                    data = await asyncio.wait_for(reader.read(READ), 10)
                    for act in session.from_client(data, loop.time()):
                        if isinstance(act, Forward) and act.to == "client":
                            writer.write(act.data)
                    if not data:
                        break
            except (TimeoutError, OSError):
                pass
            writer.write(encode_message(ErrorResponse((("S", "FATAL"), ("V", "FATAL"), ("C", "08006"), ("M", msg)))))
            await _drain_close(writer)
            self.state.forget(session)
            self._tasks.discard(task)
            return
        up_reader, up_writer = upstream
        self._links[session.id] = (writer, up_writer)
        wake = asyncio.Event()
        self._wakes[session.id] = wake
        try:
            await self._pump(session, reader, writer, up_reader, up_writer, wake)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            session.finish(time.monotonic())
            for v in session.violations:
                self._on_violation(v)
            self._links.pop(session.id, None)
            self._wakes.pop(session.id, None)
            self.state.forget(session)
            for w in (writer, up_writer):
                if not w.is_closing():
                    w.transport.abort()
            if self.record_dir is not None:
                # off the event loop and this process: a long session takes a while to render
                write = asyncio.ensure_future(write_session_apart(session, self.record_dir))
                self._writes.add(write)
                write.add_done_callback(lambda f: self._written(session, f))
                try:
                    await asyncio.shield(write)  # a stop waits for it too
                except OSError:
                    pass
            else:
                self._release(session)
            self._tasks.discard(task)

    def _release(self, session: ProxySession) -> None:
        """The connection ended and its recording is written: it is forgotten (its spool
        closed), or kept for the transcript among the last KEEP_ENDED."""
        self._ended.append(session)
        while len(self._ended) > (KEEP_ENDED if self.keep else 0):
            old = self._ended.popleft()
            self._sessions.pop(old.id, None)
            self._counts.pop(old.id, None)
            if old.spool is not None:
                old.spool.close()

    def _written(self, session: ProxySession, write: asyncio.Future[Path | None]) -> None:
        self._writes.discard(write)
        if not write.cancelled() and write.exception() is None:
            path = write.result()
            if path is not None:
                self.recorded.append(path)
        self._release(session)

    def _on_violation(self, v: Violation) -> None:
        pass

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        p = self.upstream
        host = p.get("hostaddr") or p.get("host") or "localhost"
        port = int(p.get("port") or 5432)
        timeout = float(p.get("connect_timeout") or 10)
        if host.startswith("/"):
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(f"{host}/.s.PGSQL.{port}", limit=READ), timeout)
            return reader, writer
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, limit=READ), timeout)
        _nodelay(writer)
        mode = p.get("sslmode", "prefer")
        if mode in ("disable", "allow"):
            return reader, writer
        # SSLRequest, then TLS over the same connection (the docs' "SSL Session Encryption")
        writer.write(_SSL_REQUEST)
        await writer.drain()
        answer = await asyncio.wait_for(reader.readexactly(1), timeout)
        if answer != b"S":
            if mode == "prefer":
                return reader, writer
            writer.transport.abort()
            raise ProxyError(f"the upstream server refused TLS (sslmode={mode})")
        ctx = ssl.create_default_context(cafile=p.get("sslrootcert")) if mode.startswith("verify") else \
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if mode != "verify-full":
            ctx.check_hostname = False
        if not mode.startswith("verify"):
            ctx.verify_mode = ssl.CERT_NONE
        if p.get("sslcert") and p.get("sslkey"):
            ctx.load_cert_chain(p["sslcert"], p["sslkey"])
        await writer.start_tls(ctx, server_hostname=p.get("host") or host)
        return reader, writer

    async def _pump(self, session: ProxySession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, wake: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        async def client_to_server() -> None:
            while True:
                data = await reader.read(READ)
                out = session.from_client(data, loop.time())
                self._note(session)
                for act in out:
                    if isinstance(act, Forward):
                        (up_writer if act.to == "server" else writer).write(act.data)
                    elif isinstance(act, Close):
                        await self._close(session, writer, up_writer, act)
                        done.set()
                        return
                if not data:
                    if up_writer.can_write_eof():
                        up_writer.write_eof()
                    return
                await up_writer.drain()

        async def server_to_client() -> None:
            shaped = self.latency is not None or self.bandwidth is not None
            while True:
                deadline = session.deadline()
                timeout = None if deadline is None else max(0.0, deadline - loop.time())
                read = asyncio.ensure_future(up_reader.read(READ))
                waker = asyncio.ensure_future(wake.wait())
                try:
                    # the core reads what it deferred a slice at a time once the server has
                    # been quiet for IDLE: while the stream flows, forwarding has the CPU
                    while session.backlog():
                        await asyncio.wait({read, waker}, timeout=IDLE, return_when=asyncio.FIRST_COMPLETED)
                        if read.done() or waker.done():
                            break
                        out = session.catch_up(SLICE)
                        self._note(session)
                        if out and await self._play(session, out, writer, up_writer, False):
                            done.set()
                            return
                    got, _ = await asyncio.wait({read, waker}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    read.cancel()
                    waker.cancel()
                    raise
                if read not in got:
                    read.cancel()
                    waker.cancel()
                    wake.clear()
                    out = session.tick(loop.time())
                    if delayed is not None:
                        await delayed.put((loop.time() + (self.latency or 0.0), out, True))
                    elif await self._play(session, out, writer, up_writer, False):
                        done.set()
                        return
                    continue
                waker.cancel()
                data = read.result()
                received = loop.time()
                if data and not shaped and session.passthrough():
                    # nothing can change these bytes: the client gets them before they are checked
                    writer.write(data)
                    session.defer(data, received)
                    backlog = session.backlog()
                    self.backlog_peak = max(self.backlog_peak, backlog)
                    out = []
                    if backlog > BACKLOG:
                        # the checks fell behind by the bound: they catch up, the stream waits
                        self.backpressure += 1
                        out = session.catch_up(backlog - BACKLOG // 2)
                else:
                    out = session.from_server(data, received)
                self._note(session)
                if delayed is not None:
                    # a pipeline: each chunk leaves `latency` after it arrived, the next is read meanwhile
                    await delayed.put((received + (self.latency or 0.0), out, bool(data)))
                    if not data:
                        return
                    continue
                if await self._play(session, out, writer, up_writer, shaped):
                    done.set()
                    return
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    done.set()
                    return

        delayed: asyncio.Queue[tuple[float, list[Any], bool]] | None = \
            asyncio.Queue(maxsize=256) if self.latency else None

        async def deliver() -> None:
            assert delayed is not None
            while True:
                at, out, more = await delayed.get()
                left = at - loop.time()
                if left > 0:
                    await asyncio.sleep(left)
                if await self._play(session, out, writer, up_writer, True):
                    done.set()
                    return
                if not more:
                    if writer.can_write_eof():
                        writer.write_eof()
                    done.set()
                    return

        tasks = [loop.create_task(client_to_server()), loop.create_task(server_to_client())]
        if delayed is not None:
            tasks.append(loop.create_task(deliver()))
        try:
            finished = loop.create_task(done.wait())
            await asyncio.wait([*tasks, finished], return_when=asyncio.FIRST_COMPLETED)
            if not done.is_set():
                # one side ended its sending: let the other finish (bounded), then close
                await asyncio.wait([*tasks, finished], timeout=5, return_when=asyncio.ALL_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            finished.cancel()

    def _note(self, session: ProxySession) -> None:
        """Log the session's new recorded messages, in arrival order (the control plane's
        transcript): one run per connection's turn, not one entry per message."""
        if session.spool is None:
            return
        have = self._counts.get(session.id, 0)
        total = session.spool.count
        if total > have:
            last = self.log[-1] if self.log else None
            if last is not None and last[0] == session.id and last[1] + last[2] == have:
                last[2] += total - have
            else:
                self.log.append([session.id, have, total - have])
            self.logged += total - have
            self._counts[session.id] = total

    async def _play(self, session: ProxySession, out: list[Any], writer: asyncio.StreamWriter,
                    up_writer: asyncio.StreamWriter, shaped: bool) -> bool:
        """Carry out the core's actions; True once the connection is closed."""
        for act in out:
            if isinstance(act, Forward):
                if act.to == "client":
                    if shaped and self.bandwidth:
                        # at most bandwidth bytes per second: pieces of a 50th of a second each
                        piece = max(1, self.bandwidth // 50)
                        for i in range(0, len(act.data), piece):
                            part = act.data[i:i + piece]
                            await asyncio.sleep(len(part) / self.bandwidth)
                            writer.write(part)
                            await writer.drain()
                    else:
                        writer.write(act.data)
                else:
                    up_writer.write(act.data)
            elif isinstance(act, Pause):
                await writer.drain()
                if act.seconds is None:
                    await asyncio.Event().wait()  # stalled for ever (until the client goes)
                await asyncio.sleep(act.seconds)
            elif isinstance(act, Close):
                await self._close(session, writer, up_writer, act)
                return True
        if writer.transport.get_write_buffer_size() > READ * 4:
            await writer.drain()
        return False

    async def _close(self, session: ProxySession, writer: asyncio.StreamWriter, up_writer: asyncio.StreamWriter,
                     act: Close) -> None:
        if act.everyone:
            for w, uw in list(self._links.values()):
                reset_connection(w)
                if uw is not None:
                    uw.transport.abort()
            return
        if act.reset:
            reset_connection(writer)
        else:
            await _drain_close(writer)
        up_writer.transport.abort()


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


async def _drain_close(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
    except (ConnectionError, OSError):
        pass
    writer.close()
