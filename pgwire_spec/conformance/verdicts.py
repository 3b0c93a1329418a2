"""Per-profile verdicts: one row per capability, each real defect named once, and the
largest profile a decoder conforms to.

A run's cases fall into capability rows by what they need (``Case.needs``): a case that
needs nothing beyond its protocol version counts in ``protocol N``; any other counts in
each capability it needs (``streaming on``, ``binary``, ``stream level`` …). Failures are
grouped into defects by the rule and message kind they are about (or, for valid input, the
message kind and what went wrong with it), each with its smallest failing case.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .cases import kind_of
from .profile import CAPABILITIES, LEVELS, PROTOCOL_VERSIONS, STREAMING_MODES, Needs, Profile
from .runner import RunResult, Verdict

__all__ = ["CapabilityRow", "Defect", "capability_rows", "defects", "discover", "covered"]


@dataclass(frozen=True, slots=True)
class CapabilityRow:
    """One capability of a run: whether the profile claims it, and its cases' verdicts.

    ``passed``/``failed``/``skipped`` count the claimed cases judged in this row;
    ``unclaimed`` the row's cases outside the profile; ``outside_passed``/``outside_failed``
    those of them that were run anyway (``--discover``)."""

    name: str
    claimed: bool
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    must_skipped: int = 0
    unclaimed: int = 0
    outside_passed: int = 0
    outside_failed: int = 0

    @property
    def judged(self) -> int:
        return self.passed + self.failed + self.skipped

    @property
    def status(self) -> str:
        """``conforms``, ``fails``, ``not claimed`` or ``no cases``."""
        if not self.claimed:
            return "not claimed"
        if self.failed or self.must_skipped:
            return "fails"
        return "conforms" if self.judged else "no cases"

    def text(self) -> str:
        """``2,311/2,311 passed``; ``3 failed, 120/123 passed``; ``not claimed (6,426 cases)``."""
        if not self.claimed:
            out = f"not claimed ({self.unclaimed:,} cases)"
            ran = self.outside_passed + self.outside_failed
            if ran:
                out += f"; run anyway: {self.outside_passed:,}/{ran:,} passed"
            return out
        total = self.passed + self.failed + self.must_skipped
        parts = [f"{self.passed:,}/{total:,} passed"] if total else ["no cases judged"]
        if self.failed:
            parts.insert(0, f"{self.failed:,} failed")
        if self.must_skipped:
            parts.append(f"{self.must_skipped:,} MUST skipped by the decoder")
        extra = self.skipped - self.must_skipped
        if extra:
            parts.append(f"{extra:,} skipped")
        if self.unclaimed:
            parts.append(f"{self.unclaimed:,} more need a capability not claimed")
        return ", ".join(parts)


def _row_names() -> list[str]:
    return [f"protocol {v}" for v in PROTOCOL_VERSIONS] + list(CAPABILITIES)


def _needs(v: Verdict) -> Needs:
    return v.needs if v.needs is not None else v.case.needs


def capability_rows(result: RunResult) -> list[CapabilityRow]:
    """One row per capability of the protocol, in a fixed order (rows without any case in
    the run are left out)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for v in result.verdicts:
        for name in _needs(v).capabilities():
            c = counts[name]
            if not v.claimed:
                c["unclaimed"] += 1
                if v.status in ("passed", "failed"):
                    c[f"outside_{v.status}"] += 1
            elif v.status in ("passed", "failed", "skipped"):
                c[v.status] += 1
                if v.status == "skipped" and v.case.level == "MUST":
                    c["must_skipped"] += 1
    return [CapabilityRow(name, result.profile.claims(name), **counts[name])  # type: ignore[arg-type]
            for name in _row_names() if name in counts]


# -- defects --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Defect:
    """A distinct defect: what goes wrong, on which message kind, how many cases show it,
    and the smallest of them."""

    kind: str
    what: str
    rule: str | None
    count: int
    example: Verdict

    @property
    def title(self) -> str:
        return f"{self.kind}: {self.what}"

    @property
    def index(self) -> int:
        """The payload of the example the defect is about."""
        v = self.example
        if v.index is not None:
            return v.index
        if v.case.error is not None:
            return v.case.error.index
        return v.case.checked[0] if v.case.checked else 0


def _field(where: str) -> str:
    """``new_tuple[2].text`` -> ``new_tuple[].text``; numbers in counts -> N."""
    where = re.sub(r"\[\d+\]", "[]", where)
    return re.sub(r"\b\d+\b", "N", where)


