"""Conformance reports: a terminal summary, JUnit XML, a JSON index and one HTML file.

Each gives the verdict per capability of the claimed profile (one line, test case or row
per capability, :mod:`.verdicts`) and the distinct defects with their smallest example.
The HTML report is self-contained (inline CSS, no script, no external resource): the
capability table, the defects, a matrix of message kind × protocol version with the judged
payloads passed/total per cell, then every failure with its hex payloads, the expected and
the actual answer.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections import defaultdict
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree as ET

from ..pgoutput.messages import MESSAGE_TYPES
from .profile import Profile
from .runner import RunResult, Verdict
from .verdicts import CapabilityRow, Defect, capability_rows, covered, defects, discover

__all__ = ["summary_line", "print_summary", "write_reports", "matrix", "index", "html_page", "html_table"]

_MAX_SHOWN = 25
#: Failures shown in full in the HTML report (all of them are in index.json and junit.xml).
_HTML_FAILURES = 1000


def summary_line(result: RunResult) -> str:
    """``N passed, N failed, N skipped`` (the terminal summary's last line), then ``, N not
    claimed`` when cases fell outside the claimed profile."""
    unclaimed = result.count("not claimed")
    na = result.count("not applicable")
    return (f"{result.count('passed')} passed, {result.count('failed')} failed, "
            f"{result.count('skipped')} skipped" + (f", {na} not applicable" if na else "")
            + (f", {unclaimed} not claimed" if unclaimed else ""))


def profile_origin(result: RunResult) -> str:
    """Where the judged profile came from."""
    if result.profile_source == "default":
        return "no profile declared: judged on everything"
    if result.profile_source == "declared":
        return "declared by the decoder"
    return "claimed on the command line" + (
        f"; the decoder declares {result.declared.label()}" if result.declared is not None else "")


def verdict_line(result: RunResult) -> str:
    """``conforms to its profile (…)`` or ``does not conform …``."""
    what = f"profile ({result.profile.label()})"
    if result.ok:
        return f"conforms to its {what}"
    failed = sum(1 for v in result.must_failed) + sum(
        1 for v in result.verdicts if v.claimed and v.status == "failed" and v.case.level == "SHOULD")
    return f"does not conform to its {what}: {failed} claimed case(s) not passed"


def _example_lines(d: Defect, indent: str = "       ") -> list[str]:
    v = d.example
    lines = [f"{indent}smallest: {v.case.id} ({json.dumps(dict(v.case.context), separators=(',', ':'))})"]
    for i, p in enumerate(v.case.payloads):
        h = p.hex()
        lines.append(f"{indent}{'>>' if i == d.index else '  '} #{i} {h if len(h) <= 96 else h[:95] + '…'}")
    lines.append(f"{indent}expected: {_one_line(json.dumps(v.expected), 160)}")
    lines.append(f"{indent}actual:   {_one_line(json.dumps(v.actual), 160)}")
    return lines


def print_summary(result: RunResult, out: IO[str], *, verbose: bool = False) -> None:
    """The terminal summary: the profile, one line per capability, the distinct defects
    with their smallest example, per source and level, the first failures, the verdict and
    the count line."""
    out.write(f"decoder: {result.decoder} {result.version}".rstrip() + "\n")
    out.write(f"profile: {result.profile.label()} ({profile_origin(result)})\n")
    out.write("capabilities:\n")
    for row in capability_rows(result):
        out.write(f"  {row.name:<19} {row.status:<12} {row.text()}\n")
    if result.run_all:
        found = discover(result)
        out.write("discovered: " + (f"the largest profile it conforms to is {found.label()} "
                                    f"({covered(result, found):,} cases)\n"
                                    f"  --claim \"{found.spec()}\"\n" if found is not None
                                    else "it conforms to no profile (every profile holds a failing case)\n"))
    claimed_failed = [v for v in result.verdicts if v.status == "failed" and v.claimed]
    found_defects = defects(claimed_failed)
    if found_defects:
        out.write(f"defects ({len(found_defects)} distinct, in {len(claimed_failed)} failed cases):\n")
        shown = found_defects if verbose else found_defects[:_MAX_SHOWN]
        for n, d in enumerate(shown, 1):
            out.write(f"  {n:2d}. {d.title} ({d.count:,} case{'s' if d.count != 1 else ''})\n")
            for line in _example_lines(d):
                out.write(line + "\n")
        if len(found_defects) > len(shown):
            out.write(f"  … and {len(found_defects) - len(shown)} more (see the report)\n")
    skips = _skip_reasons([v for v in result.verdicts if v.claimed], result.profile)
    if skips:
        out.write("skipped:\n")
        for reason, n in list(skips.items())[:_MAX_SHOWN]:
            out.write(f"  {n:6d} × {reason}\n")
    by: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for v in result.verdicts:
        row = by[(v.case.source, v.case.level)]
        row[3 if not v.claimed else ("passed", "failed", "skipped", "not claimed", "not applicable").index(v.status)] += 1
    for (source, level), (p, f, s, u, na) in sorted(by.items()):
        out.write(f"  {source:<10} {level:<6} {p:6d} passed {f:6d} failed {s:6d} skipped"
                  + (f" {na:6d} not applicable" if na else "") + (f" {u:6d} not claimed" if u else "") + "\n")
    failed = claimed_failed
    if failed:
        out.write("failures:\n")
        for v in failed[: len(failed) if verbose else _MAX_SHOWN]:
            out.write(f"  FAIL [{v.case.level}] {v.case.id}: {_one_line(v.reason)}\n")
        if not verbose and len(failed) > _MAX_SHOWN:
            out.write(f"  … and {len(failed) - _MAX_SHOWN} more (see the report)\n")
    out.write(verdict_line(result) + "\n")
    out.write(summary_line(result) + "\n")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _gists(failed: list[Verdict]) -> list[tuple[str, int]]:
    """Failure reasons grouped without their numbers, most frequent first."""
    by_reason: dict[str, int] = defaultdict(int)
    for v in failed:
        by_reason[_gist(v.reason)] += 1
    return sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))


def _gist(reason: str) -> str:
    """A failure reason without its case-specific numbers, to group failures."""
    import re

    text = re.sub(r"#\d+", "#N", reason)
    text = re.sub(r"\[\d+\]", "[i]", text)
    text = re.sub(r"\b\d+\b", "N", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    return _one_line(text, 120)


def matrix(result: RunResult) -> tuple[list[str], list[int], dict[tuple[str, int], list[int]]]:
    """Kinds (rows), protocol versions (columns) and per cell ``[passed, total]`` payload
    checks."""
    cells: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for v in result.verdicts:
        if v.status in ("skipped", "not applicable") or not v.claimed:
            continue
        for kind, pv, ok in v.checks:
            cell = cells[(kind, pv)]
            cell[0] += int(ok)
            cell[1] += 1
    order = list(MESSAGE_TYPES)
    kinds = sorted({k for k, _ in cells}, key=lambda k: (order.index(k) if k in order else len(order), k))
    versions = sorted({pv for _, pv in cells} | {1, 2, 3, 4})
    return kinds, versions, dict(cells)


def _row_json(row: CapabilityRow) -> dict[str, Any]:
    return {"capability": row.name, "claimed": row.claimed, "status": row.status, "text": row.text(),
            "passed": row.passed, "failed": row.failed, "skipped": row.skipped, "not_claimed": row.unclaimed,
            "outside_passed": row.outside_passed, "outside_failed": row.outside_failed}


def _defect_json(d: Defect) -> dict[str, Any]:
    v = d.example
    return {"kind": d.kind, "what": d.what, "rule": d.rule, "cases": d.count,
            "example": {"id": v.case.id, "context": dict(v.case.context),
                        "payloads": [p.hex() for p in v.case.payloads], "index": d.index,
                        "reason": v.reason, "expected": v.expected, "actual": v.actual}}


def _verdict_json(v: Verdict) -> dict[str, Any]:
    """A case in the index; the bytes and answers only for failures (the cases themselves
    are reproducible by id)."""
    c = v.case
    out: dict[str, Any] = {
        "id": c.id, "description": c.description, "section": c.section, "level": c.level,
        "source": c.source, "status": v.status, "flags": list(c.flags), "seconds": round(v.seconds, 6),
    }
    if v.status != "passed":
        out["reason"] = v.reason
    if v.status == "failed":
        out.update({"context": dict(c.context), "payloads": [p.hex() for p in c.payloads], "index": v.index,
                    "expected": v.expected, "actual": v.actual})
    return out


def _groups(result: RunResult) -> dict[str, dict[str, int]]:
    """Cases per group (source and level) and status."""
    out: dict[str, dict[str, int]] = defaultdict(
        lambda: {"passed": 0, "failed": 0, "skipped": 0, "not claimed": 0, "not applicable": 0})
    for v in result.verdicts:
        out[f"{v.case.source}/{v.case.level}"][v.status if v.claimed else "not claimed"] += 1
    return dict(out)


def _skip_reasons(verdicts: list[Verdict], profile: Profile) -> dict[str, int]:
    """Skipped and not claimed cases (run anyway or not), counted per reason."""
    reasons: dict[str, int] = defaultdict(int)
    for v in verdicts:
        if not v.claimed:
            needs = v.needs if v.needs is not None else v.case.needs
            reasons[f"not claimed: needs {', '.join(profile.missing(needs))}"] += 1
        elif v.status in ("skipped", "not applicable"):
            reasons[_one_line(v.reason, 300)] += 1
    return dict(sorted(reasons.items(), key=lambda kv: -kv[1]))


def index(result: RunResult) -> dict[str, Any]:
    """The JSON index: summary, matrix, counts per group and skip reason, and every case
    that did not pass with its bytes and answers (passing cases only as counts: each is
    reproducible by its id, and a passing run stays small)."""
    kinds, versions, cells = matrix(result)
    return {
        "decoder": result.decoder,
        "version": result.version,
        "strict": result.strict,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "summary": {s: result.count(s) for s in ("passed", "failed", "skipped", "not claimed", "not applicable")},
        "ok": result.ok,
        "profile": {"judged": result.profile.to_json(), "label": result.profile.label(),
                    "origin": profile_origin(result),
                    "declared": None if result.declared is None else result.declared.to_json()},
        "verdict": verdict_line(result),
        **({"shape": {"name": result.shape.name, "compared": {
            ms.type: [f for f, _, _ in ms.fields] for ms in result.shape.messages},
            "not reported": {t: sorted(f) for t, f in result.shape.unreported.items() if f}}}
           if result.shape is not None else {}),
        "capabilities": [_row_json(r) for r in capability_rows(result)],
        "defects": [_defect_json(d) for d in defects(v for v in result.verdicts if v.claimed)],
        **({"discovered": _discovered_json(result)} if result.run_all else {}),
        "seconds": round(result.seconds, 3),
        "matrix": {k: {str(pv): cells.get((k, pv), [0, 0]) for pv in versions} for k in kinds},
        "groups": _groups(result),
        "skipped": _skip_reasons(result.verdicts, result.profile),
        "failures": [_verdict_json(v) for v in result.verdicts if v.status == "failed"],
    }


def _discovered_json(result: RunResult) -> dict[str, Any] | None:
    found = discover(result)
    return None if found is None else {"profile": found.to_json(), "label": found.label(), "claim": found.spec()}


def _junit_profile(result: RunResult, suites: ET.Element) -> None:
    """A suite with one test case per capability (failed: its claimed cases did not all
    pass; skipped: not claimed), and one per distinct defect."""
    rows = capability_rows(result)
    suite = ET.SubElement(
        suites, "testsuite", name=f"{result.decoder}.profile", tests=str(len(rows)),
        failures=str(sum(r.status == "fails" for r in rows)),
        skipped=str(sum(r.status == "not claimed" for r in rows)),
    )
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="profile", value=result.profile.spec())
    for row in rows:
        tc = ET.SubElement(suite, "testcase", classname="profile", name=f"{row.name}: {row.text()}")
        if row.status == "fails":
            ET.SubElement(tc, "failure", message=f"{row.name}: {row.text()}")
        elif row.status == "not claimed":
            ET.SubElement(tc, "skipped", message=f"{row.name}: {row.text()}")
    found = defects(v for v in result.verdicts if v.claimed)
    dsuite = ET.SubElement(suites, "testsuite", name=f"{result.decoder}.defects", tests=str(len(found)),
                           failures=str(len(found)), skipped="0")
    for d in found:
        tc = ET.SubElement(dsuite, "testcase", classname="defect", name=f"{d.title} ({d.count} cases)")
        node = ET.SubElement(tc, "failure", message=d.title)
        node.text = "\n".join(line.strip() for line in _example_lines(d, ""))


def _junit(result: RunResult) -> ET.Element:
    suites = ET.Element("testsuites", name=f"pgwire-spec conform {result.decoder}")
    _junit_profile(result, suites)
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in result.verdicts:
        groups[v.case.source].append(v)
    for source, verdicts in groups.items():
        suite = ET.SubElement(
            suites, "testsuite", name=f"{result.decoder}.{source}", tests=str(len(verdicts)),
            failures=str(sum(v.status == "failed" and v.claimed for v in verdicts)),
            skipped=str(sum(v.status in ("skipped", "not applicable") or not v.claimed for v in verdicts)),
            time=f"{sum(v.seconds for v in verdicts):.3f}",
        )
        # failures one by one; passes and skips as one test case per level and reason, so
        # that a passing run of 96k cases is a few lines, not megabytes
        for v in verdicts:
            if v.status == "failed" and v.claimed:
                tc = ET.SubElement(suite, "testcase", classname=f"{source}.{v.case.level}", name=v.case.id,
                                   time=f"{v.seconds:.6f}")
                node = ET.SubElement(tc, "failure", message=_one_line(v.reason, 500))
                node.text = _failure_text(v)
        for level in sorted({v.case.level for v in verdicts}):
            passed = [v for v in verdicts if v.case.level == level and v.status == "passed" and v.claimed]
            if passed:
                ET.SubElement(suite, "testcase", classname=f"{source}.{level}",
                              name=f"{len(passed)} {level} cases passed", time=f"{sum(v.seconds for v in passed):.3f}")
        for reason, count in _skip_reasons(verdicts, result.profile).items():
            tc = ET.SubElement(suite, "testcase", classname=f"{source}.skipped", name=f"{count} cases: {reason}")
            ET.SubElement(tc, "skipped", message=reason)
    return suites


def _failure_text(v: Verdict) -> str:
    lines = [v.case.description, f"section: {v.case.section}", f"context: {json.dumps(dict(v.case.context))}"]
    for i, p in enumerate(v.case.payloads):
        mark = ">>" if i == v.index else "  "
        lines.append(f"{mark} #{i} {p.hex()}")
    lines.append(f"expected: {json.dumps(v.expected)}")
    lines.append(f"actual:   {json.dumps(v.actual)}")
    return "\n".join(lines)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:2em}
table.m{border-collapse:collapse} table.m td,table.m th{border:1px solid #ccc;padding:3px 8px;text-align:center}
table.m th{background:#f4f4f4} td.k{text-align:left;font-weight:600}
td.ok{background:#d9f2d9} td.bad{background:#f8d0d0} td.part{background:#fbe9c0} td.none{color:#aaa}
.sum{font-size:1.1em;margin:1em 0} .fail{border:1px solid #e3b4b4;border-radius:4px;margin:1em 0;padding:.5em 1em}
.fail h3{font-size:1em;margin:.2em 0} pre{background:#f7f7f7;padding:.5em;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.hl{background:#ffe08a} .lvl{font-size:.8em;padding:1px 5px;border-radius:3px;background:#eee}
table.caps td{text-align:left} td.na{background:#eee;color:#666}
"""


def html_page(title: str, summary: str, body: str) -> str:
    """A self-contained report page (inline CSS, no script): the decoder suite's and the
    client-conformance report's one renderer. *summary* and *body* are HTML."""
    esc = html.escape
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{esc(title)}</h1><div class=\"sum\">{summary}</div>{body}</body></html>\n")


