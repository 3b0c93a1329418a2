"""The reference decoder behind the subprocess contract, slowed to 50 ms a case, then hung
(a decoder in an endless loop does not read its stdin, so it does not notice the runner
going away); it writes its process id to the file named by $SLOW_ADAPTER_PID (for tests that
stop the CLI mid-run)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pgwire_spec.conformance.adapter import serve
from pgwire_spec.conformance.adapters.reference import decode_case as reference

_served = 0


def decode_case(context: Mapping[str, Any], payloads: Sequence[bytes]) -> list[dict[str, Any]]:
    global _served
    _served += 1
    time.sleep(0.05 if _served < 5 else 120)
    return reference(context, payloads)


if __name__ == "__main__":
    Path(os.environ["SLOW_ADAPTER_PID"]).write_text(str(os.getpid()))
    sys.exit(serve(decode_case, name="slow", version="0"))
