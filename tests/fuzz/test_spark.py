"""The fuzz campaign as a real Spark job on local[2]; fixture verification as a Spark job.
(The standalone cluster is in test_spark_standalone.py: one SparkContext per process.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.corpus.seeds import builtin_streams
from pgwire_spec.fuzz.shards import Campaign, plan_shards, run_shard

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

BUGGY = Path(__file__).with_name("_buggy_adapter.py")

SMALL = Campaign(name="test", engines=("mutate",), corpus=("builtin",), seed=7, cases=3_000, budget=120,
                 shards_per_core=2)


def test_campaign_on_local2_gathers_every_shard(spark_local: Any, tmp_path: Path) -> None:
    from pgwire_spec.fuzz.spark import format_report, run_campaign

    lines: list[str] = []
    report = run_campaign(SMALL, spark=spark_local, out=tmp_path, say=lines.append)
    assert report.cores == 2
    assert [s.index for s in report.shards] == [0, 1, 2, 3]
    assert all(s.cases == 3_000 for s in report.shards)
    assert report.cases == 12_000
    assert all(s.accepted + s.rejected == s.cases for s in report.shards)
    # the reference holds on every case: no finding
    assert report.findings == ()
    # same seed, same cases: each shard's CRC is the one a plain in-process run gives
    shards = plan_shards(SMALL, 2)
    streams = builtin_streams()
    assert [s.crc for s in report.shards] == [run_shard(sh, streams).crc for sh in shards]
    # outputs
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == 12_000 and summary["findings"] == 0
    assert [s["cases"] for s in summary["shards"]] == [3_000] * 4
    assert all(s["cases_per_second"] > 0 for s in summary["shards"])
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "findings.parquet")
    assert table.num_rows == 0 and "signature" in table.column_names
    assert any("campaign test" in ln for ln in lines)
    text = format_report(report)
    assert "findings: none" in text and "12,000 cases" in text


def test_a_planted_bug_is_found_minimised_and_replayable(spark_local: Any, tmp_path: Path) -> None:
    """A decoder with a planted bug (tests/fuzz/_buggy_adapter.py: trailing bytes after an
    Insert ignored), fuzzed differentially on Spark: the finding comes back once, minimised,
    in the Parquet table and as a regression fixture that replays by id."""
    from pgwire_spec.cli import main
    from pgwire_spec.fuzz.spark import run_campaign

    cmd = f"{sys.executable} {BUGGY}"
    campaign = Campaign(name="planted", adapter_cmd=cmd, target="adapter", engines=("mutate",),
                        corpus=("builtin",), seed=1, cases=1_500, budget=120, shards_per_core=1)
    report = run_campaign(campaign, spark=spark_local, out=tmp_path, say=lambda m: None)
    sigs = {f.signature: f for f in report.findings}
    assert "diff:accepts:I:trailing-bytes" in sigs, sorted(sigs)
    found = sigs["diff:accepts:I:trailing-bytes"]
    assert found.minimised is not None
    small = [p for p in found.minimised if p[:1] == b"I"]
    assert small and len(small[0]) < max(len(p) for p in found.payloads if p[:1] == b"I") + 1
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "findings.parquet").to_pylist()
    assert found.id in {row["id"] for row in table}
    fixture = tmp_path / "findings" / f"{found.id}.json"
    assert fixture.exists()
    # replay: the buggy decoder still fails, the reference (the bug fixed) passes
    assert main(["fuzz", "--replay", found.id, "--out", str(tmp_path), "--adapter-cmd", cmd]) == 1
    assert main(["fuzz", "--replay", found.id, "--out", str(tmp_path), "--target", "reference"]) == 0


def test_verify_fixtures_as_a_spark_job(spark_local: Any) -> None:
    from pgwire_spec.corpus.load import fixtures_root
    from pgwire_spec.fuzz.spark import verify_fixtures_spark

    root = fixtures_root()
    if root is None:
        pytest.skip("no golden fixtures in this checkout (fixtures/)")
    files = sorted(root.glob("pg1[45]-*.json*"))
    report = verify_fixtures_spark(files, spark=spark_local, say=lambda m: None)
    assert report.files == len(files) and report.cases > 1000
    assert report.mismatches == []


def test_the_cli_main_job_prints_its_report(spark_local: Any, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``pgwire-spec fuzz --campaign smoke --master local[2] --out DIR`` (here with a case
    count instead of the smoke campaign's 60 s): both engines, the shipped corpus, the
    reference; exit 0, the report on stdout, progress on stderr."""
    from pgwire_spec.cli import main

    code = main(["fuzz", "--campaign", "smoke", "--cases", "400", "--master", "local[2]", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "fuzz campaign smoke: target reference" in out
    assert "engine mutate:" in out and "engine generate:" in out and "findings: none" in out
    assert "[fuzz] campaign smoke" in err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["campaign"]["name"] == "smoke" and summary["cases"] == 400 * len(summary["shards"])


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stopped_campaign_writes_what_finished_and_stops_spark(tmp_path: Path, sig: str) -> None:
    import re
    import signal
    import subprocess
    import time

    from tests._spark import require_spark

    require_spark()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "pgwire_spec", "fuzz", "--master", "local[2]", "--budget", "60",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    for line in proc.stderr:  # until the shards run (a progress line with cases)
        if re.search(r"\[fuzz\].* [1-9][\d,]* cases", line) or time.monotonic() > deadline:
            break
    time.sleep(2)
    proc.send_signal(getattr(signal, sig))
    rest = proc.stderr.read()
    status = proc.wait(60)
    assert status == 128 + getattr(signal, sig), rest
    assert "Traceback" not in rest and "interrupted:" in rest
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"].startswith("interrupted")
    assert summary["cases"] == sum(s["cases"] for s in summary["shards"])


@pytest.mark.slow
def test_the_main_job_prints_no_spark_or_jvm_notices(tmp_path: Path) -> None:
    import subprocess

    from tests._spark import require_spark

    require_spark()
    proc = subprocess.run([sys.executable, "-m", "pgwire_spec", "fuzz", "--master", "local[1]", "--budget", "2",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # stderr is the job's own progress; Spark's and the JVM's start-up chatter is not
    assert [line for line in proc.stderr.splitlines() if not line.startswith("[fuzz]")] == []


def test_a_timed_campaign_of_both_engines_runs_two_waves(spark_local: Any, tmp_path: Path) -> None:
    """Both engines on a time budget: a first wave measures the yields, the second gives the
    generate engine its share (the floor: against the reference neither engine finds
    anything), and the summary says so."""
    from pgwire_spec.fuzz.spark import format_report, run_campaign

    c = Campaign(name="waves", engines=("mutate", "generate"), corpus=("builtin",), seed=3, budget=10,
                 explore=0.5, shards_per_core=1, generate_floor=0.05)
    lines: list[str] = []
    report = run_campaign(c, spark=spark_local, out=tmp_path, say=lines.append)
    assert any("wave 2" in ln and "generate engine gets 5%" in ln for ln in lines), lines
    assert report.generate_fraction == pytest.approx(0.05)
    first = plan_shards(c, 2, budget=5)
    second = [s for s in report.shards if s.index >= len(first)]
    assert second and {s.engine for s in second} == {"generate", "mutate"}
    gen2 = [s for s in second if s.engine == "generate"]
    assert len(gen2) == 1 and gen2[0].seconds < 2.5  # 5% of 2 cores × 5 s = 0.5 s, plus its start
    assert json.loads((tmp_path / "summary.json").read_text())["generate_fraction"] == 0.05
    assert "second wave: the generate engine had 5%" in format_report(report)
