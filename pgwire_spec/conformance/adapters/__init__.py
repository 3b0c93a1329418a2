"""Adapters shipped with the conformance runner, by the name ``--decoder`` takes.

``reference``
    this package's own decoder (strict), in process: the control, it must pass everything;
``pypgoutput``
    the PyPI package ``pypgoutput``, run out of process (it can loop forever on bad input);
``pg-logical-replication``
    the npm package ``pg-logical-replication``: its pgoutput parser driven by a small Node
    script; the package is installed with ``npm install`` into a cache directory on first use.

Clients streamed the cases through the fake walsender (``--client``, :mod:`.wire`):

``pg-logical-replication``
    the same npm package as a whole client (LogicalReplicationService and PgoutputPlugin:
    connect, START_REPLICATION, parse, acknowledge), printing what it decoded as JSON lines;
any other command
    ``pg_recvlogical`` (the ``pgrecvlogical`` kind) or a program speaking the ``jsonl`` kind.

``--decoder module:function`` loads any in-process Python entry point
(``decode_case(context, payloads) -> results``, see :mod:`..adapter`); its capability
profile is the function's ``profile`` attribute, else the module's ``profile`` (a function
returning it, or its JSON form).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from ..adapter import Adapter, AdapterError, FunctionAdapter, SubprocessAdapter, profile_of
from ..profile import Profile

__all__ = ["DECODERS", "CLIENTS", "open_decoder", "open_command", "open_client"]


def _reference(timeout: float) -> Adapter:
    # the reference alone is memoised (decode_case_kept says why); a decoder under test never
    from .reference import PROFILE, VERSION, decode_case_kept

    return FunctionAdapter(decode_case_kept, name="reference", version=VERSION, timeout=timeout, profile=PROFILE)


def _pypgoutput(timeout: float) -> Adapter:
    return SubprocessAdapter([sys.executable, "-m", "pgwire_spec.conformance.adapters.pypgoutput"],
                             timeout=timeout, name="pypgoutput")


def _pg_logical_replication(timeout: float) -> Adapter:
    from .pg_logical_replication import command

    return SubprocessAdapter(command(), timeout=timeout, name="pg-logical-replication")


#: Named decoders: name -> factory(timeout) -> Adapter.
DECODERS: dict[str, Callable[[float], Adapter]] = {
    "reference": _reference,
    "pypgoutput": _pypgoutput,
    "pg-logical-replication": _pg_logical_replication,
}


def _pg_logical_replication_client(timeout: float) -> Adapter:
    from .pg_logical_replication import CLIENT_OPTIONS, client_command
    from .wire import WireAdapter

    return WireAdapter(client_command(), "jsonl", name="pg-logical-replication (client)", timeout=timeout,
                       sendable=CLIENT_OPTIONS)


#: Named clients: name -> factory(timeout) -> Adapter.
CLIENTS: dict[str, Callable[[float], Adapter]] = {
    "pg-logical-replication": _pg_logical_replication_client,
}


def open_client(command: str, kind: str | None = None, timeout: float = 10.0,
                profile: Profile | None = None, shape: str | None = None) -> Adapter:
    """The adapter of a client streamed the cases through the fake walsender: a named one
    (:data:`CLIENTS`) or a command of *kind* (``pgrecvlogical`` or ``jsonl``; default: from
    the program's name) whose ``native`` lines are mapped by *shape* (a shipped shape's name
    or a JSON file; default: the one its hello names)."""
    from .wire import WireAdapter

    factory = CLIENTS.get(command)
    if factory is not None and kind in (None, "jsonl"):
        return factory(timeout)
    if kind is not None and kind not in ("pgrecvlogical", "jsonl"):
        raise AdapterError(f"client kind: expected pgrecvlogical or jsonl, found {kind!r}")
    return WireAdapter(command, kind, timeout=timeout, profile=profile, shape=shape)  # type: ignore[arg-type]


def open_decoder(name: str, timeout: float = 10.0) -> Adapter:
    """The adapter of a named decoder, or of ``module:function`` (in process)."""
    factory = DECODERS.get(name)
    if factory is not None:
        return factory(timeout)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
            fn = getattr(module, attr)
        except (ImportError, AttributeError) as exc:
            raise AdapterError(f"cannot load decoder entry point {name!r}: {exc}") from None
        declared = getattr(fn, "profile", None)
        if declared is None:
            declared = getattr(module, "profile", None)
        return FunctionAdapter(fn, name=name, timeout=timeout, profile=profile_of(declared, f"the profile of {name}"))
    raise AdapterError(
        f"unknown decoder {name!r}: expected one of {', '.join(DECODERS)} or module:function"
    )


def open_command(command: str, timeout: float = 10.0) -> Adapter:
    """The adapter of a subprocess command speaking the JSON-lines contract."""
    return SubprocessAdapter(command, timeout=timeout)
