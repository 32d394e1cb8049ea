"""The child's and the ACP bridge's modules import one another without a cycle, counting imports
inside functions and under ``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "fenwire_fast"


def _imports(path: Path) -> set[str]:
    """The modules of the package that the module at ``path`` imports, anywhere in it."""
    package = list(path.relative_to(PACKAGE.parent).parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fenwire_fast"))
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if node.module:
                found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


@pytest.mark.parametrize("room", ["live/child", "live/acp"])
def test_no_import_cycle_in(room: str) -> None:
    paths = sorted((PACKAGE / room).glob("*.py"))
    names = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p for p in paths}
    graph = {name: sorted(m for m in _imports(path) if m in names and m != name) for name, path in names.items()}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in graph[name]:
            assert state.get(dep) != 1, "import cycle: " + " -> ".join([*trail[trail.index(dep) :], dep])
            if dep not in state:
                visit(dep, [*trail, dep])
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])
