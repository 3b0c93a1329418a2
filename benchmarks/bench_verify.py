"""How fast ``verify-fixtures`` checks cases, on one core, over the committed corpus.

Verification of a case = decode under its recorded context, re-encode and compare the
bytes, build the JSON form and compare it with the expected one, and replay the group as a
stream (the sequence checks). Target: >= 100,000 messages verified in <= 10 s.

The peer, measured side by side on the same payloads: pypgoutput 0.0.3, which only
*decodes* (protocol 1 message kinds B C R I U D T; its Origin class takes no payload); our decode-only rate on the same
subset is shown next to it.

    python benchmarks/bench_verify.py [--messages 100000] [--repeat 5]

Times: the CPU time of the measuring thread (``time.thread_time``: one core's work, not
the time other processes on a shared machine held it) and the wall clock beside it, both
medians; the load average is printed with them. The last line is the whole command's work
in-process (``verify_paths`` over the corpus: reading, gunzip, JSON, every check; sessions
and physical recordings included), without the interpreter's start; the line after it is
the command as a user runs it, ``pgwire-spec verify-fixtures`` started from the shell
(interpreter start and imports included, byte code compiled beforehand as pip does at
install): the cases it reports verified divided by the process's CPU time (user + system,
one core) and by its wall clock.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from pgwire_spec._resources import fixtures_dir
from pgwire_spec.capture import find_fixture_files
from pgwire_spec.capture.fixture import FORMAT, document_format, load_document, parse_fixture
from pgwire_spec.capture.verify import Checked, verify_group, verify_paths
from pgwire_spec.pgoutput._codec import decode_payload


def pgoutput_files() -> list:
    """The option-set groups of each pgoutput fixture file (sessions and physical recordings
    are other formats, verified by their own checks)."""
    out = []
    for path in find_fixture_files([fixtures_dir()]):
        doc = load_document(path)
        if document_format(doc) == FORMAT:
            out.append(parse_fixture(doc, path).groups)
    return out


def _median_rate(fn, count: int, repeat: int) -> tuple[float, float]:
    """(messages per CPU second, median CPU seconds); the wall-clock figures in WALL."""
    times = []
    walls = []
    for _ in range(repeat):
        start, wall = time.thread_time(), time.perf_counter()
        fn()
        times.append(time.thread_time() - start)
        walls.append(time.perf_counter() - wall)
    med = statistics.median(times)
    WALL[0], WALL[1] = count / statistics.median(walls), statistics.median(walls)
    return count / med, med


#: the wall-clock (rate, median seconds) of the last _median_rate
WALL = [0.0, 0.0]


def _command(pycache: str) -> tuple[int, float, float]:
    """(cases verified, CPU seconds, wall seconds) of one ``pgwire-spec verify-fixtures``
    process over the corpus, as a user starts it (this checkout's package first on the path;
    byte code kept in *pycache*, as an installed package has it: pip compiles it at install)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_CHECKOUT, os.environ.get("PYTHONPATH")])),
               PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pgwire_spec", "verify-fixtures", "-q", str(fixtures_dir())],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = re.search(r"^([\d,]+) cases in .*: all match$", done.stdout, re.M)
    if done.returncode or not found:
        raise SystemExit(f"pgwire-spec verify-fixtures failed ({done.returncode}): {done.stdout[-300:]}{done.stderr[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return int(found.group(1).replace(",", "")), cpu, wall


#: the checkout this script belongs to, so that the command measured is this tree's
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--short", action="store_true", help="one pass, once (CI: the script runs, figures are rough)")
    args = ap.parse_args()
    if args.short:
        args.messages, args.repeat = 1, 1

    files = pgoutput_files()
    groups = [g for groups in files for g in groups]
    per_pass = sum(len(g.cases) for g in groups)
    passes = max(1, -(-args.messages // per_pass))
    total = per_pass * passes

    def verify_all() -> None:
        for _ in range(passes):
            for groups_of_file in files:
                checked = Checked()  # the payloads checked, one per file and pass, as verify_fixture keeps
                for g in groups_of_file:
                    if verify_group(g, sequence=True, checked=checked):
                        raise SystemExit(f"corpus does not verify: group {g.name}")

    rate, med = _median_rate(verify_all, total, args.repeat)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"corpus: {per_pass:,} cases in {len(groups)} groups; {passes} passes = {total:,} messages per run")
    print(f"verify-fixtures loop (decode + re-encode + JSON + sequence): median {med:.2f} s of CPU "
          f"for {total:,} messages = {rate:,.0f} messages/s; wall clock {WALL[1]:.2f} s = {WALL[0]:,.0f} messages/s")
    cases = [0]

    def whole() -> None:
        cases[0] = verify_paths([fixtures_dir()]).cases

    runs, med = _median_rate(whole, 1, args.repeat)  # runs per second, times the cases of a run below
    rate, WALL[0] = runs * cases[0], WALL[0] * cases[0]
    print(f"whole corpus as verify-fixtures reads it ({cases[0]:,} cases, files read and parsed): "
          f"median {med:.2f} s of CPU = {rate:,.0f} cases/s; wall clock {WALL[1]:.2f} s = {WALL[0]:,.0f} cases/s")

    cpus, walls = [], []
    with tempfile.TemporaryDirectory() as pycache:
        _command(pycache)  # compiles the byte code, not counted
        for _ in range(args.repeat):
            cases[0], cpu, wall = _command(pycache)
            cpus.append(cpu)
            walls.append(wall)
    cpu, wall = statistics.median(cpus), statistics.median(walls)
    print(f"the command from the shell (pgwire-spec verify-fixtures, {cases[0]:,} cases, interpreter start and "
          f"imports included): median {cpu:.2f} s of CPU = {cases[0] / cpu:,.0f} cases/s; "
          f"wall clock {wall:.2f} s = {cases[0] / wall:,.0f} cases/s")

    # Side by side with pypgoutput on the protocol-1 kinds it decodes.
    v1 = [bytes.fromhex(c.hex) for g in groups for c in g.cases
          if not c.in_stream and c.expected["tag"] in "BCRIUDT"]
    reps = max(1, -(-args.messages // len(v1)))
    def ours() -> None:
        # a loop that keeps nothing, as the peer's below (a list of results would make the
        # garbage collector walk them all, again and again)
        for _ in range(reps):
            for p in v1:
                decode_payload(p, False, False)

    ours_rate, _ = _median_rate(ours, len(v1) * reps, args.repeat)
    print(f"decode only, pgwire-spec, {len(v1):,} protocol-1 payloads x {reps}: median {ours_rate:,.0f} messages/s")
    try:
        import pypgoutput.decoders as pp
    except ImportError:
        print("pypgoutput not installed: peer not measured (pip install pypgoutput==0.0.3)")
        return
    classes = {"B": pp.Begin, "C": pp.Commit, "R": pp.Relation, "I": pp.Insert,
               "U": pp.Update, "D": pp.Delete, "T": pp.Truncate}
    # pypgoutput mis-parses 'b' values (erratum E-BINARY-FALLBACK): keep what it decodes at all.
    ok = []
    for p in v1:
        try:
            classes[chr(p[0])](p)
            ok.append(p)
        except Exception:
            pass
    if len(ok) != len(v1):
        print(f"pypgoutput refuses {len(v1) - len(ok)} of the {len(v1):,} payloads ('b' values); "
              f"both sides below use the {len(ok):,} it decodes")
        v1 = ok
        ours_rate, _ = _median_rate(ours, len(v1) * reps, args.repeat)
        print(f"decode only, pgwire-spec, same {len(v1):,} payloads: median {ours_rate:,.0f} messages/s")

    def peer() -> None:
        for _ in range(reps):
            for p in v1:
                classes[chr(p[0])](p)

    peer_rate, _ = _median_rate(peer, len(v1) * reps, args.repeat)
    print(f"decode only, pypgoutput 0.0.3, same payloads: median {peer_rate:,.0f} messages/s "
          f"(pgwire-spec / pypgoutput = {ours_rate / peer_rate:.2f}x)")


if __name__ == "__main__":
    main()
