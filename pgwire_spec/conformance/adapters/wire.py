"""A decoder inside a replication client, put to the conformance cases through the wire.

:class:`WireAdapter` plans the cases into replication sessions (:mod:`..wire`), serves each
session with the fake walsender (a replay of exactly its payloads), starts the client from
its command line, reads what it reports until the session's work is done, the client exits
or the session's time is up, stops it, and reads one answer per case. A case the client
did not reach runs again in a new session; the case it stopped within fails with its exit
status and the tail of its stderr.

The command's placeholders: ``{dsn}``, ``{host}``, ``{port}``, ``{user}``, ``{password}``,
``{dbname}``, ``{slot}`` (it exists), ``{publication}``, ``{proto_version}`` and
``{options}`` (the pgoutput options to negotiate, a JSON object of texts). For the
``pgrecvlogical`` kind the command is the program (and any extra flags): the adapter adds
``-d DSN -S SLOT --start --no-loop -f -`` and one ``-o name=value`` per option.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ...pgoutput import messages as m
from ...pgoutput._codec import encode
from ...walsender import Scenario, SyncFakeWalsender
from ...walsender.publications import Publication
from ...walsender.scenario import RawStream, ServerInfo, Slot
from ..adapter import CONTRACT_VERSION, Adapter, AdapterError, CaseResult, log_tail, profile_of
from ..cases import Case
from ..command import PLACEHOLDERS, check_command
from ..profile import Profile
from ..runner import judge
from ..shapes import Shape, ShapeError, shape_of
from ..wire import (
    FIRST_LSN,
    KINDS,
    JsonlLines,
    Kind,
    Outcome,
    Session,
    not_applicable,
    options_of,
    plan_sessions,
    read_jsonl,
    read_pgrecvlogical,
)

__all__ = ["WireAdapter", "WIRE_PLACEHOLDERS", "PGRECVLOGICAL_PROFILE", "guess_kind", "SERVER_VERSION"]

WIRE_PLACEHOLDERS = (*PLACEHOLDERS, "dbname", "publication", "proto_version", "options")

#: What pg_recvlogical can be asked for: any option goes through ``-o`` to pgoutput, and it
#: writes whatever bytes come; it decodes nothing, so it judges no sequence (message level).
PGRECVLOGICAL_PROFILE = {"protocol_versions": [1, 2, 3, 4], "streaming": "parallel", "two_phase": True,
                         "binary": True, "messages": True, "origin": True, "level": "message"}

#: The persona the sessions are served with: one that accepts every option a case needs
#: (protocol 4, streaming parallel: 16+).
SERVER_VERSION = "17.6"
#: Sessions in a row a client may stop in without reporting anything before the rest of the
#: run fails at once (a client that cannot connect is not started once per case).
SILENT_LIMIT = 3
#: The most bytes a client may write in one session (several times what is sent).
MAX_OUTPUT = 256 << 20


def guess_kind(words: Sequence[str]) -> Kind:
    """``pgrecvlogical`` for a command that runs pg_recvlogical, else ``jsonl``."""
    return "pgrecvlogical" if words and os.path.basename(words[0]).startswith("pg_recvlogical") else "jsonl"


def _pg_version(program: str) -> str:
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.split(")", 1)[-1].strip() if ")" in out else out.strip()


class WireAdapter(Adapter):
    """A client streamed the cases by the fake walsender (see :mod:`..wire` for the kinds)."""

    batch = 2000

    def __init__(self, command: str | Sequence[str], kind: Kind | None = None, *, name: str | None = None,
                 version: str | None = None, profile: Profile | Mapping[str, Any] | None = None,
                 timeout: float = 10.0, env: Mapping[str, str] | None = None, slot: str = "conform",
                 sendable: Sequence[str] | None = None, shape: Shape | str | None = None) -> None:
        self.words = check_command(command, WIRE_PLACEHOLDERS)
        self.kind: Kind = kind or guess_kind(self.words)
        if self.kind not in KINDS:
            raise AdapterError(f"client kind: expected one of {', '.join(KINDS)}, found {self.kind!r}")
        program = self.words[0]
        if shutil.which(program) is None:
            raise AdapterError(f"cannot start the client: {program!r} not found")
        self.name = name or os.path.basename(program)
        if self.kind == "pgrecvlogical":
            self.version = version if version is not None else _pg_version(program)
            declared: Any = profile if profile is not None else PGRECVLOGICAL_PROFILE
        else:
            self.version = version or ""
            declared = profile
        self.profile = profile_of(declared, f"the profile of {self.name}")
        self.timeout = timeout
        self.env = dict(os.environ if env is None else env)
        self.slot = slot
        try:
            self.shape = shape_of(shape) if isinstance(shape, str) else shape
        except ShapeError as exc:
            raise AdapterError(str(exc)) from None
        #: the pgoutput options the client can send (None: any); a case needing another is
        #: not applicable
        self.sendable = None if sendable is None else frozenset(sendable)
        #: sessions served so far (client starts)
        self.sessions = 0
        #: sessions in a row in which the client reported nothing and stopped
        self._silent = 0
        #: set once the client failed SILENT_LIMIT sessions in a row: why the rest fail at once
        self._dead: str | None = None
        if self.kind == "jsonl":
            self._hello(named=name is not None, versioned=version is not None, declared=profile is not None,
                        shaped=shape is not None)
        self.unreported = None if self.shape is None else self.shape.unreported

    def _hello(self, *, named: bool, versioned: bool, declared: bool, shaped: bool) -> None:
        """Start the client once on a session of one empty transaction and read its hello
        line, if it prints one first: its name, version, profile and shape, where the
        caller gave none (``--claim`` overrides the profile in the runner)."""
        begin = encode(m.Begin(FIRST_LSN, 0, 1))
        commit = encode(m.Commit(0, FIRST_LSN, FIRST_LSN + 0x28, 0))
        probe = Session("jsonl", (), options_of("jsonl", {"protocol_version": 1}), (begin, commit),
                        (FIRST_LSN, FIRST_LSN + 0x40), (None, None))
        lines = self._serve(probe, hello=True)
        assert isinstance(lines, JsonlLines)
        hello = lines.hello
        if hello is None:
            return
        if hello.get("contract", CONTRACT_VERSION) != CONTRACT_VERSION:
            raise AdapterError(f"client hello: contract {hello.get('contract')!r}, expected {CONTRACT_VERSION}")
        if not named and hello.get("name"):
            self.name = str(hello["name"])
        if not versioned and hello.get("version") is not None:
            self.version = str(hello["version"])
        if not declared and hello.get("profile") is not None:
            self.profile = profile_of(hello["profile"], f"the hello of {self.name}")
        if not shaped and hello.get("shape") is not None:
            try:
                self.shape = shape_of(hello["shape"])
            except ShapeError as exc:
                raise AdapterError(f"the hello of {self.name}: {exc}") from None

    def run_case(self, case_id: str, context: Mapping[str, Any], payloads: Sequence[bytes]) -> CaseResult:
        return self.run_batch([Case(case_id, "", "", "MUST", context, tuple(payloads))])[0]

    def run_batch(self, cases: Sequence[Case]) -> list[CaseResult]:
        answers: list[CaseResult | None] = [None] * len(cases)
        where: dict[int, int] = {}
        todo = []
        for n, c in enumerate(cases):
            reason = not_applicable(self.kind, c) or self._unsendable(c)
            if reason is not None:
                answers[n] = CaseResult(not_applicable=reason)
            elif self._dead is not None:
                answers[n] = CaseResult(crash=self._dead)
            else:
                where[id(c)] = n
                todo.append(c)
        recheck = self._run(plan_sessions(self.kind, todo), answers, where)
        for c in recheck:  # failed after a malformed case in its session: judged alone
            self._run(plan_sessions(self.kind, [c]), answers, where)
        return [a if a is not None else CaseResult(crash="no answer") for a in answers]

    def _unsendable(self, case: Case) -> str | None:
        if self.sendable is None:
            return None
        missing = [k for k in options_of(self.kind, case.context) if k not in self.sendable]
        return (f"{self.name} cannot send the pgoutput option{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}") if missing else None

    def _run(self, sessions: list[Session], answers: list[CaseResult | None], where: dict[int, int]) -> list[Case]:
        """Serve *sessions*, a case the client did not reach again in a new one; the tainted
        cases that failed."""
        recheck = []
        queue = deque(sessions)
        while queue:
            session = queue.popleft()
            if self._dead is not None:
                for case in session.cases:
                    answers[where[id(case)]] = CaseResult(crash=self._dead)
                continue
            outcome = self._serve(session)
            assert isinstance(outcome, Outcome)
            self._silent = self._silent + 1 if outcome.resume is not None and not outcome.answers else 0
            if self._silent >= SILENT_LIMIT:
                self._dead = f"the client stopped {SILENT_LIMIT} sessions in a row without reporting: {outcome.why}"
            for k, answer in outcome.answers.items():
                case = session.cases[k]
                answers[where[id(case)]] = answer
                if session.tainted[k] and judge(case, answer, strict=True).status == "failed":
                    recheck.append(case)
            if outcome.resume is not None:
                rest = list(session.cases[outcome.resume:])
                if not outcome.answers:  # nothing settled: the first case fails, so each session makes headway
                    answers[where[id(rest[0])]] = CaseResult(crash=outcome.why)
                    rest = rest[1:]
                queue.extendleft(reversed(plan_sessions(self.kind, rest)))
        return recheck

    # -- one session ---------------------------------------------------------------------------
    def _scenario(self, session: Session) -> Scenario:
        return Scenario(server=ServerInfo(version=SERVER_VERSION, start_lsn=FIRST_LSN - 0x100000),
                        publications=(Publication("pub", None),), slots=(Slot(self.slot),),
                        raw=RawStream(session.payloads, tuple((x, x) for x in session.lsns),
                                      tuple(session.options.items())),
                        name="conform-wire")

    def _argv(self, session: Session, fake: Any) -> list[str]:
        values = {"dsn": fake.dsn, "slot": self.slot, "host": fake.host, "port": str(fake.port), "user": fake.user,
                  "password": fake.password or "", "dbname": fake.scenario.server.database, "publication": "pub",
                  "proto_version": session.options["proto_version"], "options": json.dumps(dict(session.options))}
        argv = [w.format(**values) for w in self.words]
        if self.kind == "pgrecvlogical":
            argv += ["-d", fake.dsn, "-S", self.slot, "--start", "--no-loop", "-f", "-"]
            for k, v in session.options.items():
                argv += ["-o", f"{k}={v}"]
        return argv

    def _serve(self, session: Session, *, hello: bool = False) -> Outcome | JsonlLines:
        """Serve *session* to a client start; what it reported, or with *hello* the lines
        read until its hello or its first report."""
        if not hello:
            self.sessions += 1
        t0 = time.monotonic()
        with SyncFakeWalsender(self._scenario(session), record=False) as fake, tempfile.TemporaryFile() as err:
            argv = self._argv(session, fake)
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                        env=self.env, start_new_session=True)
            except OSError as exc:
                raise AdapterError(f"cannot start the client {argv[0]!r}: {exc.strerror or exc}") from None
            lines = JsonlLines(session, self.shape) if self.kind == "jsonl" else None
            out = bytearray()
            total = 0
            end_line = session.end_marker + b"\n"
            limit = self.timeout + 0.005 * len(session.payloads)
            ended = ""
            try:
                assert proc.stdout is not None
                fd = proc.stdout.fileno()
                with selectors.DefaultSelector() as sel:
                    sel.register(fd, selectors.EVENT_READ)
                    while True:
                        left = t0 + limit - time.monotonic()
                        if left <= 0:
                            ended = f"no end within the session's {limit:.1f} s (timeout)"
                            break
                        if not sel.select(min(left, 1.0)):
                            continue
                        chunk = os.read(fd, 1 << 16)
                        if not chunk:
                            ended = f"exit status {proc.wait(timeout=10)}"
                            break
                        total += len(chunk)
                        if lines is not None:
                            lines.feed(chunk)
                            if lines.done or (hello and (lines.hello is not None or lines.entries)):
                                break
                        else:
                            out += chunk
                            if out.find(end_line, max(0, len(out) - len(chunk) - len(end_line))) >= 0:
                                break
                        if total > MAX_OUTPUT:
                            ended = f"more than {MAX_OUTPUT:,} bytes written"
                            break
            finally:
                _stop(proc)
            tail = log_tail(err)
            if tail and ended:
                ended += f"; stderr: {tail}"
        if hello and lines is not None:
            return lines
        if lines is not None:
            return read_jsonl(lines, ended)
        return read_pgrecvlogical(session, bytes(out), ended)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
