"""The package's layout holds: imports only go down its floors, with no circle, and nothing is too big.

The import graph is built from the source (every ``import`` statement, those inside functions and
under ``if TYPE_CHECKING:`` included), so an import hidden in a function to dodge a circle counts
as one. Floors, lowest first: the codec at the package root, then ``live.proc``, ``live.child``,
``live.acp``, ``live.parent``, ``live.fleet``, ``testing`` and ``cli``; a module imports its own
floor or lower. Run as a script (``python tests/test_layout.py [ROOT]``) it prints what it finds.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "fenwire_fast"

#: (module prefix, floor): the longest prefix that matches a module gives its floor
FLOORS = (
    ("fenwire_fast", 0),
    ("fenwire_fast.live", 1),
    ("fenwire_fast.live.proc", 1),
    ("fenwire_fast.live.child", 2),
    ("fenwire_fast.live.acp", 3),
    ("fenwire_fast.live.parent", 4),
    ("fenwire_fast.live.fleet", 5),
    ("fenwire_fast.forward", 5),
    ("fenwire_fast.testing", 6),
    ("fenwire_fast.cli", 7),
    ("fenwire_fast.__main__", 7),
)
#: most lines a class or a function may span (its first line to its last); generated code is exempt
MAX_CLASS = 250
MAX_FUNCTION = 80
GENERATED = {"fenwire_fast.messages"}
ARCHITECTURE = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- picture: python tests/test_layout.py --write -->", "<!-- end of picture -->"


def modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: name -> (path, is a package's ``__init__``)."""
    found = {}
    for path in sorted((root / "python" / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root / "python").with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (anywhere in its source)."""
    found = modules(root)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in found.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, is_package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in found else base)
        graph[name] = {t for t in targets if t in found and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def floor(name: str) -> int:
    best = max((p for p, _ in FLOORS if name == p or name.startswith(p + ".")), key=len)
    return dict(FLOORS)[best]


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs up a floor, as ``a -> b``."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor(b) > floor(a))


def too_big(root: Path = ROOT) -> list[str]:
    """Every class over ``MAX_CLASS`` lines and every function over ``MAX_FUNCTION``."""
    found = []
    for name, (path, _) in modules(root).items():
        if name in GENERATED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                most = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
                if lines > most:
                    found.append(f"{name}.{node.name} ({path.name}:{node.lineno}): {lines} lines")
    return found


def room(name: str) -> str:
    """The room a module lives in: the longest prefix of :data:`FLOORS` that names it."""
    return max((p for p, _ in FLOORS if name == p or name.startswith(p + ".")), key=len)


def _short(name: str, prefix: str) -> str:
    if name != prefix:
        return name[len(prefix) + 1 :]
    return "__init__" if modules()[name][1] else name.rsplit(".", 1)[1] + ".py"


def picture(graph: dict[str, set[str]]) -> str:
    """The floors and rooms, top floor first: each room's modules and the rooms it imports."""
    rooms: dict[str, list[str]] = {}
    for name in sorted(graph):
        rooms.setdefault(room(name), []).append(name)
    out = []
    for prefix in sorted(rooms, key=lambda r: (-floor(r), r)):
        members = rooms[prefix]
        below = sorted({room(t) for m in members for t in graph[m]} - {prefix}, key=lambda r: (-floor(r), r))
        label = prefix.removeprefix("fenwire_fast").lstrip(".") or "(root: the codec)"
        out.append(f"floor {floor(prefix)}  {label}")
        out.append("    holds:   " + ", ".join(_short(m, prefix) for m in members))
        out.append(
            "    imports: " + (", ".join(r.removeprefix("fenwire_fast").lstrip(".") or "(root)" for r in below) or "-")
        )
    return "\n".join(out) + "\n"


def _docs_picture() -> str:
    text = ARCHITECTURE.read_text()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    return block.removeprefix("```text").removesuffix("```").strip("\n") + "\n"


def test_the_architecture_picture_is_the_import_graph() -> None:
    """docs/architecture.md shows the graph as it is (``python tests/test_layout.py --write``)."""
    assert _docs_picture() == picture(import_graph())


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles(import_graph()) == []


def test_imports_only_go_down_the_floors() -> None:
    assert upward(import_graph()) == []


def test_every_module_has_a_floor() -> None:
    graph = import_graph()
    assert {floor(name) for name in graph} == {f for _, f in FLOORS}


def test_no_class_or_function_is_too_big() -> None:
    assert too_big() == []


def test_the_graph_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    """The checks above can fail: a circle hidden in a function, and one only for the type checker."""
    live = tmp_path / "python" / PACKAGE / "live"
    (live / "proc").mkdir(parents=True)
    (tmp_path / "python" / PACKAGE / "__init__.py").write_text("")
    (live / "__init__.py").write_text("")
    (live / "proc" / "__init__.py").write_text("")
    (live / "proc" / "a.py").write_text("def f():\n    from . import b\n")
    (live / "proc" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    (live / "proc" / "c.py").write_text("from ...cli import x\n")
    (tmp_path / "python" / PACKAGE / "cli.py").write_text("x = 1\n" + "def g():\n" + "    y = 1\n" * 80)
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["fenwire_fast.live.proc.a", "fenwire_fast.live.proc.b"]]
    assert upward(graph) == ["fenwire_fast.live.proc.c -> fenwire_fast.cli"]
    assert too_big(tmp_path) == ["fenwire_fast.cli.g (cli.py:2): 81 lines"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        head, rest = ARCHITECTURE.read_text().split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        ARCHITECTURE.write_text(f"{head}{BEGIN}\n```text\n{picture(import_graph())}```\n{END}{tail}")
        raise SystemExit(0)
    if sys.argv[1:] == ["--picture"]:
        print(picture(import_graph()), end="")
        raise SystemExit(0)
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    graph = import_graph(where)
    for title, items in (("cycles", cycles(graph)), ("upward", upward(graph)), ("too big", too_big(where))):
        print(f"{title}: {len(items)}")
        for item in items:
            print("  ", item)
