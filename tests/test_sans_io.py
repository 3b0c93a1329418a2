"""The core is sans-IO: grammar, decoder, encoder, readers and the replication command
language import no socket, asyncio, selectors, ssl or subprocess (STYLE.md, point 1)."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "pgwire_spec",
    "pgwire_spec.pgoutput.decoder",
    "pgwire_spec.replication.messages",
    "pgwire_spec.replication.commands",
    "pgwire_spec.wire",
    "pgwire_spec.jsonform",
    "pgwire_spec.walsender.core",
    "pgwire_spec.walsender.faults",
    "pgwire_spec.proxy.core",
    "pgwire_spec.clientconf",
    "pgwire_spec.clientconf.cases",
]
#: aiohttp: the control plane's HTTP server stays in its shell (pgwire_spec.control).
FORBIDDEN = ["socket", "asyncio", "selectors", "ssl", "subprocess", "aiohttp"]


def test_core_imports_no_io_modules() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + f"print([m for m in {FORBIDDEN!r} if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
