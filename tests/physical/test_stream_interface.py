"""The physical server runs on the walsender's public stream interface: no private access to
the connection, no phase written by hand, and its streams are ``Stream``s."""

from __future__ import annotations

import ast
from pathlib import Path

import pgwire_spec.physical as physical
from pgwire_spec.physical import serve
from pgwire_spec.walsender._streaming import _LogicalStream
from pgwire_spec.walsender.core import Connection
from pgwire_spec.walsender.stream import Stream

PHYSICAL = Path(physical.__file__).parent


def _private_uses(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name == "conn" and (node.attr.startswith("_") or node.attr in ("phase", "delegate", "close_action")):
            if isinstance(node.ctx, ast.Store) or node.attr.startswith("_"):
                out.append(f"{path.name}:{node.lineno} conn.{node.attr}")
    return out


def test_no_private_access_to_the_connection() -> None:
    found = [u for p in sorted(PHYSICAL.glob("*.py")) for u in _private_uses(p)]
    assert found == []


def test_the_checker_sees_private_access(tmp_path: Path) -> None:
    f = tmp_path / "x.py"
    f.write_text("def f(conn, self):\n    conn._ready()\n    self.conn.phase = 'ready'\n")
    assert sorted(_private_uses(f)) == ["x.py:2 conn._ready", "x.py:3 conn.phase"]


def test_every_stream_implements_the_interface() -> None:
    for cls in (serve.WalStream, serve.BackupStream, _LogicalStream):
        assert issubclass(cls, Stream), cls
    for name in ("record", "result", "keepalive", "start_stream", "finish_stream", "close", "check_slot_name"):
        assert callable(getattr(Connection, name))
