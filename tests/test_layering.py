"""The grammar's intermediate form, the code generators and the catalogue's base sit below
the protocol layers: they import none of them, and nothing is imported inside a function to
get round a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pgwire_spec

ROOT = Path(pgwire_spec.__file__).resolve().parent
#: Modules every protocol layer builds on.
BELOW_THE_LAYERS = ("_ir.py", "_codegen.py", "_cgen.py", "_catalogue.py", "_primitives.py")
LAYERS = ("pgoutput", "replication", "wire", "walsender", "physical", "capture", "conformance", "fuzz")


def _imports(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            out += [(node, f"{base}.{a.name}" if not node.module else base) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names]
    return out


@pytest.mark.parametrize("name", BELOW_THE_LAYERS)
def test_below_the_layers_imports_no_layer(name: str) -> None:
    tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
    for _, module in _imports(tree):
        parts = module.lstrip(".").split(".")
        assert not (module.startswith(".") and parts[0] in LAYERS), f"{name} imports {module}"
        assert not (parts[:1] == ["pgwire_spec"] and parts[1:2] and parts[1] in LAYERS), f"{name} imports {module}"


@pytest.mark.parametrize("path", [*BELOW_THE_LAYERS, "pgoutput/_codec.py", "pgoutput/_cbuild.py",
                                  "pgoutput/_catalogue.py", "catalogue.py"])
def test_no_import_inside_a_function(path: str) -> None:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not inner, f"{path}: {fn.name} imports inside the function (line {inner[0].lineno})"
