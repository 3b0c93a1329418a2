"""The optional C accelerator of the pgoutput codec; all other metadata is in pyproject.toml.

pgwire_spec/_speedups.c is generated from the construct grammar by pgwire_spec/_cgen.py
(`python -m pgwire_spec.pgoutput._cbuild`)
(committed, so building needs no code generation). ``optional=True``: without a compiler
the install still succeeds and the pure-Python codec is used.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("pgwire_spec._speedups", ["pgwire_spec/_speedups.c"], optional=True),
    ],
)
