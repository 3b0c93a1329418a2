"""Client-conformance reports: terminal lines per case, JUnit XML, a JSON index and one
HTML file (the shapes of the decoder suite's, drawn by its renderer,
:mod:`pgwire_spec.conformance.report`): each case's grade per client, then every failure
with its evidence, the message it is about marked."""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree as ET

from ..conformance.report import html_page, html_table
from .cases import CASES, Grade
from .runner import ClientResult

__all__ = ["print_grades", "index", "junit", "write_reports", "markdown_table", "html_report"]

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


_CELL = {"passed": ("ok", "pass"), "failed": ("bad", "fail"), "not applicable": ("na", "n/a")}


def html_report(results: Sequence[ClientResult]) -> str:
    """The HTML report: the case × client grid, each case's check, then each failure with
    the transcript lines around it (the one it is about marked) and the client's stderr."""
    esc = html.escape
    rows = []
    for c in CASES:
        row = [("k", c.id)]
        for r in results:
            g = next((x for x in r.grades if x.case == c.id), None)
            row.append(("none", "–") if g is None else _CELL[g.status])
        rows.append(row)
    checks = html_table(["case", "what the oracle checks"],
                        [[("k", c.id), ("", (c.oracle.__doc__ or c.title).strip())] for c in CASES], css="m caps")
    failures = []
    for r in results:
        for g in r.grades:
            if g.status != "failed":
                continue
            lines = [f'<span class="hl">{esc(e)}</span>' if e.startswith(">") else esc(e) for e in g.evidence]
            err = r.stderr.get(g.case) or []
            failures.append(
                f'<div class="fail"><h3>{esc(r.name)} <span class="lvl">{esc(g.case)}</span></h3>'
                f"<div><b>{esc(g.reason)}</b></div><pre>{chr(10).join(lines) or 'no transcript lines'}</pre>"
                + (f"<div>client's stderr (last lines)</div><pre>{esc(chr(10).join(err[-5:]))}</pre>" if err else "")
                + "</div>")
    summary = "; ".join(f"{esc(r.name)}: {esc(summary_line(r))}" for r in results)
    commands = "".join(f"<li><b>{esc(r.name)}</b>: <code>{esc(r.command)}</code></li>" for r in results)
    return html_page(
        "pgwire-spec client conformance", summary,
        "<h2>Grades (case × client)</h2>" + html_table(["case", *(r.name for r in results)], rows)
        + f"<h2>Clients</h2><ul>{commands}</ul>"
        + f"<h2>Failures ({sum(r.count('failed') for r in results)})</h2>{''.join(failures) or '<p>none</p>'}"
        + "<h2>Cases</h2>" + checks)


def write_reports(results: Sequence[ClientResult], directory: Path | str) -> dict[str, Path]:
    """Write ``junit.xml``, ``index.json`` and ``report.html`` into *directory*."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = {"junit": d / "junit.xml", "index": d / "index.json", "html": d / "report.html"}
    tree = ET.ElementTree(junit(results))
    ET.indent(tree)
    tree.write(paths["junit"], encoding="utf-8", xml_declaration=True)
    paths["index"].write_text(json.dumps(index(results), indent=2) + "\n", encoding="utf-8")
    paths["html"].write_text(html_report(results), encoding="utf-8")
    return paths
