"""A fuzz campaign on a real standalone Spark cluster: master and worker started from the
pyspark installation on 127.0.0.1 (tests/_spark.py), the package shipped with the job."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard
from tests._spark import StandaloneCluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def test_campaign_on_a_standalone_cluster_ships_the_package(spark_standalone: StandaloneCluster,
                                                             tmp_path: Path) -> None:
    from pgwire_spec.fuzz.spark import run_campaign

    campaign = Campaign(name="standalone", engines=("mutate",), corpus=("builtin",), seed=3, cases=2_000,
                        budget=120, shards_per_core=1)
    lines: list[str] = []
    report = run_campaign(campaign, master=spark_standalone.master_url, out=tmp_path, say=lines.append)
    assert report.master == spark_standalone.master_url
    assert report.cores == 2 and len(report.shards) == 2
    assert any("package shipped" in ln for ln in lines)
    assert report.cases == 4_000 and report.findings == ()
    # the executors ran in processes of the cluster, not in this one
    assert all(s.pid != os.getpid() for s in report.shards)
    assert [s.crc for s in report.shards] == [run_shard(sh, builtin_streams()).crc
                                              for sh in plan_shards(campaign, 2)]
    assert (tmp_path / "summary.json").exists()
