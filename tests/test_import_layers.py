"""No import circles among histkit's modules: when two modules need each other,
the shared piece moves one layer down.

Imports are read from the checkout's sources (src/histkit) with ``ast``
(function-level imports and ``if TYPE_CHECKING:`` blocks included: a lazy
import is still a dependency) and from the Cython sources' ``import`` and
``cimport`` lines, so the test reads the same files whether histkit is
installed from this checkout or editable.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
SRC = ROOT / "histkit"

# Allowed import cycles, each as the sorted tuple of its modules (none). An
# entry that matches no cycle fails the test.
ALLOWED_CYCLES: set[tuple[str, ...]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*")):
        if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
            found[_module_name(path)] = path
    return found


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].stem == "__init__"


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The histkit modules that module `name` imports, wherever in it."""
    wanted: set[str] = set()

    def add(target: str, names: list[str] | None = None) -> None:
        # `from pkg import x`: x is a module when pkg/x exists, else a name of pkg
        for item in names or [None]:
            full = f"{target}.{item}" if item else target
            if item and full in modules:
                wanted.add(full)
            elif target in modules:
                wanted.add(target)

    if path.suffix == ".pyx":
        for line in path.read_text().splitlines():
            found = re.match(r"\s*(?:from\s+([\w.]+)\s+c?import\s+([\w, ]+)"
                             r"|c?import\s+([\w.]+))", line)
            if found and (found[1] or found[3] or "").startswith("histkit"):
                if found[3]:
                    add(found[3])
                else:
                    add(found[1], [n.strip().split(" ")[0] for n in found[2].split(",")])
        return wanted - {name}

    package = name if _is_package(name, modules) else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "histkit":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "histkit":
                add(target, [alias.name for alias in node.names])
    return wanted - {name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), each
    sorted: every circle of imports lies in one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_histkit_modules_import_no_circles():
    found = set(cycles(import_graph()))
    new = sorted(found - ALLOWED_CYCLES)
    assert not new, "import circles: " + "; ".join(" <-> ".join(c) for c in new)
    gone = sorted(ALLOWED_CYCLES - found)
    assert not gone, f"allowed cycles that no longer exist (drop them): {gone}"


def test_the_reader_sees_every_kind_of_import(tmp_path):
    # function-level, relative and `from package import module` imports all count
    graph = import_graph()
    assert "histkit.oracles" in graph["histkit"]  # from histkit import oracles
    assert "histkit.gpu.registry" in graph["histkit.conformance.mutation"]  # in a function
    assert "histkit.gpu.api" in graph["histkit.gpu"]  # from histkit.gpu.api import ...
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_library_never_imports_the_benchmark_application():
    graph = import_graph()
    for name, imports in graph.items():
        if name.startswith(("histkit.bench", "histkit.cli")):
            continue
        assert not {m for m in imports if m.startswith("histkit.bench")}, name
