"""tawa's modules import each other without circles, and no module imports
another's private names (`_name`): the layers read one way.

Imports under `if TYPE_CHECKING:` are left out (they never run); imports
inside functions count, since a function-local import that closes a circle
only hides it.  The version must match pyproject.toml's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tawa"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    private = []
    for m, path in mods.items():
        tree = ast.parse(path.read_text())
        type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
                     for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tawa"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = resolve(full if full in mods else node.module)
                    if target and target != m:
                        edges[m].add(target)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{m} imports {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = resolve(alias.name) if alias.name.startswith("tawa") else None
                    if target and target != m:
                        edges[m].add(target)
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    edges, _ = _graph()
    assert _cycles(edges) == []


def test_no_private_names_across_modules():
    _, private = _graph()
    assert private == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_version_matches_pyproject():
    from tawa.version import __version__

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE).group(1) == __version__
