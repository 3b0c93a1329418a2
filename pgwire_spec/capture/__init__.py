"""Golden fixtures: capture real pgoutput streams, store them, verify them, check drift.

>>> from pgwire_spec.capture import run_capture, builtin_workload, write_fixture
>>> from pgwire_spec.servers import provider
>>> fixture = run_capture(provider("npm", 16), builtin_workload())
>>> write_fixture(fixture, "fixtures/pg16-builtin.json.gz")

The core pieces are sans-IO (the fixture format, verification, drift comparison); capture
itself talks to a server through psycopg.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .drift import Drift, compare
from .fixture import (
    FORMAT,
    FORMAT_VERSION,
    FixtureCase,
    FixtureError,
    FixtureFile,
    FixtureGroup,
    find_fixture_files,
    read_fixture,
    write_fixture,
)
from .flags import NOTES
from .options import OptionSet, option_sets
from .verify import Mismatch, VerifyReport, verify_fixture, verify_paths
from .workload import Workload, WorkloadError, builtin_workload, sql_workload

if TYPE_CHECKING:
    from .live import CaptureError, build_group, capture, run_capture

#: Capturing talks to servers (psycopg, the providers): imported on first use, so that
#: reading and verifying fixtures (``verify-fixtures``, ``conform``) imports no I/O module.
_SHELL = {"capture": "live", "run_capture": "live", "build_group": "live", "CaptureError": "live"}


def __getattr__(name: str) -> Any:
    if name in _SHELL:
        return getattr(importlib.import_module(f"{__name__}.{_SHELL[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "capture",
    "run_capture",
    "build_group",
    "builtin_workload",
    "sql_workload",
    "Workload",
    "OptionSet",
    "option_sets",
    "FixtureFile",
    "FixtureGroup",
    "FixtureCase",
    "read_fixture",
    "write_fixture",
    "find_fixture_files",
    "verify_fixture",
    "verify_paths",
    "VerifyReport",
    "Mismatch",
    "compare",
    "Drift",
    "NOTES",
    "FORMAT",
    "FORMAT_VERSION",
    "CaptureError",
    "FixtureError",
    "WorkloadError",
]


def fixture_name(major: int, workload: str) -> str:
    """The file name a capture is stored under: ``pg16-builtin.json.gz``."""
    import re

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", workload.split(":", 1)[-1])
    slug = "builtin" if workload.startswith("builtin") else slug.removesuffix(".sql")
    return f"pg{major}-{slug}.json.gz"
