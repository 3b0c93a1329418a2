"""Campaigns and their seeded shards: plain functions, the unit of work of the Spark job.

A :class:`Campaign` says what to fuzz (target, engines, corpus), for how long (a time
budget, or a number of cases for reproducible runs) and with which seed. :func:`plan_shards`
splits it into :class:`Shard` objects, each with its own seed derived from the campaign's;
:func:`run_shard` runs one of them in the current process and returns a
:class:`ShardResult` (cases, accepted/rejected, findings by signature, throughput).

Case *i* of a shard is a function of (campaign seed, shard index, engine, i) alone: cases
are drawn in chunks, each chunk from its own ``random.Random`` seeded by those values, so
the same seed gives the same cases however long the budget (a longer budget only goes
further). Every shard keeps a CRC of its cases to show it.
"""

from __future__ import annotations

import hashlib
import os
import random
import resource
import signal
import socket
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..corpus.seeds import SeedStream
from ..pgoutput import _codec

__all__ = [
    "ENGINES",
    "adaptive",
    "engine_yield",
    "generate_fraction",
    "Campaign",
    "Shard",
    "Finding",
    "ShardResult",
    "plan_shards",
    "run_shard",
    "derive_seed",
    "finding_id",
]

ENGINES = ("mutate", "generate")
CHUNK = 512


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (stable across processes and machines)."""
    text = ":".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 1


def finding_id(signature: str) -> str:
    """The stable id of a finding: ``F`` + 10 hex digits of its signature's hash."""
    return "F" + hashlib.blake2b(signature.encode(), digest_size=5).hexdigest()


