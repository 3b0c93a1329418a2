"""The physical side's serving logic is sans-IO: WAL, history, the recording's model,
BASE_BACKUP and the walsender hooks import no socket, asyncio, selectors, ssl, subprocess
or psycopg (STYLE.md point 1). Reading a recording file or capturing one may."""

from __future__ import annotations

import subprocess
import sys

MODULES = ["pgwire_spec.physical.wal", "pgwire_spec.physical.history", "pgwire_spec.physical.recording",
           "pgwire_spec.physical.backup", "pgwire_spec.physical.serve", "pgwire_spec.physical.scenario"]
FORBIDDEN = ["socket", "asyncio", "selectors", "ssl", "subprocess", "psycopg"]


def test_the_serving_modules_import_no_io_module() -> None:
    code = "import sys\n" + "".join(f"import {m}\n" for m in MODULES) + \
        f"print([m for m in {FORBIDDEN!r} if m in sys.modules])\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
