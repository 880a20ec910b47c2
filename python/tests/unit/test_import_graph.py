"""pyconductor's modules import each other without a cycle.

The graph is read from the source with ``ast``: every ``import`` and
``from ... import`` statement, at the top of a module and inside functions
alike (an import deferred into a function is still a dependency: it only
hides the cycle until that function runs), except those under
``if TYPE_CHECKING:``, which never run. ``from pyconductor import X`` is an
edge to the module ``pyconductor.X`` when there is one, else to the package
``pyconductor`` itself (its ``__init__``). Importing a submodule also runs
its package's ``__init__``; that implicit edge is not counted, as import
linters do not count it: every module would otherwise depend on the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pyconductor"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # path:line of the import statement


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under ``package_dir``."""
    root = package_dir.parent
    names: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of ``modules``."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph(package_dir: Path) -> list[Edge]:
    modules = module_names(package_dir)
    edges: list[Edge] = []
    for source, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in _imports(tree):
            where = f"{path.relative_to(package_dir.parent)}:{node.lineno}"
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_resolve(alias.name, modules) for alias in node.names]
            else:
                if node.level:
                    base = source.split(".") if is_package else source.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if sub in modules else _resolve(module, modules))
            for target in targets:
                if target is not None and target != source:
                    edges.append(Edge(source, target, where))
    return edges


def components(edges: list[Edge]) -> list[set[str]]:
    """The strongly connected components of more than one module: each holds a cycle."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
        graph.setdefault(edge.target, [])
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            out = graph[node]
            if i < len(out):
                work.append((node, i + 1))
                nxt = out[i].target
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def find_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One shortest cycle (as its edges) through the first module of each strongly
    connected component (break it, and the next one shows)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    cycles = []
    for component in components(edges):
        # a shortest path back to the component's first module, by breadth-first search
        first = min(component)
        paths: dict[str, list[Edge]] = {first: []}
        frontier = [first]
        cycle: list[Edge] | None = None
        while frontier and cycle is None:
            following = []
            for node in frontier:
                for edge in graph[node]:
                    if edge.target not in component:
                        continue
                    if edge.target == first:
                        cycle = paths[node] + [edge]
                        break
                    if edge.target not in paths:
                        paths[edge.target] = paths[node] + [edge]
                        following.append(edge.target)
                if cycle is not None:
                    break
            frontier = following
        assert cycle is not None
        cycles.append(cycle)
    return cycles


def describe(cycle: list[Edge]) -> str:
    names = " -> ".join([cycle[0].source] + [e.target for e in cycle])
    return names + "\n" + "\n".join(f"    {e.source} imports {e.target} at {e.where}" for e in cycle)


def test_pyconductor_has_no_import_cycle() -> None:
    edges = import_graph(PACKAGE_DIR)
    assert edges, "no imports found: is PACKAGE_DIR right?"
    cycles = find_cycles(edges)
    groups = [", ".join(sorted(c)) for c in components(edges)]
    assert not cycles, "import cycles in pyconductor:\n" + "\n".join(
        f"{describe(cycle)}\n  (modules that reach each other: {group})" for cycle, group in zip(cycles, groups)
    )


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n"
                "def f():\n    from pkg.c import g\n    return g\n",
        "b.py": "import pkg.a\n",
        "c.py": "from . import d\nfrom .d import h\n",
        "d.py": "import os\nfrom pkg import __version__\n",
    })  # fmt: skip
    edges = {(e.source, e.target) for e in import_graph(pkg)}
    assert edges == {("pkg", "pkg.a"), ("pkg.a", "pkg.c"), ("pkg.b", "pkg.a"), ("pkg.c", "pkg.d"), ("pkg.d", "pkg")}
    (cycle,) = find_cycles(import_graph(pkg))
    text = describe(cycle)
    assert text.splitlines()[0] == "pkg -> pkg.a -> pkg.c -> pkg.d -> pkg"
    assert "pkg.a imports pkg.c at pkg/a.py:5" in text


@pytest.mark.parametrize("files", [
    {"__init__.py": "", "a.py": "from pkg import b\n", "b.py": "def f():\n    from pkg.a import x\n"},
    {"__init__.py": "", "a.py": "import pkg.b.c\n", "b/__init__.py": "", "b/c.py": "from .. import a\n"},
])  # fmt: skip
def test_a_two_module_cycle_is_found(tmp_path: Path, files: dict[str, str]) -> None:
    (cycle,) = find_cycles(import_graph(_package(tmp_path, files)))
    assert len(cycle) == 2