@dataclass(frozen=True, slots=True)
class Campaign:
    """What to fuzz, with what, for how long.

    ``target``: ``reference``, a decoder name of the conformance runner, or ``None`` with
    ``adapter_cmd``; ``engines``: a subset of :data:`ENGINES`; ``corpus``: corpus sources
    (:func:`pgwire_spec.corpus.load.load_corpus`); ``budget``: seconds of wall time (about),
    or ``cases``: cases per shard (then the budget is only a safety limit).
    """

    name: str = "campaign"
    target: str = "reference"
    adapter_cmd: str | None = None
    engines: tuple[str, ...] = ("mutate", "generate")
    corpus: tuple[str, ...] = ("builtin", "fixtures")
    seed: int = 0
    budget: float = 60.0
    cases: int | None = None
    shards_per_core: int = 2
    case_timeout: float = 2.0
    memory_limit_mb: int = 512
    max_signatures: int = 200
    #: share of generate-engine shards in the first wave when both engines run (the rest mutate)
    generate_share: float = 0.25
    #: how long a first-wave generate shard runs, as a share of a shard's time: the generate
    #: engine yields ~1,000 times fewer cases per second than mutate, so it gets a slice of
    #: a core and mutate shards fill the rest of that core's budget
    generate_time: float = 0.25
    #: when both engines run on a time budget: the first wave (this share of the budget)
    #: measures each engine's yield (distinct signatures per CPU second); the second wave
    #: gives the generate engine a share of the cores' time proportional to its yield
    #: (:func:`generate_fraction`), kept within [generate_floor, generate_cap]
    explore: float = 0.2
    generate_floor: float = 0.02
    generate_cap: float = 0.5
    #: stop a shard at its first finding (time-to-find measurements, bench_bugs.py)
    stop_on_finding: bool = False

    def __post_init__(self) -> None:
        bad = [e for e in self.engines if e not in ENGINES]
        if bad or not self.engines:
            raise ValueError(f"engines must be among {', '.join(ENGINES)}, found {list(self.engines)}")
        if self.budget <= 0:
            raise ValueError(f"budget must be positive seconds, found {self.budget}")
        if self.cases is not None and self.cases <= 0:
            raise ValueError(f"cases must be positive, found {self.cases}")
        if not 0 < self.generate_time <= 1:
            raise ValueError(f"generate_time must be a share of a shard's time in (0, 1], found {self.generate_time}")
        if not 0 < self.explore <= 1:
            raise ValueError(f"explore must be a share of the budget in (0, 1], found {self.explore}")
        if not 0 <= self.generate_floor <= self.generate_cap <= 1:
            raise ValueError("expected 0 <= generate_floor <= generate_cap <= 1, found "
                             f"{self.generate_floor} and {self.generate_cap}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Campaign:
        """A campaign from a definition file's mapping (unknown keys are an error)."""
        names = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown campaign keys {sorted(unknown)}; expected some of {sorted(names)}")
        kw = dict(data)
        for key in ("engines", "corpus"):
            if key in kw and isinstance(kw[key], str):
                kw[key] = tuple(x.strip() for x in kw[key].split(",") if x.strip())
            elif key in kw:
                kw[key] = tuple(kw[key])
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["engines"] = list(self.engines)
        d["corpus"] = list(self.corpus)
        return d


@dataclass(frozen=True, slots=True)
class Shard:
    """One unit of work: an engine, a seed, a budget (and optionally a case count)."""

    campaign: Campaign
    index: int
    engine: str
    seed: int
    budget: float
    cases: int | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One oracle violation (the first example of its signature) and how often it came."""

    signature: str
    oracle: str
    detail: str
    engine: str
    target: str
    shard: int
    case_index: int
    #: ``payload`` (one payload with its in_stream/abort_tail context) or ``stream``
    kind: str
    context: dict[str, Any]
    payloads: tuple[bytes, ...]
    ops: tuple[str, ...] = ()
    count: int = 1
    minimised: tuple[bytes, ...] | None = None
    #: seconds from its engine's start in the shard (seeds prepared, target opened) to the
    #: first occurrence
    seconds: float = 0.0

    @property
    def id(self) -> str:
        return finding_id(self.signature)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "signature": self.signature, "oracle": self.oracle, "detail": self.detail,
            "engine": self.engine, "target": self.target, "shard": self.shard,
            "case_index": self.case_index, "kind": self.kind, "context": dict(self.context),
            "payloads": [p.hex() for p in self.payloads], "ops": list(self.ops), "count": self.count,
            "minimised": None if self.minimised is None else [p.hex() for p in self.minimised],
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(
            signature=d["signature"], oracle=d["oracle"], detail=d["detail"], engine=d["engine"],
            target=d["target"], shard=int(d["shard"]), case_index=int(d["case_index"]), kind=d["kind"],
            context=dict(d["context"]), payloads=tuple(bytes.fromhex(h) for h in d["payloads"]),
            ops=tuple(d.get("ops", ())), count=int(d.get("count", 1)),
            minimised=None if d.get("minimised") is None else tuple(bytes.fromhex(h) for h in d["minimised"]),
            seconds=float(d.get("seconds", 0.0)),
        )


@dataclass(frozen=True, slots=True)
class ShardResult:
    """What one shard did: cases run, accepted and rejected by the target, seconds, a CRC
    of the cases (same seed, same CRC), findings (one per signature) and notes."""

    index: int
    engine: str
    seed: int
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    seconds: float = 0.0
    crc: int = 0
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    host: str = ""
    pid: int = 0
    #: CPU seconds of the running process (the core's own time, whatever else shares it)
    cpu_seconds: float = 0.0
    #: The pgoutput codec the executor ran: "c" (the generated C decoders) or "python"
    backend: str = ""

    @property
    def occurrences(self) -> int:
        return sum(f.count for f in self.findings)

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_rate(self) -> float:
        """Cases per CPU second: the throughput of one core, unaffected by other work."""
        return self.cases / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "engine": self.engine, "seed": self.seed, "cases": self.cases,
            "accepted": self.accepted, "rejected": self.rejected, "seconds": self.seconds,
            "cases_per_second": round(self.rate, 1), "cpu_seconds": self.cpu_seconds,
            "cases_per_cpu_second": round(self.cpu_rate, 1), "crc": self.crc,
            "findings": len(self.findings), "occurrences": self.occurrences,
            "findings_list": [f.to_dict() for f in self.findings],
            "notes": list(self.notes), "host": self.host, "pid": self.pid, "backend": self.backend,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ShardResult:
        return cls(index=d["index"], engine=d["engine"], seed=d["seed"], cases=d["cases"],
                   accepted=d["accepted"], rejected=d["rejected"], seconds=d["seconds"], crc=d["crc"],
                   findings=tuple(Finding.from_dict(f) for f in d.get("findings_list", ())),
                   notes=tuple(d.get("notes", ())), host=d.get("host", ""), pid=d.get("pid", 0),
                   cpu_seconds=d.get("cpu_seconds", 0.0), backend=d.get("backend", ""))


class _Acc:
    """The mutable tally of a running shard."""

    __slots__ = ("cases", "crc", "seconds", "cpu_seconds", "findings", "notes", "t0")

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.cases = 0
        self.crc = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.findings: dict[str, Finding] = {}
        self.notes: list[str] = []


def plan_shards(campaign: Campaign, cores: int, *, budget: float | None = None,
                generate_fraction: float | None = None, first_index: int = 0) -> list[Shard]:
    """Split *campaign* over *cores*: ``cores × shards_per_core`` shards, each with a
    derived seed and a share of the budget so that the campaign takes about ``budget``
    seconds of wall time.

    *budget* overrides the campaign's (one wave of it); *generate_fraction*, when both
    engines run, is the generate engine's share of the cores' time (instead of the fixed
    first-wave slice); *first_index* numbers the shards of a later wave after the earlier
    ones (the index seeds the shard).
    """
    total = campaign.budget if budget is None else budget
    cores, per_core = max(1, cores), max(1, campaign.shards_per_core)
    n = cores * per_core
    slot = total / per_core
    both = len(campaign.engines) > 1
    lanes: list[list[tuple[str, float]]]
    if not both or (n == 1 and generate_fraction is None):
        engine = campaign.engines[0] if not both else "mutate"
        lanes = [[(engine, slot)] * per_core for _ in range(cores)]
    elif generate_fraction is not None:
        # the generate engine's time in whole lanes from the first core on: as few cores
        # as it needs, the others (and the rest of its last core) all mutate
        gen_left = max(0.0, min(1.0, generate_fraction)) * cores * total
        lanes = []
        for _ in range(cores):
            g = min(gen_left, total)
            gen_left -= g
            rest = total - g
            k = per_core if g <= 0 else max(1, per_core - 1)
            lane = [("generate", g)] if g > 0 else []
            if rest > 1e-9:
                lane += [("mutate", rest / k)] * k
            lanes.append(lane)
    else:
        # generate shards spread over the cores, each a slice of a shard's time; mutate
        # shards fill every core to its budget
        n_gen = min(n - 1, max(1, round(n * campaign.generate_share)))
        gens = [n_gen // cores + (c < n_gen % cores) for c in range(cores)]
        g = slot * campaign.generate_time
        lanes = []
        for c in range(cores):
            rest = max(1, per_core - gens[c]) if gens[c] else per_core
            lanes.append([("generate", g)] * gens[c] + [("mutate", (total - gens[c] * g) / rest)] * rest)
    # Spark starts tasks in list order on whichever core is free: listing the shards by
    # their start time in this plan makes it the schedule (cores free at the same time are
    # alike), so every core ends at about the budget.
    timed = []
    for c, lane in enumerate(lanes):
        t = 0.0
        for engine, seconds in lane:
            timed.append((t, c, engine, seconds))
            t += seconds
    timed.sort(key=lambda x: (round(x[0], 6), x[1]))
    # with a case count the budget is only a safety limit, the same for every shard (a
    # slow engine's shard must not stop short of its cases on a busy machine)
    return [
        Shard(campaign, i, engine, derive_seed(campaign.seed, "shard", i, engine),
              seconds if campaign.cases is None else total, campaign.cases)
        for i, (_, _, engine, seconds) in enumerate(timed, start=first_index)
    ]


def adaptive(campaign: Campaign) -> bool:
    """Whether *campaign* runs in two waves (both engines, a time budget, a first wave
    long enough to measure anything: at least 5 s)."""
    return len(campaign.engines) > 1 and campaign.cases is None and campaign.budget * campaign.explore >= 5.0


def engine_yield(results: Sequence[ShardResult]) -> dict[str, float]:
    """Distinct finding signatures per CPU second, per engine, over *results*."""
    sigs: dict[str, set[str]] = {}
    cpu: dict[str, float] = {}
    for r in results:
        sigs.setdefault(r.engine, set()).update(f.signature for f in r.findings)
        cpu[r.engine] = cpu.get(r.engine, 0.0) + max(r.cpu_seconds, r.seconds * 0.05, 1e-3)
    return {e: len(sigs[e]) / cpu[e] for e in cpu}


def generate_fraction(campaign: Campaign, results: Sequence[ShardResult]) -> float:
    """The generate engine's share of the cores' time for the next wave: its share of the
    engines' summed yield (:func:`engine_yield`), within [generate_floor, generate_cap];
    the floor when neither engine found anything (mutate draws ~1,000 cases for each of
    the generate engine's, so it is the better bet until the generate engine shows more)."""
    y = engine_yield(results)
    g, m = y.get("generate", 0.0), y.get("mutate", 0.0)
    share = g / (g + m) if g + m > 0 else 0.0
    return min(campaign.generate_cap, max(campaign.generate_floor, share))


# -- running a shard ---------------------------------------------------------------------------------

_PREPARED: dict[str, Any] = {}


def _prepared(streams: Sequence[SeedStream]) -> Any:
    """Prepared seeds per corpus, cached per worker process (Spark reuses workers)."""
    from .mutate import prepare_seeds

    key = hashlib.blake2b(
        b"".join(s.name.encode() + b"\0" + str(len(s.payloads)).encode() for s in streams), digest_size=8
    ).hexdigest()
    got = _PREPARED.get(key)
    if got is None:
        got = _PREPARED[key] = prepare_seeds(streams)
    return got


class _Hang(BaseException):
    """Raised by the per-chunk timer: a case ran past its timeout."""


class _Deadline(BaseException):
    """Raised inside a hypothesis run at the shard's deadline (a BaseException: hypothesis
    lets it through at once, without shrinking)."""


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


class _Watch:
    """The hang and memory guards of a shard: a per-chunk real-time timer and the
    process's peak RSS."""

    def __init__(self, timeout: float, memory_limit_mb: int) -> None:
        self.timeout = timeout
        self.enabled = timeout > 0 and _can_alarm()
        self.limit_kb = memory_limit_mb * 1024
        self.base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.base_rss_kb = _rss_kb()
        self._old: Any = None

    def __enter__(self) -> _Watch:
        if self.enabled:
            def _raise(signum: int, frame: Any) -> None:
                raise _Hang()

            self._old = signal.signal(signal.SIGALRM, _raise)
        return self

    def arm(self, seconds: float | None = None) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, seconds or self.timeout)

    def disarm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old or signal.SIG_DFL)

    def memory_grew(self) -> int:
        """KiB of memory above the shard's start, if above the limit; else 0: the peak RSS
        (a spike inside a case) or the current RSS (memory a case kept)."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self.base_kb
        now = _rss_kb() - self.base_rss_kb
        grew = max(peak, now)
        if grew > self.limit_kb:
            self.base_kb += max(peak, 0)
            self.base_rss_kb += max(now, 0)
            return grew
        return 0


def _rss_kb() -> int:
    """The current resident set size in KiB (Linux /proc; else the peak)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _open_target(campaign: Campaign) -> Any:
    if campaign.adapter_cmd:
        from ..conformance.adapters import open_command

        return open_command(campaign.adapter_cmd, campaign.case_timeout)
    if campaign.target != "reference":
        from ..conformance.adapters import open_decoder

        return open_decoder(campaign.target, campaign.case_timeout)
    return None


