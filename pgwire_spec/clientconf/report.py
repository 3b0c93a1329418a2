"""Client-conformance reports: terminal lines per case, JUnit XML and a JSON index (the
shapes of the decoder suite's, :mod:`pgwire_spec.conformance.report`)."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree as ET

from .cases import CASES, Grade
from .runner import ClientResult

__all__ = ["print_grades", "index", "junit", "write_reports", "markdown_table"]

_MARK = {"passed": "PASS", "failed": "FAIL", "not applicable": "N/A "}


def summary_line(result: ClientResult) -> str:
    return (f"{result.count('passed')} passed, {result.count('failed')} failed, "
            f"{result.count('not applicable')} not applicable")


def print_grades(result: ClientResult, out: IO[str]) -> None:
    """One line per case, the evidence under each failure, then the summary."""
    print(f"client {result.name}: {result.command}", file=out)
    for g in result.grades:
        print(f"  {_MARK[g.status]} {g.case:16} {g.reason}", file=out)
        for line in g.evidence:
            print(f"         {line}", file=out)
        if g.status != "passed" and result.stderr.get(g.case):
            print("         client's stderr (last lines):", file=out)
            for line in result.stderr[g.case][-5:]:
                print(f"           {line}", file=out)
    print(summary_line(result), file=out)


def index(results: Sequence[ClientResult]) -> dict[str, Any]:
    return {
        "kind": "client-conformance",
        "generated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cases": [{"id": c.id, "title": c.title, "oracle": (c.oracle.__doc__ or "").strip()} for c in CASES],
        "clients": [{"name": r.name, "command": r.command, "summary": summary_line(r),
                     "grades": [g.as_json() for g in r.grades], "stderr": r.stderr} for r in results],
    }


def junit(results: Sequence[ClientResult]) -> ET.Element:
    suites = ET.Element("testsuites", name="pgwire-spec client conformance")
    for r in results:
        suite = ET.SubElement(suites, "testsuite", name=r.name, tests=str(len(r.grades)),
                              failures=str(r.count("failed")), skipped=str(r.count("not applicable")))
        for g in r.grades:
            tc = ET.SubElement(suite, "testcase", classname=f"client.{r.name}", name=g.case)
            if g.status == "failed":
                el = ET.SubElement(tc, "failure", message=g.reason)
                el.text = "\n".join(g.evidence)
            elif g.status == "not applicable":
                ET.SubElement(tc, "skipped", message=g.reason)
            else:
                ET.SubElement(tc, "system-out").text = g.reason
    return suites


def markdown_table(results: Sequence[ClientResult]) -> str:
    """Each case's grade per client, as a Markdown table (the README's)."""
    head = "| case | " + " | ".join(r.name for r in results) + " |"
    rule = "|---|" + "---|" * len(results)
    rows = []
    for c in CASES:
        cells = []
        for r in results:
            g: Grade | None = next((x for x in r.grades if x.case == c.id), None)
            cells.append("—" if g is None else {"passed": "pass", "failed": "**fail**",
                                                 "not applicable": "n/a"}[g.status])
        rows.append(f"| {c.id} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows])


def write_reports(results: Sequence[ClientResult], directory: Path | str) -> dict[str, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = {"junit": d / "junit.xml", "index": d / "index.json"}
    tree = ET.ElementTree(junit(results))
    ET.indent(tree)
    tree.write(paths["junit"], encoding="utf-8", xml_declaration=True)
    paths["index"].write_text(json.dumps(index(results), indent=2) + "\n", encoding="utf-8")
    return paths
