"""The conformance suite for pgoutput decoders (``pgwire-spec conform``).

A decoder plugs in through the adapter contract (spec/adapter-contract.md): in process
with a Python function, or as a subprocess speaking JSON lines. The suite's cases come
from the golden fixtures, the built-in seed streams, generated valid streams and malformed
streams with their expected rule; each has a stable id, a description, the docs section it
tests and a level (MUST, or SHOULD: run with ``strict=True``). A decoder declares a
capability :class:`Profile` (protocol versions, streaming, two-phase, binary, logical
messages, origin, and level ``message`` or ``stream``); only the cases inside it are run,
the rest are "not claimed", and the verdict is whether it conforms to its profile.

    from pgwire_spec.conformance import collect_cases, open_decoder, run_cases
    with open_decoder("pypgoutput") as adapter:
        result = run_cases(adapter, collect_cases())
    print(result.count("failed"))
"""

from __future__ import annotations

from .adapter import (
    Adapter,
    AdapterError,
    CaseResult,
    FunctionAdapter,
    Skip,
    SubprocessAdapter,
    serve,
)
from .adapters import CLIENTS, DECODERS, open_client, open_command, open_decoder
from .cases import Case, ExpectedError, collect_cases
from .profile import Needs, Profile, ProfileError
from .report import print_summary, summary_line, write_reports
from .runner import RunResult, Verdict, judge, run_cases
from .verdicts import CapabilityRow, Defect, capability_rows, defects, discover

__all__ = [
    "Adapter",
    "AdapterError",
    "CaseResult",
    "FunctionAdapter",
    "Skip",
    "SubprocessAdapter",
    "serve",
    "DECODERS",
    "CLIENTS",
    "open_decoder",
    "open_client",
    "open_command",
    "Case",
    "Profile",
    "ProfileError",
    "Needs",
    "CapabilityRow",
    "Defect",
    "capability_rows",
    "defects",
    "discover",
    "ExpectedError",
    "collect_cases",
    "RunResult",
    "Verdict",
    "judge",
    "run_cases",
    "print_summary",
    "summary_line",
    "write_reports",
]