def _target_name(campaign: Campaign) -> str:
    return f"adapter-cmd:{campaign.adapter_cmd}" if campaign.adapter_cmd else campaign.target


def run_shard(shard: Shard, streams: Sequence[SeedStream],
              progress: Callable[[int], None] | None = None) -> ShardResult:
    """Run one shard in this process until its budget or case count is reached."""
    c = shard.campaign
    acc = _Acc()
    started = time.perf_counter()  # the budget includes preparing seeds and the adapter
    adapter = _open_target(c)
    try:
        if adapter is None:
            from .oracles import ReferenceOracle

            oracle: Any = ReferenceOracle()
        else:
            from .oracles import DifferentialOracle

            oracle = DifferentialOracle(adapter)
        if shard.engine == "mutate":
            _run_mutate(shard, streams, oracle, adapter is not None, acc, progress, started)
        else:
            _run_generate(shard, oracle, acc, progress, started)
    finally:
        if adapter is not None:
            adapter.close()
    return ShardResult(
        shard.index, shard.engine, shard.seed, acc.cases, oracle.accepted, oracle.rejected, acc.seconds,
        acc.crc, tuple(acc.findings.values()), tuple(acc.notes), socket.gethostname(), os.getpid(),
        acc.cpu_seconds, _codec.BACKEND,
    )


