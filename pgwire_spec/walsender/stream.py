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

if TYPE_CHECKING:
    from .core import Action

__all__ = ["Stream"]


@runtime_checkable
class Stream(Protocol):
    """A running COPY stream of one connection."""

    def input(self, msg: Any, now: float) -> None:
        """A frontend message arrived (CopyData, CopyDone, Terminate, …)."""

    def produce(self, now: float) -> Action:
        """Output is wanted: queue messages on the connection and say what comes next
        (``Send``, ``Wait(deadline)`` or ``Close``)."""
