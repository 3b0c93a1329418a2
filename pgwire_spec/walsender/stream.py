"""The stream interface: what runs a connection's COPY phase once a command started it.

A logical replication stream (START_REPLICATION … LOGICAL), a physical one (START_REPLICATION
[PHYSICAL], see ``pgwire_spec.physical.serve``) and BASE_BACKUP's COPY all implement it;
the connection's phase table hands every frontend message of the ``streaming`` phase to
``input`` and asks ``produce`` what to do next. A stream talks back through the
connection's public methods (``send``, ``send_error``, ``fatal``, ``record``, ``result``,
``keepalive``, ``start_stream``, ``finish_stream``, ``close``) and reads the server's
shared state (``conn.server``: slots, faults, clocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .faults import SLOT_ACTIONS
from .personas import ServerError

if TYPE_CHECKING:
    from .core import Action, Connection
    from .faults import Fault

__all__ = ["Stream", "CommandSource", "FaultTarget", "apply_fault"]


@runtime_checkable
class Stream(Protocol):
    """A running COPY stream of one connection."""

    def input(self, msg: Any, now: float) -> None:
        """A frontend message arrived (CopyData, CopyDone, Terminate, …)."""

    def produce(self, now: float) -> Action:
        """Output is wanted: queue messages on the connection and say what comes next
        (``Send``, ``Wait(deadline)`` or ``Close``)."""


class CommandSource(Protocol):
    """A scenario section that answers some replication commands itself and may start a
    :class:`Stream` for them (the physical server: START_REPLICATION PHYSICAL,
    BASE_BACKUP, READ_REPLICATION_SLOT, …)."""

    def command(self, conn: Connection, cmd: Any, now: float) -> bool | None:
        """True when a stream started, False when answered, None to let the core answer."""


class FaultTarget(Protocol):
    """What a fault acts on in a running stream (see :func:`apply_fault`)."""

    paused_until: float | None
    paused_forever: bool

    def release(self) -> None:
        """Free what the stream holds (its slot) before the connection goes."""

    def fault_keepalive(self) -> None:
        """Send a keepalive with replyRequested = 1."""

    def fault_shutdown(self) -> bool:
        """End the COPY from the server side as a shutting-down server does; False when the
        stream has no such end (the fault then does nothing)."""

    def end_after_error(self) -> None:
        """Leave the stream after a non-fatal ErrorResponse: back to ReadyForQuery."""

    def fault_stray_stream_abort(self, fault: Fault) -> bool:
        """Send PostgreSQL 18's unsolicited Stream Abort; False when the stream carries no
        pgoutput (the fault then does nothing)."""


def apply_fault(conn: Connection, f: Fault, target: FaultTarget, now: float) -> str:
    """Apply a fault that is due, for every kind of stream: ``"stop"`` (produce nothing more
    now), ``"go"``, or a modifier of the next message (corrupt, truncate, duplicate; see
    ``faults.modify_payload``)."""
    conn.record(event=f"fault:{f.action}")
    a = f.action
    if a in ("disconnect", "reset"):
        target.release()
        conn.close(reset=a == "reset")
        return "stop"
    if a == "crash":
        target.release()
        conn.close(reset=True, crash=True)
        if f.seconds:
            conn.server.down_until = conn.server.clock() + f.seconds
        return "stop"
    if a == "stall":
        if f.seconds is None:
            target.paused_forever = True
        else:
            target.paused_until = now + f.seconds
        return "stop"
    if a == "delay":
        target.paused_until = now + (f.seconds or 0.0)
        return "stop"
    if a == "keepalive":
        target.fault_keepalive()
        return "go"
    if a == "shutdown":
        return "stop" if target.fault_shutdown() else a
    if a == "stray_stream_abort":
        target.fault_stray_stream_abort(f)
        return "go"
    if a in SLOT_ACTIONS:
        conn.server.slot_fault(f, conn)
        return "stop"
    if a == "error":
        err = ServerError(f.sqlstate, f.message, severity=f.severity)
        if f.severity in ("FATAL", "PANIC"):
            target.release()
            conn.fatal(err)
        else:
            conn.send_error(err)
            target.end_after_error()
        return "stop"
    return a

