"""The package's layering, read from its import statements: no circles, the
engine above the destinations, connectors, SDK and config, never below them, and
each destination on its own (what two share lives in ``headwater.destinations._*``).

Circles count every import that runs, at module level or inside a function (a
lazy import is still a dependency); imports under ``TYPE_CHECKING`` only name
types and do not count.  For the layering every import counts, annotations
too: a destination that imports the engine anywhere depends on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import headwater

PACKAGE = Path(headwater.__file__).parent
#: Layers the engine builds on, which must not import it.
BELOW_THE_ENGINE = ("headwater.destinations", "headwater.connectors", "headwater.sdk",
                    "headwater.config", "headwater.plan", "headwater.protocol")
DESTINATIONS = "headwater.destinations"
#: Kits shipped inside those packages that drive the engine as a user's test does.
ABOVE = ("headwater.destinations.testing",)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, type_checking: bool) -> Iterator[str]:
    """The ``headwater`` modules ``path`` imports (with those under ``TYPE_CHECKING``?)."""
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _statements(tree, type_checking=type_checking):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("headwater"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if base.startswith("headwater"):
                yield base
                # ``from package import submodule`` imports the submodule too.
                yield from (f"{base}.{alias.name}" for alias in node.names)


def _statements(tree: ast.Module, *, type_checking: bool) -> Iterator[ast.AST]:
    """Every node, skipping the bodies of ``if TYPE_CHECKING:`` unless asked for."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and not type_checking \
                and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _graph(*, type_checking: bool) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, type_checking=type_checking):
            # ``from headwater.x import y`` may name a module ``headwater.x.y``: the
            # package ``headwater.x`` runs first either way.
            while imported not in modules and "." in imported:
                imported = imported.rpartition(".")[0]
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _is_package_init_edge(source: str, target: str) -> bool:
    """A package's ``__init__`` re-exporting its own submodule is no layering circle."""
    return target.startswith(source + ".") or source.startswith(target + ".")


def test_no_import_circles() -> None:
    graph = _graph(type_checking=False)
    pruned = {m: {t for t in targets if not _is_package_init_edge(m, t)}
              for m, targets in graph.items()}
    assert _cycles(pruned) == []


def test_nothing_below_the_engine_imports_it() -> None:
    graph = _graph(type_checking=True)
    wrong = sorted(f"{module} -> {target}" for module, targets in graph.items()
                   if module.startswith(BELOW_THE_ENGINE) and not module.startswith(ABOVE)
                   for target in targets if target.startswith("headwater.engine"))
    assert wrong == []


def _destination(module: str) -> str | None:
    """The destination package ``module`` belongs to (``delta``), or None.

    A destination is a public package right under ``headwater.destinations``;
    the private ones (``_table_files``) are shared code any of them may import.
    """
    parts = module.split(".")
    if len(parts) < 3 or ".".join(parts[:2]) != DESTINATIONS or parts[2].startswith("_"):
        return None
    return parts[2] if (PACKAGE / "destinations" / parts[2]).is_dir() else None


def test_no_destination_imports_another() -> None:
    graph = _graph(type_checking=True)
    wrong = sorted(f"{module} -> {target}" for module, targets in graph.items()
                   if (own := _destination(module)) is not None
                   for target in targets if _destination(target) not in (None, own))
    assert wrong == []
