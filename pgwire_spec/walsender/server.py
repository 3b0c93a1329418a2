"""The asyncio shell around the sans-IO core, and a thread-backed wrapper for plain code.

>>> async with FakeWalsender("examples/scenarios/accounts.yaml") as server:
...     print(server.dsn)          # host=127.0.0.1 port=… dbname=postgres user=replicator password=…
...     ...                        # point pg_recvlogical, psycopg2, a subscriber … at it

>>> with SyncFakeWalsender(scenario) as server:   # plain pytest, no event loop needed
...     run_my_cdc_client(server.dsn)
...     assert server.transcript.pgoutput(1)[0].tag == "B"

Binds 127.0.0.1 on a free port unless told otherwise. Each connection is one task: it
feeds the core what the socket reads and writes what the core produces, waiting for the
socket to drain before asking for more (a slow consumer slows the producer down; nothing
piles up in memory). A long SQL statement's answer (the core's Compute) is computed by one
worker thread per server, so the loop goes on serving the other connections meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from .core import Close, Compute, Connection, Send, ServerState, Wait
from .faults import Fault
from .scenario import Limits, Scenario, load_scenario
from .transcript import Transcript

__all__ = ["FakeWalsender", "SyncFakeWalsender"]

#: Ask the core for more only when the socket's write buffer holds less than this.
HIGH_WATER = 1 << 18


def _as_scenario(scenario: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    return load_scenario(scenario)


class FakeWalsender:
    """A fake PostgreSQL walsender serving *scenario* (a :class:`Scenario`, a file path, a
    YAML/JSON text or a mapping). Use as ``async with``; ``host``, ``port`` and ``dsn`` tell
    clients where it listens; ``transcript`` records every message (``record=False`` to
    save memory); ``faults`` add to the scenario's own; ``limits`` replace the scenario's
    (connections, authentication timeout, message lengths). The transcript is unbounded
    unless ``transcript_limit`` (records kept in memory, a ring) or ``transcript_file``
    (older records spilled there as JSON lines, the rest at ``stop()``) is given."""

    def __init__(self, scenario: Scenario | str | Path | Mapping[str, Any], *, host: str = "127.0.0.1",
                 port: int = 0, record: bool = True, faults: list[Fault] | tuple[Fault, ...] = (),
                 limits: Limits | None = None, transcript_limit: int | None = None,
                 transcript_file: str | Path | None = None) -> None:
        self.scenario = _as_scenario(scenario)
        self._host = host
        self._port = port
        self.record = record
        self._limits = limits
        # The shell owns the real clocks, process id and randomness; the core is handed them.
        self.state = ServerState(self.scenario, record=record, extra_faults=list(faults),
                                 clock=time.monotonic, wall_clock=time.time,
                                 pid=20000 + (os.getpid() % 1000) * 10, random_bytes=os.urandom,
                                 limits=limits)
        if record and (transcript_limit is not None or transcript_file is not None):
            self.state.transcript = Transcript(max_records=transcript_limit, spill_to=transcript_file)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: dict[int, asyncio.StreamWriter] = {}
        #: connection id -> the event that wakes its task (a fault added at run time acts
        #: on the next message, also while the connection waits)
        self._wakes: dict[int, asyncio.Event] = {}
        #: The worker answering long statements (Compute), one at a time, in order.
        self._worker: ThreadPoolExecutor | None = None
        self.host = host
        self.port = port

    # -- where -----------------------------------------------------------------------------
    @property
    def user(self) -> str:
        users = self.scenario.auth.users
        return users[0][0] if users else "postgres"

    @property
    def password(self) -> str | None:
        users = self.scenario.auth.users
        return users[0][1] if users and self.scenario.auth.method != "trust" else None

    @property
    def dsn(self) -> str:
        """A libpq connection string (no ``replication=``: clients add it themselves)."""
        dsn = f"host={self.host} port={self.port} dbname={self.scenario.server.database} user={self.user}"
        if self.password is not None:
            dsn += " password=" + conninfo_value(self.password)
        return dsn

    @property
    def transcript(self) -> Transcript:
        if self.state.transcript is None:
            raise RuntimeError("this fake walsender does not record (record=False)")
        return self.state.transcript

    @property
    def slots(self) -> dict[str, Any]:
        return self.state.slots

    def add_fault(self, fault: Fault, *, connection: int | None = None) -> int:
        """Add a fault while the server runs; return its id. It acts on the running streams
        it selects from their next message on (only connection *connection* when given) and,
        without *connection*, on connections that authenticate or start streaming later.
        Call it on the server's loop (``SyncFakeWalsender.call``)."""
        index = self.state.add_fault(fault, connection=connection)
        for wake in self._wakes.values():
            wake.set()
        return index

    def remove_fault(self, index: int) -> None:
        """Remove a fault by its id (KeyError when there is none)."""
        self.state.remove_fault(index)

    async def reset(self, scenario: Scenario | str | Path | Mapping[str, Any] | None = None) -> None:
        """Drop every connection and start over: fresh slots, faults and transcript, on
        *scenario* (default: the current one)."""
        if scenario is not None:
            self.scenario = _as_scenario(scenario)
        for w in list(self._writers.values()):
            w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        old = self.state
        self.state = ServerState(self.scenario, record=self.record, clock=old.clock, wall_clock=old.wall_clock,
                                 pid=old.next_pid() + 10, random_bytes=old.random_bytes, limits=self._limits)

    # -- life cycle ------------------------------------------------------------------------
    async def start(self) -> FakeWalsender:
        self._server = await asyncio.start_server(self._client, self._host, self._port, limit=1 << 16,
                                                  reuse_address=True, backlog=1024)
        sock = self._server.sockets[0]
        self.host, self.port = sock.getsockname()[:2]
        return self

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for w in list(self._writers.values()):
            w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False, cancel_futures=True)
        if self.state.transcript is not None:
            self.state.transcript.close()

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    async def __aenter__(self) -> FakeWalsender:
        return await self.start()

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # -- connections -----------------------------------------------------------------------
    def crash(self) -> None:
        """Drop every connection at once (TCP reset), as a crashing server would."""
        for w in list(self._writers.values()):
            reset_connection(w)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = writer.get_extra_info("peername")
        # a TCP peer is (address, port[, flowinfo, scope]) (socket.getpeername)
        conn = self.state.connect(peer[0], peer[1]) if isinstance(peer, tuple) else self.state.connect("?")
        self._writers[conn.id] = writer
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        try:
            await self._run(conn, reader, writer)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            self._writers.pop(conn.id, None)
            self.state.forget(conn)
            if not writer.is_closing():
                writer.transport.abort()
            self._tasks.discard(task)

    async def _run(self, conn: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        self._wakes[conn.id] = wake

        readable = asyncio.Event()  # set when the core has consumed what was read
        readable.set()

        async def pump() -> None:
            # Input backpressure: read only while the core wants more (little buffered, or
            # the next message incomplete); otherwise the socket's buffers fill and the
            # client's sends block, as with a real server busy writing.
            try:
                while True:
                    if not conn.wants_input():
                        # Kick the core (it consumes what is buffered), then look again when
                        # it did, or soon: no lost wake-up can stall the connection.
                        readable.clear()
                        wake.set()
                        try:
                            await asyncio.wait_for(readable.wait(), 0.1)
                        except TimeoutError:
                            pass
                        continue
                    data = await reader.read(1 << 16)
                    conn.receive_data(data)
                    wake.set()
                    if not data:
                        return
            except (ConnectionError, OSError):
                conn.receive_data(b"")
                wake.set()

        pumper = loop.create_task(pump())
        transport = writer.transport
        # Keep the kernel fed between wake-ups; memory per connection stays bounded by
        # HIGH_WATER + one chunk (backpressure: the core is asked for more only below it).
        transport.set_write_buffer_limits(high=HIGH_WATER, low=HIGH_WATER // 4)
        try:
            while True:
                # Cleared before the core looks at its input: bytes the pump feeds from now
                # on leave it set, so a Wait below cannot sleep through them (with input
                # backpressure the pump may then be waiting for us: a lost wake-up would
                # stall both).
                wake.clear()
                action = conn.next_action(loop.time())
                if not readable.is_set():
                    readable.set()
                if isinstance(action, Send):
                    if transport.is_closing():
                        conn.receive_data(b"")
                        continue
                    writer.write(action.data)
                    if transport.get_write_buffer_size() > HIGH_WATER:
                        await writer.drain()
                    else:
                        await asyncio.sleep(0)  # let other connections and the reader run
                elif isinstance(action, Wait):
                    if transport.get_write_buffer_size():
                        await writer.drain()
                    if action.deadline is None:
                        await wake.wait()
                    else:
                        timeout = action.deadline - loop.time()
                        if timeout > 0:
                            try:
                                await asyncio.wait_for(wake.wait(), timeout)
                            except TimeoutError:
                                pass
                elif isinstance(action, Compute):
                    conn.computed(await self._compute(action))
                elif isinstance(action, Close):
                    if action.crash:
                        self.crash()
                    if action.reset:
                        reset_connection(writer)
                    else:
                        try:
                            await writer.drain()
                        except (ConnectionError, OSError):
                            pass
                        writer.close()
                    return
        finally:
            self._wakes.pop(conn.id, None)
            pumper.cancel()


    async def _compute(self, action: Compute) -> object:
        """Run a Compute's work on the worker thread; past its timeout (or when the
        connection's task is cancelled) tell it to stop, and wait until it did."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fake-walsender-sql")
        cancel = threading.Event()
        done = asyncio.get_running_loop().run_in_executor(self._worker, action.work, cancel.is_set)
        try:
            return await asyncio.wait_for(asyncio.shield(done), action.timeout)
        except TimeoutError:
            cancel.set()
            return await done
        except asyncio.CancelledError:
            cancel.set()  # the connection is gone: the work stops at its next checkpoint
            raise


def conninfo_value(value: str) -> str:
    """A libpq conninfo value: bare when it can be, else single-quoted with escapes."""
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def reset_connection(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashed server's connection ends."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class SyncFakeWalsender:
    """:class:`FakeWalsender` on an event loop in a background thread, for code without
    one: ``with SyncFakeWalsender(scenario) as server: …``."""

    def __init__(self, scenario: Scenario | str | Path | Mapping[str, Any], **kwargs: Any) -> None:
        self.server = FakeWalsender(scenario, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    def start(self) -> SyncFakeWalsender:
        if self._thread is not None:
            return self
        started = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.server.start())
            except BaseException as exc:  # reported to the caller
                error.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.server.stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-walsender", daemon=True)
        self._thread.start()
        started.wait()
        if error:
            self._thread = None
            raise error[0]
        return self

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the server's loop thread and return its result."""
        assert self._loop is not None
        fut: Any = asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop)
        return fut.result()

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> SyncFakeWalsender:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


async def _call(fn: Any, *args: Any) -> Any:
    return fn(*args)