def html_table(head: list[str], rows: list[list[tuple[str, str]]], css: str = "m") -> str:
    """A matrix: *head* cells (text), rows of (CSS class, text) cells; the first cell of a
    row is its key (class ``k`` unless given)."""
    esc = html.escape
    out = [f'<table class="{css}"><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="{cls}">{esc(text)}</td>' if cls else f"<td>{esc(text)}</td>"
                                    for cls, text in row) + "</tr>")
    return "".join(out) + "</table>"


def _html_profile(result: RunResult) -> str:
    esc = html.escape
    rows = []
    for row in capability_rows(result):
        cls = {"conforms": "ok", "fails": "bad", "not claimed": "na"}.get(row.status, "none")
        rows.append(f'<tr><td class="k">{esc(row.name)}</td><td>{"yes" if row.claimed else "no"}</td>'
                    f'<td class="{cls}">{esc(row.status)}</td><td>{esc(row.text())}</td></tr>')
    found = defects(v for v in result.verdicts if v.claimed)
    items = []
    for d in found:
        v = d.example
        hexes = "\n".join(
            f'<span class="hl">{esc(f"#{i} {p.hex()}")}</span>' if i == d.index else esc(f"#{i} {p.hex()}")
            for i, p in enumerate(v.case.payloads))
        items.append(
            f'<div class="fail defect"><h3>{esc(d.title)} <span class="lvl">{d.count:,} case(s)</span></h3>'
            f"<div>smallest: {esc(v.case.id)} — context <code>{esc(json.dumps(dict(v.case.context)))}</code></div>"
            f"<pre>{hexes}</pre><div>expected <code>{esc(_one_line(json.dumps(v.expected), 400))}</code></div>"
            f"<div>actual <code>{esc(_one_line(json.dumps(v.actual), 400))}</code></div></div>")
    discovered = ""
    if result.run_all:
        found_profile = discover(result)
        discovered = ("<p>Discovered: the largest profile it conforms to is <b>"
                      f"{esc(found_profile.label())}</b> (<code>--claim \"{esc(found_profile.spec())}\"</code>).</p>"
                      if found_profile is not None else "<p>Discovered: it conforms to no profile.</p>")
    return (
        f"<h2>Profile: {esc(result.profile.label())}</h2>"
        f"<p>{esc(profile_origin(result))}. <b>{esc(verdict_line(result))}</b>.</p>{discovered}"
        '<table class="m caps"><tr><th>capability</th><th>claimed</th><th>verdict</th><th>cases</th></tr>'
        f'{"".join(rows)}</table>'
        f"<h2>Defects ({len(found)} distinct)</h2>{''.join(items) or '<p>none</p>'}"
    )


