"""No import cycle between the package's parts (subpackages and top-level modules),
function-level imports included: the graph is built statically from every module's ast."""

from __future__ import annotations

import ast
from pathlib import Path

import pgwire_spec

ROOT = Path(pgwire_spec.__file__).parent
PKG = "pgwire_spec"

#: Facades that import their parts lazily by design (PEP 562 ``__getattr__``): their
#: imports are not dependencies of the package's parts.
FACADES = {"pgwire_spec/__init__.py", "pgwire_spec/walsender/__init__.py"}

#: Cycles that may stay: none.
ALLOWED: set[frozenset[str]] = set()


#: Function-level imports that still close a cycle, not yet inverted: the scenario loader
#: hands its ``physical`` section to the physical server's loader, and the fixture verifier
#: reads physical recordings. Each entry is one (file, part) edge;
#: every other edge counts, so a new cycle through these parts still fails.
UNRESOLVED_EDGES = {
    ("pgwire_spec/walsender/scenario.py", "physical"),
    ("pgwire_spec/capture/verify.py", "physical"),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _part(module: str) -> str | None:
    """The part of the package *module* belongs to: its first component under pgwire_spec."""
    parts = module.split(".")
    if parts[0] != PKG or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> set[str]:
    name = _module_name(path)
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - node.level + 1]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            # ``from . import x`` / ``from .pkg import sub``: x may be a submodule
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def part_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT.parent))
        src = _part(_module_name(path))
        if src is None or rel in FACADES:
            continue
        graph.setdefault(src, set())
        for mod in _imports(path):
            dst = _part(mod)
            if dst is None or dst == src or (rel, dst) in UNRESOLVED_EDGES:
                continue
            if (ROOT / dst).is_dir() or (ROOT / f"{dst}.py").exists():
                graph[src].add(dst)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one part (Tarjan), each as a cycle
    through its parts when one is found by a walk."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs


def _path(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One cycle inside *comp*, for the failure message."""
    start = comp[0]
    inside = set(comp)
    prev: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & inside):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def test_no_import_cycle_between_parts() -> None:
    graph = part_graph()
    bad = [c for c in cycles(graph) if frozenset(c) not in ALLOWED]
    assert not bad, "import cycles between parts:\n" + "\n".join(" -> ".join(_path(graph, c)) for c in bad)


def test_the_cycle_finder_finds_cycles() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert _path(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_function_level_imports_count() -> None:
    graph = part_graph()
    assert "replication" in graph["physical"]  # ``from ..replication import frames``
    assert "wire" in graph["physical"]
    assert "pgoutput" in graph["walsender"]


def test_unresolved_edges_still_exist() -> None:
    """An entry of UNRESOLVED_EDGES whose import is gone must leave the list."""
    for rel, dst in UNRESOLVED_EDGES:
        path = ROOT.parent / rel
        assert any(_part(m) == dst for m in _imports(path)), (rel, dst)