def _record(result: _Acc, shard: Shard, violation: tuple[str, str, str], case: tuple[Any, ...],
            index: int) -> None:
    sig, oracle, detail = violation
    known = result.findings.get(sig)
    if known is not None:
        result.findings[sig] = replace(known, count=known.count + 1)
        return
    if len(result.findings) >= shard.campaign.max_signatures:
        if "signature cap reached" not in result.notes:
            result.notes.append("signature cap reached")
        return
    if case[0] == "p":
        kind, context, payloads, ops = "payload", {"in_stream": case[2], "abort_tail": case[3]}, (case[1],), case[4]
    else:
        kind, context, payloads, ops = "stream", dict(case[1]), tuple(case[2]), case[3]
    result.findings[sig] = Finding(sig, oracle, detail, shard.engine, _target_name(shard.campaign),
                                   shard.index, index, kind, context, payloads, tuple(ops),
                                   seconds=time.perf_counter() - result.t0)


def _crc_case(case: tuple[Any, ...], crc: int) -> int:
    if case[0] == "p":
        return zlib.crc32(case[1], crc ^ (case[2] << 1 | case[3]))
    for p in case[2]:
        crc = zlib.crc32(p, crc)
    return zlib.crc32(repr(sorted(case[1].items())).encode(), crc)