def _html(result: RunResult) -> str:
    esc = html.escape
    kinds, versions, cells = matrix(result)
    rows: list[list[tuple[str, str]]] = []
    for k in kinds:
        row = [("k", k)]
        for pv in versions:
            ok, total = cells.get((k, pv), [0, 0])
            cls = "none" if total == 0 else "ok" if ok == total else "bad" if ok == 0 else "part"
            row.append((cls, "–" if total == 0 else f"{ok}/{total}"))
        rows.append(row)
    failures = []
    failed = [x for x in result.verdicts if x.status == "failed" and x.claimed]
    for v in failed[:_HTML_FAILURES]:
        hexes = []
        for i, p in enumerate(v.case.payloads):
            line = f"#{i} {p.hex()}"
            hexes.append(f'<span class="hl">{esc(line)}</span>' if i == v.index else esc(line))
        failures.append(
            f'<div class="fail"><h3><span class="lvl">{v.case.level}</span> {esc(v.case.id)}</h3>'
            f"<div>{esc(v.case.description)} — <i>{esc(v.case.section)}</i></div>"
            f"<div><b>{esc(v.reason)}</b></div>"
            f"<div>context: <code>{esc(json.dumps(dict(v.case.context)))}</code></div>"
            f"<pre>{chr(10).join(hexes)}</pre>"
            f"<div>expected</div><pre>{esc(json.dumps(v.expected, indent=1, ensure_ascii=False))}</pre>"
            f"<div>actual</div><pre>{esc(json.dumps(v.actual, indent=1, ensure_ascii=False))}</pre></div>"
        )
    skipped = result.count("skipped")
    summary = (f"{esc(summary_line(result))} — "
               f"{'every MUST case passed' if not result.must_failed else f'{len(result.must_failed)} MUST case(s) not passed'}"
               f"{' (strict)' if result.strict else ''}")
    return html_page(
        f"pgwire-spec conformance: {result.decoder} {result.version}", summary,
        _html_profile(result)
        + "<h2>Message kind × protocol version (payloads judged: passed/total)</h2>"
        + html_table(["message", *(f"protocol {pv}" for pv in versions)], rows)
        + f"<p>{skipped} case(s) skipped{' (SHOULD cases run only with --strict)' if not result.strict else ''}.</p>"
        + "".join(f"<p>{n} case(s) {esc(reason)}</p>" for reason, n in _skip_reasons(result.verdicts, result.profile).items()
                  if reason.startswith("not applicable"))
        + f"<h2>Failures ({result.count('failed')})</h2>{''.join(failures) or '<p>none</p>'}"
        + (f"<p>… and {len(failed) - _HTML_FAILURES} more failures: every one, with its hex, expected and actual "
           f"answer, is in index.json and junit.xml.</p>" if len(failed) > _HTML_FAILURES else "")
        + "<h2>Most frequent failures</h2><table class=\"m\">"
        + "".join(f"<tr><td>{n}</td><td class=\"k\">{esc(g)}</td></tr>" for g, n in _gists(failed)[:20])
        + "</table>")


def write_reports(result: RunResult, directory: Path | str) -> dict[str, Path]:
    """Write ``junit.xml``, ``index.json`` and ``report.html`` into *directory*."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"junit": out / "junit.xml", "index": out / "index.json", "html": out / "report.html"}
    tree = ET.ElementTree(_junit(result))
    ET.indent(tree)
    tree.write(paths["junit"], encoding="utf-8", xml_declaration=True)
    paths["index"].write_text(json.dumps(index(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    paths["html"].write_text(_html(result), encoding="utf-8")
    return paths