def _short(text: str, limit: int = 90) -> str:
    text = re.sub(r"0x[0-9a-fA-F]+|\b\d+\b", "N", " ".join(str(text).split()))
    text = re.sub(r"'[^']{12,}'", "'…'", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def defect_of(v: Verdict) -> tuple[str, str, str | None]:
    """``(message kind, what went wrong, rule)`` of a failed verdict: the key defects are
    grouped by."""
    case, reason = v.case, v.reason
    if case.error is not None:
        rule = case.error.rule
        i = case.error.index
        kind = kind_of(case.payloads[i]) if i < len(case.payloads) else "end of stream"
        if reason.startswith("adapter crashed"):
            return kind, f"{rule} input crashes or hangs the decoder ({_short(reason[16:], 60)})", rule
        if reason.startswith("accepted"):
            return kind, f"{rule} not detected (accepted)", rule
        if "which is valid" in reason:  # the same defect as on valid input
            bad = v.index if v.index is not None else i
            return kind_of(case.payloads[bad]), "valid message rejected", None
        if reason.startswith("rejected with rule"):
            return kind, f"{rule} reported under another rule", rule
        return kind, f"{rule}: {_short(reason)}", rule
    i = v.index if v.index is not None else (case.checked[0] if case.checked else 0)
    kind = kind_of(case.payloads[i]) if i < len(case.payloads) else "end of stream"
    if reason.startswith("adapter crashed"):
        return kind, f"crash or hang on valid input ({_short(reason[16:], 60)})", None
    m = re.match(r"message #\d+ \(\w+\) differs at (.*)$", reason)
    if m:
        return kind, f"wrong {_field(m.group(1))}", None
    if reason.startswith("rejected the end"):
        return "end of stream", "the end of a valid stream rejected", None
    if reason.startswith("rejected"):
        return kind, "valid message rejected", None
    return kind, _short(reason), None


def _size(v: Verdict) -> tuple[int, int, str]:
    return (sum(len(p) for p in v.case.payloads), len(v.case.payloads), v.case.id)


def defects(verdicts: Iterable[Verdict]) -> list[Defect]:
    """The distinct defects among failed verdicts, most frequent first, each with its
    smallest case (fewest bytes)."""
    groups: dict[tuple[str, str, str | None], list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if v.status == "failed":
            groups[defect_of(v)].append(v)
    out = [Defect(kind, what, rule, len(vs), min(vs, key=_size)) for (kind, what, rule), vs in groups.items()]
    return sorted(out, key=lambda d: (-d.count, d.kind, d.what))


# -- discovery ------------------------------------------------------------------------------------


def _candidates() -> Iterable[Profile]:
    versions = [frozenset(c) for n in range(1, len(PROTOCOL_VERSIONS) + 1)
                for c in itertools.combinations(PROTOCOL_VERSIONS, n)]
    for pv, streaming, two_phase, binary, messages, origin, level in itertools.product(
        versions, STREAMING_MODES, (False, True), (False, True), (False, True), (False, True), LEVELS,
    ):
        yield Profile(pv, streaming, two_phase, binary, messages, origin, level)


def covered(result: RunResult, profile: Profile) -> int:
    """How many of the run's judged cases *profile* holds."""
    return sum(1 for v in result.verdicts if v.status in ("passed", "failed", "skipped")
               and profile.covers(_needs(v)))


def discover(result: RunResult) -> Profile | None:
    """The largest profile whose every case run passed (the most cases; of profiles holding
    the same cases, the one claiming least, so that nothing is claimed without a case);
    ``None`` when no profile holds a passing case and no failing one. Only
    the cases that were run count: run with ``run_all`` to consider every capability."""
    ran: Counter[Needs] = Counter()
    bad: set[Needs] = set()
    for v in result.verdicts:
        if v.status == "passed":
            ran[_needs(v)] += 1
        elif v.status == "failed" or (v.status == "skipped" and v.case.level == "MUST"):
            ran[_needs(v)] += 1
            bad.add(_needs(v))
    best: tuple[int, int, Profile] | None = None
    for p in _candidates():
        if any(p.covers(n) for n in bad):
            continue
        covered = sum(c for n, c in ran.items() if p.covers(n))
        # the most cases; of equal ones the smallest claim (no capability without a case)
        if covered and (best is None or (covered, -p.size()) > best[:2]):
            best = (covered, -p.size(), p)
    return None if best is None else best[2]
