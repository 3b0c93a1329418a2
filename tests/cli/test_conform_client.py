"""``pgwire-spec conform-client``: the case list, and a user's mistakes as one clear line."""

from __future__ import annotations

from typing import Any

from pgwire_spec.cli import main
from pgwire_spec.clientconf import CASES


def test_list(capsys: Any) -> None:
    assert main(["conform-client", "--list"]) == 0
    ids = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert ids == [c.id for c in CASES]


def test_mistakes_are_one_line(capsys: Any) -> None:
    assert main(["conform-client", "--client-cmd", "client {nope}"]) == 1
    err = capsys.readouterr().err
    assert "expected placeholders among {dsn}" in err and "Traceback" not in err
    assert main(["conform-client", "--client-cmd", "/nonexistent/client {dsn}", "--only", "slot-missing"]) == 1
    assert "cannot start the client '/nonexistent/client'" in capsys.readouterr().err
    assert main(["conform-client", "--client-cmd", "x", "--only", "nope"]) == 2
    assert "expected a case among" in capsys.readouterr().err
    assert main(["conform-client"]) == 2
