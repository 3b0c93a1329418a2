"""Start-up time: ``import pgwire_spec``, ``pgwire-spec --help`` and ``--version``, each a
fresh process, beside ``python -c 'import json'`` (the interpreter's own floor), interleaved.

Targets: ``import pgwire_spec`` <= 0.15 s and ``pgwire-spec --help`` <= 0.2 s. Run it with the
python of the installation to measure (a wheel in a venv has its bytecode compiled by pip; a
checkout run with PYTHONDONTWRITEBYTECODE=1 compiles every module at each start).

    python benchmarks/bench_startup.py [--repeat 15] [--short]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c 'import json' (floor)": [sys.executable, "-c", "import json"],
    "import pgwire_spec": [sys.executable, "-c", "import pgwire_spec"],
    "pgwire-spec --help": [sys.executable, "-m", "pgwire_spec", "--help"],
    "pgwire-spec --version": [sys.executable, "-m", "pgwire_spec", "--version"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="runs of each (default 15)")
    ap.add_argument("--short", action="store_true", help="3 runs of each (CI)")
    args = ap.parse_args()
    repeat = 3 if args.short else args.repeat
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(repeat):
        for name, argv in CASES.items():  # interleaved: machine noise hits every case alike
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["python -c 'import json' (floor)"])
    print(f"{'command':<34} {'median s':>9} {'above floor s':>14}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<34} {med:>9.3f} {med - floor:>14.3f}")
    print(f"({repeat} runs each, {sys.executable})")


if __name__ == "__main__":
    main()
