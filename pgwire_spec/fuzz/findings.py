"""Findings: merged by signature, minimised, written as regression fixtures, replayed by id.

A finding's id is derived from its signature (:func:`~pgwire_spec.fuzz.shards.finding_id`),
so the same bug found again, by another shard or another campaign, has the same id. Its
regression fixture ``findings/<id>.json`` is in the golden fixtures' format
(``pgwire_spec.capture.fixture``): one group holding the minimised input, the decoding
context, flags ``fuzz-finding`` and ``oracle-<name>``, and notes giving the signature and
what was wrong. ``pgwire-spec fuzz --replay ID`` reads it back and runs the oracle again.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import PgWireError
from .shards import Campaign, Finding, ShardResult, check_case

__all__ = ["merge_findings", "minimise", "write_regression", "read_regression", "replay", "ReplayError"]


class ReplayError(PgWireError):
    """A finding id with no regression fixture, or a fixture that is not a finding."""


def merge_findings(results: Iterable[ShardResult]) -> list[Finding]:
    """One finding per signature over all shards (the first example, counts summed), in a
    stable order (most frequent first, then signature)."""
    merged: dict[str, Finding] = {}
    for r in sorted(results, key=lambda r: r.index):
        for f in r.findings:
            known = merged.get(f.signature)
            merged[f.signature] = f if known is None else replace(known, count=known.count + f.count)
    return sorted(merged.values(), key=lambda f: (-f.count, f.signature))


def _case_of(f: Finding, payloads: Sequence[bytes]) -> tuple[Any, ...]:
    if f.kind == "payload":
        return ("p", payloads[0], bool(f.context.get("in_stream")), bool(f.context.get("abort_tail")), f.ops)
    return ("s", dict(f.context), tuple(payloads), f.ops)


def _signature(oracle: Any, case: tuple[Any, ...]) -> str | None:
    try:
        v = check_case(oracle, case)
    except Exception:  # noqa: BLE001 - a minimisation step that breaks the oracle is no match
        return None
    return v[0] if v is not None else None


def minimise(finding: Finding, oracle: Any, *, max_checks: int = 2_000, max_seconds: float = 3.0) -> Finding:
    """The smallest input found (payloads dropped, then byte ranges removed) that still
    gives the same signature; *oracle* as in :func:`~pgwire_spec.fuzz.shards.check_case`."""
    payloads = list(finding.payloads)
    sig = finding.signature
    deadline = time.monotonic() + max_seconds
    checks = 0

    def same(candidate: list[bytes]) -> bool:
        nonlocal checks
        checks += 1
        return _signature(oracle, _case_of(finding, candidate)) == sig

    if not same(payloads):
        return finding  # not reproducible in this process (a timeout, a memory spike): keep it
    # 1. drop whole payloads (streams)
    i = 0
    while finding.kind == "stream" and i < len(payloads) and len(payloads) > 1:
        if checks >= max_checks or time.monotonic() > deadline:
            break
        cand = payloads[:i] + payloads[i + 1:]
        if same(cand):
            payloads = cand
        else:
            i += 1
    # 2. remove byte ranges, halving the chunk size (ddmin-style), in each payload
    for pi in range(len(payloads)):
        chunk = max(1, len(payloads[pi]) // 2)
        while chunk >= 1:
            pos = 0
            changed = False
            while pos < len(payloads[pi]):
                if checks >= max_checks or time.monotonic() > deadline:
                    break
                data = payloads[pi]
                cand_bytes = data[:pos] + data[pos + chunk:]
                cand = payloads[:pi] + [cand_bytes] + payloads[pi + 1:]
                if cand_bytes != data and same(cand):
                    payloads = cand
                    changed = True
                else:
                    pos += chunk
            if not changed:
                chunk //= 2
            if checks >= max_checks or time.monotonic() > deadline:
                break
    return replace(finding, minimised=tuple(payloads))


def _context_for(f: Finding) -> dict[str, Any]:
    """A decoder context for the fixture group of a finding."""
    if f.kind == "stream":
        ctx = {"protocol_version": 1, "streaming": "off", "two_phase": False, "binary": False, "messages": False}
        ctx.update({k: v for k, v in f.context.items() if k in ctx})
        return ctx
    # a single payload: the weakest context that has its in_stream/abort_tail
    if f.context.get("abort_tail"):
        return {"protocol_version": 4, "streaming": "parallel", "two_phase": True, "binary": True, "messages": True}
    if f.context.get("in_stream"):
        return {"protocol_version": 2, "streaming": "on", "two_phase": False, "binary": True, "messages": True}
    return {"protocol_version": 1, "streaming": "off", "two_phase": False, "binary": True, "messages": True}


def _expected(ctx: dict[str, Any], payloads: Sequence[bytes], f: Finding) -> list[dict[str, Any]]:
    """What the reference says of each payload today (the regression's recorded answer)."""
    from ..conformance.adapters.reference import decode_case
    from ..jsonform import to_json
    from ..pgoutput._codec import FAMILY

    if f.kind == "payload":
        try:
            msg = FAMILY.decode(payloads[0], bool(f.context.get("in_stream")), bool(f.context.get("abort_tail")))
            return [to_json(msg)]
        except PgWireError as err:
            return [{"error": {"rule": getattr(err, "rule", type(err).__name__), "message": str(err)}}]
        except Exception as exc:  # noqa: BLE001 - the bug itself
            return [{"error": {"rule": "exception", "message": f"{type(exc).__name__}: {exc}"}}]
    try:
        res = decode_case(ctx, payloads)
    except Exception as exc:  # noqa: BLE001
        return [{"error": {"rule": "exception", "message": f"{type(exc).__name__}: {exc}"}}] * len(payloads)
    out = []
    for i in range(len(payloads)):
        out.append(dict(res[i]["message"]) if i < len(res) and "message" in res[i]
                   else {"error": dict(res[i]["error"])} if i < len(res) else {"not-reached": True})
    return out


def write_regression(f: Finding, directory: Path | str, campaign: Campaign,
                     notes: dict[str, str] | None = None) -> Path:
    """Write *f* as a regression fixture ``<directory>/<id>.json``; return its path.
    *notes* are added to the fixture's notes (e.g. ``root-cause``: the bug behind it, once
    someone has read the decoder's code)."""
    from ..capture.fixture import FixtureCase, FixtureFile, FixtureGroup, write_fixture

    payloads = list(f.minimised if f.minimised is not None else f.payloads)
    ctx = _context_for(f)
    expected = _expected(ctx, payloads, f)
    flags = ("fuzz-finding", f"oracle-{f.oracle}")
    cases = tuple(
        FixtureCase(
            id=f"{f.id}/{i}", index=i, hex=p.hex(),
            in_stream=bool(f.context.get("in_stream")) if f.kind == "payload" else False,
            lsn="0/0", xid=0, expected=expected[i], flags=flags,
        )
        for i, p in enumerate(payloads)
    )
    group = FixtureGroup(
        name=f.id, options={"kind": f.kind, "abort_tail": str(bool(f.context.get("abort_tail"))).lower()},
        context=ctx, slot="", cases=cases, captured=len(f.payloads),
    )
    fx = FixtureFile(
        server_version="fuzz", major=0, provider="fuzz", workload=f"fuzz:{campaign.name}:{f.target}",
        captured_on=_dt.date.today().isoformat(), groups=(group,),
        notes={
            "fuzz-finding": "An input found by a fuzz campaign (pgwire-spec fuzz): replay it with "
                            "`pgwire-spec fuzz --replay ID`.",
            f"oracle-{f.oracle}": ORACLES.get(f.oracle, f.oracle),
            "signature": f.signature,
            "detail": f.detail,
            "found": f"engine {f.engine}, shard {f.shard}, case {f.case_index}, mutations "
                     f"{'+'.join(f.ops) or '-'}; seen {f.count} time(s); minimised from "
                     f"{sum(len(p) for p in f.payloads)} to {sum(len(p) for p in payloads)} bytes",
            **(notes or {}),
        },
    )
    return write_fixture(fx, Path(directory) / f"{f.id}.json")


#: Every oracle a campaign can run, by the name its findings carry, with what it checks.
ORACLES = {
    "roundtrip": "The reference accepted the input but does not re-encode it to the same bytes.",
    "exception": "Decoding raised an exception other than DecodeError.",
    "internal": "The fast and the tracing decoders disagree (DecodeError rule 'internal').",
    "backend": "The C decoder accepts what the Python codec rejects, or decodes it otherwise.",
    "json": "The JSON form of the decoded message does not read back to the same message.",
    "timeout": "No verdict within the per-case timeout.",
    "memory": "Peak memory grew past the campaign's limit.",
    "catalogue": "A malformed stream was not rejected where and how the rule catalogue says.",
    "differential": "The adapter and the reference disagree (accept/reject or JSON form).",
    "crash": "The adapter process crashed.",
}


def read_regression(finding_id: str, directories: Sequence[Path | str]) -> tuple[Finding, Path]:
    """The finding of a regression fixture, searched in *directories* (and their
    ``findings/`` subdirectories)."""
    from ..capture.fixture import FixtureError, read_fixture

    name = Path(finding_id).name.removesuffix(".json")
    candidates = [Path(finding_id)] if finding_id.endswith(".json") else []
    for d in directories:
        candidates += [Path(d) / f"{name}.json", Path(d) / "findings" / f"{name}.json"]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise ReplayError(f"no regression fixture for {finding_id!r}; looked for "
                          f"{', '.join(dict.fromkeys(map(str, candidates)))}")
    try:
        fx = read_fixture(path)
    except FixtureError as exc:
        raise ReplayError(str(exc)) from None
    if fx.provider != "fuzz" or not fx.groups or not fx.groups[0].cases:
        raise ReplayError(f"{path} is not a fuzz finding (provider {fx.provider!r})")
    g = fx.groups[0]
    kind = g.options.get("kind", "stream")
    context: dict[str, Any]
    if kind == "payload":
        context = {"in_stream": g.cases[0].in_stream, "abort_tail": g.options.get("abort_tail") == "true"}
    else:
        context = dict(g.context)
    parts = fx.workload.split(":", 2)
    target = parts[2] if len(parts) == 3 else "reference"
    oracle = next((fl.removeprefix("oracle-") for fl in g.cases[0].flags if fl.startswith("oracle-")), "")
    f = Finding(
        signature=fx.notes.get("signature", ""), oracle=oracle, detail=fx.notes.get("detail", ""),
        engine="replay", target=target, shard=-1, case_index=-1, kind=kind, context=context,
        payloads=tuple(bytes.fromhex(c.hex) for c in g.cases),
    )
    return f, path


def replay(finding: Finding, *, target: str | None = None, adapter_cmd: str | None = None,
           timeout: float = 5.0, say: Callable[[str], None] = print) -> bool:
    """Run a finding's input through its oracle again; True if it still fails.

    The decoder is the finding's own target unless *target* (a decoder name) or
    *adapter_cmd* names another one (e.g. the fixed version of a decoder).
    """
    from ..conformance.adapters import open_command, open_decoder
    from .oracles import DifferentialOracle, ReferenceOracle
    from .shards import _Hang, _Watch

    adapter = None
    recorded = finding.target or "reference"
    if adapter_cmd:
        adapter = open_command(adapter_cmd, timeout)
    elif target:
        adapter = open_decoder(target, timeout)
    elif recorded.startswith("adapter-cmd:"):
        adapter = open_command(recorded.removeprefix("adapter-cmd:"), timeout)
    elif recorded != "reference":
        adapter = open_decoder(recorded, timeout)
    if adapter is not None and finding.kind == "payload":
        adapter.close()
        raise ReplayError(f"{finding.id} is a payload finding of the reference decoder; replay it without "
                          "--target/--adapter-cmd")
    try:
        oracle: Any = DifferentialOracle(adapter) if adapter is not None else ReferenceOracle(json_every=1)
        case = _case_of(finding, finding.payloads)
        with _Watch(0 if adapter is not None else timeout, 4096) as watch:
            watch.arm()
            try:
                v = check_case(oracle, case)
            except _Hang:
                v = (finding.signature if finding.oracle == "timeout" else "timeout", "timeout",
                     f"no verdict within {timeout:g} s")
            watch.disarm()
    finally:
        if adapter is not None:
            adapter.close()
    if v is None:
        say(f"{finding.id}: passes now ({finding.kind}, {len(finding.payloads)} payload(s)); "
            f"was: {finding.signature}")
        return False
    same = "same signature" if v[0] == finding.signature else f"new signature {v[0]}"
    say(f"{finding.id}: still fails ({same}): {v[2]}")
    return True
