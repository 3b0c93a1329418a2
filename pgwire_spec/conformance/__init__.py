"""The conformance suite for pgoutput decoders (``pgwire-spec conform``).

A decoder plugs in through the adapter contract (spec/adapter-contract.md): in process
with a Python function, or as a subprocess speaking JSON lines. The suite's cases come
from the golden fixtures, the built-in seed streams, generated valid streams and malformed
streams with their expected rule; each has a stable id, a description, the docs section it
tests and a level (MUST, or SHOULD: run with ``strict=True``).

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
    SubprocessAdapter,
    serve,
)
from .adapters import DECODERS, open_command, open_decoder
from .cases import Case, ExpectedError, collect_cases
from .report import print_summary, summary_line, write_reports
from .runner import RunResult, Verdict, judge, run_cases

__all__ = [
    "Adapter",
    "AdapterError",
    "CaseResult",
    "FunctionAdapter",
    "SubprocessAdapter",
    "serve",
    "DECODERS",
    "open_decoder",
    "open_command",
    "Case",
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