def check_case(oracle: Any, case: tuple[Any, ...], lenient: bool = True) -> tuple[str, str, str] | None:
    """Run *case* through *oracle* (payload cases need the reference oracle)."""
    if case[0] == "p":
        return oracle.check_payload(case[1], case[2], case[3])  # type: ignore[no-any-return]
    if lenient:
        return oracle.check_stream(case[1], case[2])  # type: ignore[no-any-return]
    return oracle.check_stream(case[1], case[2], lenient=False)  # type: ignore[no-any-return]


def _run_mutate(shard: Shard, streams: Sequence[SeedStream], oracle: Any, differential: bool,
                result: _Acc, progress: Callable[[int], None] | None, started: float) -> None:
    from .mutate import Mutator

    seeds, windows = _prepared(streams)
    mutator = Mutator(seeds, windows, stream_ratio=1.0 if differential else 0.01)
    t0 = result.t0 = time.perf_counter()
    c0 = time.process_time()
    deadline = started + shard.budget
    limit = shard.cases
    n = 0
    crc = 0
    chunk = 0
    # a differential oracle has no payload check: its mutator only draws stream cases
    check_payload: Callable[[bytes, bool, bool], Any] = getattr(oracle, "check_payload", lambda *a: None)
    check_stream = oracle.check_stream
    crc32 = zlib.crc32
    per_chunk = 32 if differential else CHUNK
    stop = shard.campaign.stop_on_finding
    # An adapter has its own per-case timeout (SubprocessAdapter); the reference gets the timer.
    with _Watch(0 if differential else shard.campaign.case_timeout, shard.campaign.memory_limit_mb) as watch:
        while True:
            size = per_chunk if limit is None else min(per_chunk, limit - n)
            if size <= 0:
                break
            rng = random.Random(derive_seed(shard.seed, "chunk", chunk))
            cases = [mutator.case(rng) for _ in range(size)]
            i = 0
            while i < size:
                # one timer per chunk: a chunk takes milliseconds, so a case that runs past the
                # timeout trips it; the case running then is re-run alone to confirm
                watch.arm()
                try:
                    while i < size:
                        case = cases[i]
                        if case[0] == "p":
                            crc = crc32(case[1], crc ^ (case[2] << 1 | case[3]))
                            v = check_payload(case[1], case[2], case[3])
                        elif differential:
                            v = check_stream(case[1], case[2])
                        else:
                            v = check_stream(case[1], case[2], (n + i) % 4 == 0)
                        if v is not None:
                            _record(result, shard, v, case, n + i)
                        i += 1
                except _Hang:
                    watch.disarm()
                    _confirm_hang(shard, oracle, watch, cases, i, n, result)
                    i += 1
                watch.disarm()
            for case in cases:
                if case[0] != "p":
                    crc = _crc_case(case, crc)
            grew = watch.memory_grew()
            if grew:
                _memory_culprit(shard, oracle, cases, n, grew, result)
            n += size
            chunk += 1
            if progress is not None:
                progress(n)
            if time.perf_counter() >= deadline or (stop and result.findings):
                break
    result.cases = n
    result.crc = crc
    result.seconds = time.perf_counter() - t0
    result.cpu_seconds = time.process_time() - c0
    if not watch.enabled and not differential:  # an adapter times its cases itself
        result.notes.append("hang timer unavailable (not the main thread): timeouts not checked")


