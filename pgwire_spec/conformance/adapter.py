"""The adapter contract (spec/adapter-contract.md): how a decoder under test is driven.

Two ways in:

* **in process** (Python): a function ``decode_case(context, payloads) -> results`` where
  *context* is the decoding context (a dict), *payloads* the payload bytes, and *results*
  one entry per payload decoded, ending at the first rejection:
  ``{"message": <JSON form>}`` or ``{"error": {"message": text, "rule": optional}}``;
  an extra ``{"error": …}`` after the last payload reports a bad end of stream; raising
  :class:`Skip` says the decoder cannot be configured for this case at all. Its capability
  profile (:class:`~.profile.Profile`) is the function's ``profile`` attribute (a Profile or
  its JSON form). Wrap it in :class:`FunctionAdapter`, or serve it over JSON lines with
  :func:`serve`.
* **subprocess** (any language): a persistent process reading one JSON request per line
  on stdin and answering one JSON line per request on stdout; its hello line may carry its
  ``profile``; see :class:`SubprocessAdapter`.

An adapter that crashes or exceeds the per-case timeout fails that case and is restarted.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from ..errors import PgWireError
from .profile import Profile, ProfileError
from .shapes import Shape, ShapeError, map_entry, shape_of

if TYPE_CHECKING:
    from .cases import Case

__all__ = [
    "CONTRACT_VERSION",
    "AdapterError",
    "AdapterCrash",
    "Skip",
    "profile_of",
    "CaseResult",
    "Adapter",
    "FunctionAdapter",
    "SubprocessAdapter",
    "DecodeCase",
    "serve",
]

#: The version of the JSON-lines contract; adapters say which one they speak in ``hello``.
CONTRACT_VERSION = 1

#: The in-process entry point: (context, payloads) -> result entries.
DecodeCase = Callable[[Mapping[str, Any], Sequence[bytes]], Sequence[Mapping[str, Any]]]


class AdapterError(PgWireError):
    """An adapter that cannot be started or does not speak the contract."""


class AdapterCrash(PgWireError):
    """The adapter died, hung or answered garbage while running one case."""

    def __init__(self, what: str, detail: str = "") -> None:
        self.what = what
        self.detail = detail
        super().__init__(f"{what}{': ' + detail if detail else ''}")


class Skip(Exception):  # noqa: N818 - raised by a decoder's function, read as "skip this case"
    """Raised by an in-process ``decode_case`` for a case it cannot be configured for at all
    (the same as a subprocess adapter's ``{"skip": reason}``); the reason is shown."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def profile_of(obj: Any, where: str) -> Profile | None:
    """A declared profile (a :class:`Profile` or its JSON form), ``None`` when undeclared;
    :class:`AdapterError` naming *where* it was declared when it cannot be read."""
    if obj is None:
        return None
    try:
        return Profile.from_json(obj() if callable(obj) else obj)
    except ProfileError as exc:
        raise AdapterError(f"{where}: {exc}") from None


@dataclass(frozen=True, slots=True)
class CaseResult:
    """An adapter's answer to one case: the result entries, or why there are none.

    ``not_applicable``: the case cannot be put to this decoder at all (a client that passes
    bytes through has nothing to reject; a stream's end cannot be sent down a session) —
    neither a pass nor a failure. ``failure``: what the adapter itself found wrong (a client
    that dropped, repeated or reordered a message), about payload ``index``, with what came
    instead (``actual``)."""

    results: tuple[Mapping[str, Any], ...] = ()
    skip: str | None = None
    crash: str | None = None
    seconds: float = 0.0
    not_applicable: str | None = None
    failure: str | None = None
    index: int | None = None
    actual: Any = None
    #: per message type, the fields of the JSON form the client does not report (its
    #: shape's): not compared
    unreported: Mapping[str, frozenset[str]] | None = None


class Adapter:
    """A decoder under test. ``name``/``version`` (and ``profile``) come from the adapter's
    hello; ``profile`` is ``None`` when the adapter declares none (then it is judged on
    everything)."""

    name: str = "adapter"
    version: str = ""
    profile: Profile | None = None
    #: The shape the client reports its messages in (None: the JSON form itself), and per
    #: message type the fields it does not report (not compared).
    shape: Shape | None = None
    unreported: Mapping[str, frozenset[str]] | None = None
    #: How many cases :meth:`run_batch` is given at once (a client fed through a session
    #: answers many cases per start).
    batch: int = 1

    def run(self, request: Mapping[str, Any]) -> CaseResult:
        """Run one case request (``{"id", "context", "payloads": [hex…]}``)."""
        raise NotImplementedError

    def run_case(self, case_id: str, context: Mapping[str, Any], payloads: Sequence[bytes]) -> CaseResult:
        """Run one case given as bytes (an in-process adapter skips the hex round trip)."""
        return self.run({"id": case_id, "context": dict(context), "payloads": [p.hex() for p in payloads]})

    def run_batch(self, cases: Sequence[Case]) -> list[CaseResult]:
        """Run several cases (at most :attr:`batch`); one answer per case, in order."""
        return [self.run_case(c.id, c.context, c.payloads) for c in cases]

    def close(self) -> None:
        """Release the decoder (stop its process)."""

    def __enter__(self) -> Adapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_results(obj: Any, shape: Shape | None = None) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(obj, (list, tuple)):
        raise AdapterCrash("bad answer", f"results must be a list, found {type(obj).__name__}")
    native = False
    for entry in obj:
        if type(entry) is dict and ("message" in entry or "error" in entry):
            continue  # the common case, without the ABC check below
        if isinstance(entry, Mapping) and "native" in entry:
            native = True
            continue
        if not isinstance(entry, Mapping) or not ({"message", "error"} & set(entry)):
            raise AdapterCrash("bad answer", f"each result needs 'message', 'native' or 'error', found {entry!r:.200}")
    return tuple(map_entry(e, shape) for e in obj) if native else tuple(obj)


class _Alarm(Exception):
    pass


class FunctionAdapter(Adapter):
    """An in-process Python decoder: ``decode_case(context, payloads) -> results``.

    Exceptions raised by the function fail the case (``crash``). A per-case timeout is
    enforced with SIGALRM when running in the main thread.
    """

    def __init__(self, decode_case: DecodeCase, name: str = "python", version: str = "",
                 timeout: float = 10.0, profile: Profile | Mapping[str, Any] | None = None) -> None:
        self.decode_case = decode_case
        self.name = name
        self.version = version
        self.timeout = timeout
        declared = profile if profile is not None else getattr(decode_case, "profile", None)
        self.profile = profile_of(declared, f"the profile of {name}")
        self._old_alarm: tuple[Any] | None = None
        self._alarm = timeout > 0 and hasattr(signal, "setitimer")

    #: cases handed over at once (each still runs alone, under its own timeout)
    batch = 256

    def close(self) -> None:
        if self._old_alarm is not None and _main_thread():
            signal.signal(signal.SIGALRM, self._old_alarm[0])
            self._old_alarm = None

    def run(self, request: Mapping[str, Any]) -> CaseResult:
        return self.run_case(request["id"], request["context"], [bytes.fromhex(h) for h in request["payloads"]])

    def run_case(self, case_id: str, context: Mapping[str, Any], payloads: Sequence[bytes]) -> CaseResult:
        t0 = time.perf_counter()
        use_alarm = self._alarm and _main_thread()
        if use_alarm:
            if self._old_alarm is None:  # installed once, restored by close()
                self._old_alarm = (signal.signal(signal.SIGALRM, _raise_alarm),)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            try:
                answer = self.decode_case(context, payloads)
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            return CaseResult(_check_results(answer if type(answer) is tuple else list(answer)),
                              seconds=time.perf_counter() - t0)
        except Skip as exc:
            return CaseResult(skip=exc.reason, seconds=time.perf_counter() - t0)
        except _Alarm:
            return CaseResult(crash=f"timeout: no answer within {self.timeout:g} s",
                              seconds=time.perf_counter() - t0)
        except AdapterCrash as exc:
            return CaseResult(crash=str(exc), seconds=time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - the decoder under test crashed: a result
            return CaseResult(crash=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0)


def log_tail(log: IO[bytes], limit: int = 600) -> str:
    """The last *limit* bytes of a process's log file, on one line."""
    try:
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - limit))
        return log.read().decode("utf-8", "replace").strip().replace("\n", " | ")
    except (OSError, ValueError):
        return ""


