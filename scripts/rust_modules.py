#!/usr/bin/env python3
"""The module graph of the Rust crate under ``rust/src``, and its cycles.

A module *uses* another when its source names a path into it: a ``use`` declaration
(``use crate::a::b``, ``use super::x::{y, z}``, ``use self::m::*``, grouped or renamed) or a path
in the code (``crate::a::f()``, ``super::x::T``, ``child::g()``, ``alias::h`` after
``use super::x as alias``). A path is resolved to the deepest module it names, so
``super::ffi::ascii_string`` is a use of the sibling module ``ffi`` and ``crate::json::Sink`` a use
of ``json`` (its ``mod.rs``). A module's uses of its own submodules (``mod x;``, ``x::f()``,
``pub use x::T``) are containment, not counted: a ``mod.rs`` composes its parts, which may use what
it defines through ``super``. Inline modules (``mod tests { ... }``) are modules of their own. Comments, strings and character literals are
skipped; paths into other crates (``pyo3::...``, ``std::...``) are ignored.

The modules should only use downward: a cycle means two modules each need the other.

    python scripts/rust_modules.py [--src rust/src] [--graph]

Prints each cycle with the line behind each of its edges; exit status 1 when there is one.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: A module is the tuple of its names below the crate root; the root is ``()``.
Module = tuple[str, ...]

_TOKEN = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*|r#[A-Za-z_][A-Za-z0-9_]*|::|[{};,()*]|\S")
_IDENT = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*|r#[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Use:
    """One use of module ``target`` by module ``source``: where, and the path as written."""

    source: Module
    target: Module
    file: str
    line: int
    path: str


def name(module: Module) -> str:
    """``crate`` for the root, else the names joined by ``::`` (``python::sink``)."""
    return "::".join(module) if module else "crate"


def strip(text: str) -> str:
    """``text`` with comments, string and character literals blanked; newlines kept."""
    out: list[str] = []
    i, n = 0, len(text)

    def blank(j: int) -> None:
        out.append(re.sub(r"[^\n]", " ", text[i:j]))

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif m := re.compile(r'b?r(#*)"').match(text, i):
            if i and (text[i - 1].isalnum() or text[i - 1] == "_"):
                out.append(c)
                i += 1
                continue
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not _word_before(text, i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif c == "'" and (m := re.compile(r"'(\\(u\{[0-9a-fA-F]*\}|x..|.)|[^\\'\n])'", re.S).match(text, i)):
            j = m.end()
        else:
            out.append(c)
            i += 1
            continue
        blank(j)
        i = j
    return "".join(out)


def _word_before(text: str, i: int) -> bool:
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def file_modules(src: Path) -> dict[Module, Path]:
    """Each source file's module: ``lib.rs`` the root, ``a/mod.rs`` and ``a.rs`` ``a``, ``a/b.rs`` ``a::b``."""
    mods: dict[Module, Path] = {}
    for path in sorted(src.rglob("*.rs")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts == ("lib",):
            mods[()] = path
        elif parts[-1] == "mod":
            mods[parts[:-1]] = path
        else:
            mods[parts] = path
    return mods


def _tokens(text: str) -> Iterator[tuple[str, int]]:
    line = 1
    pos = 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield m.group(), line


def _use_paths(toks: list[tuple[str, int]], i: int) -> tuple[list[tuple[list[str], str | None]], int]:
    """The paths of the use tree starting at ``toks[i]`` (after ``use``), and the index after ``;``."""
    paths: list[tuple[list[str], str | None]] = []

    def tree(prefix: list[str], i: int) -> int:
        segs = list(prefix)
        while i < len(toks):
            tok = toks[i][0]
            if tok == "{":
                i += 1
                while toks[i][0] != "}":
                    i = tree(segs, i)
                    if toks[i][0] == ",":
                        i += 1
                return i + 1
            if tok == "*":
                paths.append((segs, None))
                return i + 1
            if tok == "::":
                i += 1
                continue
            if _IDENT.fullmatch(tok) and tok != "as":
                segs = [*segs, tok]
                i += 1
                continue
            if tok == "as":
                paths.append((segs, toks[i + 1][0]))
                return i + 2
            paths.append((segs, segs[-1] if segs else None))
            return i
        return i

    i = tree([], i)
    while i < len(toks) and toks[i][0] != ";":
        i += 1
    return paths, i + 1


class _Scanner:
    """Resolves the paths of one crate's sources to modules."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.files = file_modules(src)
        self.modules: set[Module] = set(self.files)
        self.inline: dict[Module, tuple[Module, int]] = {}
        self.aliases: dict[Module, dict[str, Module | None]] = {}
        self.uses: list[Use] = []
        self.tokens = {m: list(_tokens(strip(p.read_text(encoding="utf-8")))) for m, p in self.files.items()}
        for module, toks in self.tokens.items():
            self._find_inline(module, toks)

    def _find_inline(self, module: Module, toks: list[tuple[str, int]]) -> None:
        stack: list[tuple[Module, int]] = [(module, -1)]
        depth = 0
        for k, (tok, _) in enumerate(toks):
            if tok == "{":
                depth += 1
                if k >= 2 and toks[k - 2][0] == "mod" and _IDENT.fullmatch(toks[k - 1][0]):
                    inner = (*stack[-1][0], toks[k - 1][0])
                    self.modules.add(inner)
                    stack.append((inner, depth))
            elif tok == "}":
                if stack[-1][1] == depth:
                    stack.pop()
                depth -= 1

    def _base(self, module: Module, segs: list[str]) -> tuple[Module, list[str]] | None:
        head = segs[0]
        if head in ("crate", "$crate"):
            return (), segs[1:]
        if head in ("super", "self"):
            base = module
            k = 0
            while k < len(segs) and segs[k] in ("super", "self"):
                if segs[k] == "super":
                    base = base[:-1]
                k += 1
            return base, segs[k:]
        alias = self.aliases.get(module, {})
        if head in alias:
            target = alias[head]
            return None if target is None else (target, segs[1:])
        if (*module, head) in self.modules:
            return module, segs
        return None

    def walk(self, module: Module, segs: list[str]) -> tuple[Module | None, bool]:
        """The deepest module the path ``segs`` names from ``module`` (None outside the crate),
        and whether the whole path names that module (not an item in it)."""
        if not segs:
            return None, False
        based = self._base(module, segs)
        if based is None:
            return None, False
        cur, rest = based
        for k, seg in enumerate(rest):
            if seg == "self" and k == len(rest) - 1:
                break
            if (*cur, seg) not in self.modules:
                return cur, False
            cur = (*cur, seg)
        return cur, True

    def resolve(self, module: Module, segs: list[str]) -> Module | None:
        """The deepest module the path ``segs`` names from ``module``; None outside the crate."""
        return self.walk(module, segs)[0]

    def _add(self, module: Module, target: Module | None, file: Path, line: int, path: str) -> None:
        if target is None or target == module or target[: len(module)] == module:
            # A module's uses of its own submodules are containment: `mod.rs` composes and
            # re-exports its parts, and the parts may use what it defines through `super`.
            return
        shown = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file.relative_to(self.src)
        self.uses.append(Use(module, target, str(shown), line, path))

    def scan(self, module: Module) -> None:
        """Record the uses in the file of ``module`` (and in its inline modules)."""
        toks = self.tokens[module]
        file = self.files[module]
        stack: list[tuple[Module, int]] = [(module, -1)]
        depth = 0
        i = 0
        while i < len(toks):
            tok, line = toks[i]
            cur = stack[-1][0]
            if tok == "{":
                depth += 1
                if i >= 2 and toks[i - 2][0] == "mod" and _IDENT.fullmatch(toks[i - 1][0]):
                    stack.append(((*cur, toks[i - 1][0]), depth))
                i += 1
            elif tok == "}":
                if stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
                i += 1
            elif tok == "use" and (i == 0 or toks[i - 1][0] != "::"):
                paths, i = _use_paths(toks, i + 1)
                for segs, bound in paths:
                    target, whole = self.walk(cur, segs)
                    self._add(cur, target, file, line, "use " + "::".join(segs))
                    if bound == "self":
                        bound = segs[-2] if len(segs) > 1 else None
                    if bound is not None:
                        # A name bound to a module resolves paths through it; any other name hides one.
                        self.aliases.setdefault(cur, {})[bound] = target if whole else None
            elif _IDENT.fullmatch(tok) and i + 1 < len(toks) and toks[i + 1][0] == "::":
                if i and toks[i - 1][0] == "::":
                    i += 1
                    continue
                segs = [tok]
                j = i + 1
                while j + 1 < len(toks) and toks[j][0] == "::" and _IDENT.fullmatch(toks[j + 1][0]):
                    segs.append(toks[j + 1][0])
                    j += 2
                if not (i >= 2 and toks[i - 1][0] == "in" and toks[i - 2][0] == "("):
                    self._add(cur, self.resolve(cur, segs), file, line, "::".join(segs))
                i = j
            else:
                i += 1


def module_graph(src: Path) -> list[Use]:
    """Every use of one module of the crate under ``src`` by another."""
    scanner = _Scanner(src)
    # `use` declarations first (they bind the aliases the code's paths go through), then the code.
    for module in scanner.files:
        scanner.scan(module)
    scanner.uses.clear()
    for module in scanner.files:
        scanner.scan(module)
    return scanner.uses


def cycles(uses: list[Use]) -> list[list[Use]]:
    """One shortest cycle per strongly connected group of modules, as the uses along it."""
    edges: dict[Module, dict[Module, Use]] = {}
    for use in uses:
        edges.setdefault(use.source, {}).setdefault(use.target, use)
    found: list[list[Use]] = []
    for group in _components(edges):
        start = min(group)
        found.append(_shortest_cycle(edges, start, group))
    return found


def _components(edges: dict[Module, dict[Module, Use]]) -> list[set[Module]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    on: set[Module] = set()
    groups: list[set[Module]] = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group: set[Module] = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(groups, key=min)


def _shortest_cycle(edges: dict[Module, dict[Module, Use]], start: Module, group: set[Module]) -> list[Use]:
    back: dict[Module, Use] = {}
    frontier = [start]
    while frontier:
        nxt: list[Module] = []
        for v in frontier:
            for w, use in sorted(edges.get(v, {}).items()):
                if w not in group or w in back:
                    continue
                back[w] = use
                if w == start:
                    path = [use]
                    while path[0].source != start:
                        path.insert(0, back[path[0].source])
                    return path
                nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected group has a cycle")


def describe(cycle: list[Use]) -> str:
    """``a -> b -> a`` and, below it, the line behind each edge."""
    head = " -> ".join([name(cycle[0].source), *(name(u.target) for u in cycle)])
    lines = [f"    {u.file}:{u.line}: {name(u.source)} uses {name(u.target)} ({u.path})" for u in cycle]
    return "\n".join([head, *lines])


def main(argv: list[str] | None = None) -> int:
    """Print the cycles (or with ``--graph`` every edge); 1 when there is a cycle."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=ROOT / "rust" / "src")
    parser.add_argument("--graph", action="store_true", help="print every module's uses")
    args = parser.parse_args(argv)
    uses = module_graph(args.src)
    if args.graph:
        pairs = sorted({(name(u.source), name(u.target)) for u in uses})
        for source, target in pairs:
            print(f"{source} -> {target}")
    found = cycles(uses)
    for cycle in found:
        print(describe(cycle))
    if not found:
        print(f"no cycle among {len({u.source for u in uses} | {u.target for u in uses})} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
