"""pgjdbc for tests: the program in tests/walsender/data/pgjdbc/PgjdbcClient.java compiled
with the JDK's javac against Debian's libpostgresql-jdbc-java, or a skip naming the package
to install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["PGJDBC_JAR", "SOURCE", "compile_pgjdbc_client"]

SOURCE = Path(__file__).parent / "walsender" / "data" / "pgjdbc" / "PgjdbcClient.java"
#: Debian's libpostgresql-jdbc-java.
PGJDBC_JAR = Path("/usr/share/java/postgresql.jar")


def compile_pgjdbc_client(out: Path) -> list[str]:
    """Compile the program into *out*; the command that runs it (``… PgjdbcClient``)."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("no JDK (Debian package default-jdk-headless): javac compiles the pgjdbc client")
    if not PGJDBC_JAR.is_file():
        pytest.skip(f"no pgjdbc at {PGJDBC_JAR} (Debian package libpostgresql-jdbc-java)")
    proc = subprocess.run([javac, "-d", str(out), "-cp", str(PGJDBC_JAR), str(SOURCE)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [java, "-cp", f"{out}:{PGJDBC_JAR}", "PgjdbcClient"]
