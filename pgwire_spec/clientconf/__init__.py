"""Client conformance: the fake walsender grades how a replication client *behaves*.

Each case (:data:`CASES`) is a scenario, the faults it plays and an oracle over the
transcript: keepalives with replyRequested answered in time, feedback on an idle server,
sane flush/apply positions, resuming after a reset without loss or duplicates, no hot loop
when the slot is missing or active. :func:`run_client` starts the client from a command
line for each case and returns a :class:`Grade` per case.

The applied hook: a client may print, on its stdout, one JSON line per transaction it
applied, ``{"applied": "0/16B3748"}`` (the Commit's end LSN), optionally with
``"changes": N`` (the row changes it applied); the oracles then also judge acknowledgements
against what was applied, duplicates, and what a streamed transaction applied.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .cases import CASES, ClientCase, Grade, HookLine, Run, case, parse_hook, parse_hook_line

if TYPE_CHECKING:
    from .report import index, junit, markdown_table, print_grades, write_reports
    from .runner import ClientCommandError, ClientResult, run_client

#: The shell (subprocesses, the asyncio server) is imported on first use: the catalogue and
#: its oracles import no I/O module.
_SHELL = {"run_client": "runner", "ClientResult": "runner", "ClientCommandError": "runner",
          "print_grades": "report", "write_reports": "report", "index": "report", "junit": "report",
          "markdown_table": "report"}


def __getattr__(name: str) -> Any:
    if name in _SHELL:
        return getattr(importlib.import_module(f"{__name__}.{_SHELL[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CASES", "ClientCase", "Grade", "HookLine", "Run", "case", "parse_hook", "parse_hook_line", "run_client", "ClientResult",
           "ClientCommandError", "print_grades", "write_reports", "index", "junit", "markdown_table"]
