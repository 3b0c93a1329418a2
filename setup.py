"""The optional C accelerator of the pgoutput codec and of the fake walsender's streams, and
the shipped data; all other metadata is in pyproject.toml.

pgwire_spec/_speedups.c is generated from the construct grammar by pgwire_spec/_cgen.py
(`python -m pgwire_spec.pgoutput._cbuild`; committed, so building needs no code generation). ``optional=True``: without a compiler
the install still succeeds and the pure-Python codec is used.

The golden corpus (``fixtures/``), ``spec/``, ``examples/`` and ``fuzz/campaigns/`` live once, at the top of the
repository; the build copies them into the wheel as ``pgwire_spec/_data/`` (found at run time
by ``pgwire_spec._resources``), so a wheel is the whole toolkit and git holds one copy.
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

#: Folder of the package data -> its one copy in the repository.
DATA_DIRS = {"fixtures": "fixtures", "spec": "spec", "examples": "examples", "campaigns": "fuzz/campaigns"}
HERE = Path(__file__).resolve().parent


class build_py_with_data(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's folders
            return
        target = Path(self.build_lib) / "pgwire_spec" / "_data"
        for name, where in DATA_DIRS.items():
            source = HERE / where
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing: build from a full checkout or sdist")
            dest = target / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(
    cmdclass={"build_py": build_py_with_data},
    ext_modules=[
        Extension("pgwire_spec._speedups", ["pgwire_spec/_speedups.c"], optional=True),
    ],
)
