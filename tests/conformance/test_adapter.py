"""The adapter contract: in process and as a subprocess speaking JSON lines, with crashes,
hangs and garbage answers turned into failed cases (and the process restarted)."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pgwire_spec.conformance import AdapterError, FunctionAdapter, SubprocessAdapter, open_decoder
from pgwire_spec.conformance.adapters.reference import decode_case
from pgwire_spec.conformance.cases import builtin_cases

CASE = builtin_cases()[0]
REQUEST = CASE.request()


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "adapter.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def test_reference_in_process_and_as_a_subprocess_answer_the_same() -> None:
    inproc = open_decoder("reference").run(REQUEST)
    with SubprocessAdapter([sys.executable, "-m", "pgwire_spec.conformance.adapters.reference"]) as sub:
        assert sub.name == "reference" and sub.version
        out = sub.run(REQUEST)
    assert out.crash is None and inproc.crash is None
    assert list(out.results) == list(inproc.results) == decode_case(CASE.context, CASE.payloads)


def test_function_adapter_crash_and_timeout() -> None:
    def boom(context: Any, payloads: Any) -> Any:
        raise RuntimeError("decoder exploded")

    assert FunctionAdapter(boom).run(REQUEST).crash == "RuntimeError: decoder exploded"

    def slow(context: Any, payloads: Any) -> Any:
        time.sleep(5)
        return []

    t0 = time.monotonic()
    res = FunctionAdapter(slow, timeout=0.2).run(REQUEST)
    assert res.crash is not None and res.crash.startswith("timeout") and time.monotonic() - t0 < 3

    def garbage(context: Any, payloads: Any) -> Any:
        return [{"nothing": 1}]

    assert "each result needs 'message', 'native' or 'error'" in (FunctionAdapter(garbage).run(REQUEST).crash or "")


def test_subprocess_crash_hang_and_garbage_fail_the_case_and_restart(tmp_path: Path) -> None:
    argv = _script(tmp_path, """
        import json, sys, time
        print(json.dumps({"contract": 1, "name": "flaky", "version": "1"}), flush=True)
        for line in sys.stdin:
            req = json.loads(line)
            first = req["payloads"][0] if req["payloads"] else ""
            if first == "00":
                sys.exit(3)                      # crash
            if first == "01":
                time.sleep(30)                   # hang
            if first == "02":
                print("not json", flush=True)    # garbage
                continue
            print(json.dumps({"id": req["id"], "results": [{"message": {"type": "X"}}]}), flush=True)
    """)
    with SubprocessAdapter(argv, timeout=0.5) as a:
        ok = {"id": "a", "context": {}, "payloads": ["42"]}
        assert a.run(ok).results == ({"message": {"type": "X"}},)
        crash = a.run({"id": "b", "context": {}, "payloads": ["00"]})
        assert crash.crash is not None and "exit status 3" in crash.crash
        assert a.run(ok).results  # restarted
        hang = a.run({"id": "c", "context": {}, "payloads": ["01"]})
        assert hang.crash == "timeout: no answer within 0.5 s"
        bad = a.run({"id": "d", "context": {}, "payloads": ["02"]})
        assert bad.crash is not None and "not JSON" in bad.crash
        assert a.run(ok).results
        assert a.restarts == 3


def test_an_adapter_that_does_not_speak_the_contract_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="contract"):
        SubprocessAdapter(_script(tmp_path, 'print(\'{"contract": 99}\', flush=True)'))
    with pytest.raises(AdapterError, match="no hello line"):
        SubprocessAdapter(_script(tmp_path, "import time; time.sleep(5)"), start_timeout=0.5)
    with pytest.raises(AdapterError, match="cannot start adapter"):
        SubprocessAdapter(["/nonexistent/decoder"])
    with pytest.raises(AdapterError, match="unknown decoder"):
        open_decoder("no-such-decoder")
    with pytest.raises(AdapterError, match="cannot load decoder entry point"):
        open_decoder("no_such_module:decode")


def test_module_function_entry_point() -> None:
    a = open_decoder("pgwire_spec.conformance.adapters.reference:decode_case")
    assert list(a.run(REQUEST).results) == decode_case(CASE.context, CASE.payloads)
