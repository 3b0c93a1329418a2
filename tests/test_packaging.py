"""The whole toolkit from a wheel: a clean virtualenv outside the checkout, the commands run
from another folder, the shipped corpus, spec/ and example scenarios found as package data."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests._venv import build_wheel, make_venv, outside_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv's bin folder."""
    return make_venv(tmp_path_factory.mktemp("venv") / "env", wheel).parent


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder outside the checkout to run the commands from."""
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def _run(bin_dir: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "pgwire-spec"), *args], capture_output=True, text=True, cwd=cwd,
                          env=outside_env(bin_dir / "python"), timeout=timeout)


def test_the_wheel_carries_every_shipped_file_once(wheel: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, packaged in (("fixtures", "fixtures"), ("spec", "spec"), ("examples", "examples"),
                             ("fuzz/campaigns", "campaigns")):
        shipped = {str(p.relative_to(root / folder)) for p in (root / folder).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}
        assert shipped, folder
        missing = {f for f in shipped if f"pgwire_spec/_data/{packaged}/{f}" not in names}
        assert not missing, (folder, sorted(missing)[:5])
    assert "pgwire_spec/py.typed" in names


def test_verify_fixtures_checks_the_whole_corpus_from_the_package(installed: Path, elsewhere: Path) -> None:
    proc = _run(installed, elsewhere, "verify-fixtures")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "(package)" in proc.stderr and "_data/fixtures" in proc.stderr
    cases = int(re.search(r"([\d,]+) cases in", proc.stdout).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert cases >= 95_000 and "all match" in proc.stdout


def test_conform_reference_runs_every_corpus_case(installed: Path, elsewhere: Path) -> None:
    proc = _run(installed, elsewhere, "conform", "--decoder", "reference", "--report", str(elsewhere / "r"))
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    last = [line for line in proc.stdout.splitlines() if re.match(r"\d+ passed, \d+ failed", line)][-1]
    passed, failed = (int(n) for n in re.findall(r"(\d+) (?:passed|failed)", last))
    assert passed >= 95_000 and failed == 0, last
    assert "_data/fixtures (package)" in proc.stderr  # it says which corpus it ran


def test_version_names_the_packaged_corpus(installed: Path, elsewhere: Path) -> None:
    proc = _run(installed, elsewhere, "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("pgwire-spec ")
    assert "corpus:" in proc.stdout and "(package)" in proc.stdout


def test_export_writes_the_corpus_and_the_schemas(installed: Path, elsewhere: Path) -> None:
    out = elsewhere / "export"
    proc = _run(installed, elsewhere, "export", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "fixtures" / "pg18-builtin.json.gz").is_file()
    assert (out / "fixtures" / "sessions").is_dir() and (out / "fixtures" / "physical").is_dir()
    json.loads((out / "spec" / "message.schema.json").read_text())
    assert (out / "examples" / "scenarios" / "accounts.yaml").is_file()
    again = _run(installed, elsewhere, "export", str(out))
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr


@pytest.mark.clients
@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node and npm are needed for pg-logical-replication (Debian: nodejs npm)")
def test_a_node_client_is_put_to_the_cases_with_the_exported_harness(installed: Path, elsewhere: Path) -> None:
    """The README's jsonl example from the package: the shipped Node harness exported, npm's
    pg-logical-replication installed apart, the client's hello giving its profile and shape."""
    from pgwire_spec.conformance.adapters.pg_logical_replication import install

    prefix = install()  # npm install pg-logical-replication (once, into the cache)
    exported = _run(installed, elsewhere, "export", "--only", "harnesses", "h")
    assert exported.returncode == 0, exported.stderr
    client = (f"node h/harnesses/pg_logical_replication_client.js {prefix} {{host}} {{port}} {{user}} {{dbname}} "
              f"{{slot}} {{options}}")
    proc = _run(installed, elsewhere, "conform", "--client-kind", "jsonl", "--client", client, "--sources", "fixture",
                "--only", "fixture/pg16/p1/", "--report", "r")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    index = json.loads((elsewhere / "r" / "index.json").read_text())
    assert index["summary"]["passed"] > 150, index["summary"]
    assert index["shape"]["name"] == "pg-logical-replication" and index["shape"]["not reported"]["Insert"] == ["xid"]
    assert "protocol 1, text, logical messages, origin, message level" in proc.stdout  # from its hello
    assert "compared through the shape pg-logical-replication" in proc.stderr and "not reported: xid" in proc.stderr


@pytest.fixture
def served(installed: Path, elsewhere: Path) -> Iterator[str]:
    """``pgwire-spec serve accounts`` from the package; its DSN."""
    proc = subprocess.Popen([str(installed / "pgwire-spec"), "serve", "accounts"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=elsewhere, env=outside_env(installed / "python"))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line + (proc.stderr.read() if proc.stderr else "")
        yield line.split("dsn: ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_an_example_scenario_by_name(served: str) -> None:
    with psycopg.connect(served, replication="database", autocommit=True) as conn:
        (row,) = conn.execute("IDENTIFY_SYSTEM").fetchall()
    assert len(row) == 4 and row[3] == "postgres"  # systemid, timeline, xlogpos, dbname


def test_an_unknown_scenario_name_lists_the_examples(installed: Path, elsewhere: Path) -> None:
    proc = _run(installed, elsewhere, "serve", "no-such-scenario")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "accounts" in proc.stderr and "no-such-scenario" in proc.stderr
