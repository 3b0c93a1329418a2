"""A wheel of this checkout and clean virtualenvs outside the repository, as a user gets them.

The tests that use them (the package data, Spark from a venv) run the installed commands from
a folder outside the checkout with a PATH that does not hold the venv, so nothing of the
checkout can leak in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(directory: Path) -> Path:
    """``pip wheel --no-deps`` of this checkout into *directory*; the wheel's path."""
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(directory),
         str(ROOT)],
        check=True, capture_output=True, text=True, cwd=directory,
    )
    (wheel,) = directory.glob("pgwire_spec-*.whl")
    return wheel


def make_venv(directory: Path, wheel: Path, extras: tuple[str, ...] = ()) -> Path:
    """A fresh virtualenv at *directory* with *wheel* (and *extras*) installed by pip, its
    dependencies from the package index as for any user; the venv's python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(directory)
    python = directory / "bin" / "python"
    spec = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    # without PYTHONPATH: a checkout on it (with the egg-info a wheel build leaves) would
    # pass for the package already installed, and pip would install nothing
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", spec], capture_output=True, text=True,
                          cwd=directory, env=outside_env(python))
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {spec} failed:\n{proc.stderr[-3000:]}")
    return python


def outside_env(venv_python: Path) -> dict[str, str]:
    """The environment a user of the venv has: no PYTHONPATH, PATH without the venv (the
    commands are called by their full path), bytecode written as pip does."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    bin_dir = str(venv_python.parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    return env
