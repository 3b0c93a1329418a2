"""spark-submit entry point of a fuzz campaign.

    spark-submit --master spark://HOST:7077 --py-files pgwire_spec.zip \
        fuzz/campaign.py fuzz/campaigns/smoke.yaml --out reports/fuzz [--budget S] [--seed N]

Make the zip with ``python -c "from pgwire_spec.fuzz.spark import package_zip; print(package_zip('.'))"``
(or run from a checkout: this script puts the checkout on sys.path). The master comes from
spark-submit; everything else is the same job as ``pgwire-spec fuzz``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import pgwire_spec  # noqa: F401
except ImportError:  # run from a checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from pyspark.sql import SparkSession

    from pgwire_spec.errors import PgWireError
    from pgwire_spec.fuzz.campaigns import load_campaign
    from pgwire_spec.fuzz.shards import Campaign
    from pgwire_spec.fuzz.spark import format_report, run_campaign

    p = argparse.ArgumentParser(prog="campaign.py", description=__doc__.split("\n\n")[0])
    p.add_argument("campaign", help="campaign file (YAML) or name in fuzz/campaigns/")
    p.add_argument("--out", help="output directory (findings/, findings.parquet, summary.json)")
    p.add_argument("--budget", type=float)
    p.add_argument("--cases", type=int)
    p.add_argument("--seed", type=int)
    args = p.parse_args(argv)
    try:
        campaign = load_campaign(args.campaign)
        data = campaign.to_dict()
        data.update({k: v for k, v in (("budget", args.budget), ("cases", args.cases), ("seed", args.seed))
                     if v is not None})
        campaign = Campaign.from_mapping(data)
        spark = SparkSession.builder.appName(f"pgwire-spec fuzz {campaign.name}").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            report = run_campaign(campaign, spark=spark, out=args.out,
                                  say=lambda m: print(m, file=sys.stderr, flush=True))
        finally:
            spark.stop()
    except PgWireError as exc:
        print(f"campaign.py: error: {exc}", file=sys.stderr)
        return 1
    print(format_report(report))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