def _raise_alarm(signum: int, frame: Any) -> None:
    raise _Alarm()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class SubprocessAdapter(Adapter):
    """A decoder in its own process speaking JSON lines on stdin/stdout.

    The process starts by printing a hello line (``{"contract": 1, "name": …,
    "version": …}``), then answers each request line with ``{"id": …, "results": [...]}``
    (or ``{"id": …, "skip": "reason"}``). stderr goes to a log file whose tail is shown
    when the process dies.
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float = 10.0,
                 start_timeout: float = 120.0, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, name: str | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise AdapterError("empty adapter command")
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd
        self.name = name or os.path.basename(self.argv[0])
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._log: IO[bytes] | None = None
        self._start()

    # -- process management -------------------------------------------------------------------
    def _start(self) -> None:
        self._log = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                env=self.env, cwd=self.cwd, start_new_session=True,
            )
        except OSError as exc:
            raise AdapterError(f"cannot start adapter {' '.join(self.argv)!r}: {exc}") from None
        self._buf = b""
        line = self._readline(self.start_timeout)
        if line is None:
            detail = self._stderr_tail()
            self._kill()
            raise AdapterError(
                f"adapter {' '.join(self.argv)!r} sent no hello line within {self.start_timeout:g} s"
                + (f"; stderr: {detail}" if detail else "")
            )
        try:
            hello = json.loads(line)
        except ValueError:
            self._kill()
            raise AdapterError(f"adapter hello is not JSON: {line[:200]!r}") from None
        if not isinstance(hello, dict) or hello.get("contract") != CONTRACT_VERSION:
            self._kill()
            raise AdapterError(
                f"adapter speaks contract {hello.get('contract') if isinstance(hello, dict) else hello!r}, "
                f"expected {CONTRACT_VERSION}"
            )
        self.name = str(hello.get("name", self.name))
        self.version = str(hello.get("version", ""))
        try:
            self.profile = profile_of(hello.get("profile"), f"adapter {self.name}'s hello")
            self.shape = shape_of(hello.get("shape"))
            self.unreported = None if self.shape is None else self.shape.unreported
        except ShapeError as exc:
            self._kill()
            raise AdapterError(f"adapter {self.name}'s hello: {exc}") from None
        except AdapterError:
            self._kill()
            raise

    def _stderr_tail(self, limit: int = 600) -> str:
        return "" if self._log is None else log_tail(self._log, limit)

    def _kill(self) -> None:
        proc = self._proc
        self._proc = None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def _readline(self, timeout: float) -> bytes | None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise AdapterCrash("adapter exited", self._exit_text())
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _exit_text(self) -> str:
        code = self._proc.poll() if self._proc is not None else None
        if code is None and self._proc is not None:
            try:
                code = self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        tail = self._stderr_tail()
        return f"exit status {code}" + (f"; stderr: {tail}" if tail else "")

    # -- the contract ---------------------------------------------------------------------------
    def run(self, request: Mapping[str, Any]) -> CaseResult:
        if self._proc is None:
            self.restarts += 1
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        t0 = time.perf_counter()
        try:
            try:
                self._proc.stdin.write(json.dumps(request).encode() + b"\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise AdapterCrash("adapter exited", self._exit_text()) from None
            line = self._readline(self.timeout)
            if line is None:
                raise AdapterCrash("timeout", f"no answer within {self.timeout:g} s")
            try:
                answer = json.loads(line)
            except ValueError:
                raise AdapterCrash("bad answer", f"not JSON: {line[:200]!r}") from None
            if not isinstance(answer, dict):
                raise AdapterCrash("bad answer", f"expected an object, found {line[:200]!r}")
            if answer.get("id") != request.get("id"):
                raise AdapterCrash("bad answer", f"id {answer.get('id')!r} for request {request.get('id')!r}")
            if "skip" in answer:
                return CaseResult(skip=str(answer["skip"]), seconds=time.perf_counter() - t0)
            return CaseResult(_check_results(answer.get("results"), self.shape), seconds=time.perf_counter() - t0,
                              unreported=self.unreported)
        except AdapterCrash as exc:
            self._kill()
            return CaseResult(crash=str(exc), seconds=time.perf_counter() - t0)

    def close(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


def serve(decode_case: DecodeCase, *, name: str, version: str = "",
          profile: Profile | Mapping[str, Any] | None = None,
          stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve *decode_case* over the JSON-lines contract on stdin/stdout (for Python
    decoders that should run out of process). The hello carries *profile* (else the
    function's ``profile`` attribute, if any); :class:`Skip` becomes a ``skip`` answer.
    Returns when stdin closes."""
    inp = stdin or sys.stdin
    out = stdout or sys.stdout
    declared = profile_of(profile if profile is not None else getattr(decode_case, "profile", None),
                          f"the profile of {name}")
    hello: dict[str, Any] = {"contract": CONTRACT_VERSION, "name": name, "version": version}
    if declared is not None:
        hello["profile"] = declared.to_json()
    out.write(json.dumps(hello) + "\n")
    out.flush()
    for line in inp:
        if not line.strip():
            continue
        req = json.loads(line)
        payloads = [bytes.fromhex(h) for h in req["payloads"]]
        try:
            results = list(decode_case(req["context"], payloads))
            answer: dict[str, Any] = {"id": req["id"], "results": results}
        except Skip as exc:
            answer = {"id": req["id"], "skip": exc.reason}
        except Exception as exc:  # noqa: BLE001 - reported to the runner as the decoder's crash
            answer = {"id": req["id"], "results": [
                {"error": {"message": f"adapter crashed: {type(exc).__name__}: {exc}", "crash": True}}
            ]}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0
