"""Run conformance cases against an adapter and judge each answer.

Only the cases inside the decoder's claimed :class:`~.profile.Profile` are run (its
declared profile, or ``profile=`` given by the caller, e.g. ``--claim``); the others are
"not claimed", never failures. ``run_all=True`` runs them too (``--discover``), still
marked as outside the claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import Any, Literal

from .adapter import Adapter, CaseResult
from .cases import Case, kind_of
from .profile import Needs, Profile
from .shapes import Shape, compare_only

__all__ = ["Status", "Verdict", "RunResult", "judge", "run_cases", "first_difference"]

Status = Literal["passed", "failed", "skipped", "not claimed", "not applicable"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one case.

    ``checks`` lists ``(kind, protocol_version, ok)`` per judged payload (the matrix cells);
    ``index`` is the payload the failure is about; ``expected``/``actual`` what should have
    come out there and what did.
    """

    case: Case
    status: Status
    reason: str = ""
    index: int | None = None
    expected: Any = None
    actual: Any = None
    checks: tuple[tuple[str, int, bool], ...] = ()
    seconds: float = 0.0
    #: whether the case is inside the claimed profile (a case outside it is only run
    #: with ``run_all``; otherwise its status is "not claimed")
    claimed: bool = True
    #: what the case needs of a decoder
    needs: Needs | None = None


@dataclass
class RunResult:
    """Every verdict of a run, with the adapter's name and version, the profile the run
    judged (``profile``) and the one the adapter declared (``declared``, ``None``: none)."""

    decoder: str
    version: str
    verdicts: list[Verdict] = field(default_factory=list)
    strict: bool = False
    seconds: float = 0.0
    profile: Profile = field(default_factory=Profile)
    declared: Profile | None = None
    run_all: bool = False
    #: where ``profile`` came from: "given" (by the caller, e.g. --claim), "declared" (by
    #: the adapter) or "default" (none declared: everything)
    profile_source: str = "default"
    #: the shape the client reported in (a client's own objects mapped by a table), whose
    #: unreported fields were not compared; None: the JSON form itself, every field compared
    shape: Shape | None = None

    def count(self, status: Status) -> int:
        """Cases inside the claim with this status; ``"not claimed"``: the cases outside it."""
        if status == "not claimed":
            return sum(1 for v in self.verdicts if not v.claimed)
        return sum(1 for v in self.verdicts if v.claimed and v.status == status)

    @property
    def must_failed(self) -> list[Verdict]:
        """Claimed MUST cases that did not pass (failed, or skipped by the adapter; a case
        that cannot be put to the decoder at all is neither)."""
        return [v for v in self.verdicts if v.claimed and v.case.level == "MUST"
                and v.status not in ("passed", "not applicable")]

    @property
    def ok(self) -> bool:
        """Conforms to the claimed profile: every claimed MUST case passed (and, with strict,
        no claimed SHOULD case failed)."""
        return not self.must_failed and not any(
            v.claimed and v.status == "failed" for v in self.verdicts
        )


