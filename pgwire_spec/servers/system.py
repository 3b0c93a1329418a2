"""``system``: PostgreSQL installed on this machine (a bin dir, or ``pg_config`` on PATH).

Debian's packages put each major in ``/usr/lib/postgresql/<major>/bin``; ``pg_config
--bindir`` names the default one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ._base import ClusterProvider, ProviderError

__all__ = ["SystemProvider", "find_system_bin_dir"]


def find_system_bin_dir(major: int | None = None) -> Path:
    """The bin dir of an installed server of *major* (any major when None)."""
    candidates: list[Path] = []
    if major is not None:
        candidates.append(Path(f"/usr/lib/postgresql/{major}/bin"))
        candidates.append(Path(f"/usr/pgsql-{major}/bin"))
    else:
        base = Path("/usr/lib/postgresql")
        if base.is_dir():
            majors = sorted((p for p in base.iterdir() if p.name.isdigit()), key=lambda p: -int(p.name))
            candidates += [p / "bin" for p in majors]
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    for path in candidates:
        if (path / "postgres").is_file() and (path / "initdb").is_file():
            if major is None or _major_of(path) == major:
                return path
    want = f"PostgreSQL {major}" if major is not None else "PostgreSQL"
    raise ProviderError(
        f"expected an installed {want} (initdb and postgres in /usr/lib/postgresql/<major>/bin "
        f"or pg_config --bindir), found none in {[str(c) for c in candidates] or 'no candidate'}"
    )


def _major_of(bin_dir: Path) -> int | None:
    try:
        out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    # "postgres (PostgreSQL) 15.8 (Debian 15.8-1)" / "postgres (PostgreSQL) 10.23"
    for word in out.stdout.split():
        head = word.split(".")[0]
        if head.isdigit():
            return int(head)
    return None


class SystemProvider(ClusterProvider):
    name = "system"

    def __init__(self, major: int | None = None, bin_dir: str | Path | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__(settings)
        self.major = major
        self.bin_dir = Path(bin_dir) if bin_dir is not None else None

    def locate(self) -> tuple[Path, Path | None]:
        if self.bin_dir is not None:
            return self.bin_dir, None
        return find_system_bin_dir(self.major), None
