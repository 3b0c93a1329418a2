"""Where the shipped data is: the golden corpus, ``spec/``, the example scenarios and the
fuzz campaigns.

One copy of each lives in the repository (``fixtures/``, ``spec/``, ``examples/``); a wheel
carries them (and ``fuzz/campaigns/``) as package data under ``pgwire_spec/_data/`` (copied there by ``setup.py``'s
build step). Lookup order, per kind:

1. an environment variable (``PGWIRE_SPEC_FIXTURES``, ``PGWIRE_SPEC_SPEC``,
   ``PGWIRE_SPEC_EXAMPLES``, ``PGWIRE_SPEC_CAMPAIGNS``), when set;
2. the source checkout the package was imported from (so every command works from any
   folder, sub-folders of the checkout included);
3. the package data of an installed wheel (found through :mod:`importlib.resources`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import PgWireError

__all__ = [
    "ResourceError",
    "DataSource",
    "fixtures_dir",
    "spec_dir",
    "examples_dir",
    "campaigns_dir",
    "scenario_path",
    "example_scenarios",
    "data_source",
]

_ENV = {"fixtures": "PGWIRE_SPEC_FIXTURES", "spec": "PGWIRE_SPEC_SPEC", "examples": "PGWIRE_SPEC_EXAMPLES",
        "campaigns": "PGWIRE_SPEC_CAMPAIGNS"}
#: Where each kind lives in a checkout (setup.py's DATA_DIRS, the other side of the copy).
_CHECKOUT = {"fixtures": "fixtures", "spec": "spec", "examples": "examples", "campaigns": "fuzz/campaigns"}
#: A file that tells each kind's folder apart from a folder of the same name elsewhere.
_MARKER = {"fixtures": "README.md", "spec": "rules.yaml", "examples": "scenarios", "campaigns": "smoke.yaml"}


class ResourceError(PgWireError):
    """Shipped data that cannot be found (neither in a checkout nor in the package)."""


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where one kind of shipped data was found, and how."""

    kind: str
    path: Path
    origin: str  # "environment", "checkout" or "package"

    def __str__(self) -> str:
        return f"{self.path} ({self.origin})"


def _checkout_root() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "spec").is_dir() else None


def _package_dir(kind: str) -> Path | None:
    here = Path(__file__).resolve().parent / "_data" / kind
    if here.is_dir():  # installed as files, as pip installs a wheel: what importlib.resources finds
        return here
    # another loader (a zip): importlib.resources, imported only then (it brings tempfile
    # and zipfile along, a tenth of a command's start)
    from importlib import resources

    try:
        base = resources.files("pgwire_spec") / "_data" / kind
    except (ModuleNotFoundError, FileNotFoundError):  # pragma: no cover - a broken install
        return None
    path = Path(str(base))
    return path if path.is_dir() else None


def data_source(kind: str) -> DataSource:
    """Where *kind* (``fixtures``, ``spec``, ``examples`` or ``campaigns``) is; :class:`ResourceError` if
    nowhere."""
    if kind not in _ENV:
        raise ResourceError(f"no shipped data of kind {kind!r} (expected one of {', '.join(_ENV)})")
    env = os.environ.get(_ENV[kind])
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise ResourceError(f"${_ENV[kind]} names {env!r}, which is not a directory")
        return DataSource(kind, path, "environment")
    root = _checkout_root()
    if root is not None and (root / _CHECKOUT[kind] / _MARKER[kind]).exists():
        return DataSource(kind, root / _CHECKOUT[kind], "checkout")
    packaged = _package_dir(kind)
    if packaged is not None and (packaged / _MARKER[kind]).exists():
        return DataSource(kind, packaged, "package")
    raise ResourceError(
        f"the {kind} are neither in a source checkout nor in the installed package "
        f"(set ${_ENV[kind]} to a folder holding them)"
    )


def fixtures_dir() -> Path:
    """The golden corpus folder (``fixtures/``)."""
    return data_source("fixtures").path


def spec_dir() -> Path:
    """The ``spec/`` folder (schemas, rules, errata, adapter contract)."""
    return data_source("spec").path


def examples_dir() -> Path:
    """The ``examples/`` folder (``scenarios/`` …)."""
    return data_source("examples").path


def campaigns_dir() -> Path:
    """The fuzz campaign definitions (``fuzz/campaigns/`` of a checkout)."""
    return data_source("campaigns").path


def example_scenarios() -> dict[str, Path]:
    """The example scenarios by name (file name without its suffix)."""
    folder = examples_dir() / "scenarios"
    return {p.name.rsplit(".", 1)[0]: p for p in sorted(folder.iterdir())
            if p.suffix in (".yaml", ".yml", ".json")}


def scenario_path(name_or_path: str) -> Path:
    """A scenario file: *name_or_path* as a path when it exists, else an example's name
    (``accounts`` for ``examples/scenarios/accounts.yaml``)."""
    p = Path(name_or_path)
    if p.exists() or os.sep in name_or_path or p.suffix in (".yaml", ".yml", ".json"):
        return p
    examples = example_scenarios()
    if name_or_path in examples:
        return examples[name_or_path]
    raise ResourceError(
        f"no scenario file {name_or_path!r} and no example scenario of that name "
        f"(examples: {', '.join(examples)})"
    )
