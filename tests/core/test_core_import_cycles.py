"""No import cycles between the subpackages of ``geplug/`` (docs/architecture.md, "Layers").

The unit is a subpackage (``geplug/config/``) or a top-level module (``geplug/events.py``).
Every import counts, at module level and inside function bodies alike (a function-level
import is still a dependency; deferring it only hides a cycle), except those under
``if TYPE_CHECKING:`` (annotations only, never executed). ``geplug/__init__.py`` re-exports
the public API and is left out.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import geplug

ROOT = Path(geplug.__file__).parent


def _unit(module: str) -> str:
    """``geplug.config.rules.dump`` -> ``config``; ``geplug.events`` -> ``events``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    return skipped


def _imports(path: Path) -> Iterator[str]:
    """Absolute names of the ``geplug`` modules ``path`` imports (TYPE_CHECKING aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.module
                if node.module == "geplug":  # from geplug import vocab: the module vocab
                    yield from (f"geplug.{a.name}" for a in node.names
                                if (ROOT / f"{a.name}.py").exists() or (ROOT / a.name).is_dir())


def _graph() -> dict[str, dict[str, str]]:
    """unit -> {unit it imports: one example "module -> module"}."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        source = _unit(_module_name(path))
        if not source:
            continue
        for target in _imports(path):
            unit = _unit(target) if target.startswith("geplug.") else ""
            if unit and unit != source:
                graph.setdefault(source, {}).setdefault(
                    unit, f"{_module_name(path)} -> {target}")
    return graph


def _cycle(graph: dict[str, dict[str, str]]) -> list[str]:
    """One cycle (as its edges), or ``[]``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                loop = [*stack[stack.index(nxt):], nxt]
                return [graph[a][b] for a, b in itertools.pairwise(loop)]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_cycle_between_subpackages() -> None:
    assert _cycle(_graph()) == []


def test_the_cycle_finder_reports_a_cycle() -> None:
    graph = {"runtime": {"plugin": "a -> b"}, "plugin": {"runtime": "b -> a"}}
    assert sorted(_cycle(graph)) == ["a -> b", "b -> a"]


def test_the_graph_sees_function_level_imports() -> None:
    assert "config" in _graph().get("runtime", {})  # runtime/api.py imports config in _open