def first_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """The path of the first difference between two JSON values (``new_tuple[2].text``)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual:
                return f"{path}.{key}".lstrip(".") + " (missing)"
            if key not in expected:
                return f"{path}.{key}".lstrip(".") + " (unexpected)"
            sub = first_difference(expected[key], actual[key], f"{path}.{key}")
            if sub is not None:
                return sub
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            sub = first_difference(e, a, f"{path}[{i}]")
            if sub is not None:
                return sub
        if len(expected) != len(actual):
            return f"{path.lstrip('.')} ({len(expected)} items expected, {len(actual)} found)".lstrip()
        return None
    if expected != actual or type(expected) is not type(actual):
        return path.lstrip(".") or "(value)"
    return None


def _error_text(entry: Mapping[str, Any]) -> str:
    err = entry.get("error")
    if isinstance(err, Mapping):
        text = str(err.get("message", ""))
        rule = err.get("rule")
        return f"{text}" if not rule or str(rule) in text else f"[{rule}] {text}"
    return str(err)


def judge(case: Case, answer: CaseResult, *, strict: bool = False, claimed: bool = True,
          needs: Needs | None = None) -> Verdict:
    """Judge an adapter's answer to *case* (*claimed* and *needs* are carried into a
    passing verdict; :func:`run_cases` sets them on the others)."""
    pv = case.protocol_version
    if case.level == "SHOULD" and not strict:  # pragma: no cover - filtered before running
        return Verdict(case, "skipped", "SHOULD case (run with --strict)")
    if answer.skip is not None:
        return Verdict(case, "skipped", f"skipped by the decoder: {answer.skip}", seconds=answer.seconds)
    if answer.not_applicable is not None:
        return Verdict(case, "not applicable", f"not applicable: {answer.not_applicable}", seconds=answer.seconds)
    cells = case.checks
    if answer.failure is not None:
        i = answer.index
        return Verdict(case, "failed", answer.failure, i, None if i is None else _expected_at(case, i), answer.actual,
                       tuple((c.kind, pv, False) for c in cells), answer.seconds)
    if answer.crash is not None:
        return Verdict(case, "failed", f"adapter crashed: {answer.crash}", index=None,
                       expected=_expected_at(case, cells[0].index if cells else 0), actual=answer.crash,
                       checks=tuple((c.kind, pv, False) for c in cells), seconds=answer.seconds)
    results = answer.results
    err_at = next((i for i, r in enumerate(results) if "error" in r), None)

    def fail(reason: str, index: int | None, expected: Any, actual: Any) -> Verdict:
        return Verdict(case, "failed", reason, index, expected, actual,
                       tuple((c.kind, pv, False) for c in cells), answer.seconds)

    if err_at is not None and any(isinstance(e := r.get("error"), Mapping) and e.get("crash")
                                  for r in results[err_at:]):
        i = err_at if err_at is not None else 0
        return fail(f"adapter crashed: {_error_text(results[i])}", i, _expected_at(case, i), results[i])
    if case.error is None:
        n = len(case.payloads)
        if err_at is not None and err_at < n:
            kind = kind_of(case.payloads[err_at])
            what = "the message under test" if case.checked == (err_at,) else f"message #{err_at} ({kind})"
            return fail(f"rejected {what}: {_error_text(results[err_at])}", err_at,
                        case.expected[err_at], results[err_at])
        if err_at is not None and err_at == n:
            return fail(f"rejected the end of a valid stream: {_error_text(results[err_at])}", n,
                        None, results[err_at])
        if len(results) < n:
            return fail(f"answered {len(results)} results for {n} payloads", len(results),
                        case.expected[len(results)] if len(results) < len(case.expected) else None, None)
        checks = []
        first_bad: tuple[int, str] | None = None
        for c in cells:
            got = results[c.index].get("message")
            want = compare_only(case.expected[c.index], answer.unreported)
            ok = got == want
            checks.append((c.kind, pv, ok))
            if not ok and first_bad is None:
                first_bad = (c.index, first_difference(want, got) or "(value)")
        if first_bad is not None:
            i, where = first_bad
            return Verdict(case, "failed", f"message #{i} ({kind_of(case.payloads[i])}) differs at {where}",
                           i, compare_only(case.expected[i], answer.unreported), results[i].get("message"),
                           tuple(checks), answer.seconds)
        return Verdict(case, "passed", checks=tuple(checks), seconds=answer.seconds, claimed=claimed,
                       needs=needs)
    # a malformed case
    want_i, want_rule = case.error.index, case.error.rule
    expected = {"error": {"rule": want_rule, "index": want_i}}
    if err_at is None:
        if len(results) < want_i + (0 if want_i == len(case.payloads) else 1):
            return fail(f"answered {len(results)} results, expected a rejection at #{want_i}",
                        want_i, expected, None)
        got = results[want_i].get("message") if want_i < len(results) else None
        what = "the end of the stream" if want_i == len(case.payloads) else f"message #{want_i}"
        return fail(f"accepted {what}; expected a rejection ({want_rule})", want_i, expected, got)
    if err_at < want_i:
        return fail(f"rejected message #{err_at} ({kind_of(case.payloads[err_at])}), which is valid: "
                    f"{_error_text(results[err_at])}", err_at, case.expected[err_at]
                    if err_at < len(case.expected) else None, results[err_at])
    if err_at > want_i:
        return fail(f"accepted message #{want_i}; rejected #{err_at} instead ({want_rule} expected)",
                    want_i, expected, results[want_i])
    rule = results[err_at]["error"].get("rule") if isinstance(results[err_at]["error"], Mapping) else None
    if rule is not None and not case.error.accepts(str(rule)):
        return fail(f"rejected with rule {rule!r}, expected {want_rule!r}", err_at, expected, results[err_at])
    return Verdict(case, "passed", checks=tuple((c.kind, pv, True) for c in cells), seconds=answer.seconds,
                   claimed=claimed, needs=needs)


def _expected_at(case: Case, index: int) -> Any:
    if case.error is not None and index == case.error.index:
        return {"error": {"rule": case.error.rule, "index": index}}
    return case.expected[index] if index < len(case.expected) else None


def run_cases(
    adapter: Adapter,
    cases: Iterable[Case],
    *,
    strict: bool = False,
    profile: Profile | None = None,
    run_all: bool = False,
    progress: Callable[[int, int, Verdict], None] | None = None,
) -> RunResult:
    """Run the cases inside the claimed profile (*profile*, else the adapter's declared one,
    else everything; SHOULD cases only with *strict*) and judge the answers. With *run_all*
    the cases outside the claim are run too (to discover what the decoder supports)."""
    todo: Sequence[Case] = list(cases)
    declared = adapter.profile
    claim = profile or declared or Profile()
    result = RunResult(adapter.name, adapter.version, strict=strict, profile=claim, declared=declared,
                       run_all=run_all, profile_source="given" if profile else "declared" if declared else "default",
                       shape=adapter.shape)
    t0 = time.perf_counter()
    verdicts: list[Verdict | None] = [None] * len(todo)
    done = 0

    def settle(n: int, verdict: Verdict) -> None:
        nonlocal done
        verdicts[n] = verdict
        done += 1
        if progress is not None:
            progress(done, len(todo), verdict)

    pending: list[tuple[int, Case, bool]] = []  # (position, case, claimed): run in batches

    def flush() -> None:
        answers = adapter.run_batch([c for _, c, _ in pending])
        for (n, case, claimed), answer in zip(pending, answers, strict=True):
            needs = case.needs
            verdict = judge(case, answer, strict=strict, claimed=claimed, needs=needs)
            if verdict.needs is not needs:  # a verdict other than a pass
                verdict = _replace(verdict, claimed=claimed, needs=needs)
            settle(n, verdict)
        pending.clear()

    size = max(1, adapter.batch)
    missing_of: dict[Needs, tuple[str, ...]] = {}  # a few hundred distinct needs
    for n, case in enumerate(todo):
        needs = case.needs
        missing = missing_of.get(needs)
        if missing is None:
            missing = missing_of[needs] = claim.missing(needs)
        if missing and not run_all:
            settle(n, Verdict(case, "not claimed", f"not claimed: needs {', '.join(missing)}",
                              claimed=False, needs=needs))
        elif case.level == "SHOULD" and not strict:
            settle(n, Verdict(case, "skipped", "SHOULD case (run with --strict)", claimed=not missing,
                              needs=needs))
        else:
            pending.append((n, case, not missing))
            if len(pending) >= size:
                flush()
    if pending:
        flush()
    result.verdicts.extend(v for v in verdicts if v is not None)
    result.seconds = time.perf_counter() - t0
    return result
