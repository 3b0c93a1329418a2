"""The shell of client conformance: for each case, a fake walsender serving the case's
scenario, the client started from its command line (``{dsn}``, ``{slot}``, ``{host}``,
``{port}``, ``{user}``, ``{password}`` filled in), the client's stdout read for the applied
hook, and the case's oracle over the transcript once the window closes."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..conformance.command import PLACEHOLDERS, ClientCommandError, check_command
from ..walsender import Scenario, SyncFakeWalsender
from ..walsender._history import compile_history
from .cases import CASES, ClientCase, Grade, Run, parse_hook

__all__ = ["ClientResult", "ClientCommandError", "run_client", "PLACEHOLDERS"]

#: Lines of the client's stderr kept per case (shown with a failure).
_STDERR_LINES = 20
#: Seconds a client gets to make its first connection. A case's window opens then, not when
#: the process starts: an interpreter, a JVM or a subscriber's apply worker (started by the
#: launcher at most once per wal_retrieve_retry_interval, logical/launcher.c) takes seconds
#: to get there on a loaded machine, and the cases judge what the client does once connected.
CONNECT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class ClientResult:
    """The grades of one client: its ``name``, its ``command`` and one :class:`Grade` per
    case, with the last lines of its stderr per case (``stderr``)."""

    name: str
    command: str
    grades: tuple[Grade, ...]
    stderr: dict[str, list[str]] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(g.status == status for g in self.grades)

    @property
    def ok(self) -> bool:
        return not self.count("failed")


def _reader(stream: Any, sink: Callable[[str], None]) -> None:
    for raw in iter(stream.readline, b""):
        sink(raw.decode("utf-8", "replace"))
    stream.close()


def run_case(words: Sequence[str], c: ClientCase, *, slot: str = "conform",
             env: dict[str, str] | None = None) -> tuple[Grade, list[str]]:
    """Run one case against the client; its grade and the last lines of the client's stderr."""
    scenario = Scenario.from_dict(c.scenario(slot), name=c.id)
    params: dict[str, Any] = {"last_commit_end": compile_history(scenario).end_lsn}
    with SyncFakeWalsender(scenario) as fake:
        if c.slot_active:
            def hold() -> None:
                # held by a walsender that is not the client's (slot.c ReplicationSlotAcquire:
                # 55006 "… is active for PID …") for the whole case
                held = fake.slots[slot]
                held.held_until, held.held_pid = fake.state.clock() + c.window + 60.0, fake.state.next_pid()
            fake.call(hold)
        started = fake.state.started
        values = {"dsn": fake.dsn, "slot": slot, "host": fake.host, "port": str(fake.port), "user": fake.user,
                  "password": fake.password or ""}
        argv = [w.format(**values) for w in words]
        applied: list[tuple[float, int]] = []
        changes: dict[int, int] = {}
        errors: list[str] = []

        def on_out(line: str) -> None:
            hook = parse_hook(line)
            if hook is not None:
                applied.append((time.monotonic() - started, hook.lsn))
                if hook.changes is not None:
                    changes[hook.lsn] = hook.changes

        def on_err(line: str) -> None:
            errors.append(line.rstrip("\n"))
            del errors[:-_STDERR_LINES]

        child_env = dict(os.environ if env is None else env)
        if fake.password:
            child_env.setdefault("PGPASSWORD", fake.password)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=child_env)
        except OSError as exc:
            raise ClientCommandError(f"cannot start the client {argv[0]!r}: {exc.strerror or exc}") from None
        readers = [threading.Thread(target=_reader, args=(proc.stdout, on_out), daemon=True),
                   threading.Thread(target=_reader, args=(proc.stderr, on_err), daemon=True)]
        for r in readers:
            r.start()
        exit_code: int | None = None
        stopped: float | None = None
        opened: float | None = None  # when the client first connected (monotonic)
        try:
            while True:
                now = time.monotonic()
                if opened is None:
                    first = fake.call(lambda: fake.transcript.entries[:1])
                    if first:
                        opened = started + first[0].time
                    elif now - t0 >= CONNECT_TIMEOUT:
                        break
                if opened is not None and now - opened >= c.window:
                    break
                code = proc.poll()
                if code is not None:
                    exit_code = code
                    break
                if c.done is not None and opened is not None:
                    entries = fake.call(lambda: list(fake.transcript.entries))
                    if c.done(Run(entries, tuple(applied), None, now - opened, params, changes=dict(changes))):
                        time.sleep(c.grace)
                        break
                time.sleep(0.2)
        finally:
            window = time.monotonic() - (opened if opened is not None else t0)
            if proc.poll() is None:
                stopped = time.monotonic() - started
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for r in readers:
                r.join(timeout=5)
        entries = fake.call(lambda: list(fake.transcript.entries))
    run = Run(entries, tuple(applied), exit_code, window, params, stopped, dict(changes))
    return c.grade(run), list(errors)


def run_client(command: str, *, name: str | None = None, cases: Sequence[ClientCase] = CASES,
               slot: str = "conform", env: dict[str, str] | None = None,
               progress: Callable[[Grade], None] | None = None) -> ClientResult:
    """Grade the client started by *command* on every case."""
    words = check_command(command)
    grades = []
    stderr: dict[str, list[str]] = {}
    for c in cases:
        grade, err = run_case(words, c, slot=slot, env=env)
        grades.append(grade)
        stderr[c.id] = err
        if progress is not None:
            progress(grade)
    return ClientResult(name or os.path.basename(words[0]), command, tuple(grades), stderr)
