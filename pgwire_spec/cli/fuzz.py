"""``pgwire-spec fuzz``: a fuzz campaign as a Spark job, or the replay of one finding."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--campaign", metavar="FILE|NAME",
                   help="a campaign definition (YAML), or the name of one in fuzz/campaigns/; "
                        "the options below override it")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--target", metavar="NAME",
                       help="reference (default), or a decoder of `pgwire-spec conform` (differential)")
    which.add_argument("--adapter-cmd", metavar="CMD", help="a subprocess adapter (differential)")
    p.add_argument("--engine", choices=("mutate", "generate", "both"), help="default: both")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="about this much wall time (default: 60)")
    p.add_argument("--cases", type=int, metavar="N",
                   help="exactly N cases per shard (reproducible; the budget stays a safety limit)")
    p.add_argument("--seed", type=int, help="campaign seed (default: 0): same seed, same cases")
    p.add_argument("--corpus", metavar="SOURCES",
                   help="comma-separated: builtin, fixtures[:PATH], findings:PATH (default: builtin,fixtures)")
    p.add_argument("--shards-per-core", type=int, metavar="N", help="default: 2")
    p.add_argument("--case-timeout", type=float, metavar="SECONDS", help="per-case timeout (default: 2)")
    p.add_argument("--master", default="local[*]", metavar="URL",
                   help="Spark master: local[*] (default), local[N], spark://host:7077 …")
    p.add_argument("--out", metavar="DIR", help="write findings/, findings.parquet and summary.json here")
    p.add_argument("--replay", metavar="ID",
                   help="re-run a finding's regression fixture (looked up in --out, fixtures/ and ./findings)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def _campaign(args: argparse.Namespace) -> Any:
    from ..fuzz.campaigns import load_campaign
    from ..fuzz.shards import Campaign

    base = load_campaign(args.campaign) if args.campaign else Campaign(name="cli")
    over: dict[str, Any] = {}
    if args.target:
        over["target"], over["adapter_cmd"] = args.target, None
    if args.adapter_cmd:
        over["adapter_cmd"], over["target"] = args.adapter_cmd, "adapter"
    if args.engine:
        over["engines"] = ("mutate", "generate") if args.engine == "both" else (args.engine,)
    for key in ("budget", "cases", "seed", "shards_per_core", "case_timeout"):
        value = getattr(args, key)
        if value is not None:
            over[key] = value
    if args.corpus:
        over["corpus"] = tuple(s.strip() for s in args.corpus.split(",") if s.strip())
    data = base.to_dict()
    data.update(over)
    return Campaign.from_mapping(data)


def run(args: argparse.Namespace) -> int:
    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.replay:
        from ..fuzz.findings import read_regression, replay

        dirs = [d for d in (args.out, "reports/fuzz", "findings", "fixtures") if d]
        finding, path = read_regression(args.replay, dirs)
        say(f"[fuzz] replaying {finding.id} from {path}")
        still = replay(finding, target=args.target, adapter_cmd=args.adapter_cmd, say=print)
        return 1 if still else 0
    from ..fuzz.spark import format_report, run_campaign

    campaign = _campaign(args)
    if "fixtures" in campaign.corpus:
        from .. import __version__
        from .._resources import ResourceError, data_source

        try:
            say(f"[fuzz] corpus: {data_source('fixtures')} of pgwire-spec {__version__}")
        except ResourceError as exc:
            say(f"[fuzz] corpus: no golden fixtures ({exc}); the built-in streams only")
    out = Path(args.out) if args.out else None
    report = run_campaign(campaign, master=args.master, out=out, say=say, bar=not args.quiet)
    print(format_report(report))
    return 1 if report.findings else 0