def _memory_culprit(shard: Shard, oracle: Any, cases: list[tuple[Any, ...]], n: int, grew_kb: int,
                    result: _Acc) -> None:
    """Memory grew past the limit during a chunk: re-run its cases one by one under
    tracemalloc and name the one that allocated the most (kept or at its peak)."""
    import tracemalloc

    worst, worst_i = -1, 0
    tracemalloc.start()
    try:
        for i, case in enumerate(cases):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            try:
                check_case(oracle, case)
            except Exception:  # noqa: BLE001 - recorded already by the chunk run
                pass
            peak = tracemalloc.get_traced_memory()[1] - before
            if peak > worst:
                worst, worst_i = peak, i
    finally:
        tracemalloc.stop()
    if worst * 2 < shard.campaign.memory_limit_mb * 1024 * 1024:
        # no single case does it again: state kept across cases, or a one-off
        _record(result, shard, ("memory:unreproduced", "memory",
                                f"memory grew by {grew_kb // 1024} MiB in a chunk (limit "
                                f"{shard.campaign.memory_limit_mb} MiB); no case of it does so alone"),
                cases[0], n)
        return
    case = cases[worst_i]
    tag = chr(case[1][0]) if case[0] == "p" and case[1] else "stream"
    _record(result, shard, (f"memory:{tag}", "memory",
                            f"memory grew by {grew_kb // 1024} MiB in a chunk (limit "
                            f"{shard.campaign.memory_limit_mb} MiB); this case allocated {worst // 1024} KiB"),
            case, n + worst_i)


