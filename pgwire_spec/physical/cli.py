"""``pgwire-spec capture --physical``: record physical streams into ``OUT/physical/``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from ..servers import parse_majors, provider

__all__ = ["capture_physical", "recording_name"]


def recording_name(major: int) -> str:
    """``pg15-timeline-switch.json.gz``."""
    return f"pg{major}-timeline-switch.json.gz"


def capture_physical(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Record one physical recording per provider and major (default: system, 15)."""
    from .capture import record_physical
    from .recording import verify_recording, write_recording

    if args.dsn or args.sql or args.setup or args.publication or args.option_sets or args.sessions:
        print("pgwire-spec capture: error: --physical runs its own servers and workload; --dsn, --sql, --setup, "
              "--publication, --option-sets and --sessions do not apply", file=sys.stderr)
        return 2
    names = [n.strip() for n in (args.providers or "system").split(",") if n.strip()]
    majors = parse_majors(args.majors or "15")
    for name in names:
        for major in majors:
            prov = provider(name, major, bin_dir=args.bin_dir)
            started = time.monotonic()
            rec = record_physical(prov, progress=say)
            _, problems = verify_recording(rec)
            if problems:
                for p in problems[:20]:
                    print(p, file=sys.stderr)
                return 1
            name_ = recording_name(rec.major)
            if args.no_gzip:
                name_ = name_.removesuffix(".gz")
            path = write_recording(rec, args.out / "physical" / name_)
            tl = ", ".join(f"timeline {t}: {rec.store.range(t)[1] - rec.store.range(t)[0]:,} bytes"
                           for t in rec.store.timelines)
            print(f"{path}: {sum(len(c.messages) for c in rec.conversations)} messages, {tl}, "
                  f"{path.stat().st_size:,} bytes, PostgreSQL {rec.server_version} ({prov.describe()}), "
                  f"{time.monotonic() - started:.1f} s")
    return 0
