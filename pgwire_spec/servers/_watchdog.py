"""Nothing a provider starts outlives the process that started it.

Each cluster's directory holds an owner file (:data:`OWNER_FILE`): the pid and start time
of the process that created it and, once launched, of its postmaster. Two mechanisms use it:

* a watchdog process per running postmaster (``python -m pgwire_spec.servers._watchdog``,
  in its own session) holds the read end of a pipe whose write end only the owner holds;
  when the owner ends in any way — SIGKILL and the OOM killer included, the kernel closes
  its descriptors — the watchdog reads EOF, stops the postmaster (SIGQUIT, PostgreSQL's
  immediate shutdown, to its process group; SIGKILL if it lingers) and removes the
  directory;
* :func:`reap_stale`, run whenever a cluster starts, removes what a run left behind when
  even its watchdog could not act (the machine's processes killed together): directories
  with an owner file whose owner is gone, after stopping their postmaster. Directories
  without an owner file, or whose owner still runs, are not touched; a pid is only
  trusted together with its start time (pids are reused).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["OWNER_FILE", "PREFIX", "start_time", "write_owner", "reap_stale", "stop_and_remove"]

#: The owner file inside a cluster's directory.
OWNER_FILE = "pgwire-spec-owner.json"
#: The prefix of the clusters' directories in the temporary folder.
PREFIX = "pgwire-spec-pg-"


def start_time(pid: int) -> int | None:
    """The start time of process *pid* (clock ticks since boot, /proc/PID/stat field 22), or
    None when no such process runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19])


def _alive(pid: int | None, started: int | None) -> bool:
    return pid is not None and started is not None and start_time(pid) == started


def write_owner(root: Path, postmaster: int | None = None) -> None:
    """Mark *root* as this process's (and its postmaster's, once known)."""
    me = os.getpid()
    data = {"owner": me, "owner_start": start_time(me), "postmaster": postmaster,
            "postmaster_start": start_time(postmaster) if postmaster is not None else None}
    tmp = root / (OWNER_FILE + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(root / OWNER_FILE)


def stop_and_remove(root: Path, postmaster: int | None, postmaster_start: int | None) -> None:
    """Stop the postmaster (if it is still the one recorded) and remove *root*."""
    if _alive(postmaster, postmaster_start):
        assert postmaster is not None
        for sig, wait in ((signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(postmaster, sig)  # the postmaster leads its session: its children too
            except ProcessLookupError:
                break
            except PermissionError:
                os.kill(postmaster, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _alive(postmaster, postmaster_start):
                time.sleep(0.05)
            if not _alive(postmaster, postmaster_start):
                break
    shutil.rmtree(root, ignore_errors=True)


def reap_stale(folder: Path | None = None) -> list[Path]:
    """Remove the cluster directories in *folder* (the temporary folder) whose owner is gone,
    stopping their postmasters first; return them."""
    folder = Path(folder or tempfile.gettempdir())
    reaped = []
    for root in folder.glob(PREFIX + "*"):
        try:
            data = json.loads((root / OWNER_FILE).read_text())
            owner, owner_start = int(data["owner"]), data["owner_start"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not marked (not ours, or being created): leave it
        if _alive(owner, owner_start):
            continue
        stop_and_remove(root, data.get("postmaster"), data.get("postmaster_start"))
        reaped.append(root)
    return reaped


def main(argv: list[str]) -> int:
    """``_watchdog ROOT``: wait for EOF on stdin, then stop and remove what ROOT's owner
    file names (the owner ended without cleaning up)."""
    root = Path(argv[0])
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    try:
        data = json.loads((root / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return 0  # stopped and removed by its owner
    stop_and_remove(root, data.get("postmaster"), data.get("postmaster_start"))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the owner
    sys.exit(main(sys.argv[1:]))