def _confirm_hang(shard: Shard, oracle: Any, watch: _Watch, cases: list[tuple[Any, ...]], i: int, n: int,
                  result: _Acc) -> None:
    """The chunk timer fired during case *i*: re-run it alone under the per-case timeout."""
    case = cases[i]
    watch.arm(shard.campaign.case_timeout)
    try:
        v = check_case(oracle, case)
    except _Hang:
        watch.disarm()
        tag = chr(case[1][0]) if case[0] == "p" and case[1] else "stream"
        _record(result, shard, (f"timeout:{tag}", "timeout",
                                f"no verdict within {shard.campaign.case_timeout:g} s"), case, n + i)
        return
    watch.disarm()
    if v is not None:
        _record(result, shard, v, case, n + i)


def _run_generate(shard: Shard, oracle: Any, result: _Acc,
                  progress: Callable[[int], None] | None, started: float) -> None:
    from ..corpus.examples import CONTEXTS, each_example, strategies_available, stream_strategies

    t0 = result.t0 = time.perf_counter()
    c0 = time.process_time()
    result.seconds = 0.0
    if not strategies_available("streams"):
        result.notes.append("generate engine idle: pgwire_spec.strategies provides no streams() yet")
        return
    deadline = started + shard.budget
    limit = shard.cases
    stop = shard.campaign.stop_on_finding
    counter = {"n": 0, "crc": 0}
    rounds = 0
    per_round = 50
    while (limit is None or counter["n"] < limit) and time.perf_counter() < deadline \
            and not (stop and result.findings):
        ctx = CONTEXTS[rounds % len(CONTEXTS)]
        for kind, strategy in stream_strategies(ctx):
            want = per_round if limit is None else min(per_round, limit - counter["n"])
            if want <= 0:
                break
            seed = derive_seed(shard.seed, "round", rounds, kind)

            def body(drawn: Any, kind: str = kind, ctx: dict[str, Any] = ctx) -> None:
                if limit is not None and counter["n"] >= limit:
                    return
                if (limit is None and time.perf_counter() >= deadline) or (stop and result.findings):
                    raise _Deadline()  # a round of draws takes seconds: stop inside it
                options = dict(getattr(drawn, "options", ctx))
                payloads = tuple(bytes(p) for p in drawn.payloads)
                case = ("s", options, payloads, (f"generate:{kind}",))
                idx = counter["n"]
                counter["n"] += 1
                counter["crc"] = _crc_case(case, counter["crc"])
                try:
                    v = check_case(oracle, case)
                    if v is None and kind == "malformed" and hasattr(oracle, "check_payload"):
                        v = _check_catalogue(options, payloads, drawn)
                except Exception as exc:  # noqa: BLE001 - never let hypothesis see it
                    v = (f"exception:{type(exc).__name__}:oracle", "exception", str(exc))
                if v is not None:
                    _record(result, shard, v, case, idx)

            try:
                each_example(strategy, want, seed, body)
            except _Deadline:
                break
        rounds += 1
        if progress is not None:
            progress(counter["n"])
    result.cases = counter["n"]
    result.crc = counter["crc"]
    result.seconds = time.perf_counter() - t0
    result.cpu_seconds = time.process_time() - c0


def _check_catalogue(options: Mapping[str, Any], payloads: Sequence[bytes], drawn: Any) -> tuple[str, str, str] | None:
    """A malformed stream must be rejected at ``.index`` with ``.expected_rule``."""
    from ..conformance.adapters.reference import decode_case

    res = decode_case(options, payloads)
    err = next((i for i, r in enumerate(res) if "error" in r), None)
    want_i, want_rule = int(drawn.index), str(drawn.expected_rule)
    got_rule = res[err]["error"].get("rule") if err is not None else None
    if err == want_i and got_rule == want_rule:
        return None
    return (f"catalogue:{want_rule}:{got_rule}", "catalogue",
            f"malformed stream expected {want_rule} at #{want_i}, reference said "
            f"{got_rule or 'nothing'} at #{err}")
