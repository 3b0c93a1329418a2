"""``pgwire-spec export DIR``: write the shipped data out for decoder authors in any language.

The golden corpus (``fixtures/``: every major's pgoutput file, the walsender sessions, the
physical recordings), ``spec/`` (JSON Schemas, rules, errata, the adapter contract, the
generated reference), the example scenarios, the fuzz campaigns and the shipped client
harnesses (the Node programs of ``conform --client``/``--decoder pg-logical-replication``, to
run or copy as your own), copied from wherever this installation keeps them (a checkout or
the wheel's package data).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .._resources import data_source

#: What is exported, under which name in DIR.
KINDS = ("fixtures", "spec", "examples", "campaigns", "harnesses")
#: The harnesses: the package's own files (package data of pgwire_spec.conformance.adapters).
HARNESSES = Path(__file__).resolve().parent.parent / "conformance" / "adapters"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", type=Path, help="the folder to write (created; must be empty unless --force)")
    p.add_argument("--only", choices=KINDS, action="append",
                   help="export only this part (repeatable; default: all of " + ", ".join(KINDS) + ")")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder, replacing those parts")


def run(args: argparse.Namespace) -> int:
    out: Path = args.directory
    if out.exists() and not out.is_dir():
        raise ValueError(f"expected a folder to export to, found a file: {out}")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise ValueError(f"expected an empty or new folder, found {out} with files in it (use --force)")
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.only or KINDS:
        source = data_source(kind) if kind != "harnesses" else HARNESSES
        dest = out / kind
        if dest.exists():
            shutil.rmtree(dest)
        if kind == "harnesses":
            dest.mkdir()
            for js in sorted(HARNESSES.glob("*.js")):
                shutil.copy2(js, dest / js.name)
        else:
            shutil.copytree(source.path, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        files = [p for p in dest.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        print(f"{dest}: {len(files)} files, {size / 1e6:.1f} MB (from {source})")
    print(f"exported to {out}; the fixture format is described in {out / 'fixtures' / 'README.md'}",
          file=sys.stderr)
    return 0
