"""The Rust crate's modules only use downward: no cycle in the graph of scripts/rust_modules.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _rust_modules() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rust_modules", ROOT / "scripts" / "rust_modules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rust_modules"] = module
    spec.loader.exec_module(module)
    return module


RM = _rust_modules()


def _crate(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def test_the_crate_has_no_module_cycle() -> None:
    found = RM.cycles(RM.module_graph(ROOT / "rust" / "src"))
    assert not found, "module cycles in rust/src:\n" + "\n".join(RM.describe(c) for c in found)


def test_the_graph_sees_the_crate_modules() -> None:
    """The graph is not empty by accident: known uses of the binding and the core are in it."""
    edges = {(RM.name(u.source), RM.name(u.target)) for u in RM.module_graph(ROOT / "rust" / "src")}
    assert ("python::sink", "python::repeated") in edges
    assert ("python::repeated", "python::template") in edges
    assert ("codec", "schema") in edges


def test_a_cycle_through_use_trees_and_code_paths_is_found(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\nmod c;\n",
            "a.rs": "use crate::{b::{self, X}, c as see};\npub fn f() { see::g(); }\n",
            "b.rs": "pub struct X;\n",
            "c.rs": "pub fn g() { super::a::f(); }\n",
        },
    )
    found = RM.cycles(RM.module_graph(src))
    assert [[(RM.name(u.source), RM.name(u.target)) for u in c] for c in found] == [[("a", "c"), ("c", "a")]]
    assert RM.describe(found[0]).startswith("a -> c -> a\n")


def test_comments_strings_other_crates_and_submodules_are_not_uses(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            # `b` names `a` only in a comment, a string, a char and a raw string.
            "b.rs": '// crate::a::f\n/* super::a::f */ const S: &str = "crate::a"; const C: char = \'"\';\n'
            'const R: &str = r#"super::a::f"#;\nuse std::fmt;\n',
            "a/mod.rs": "mod inner;\nuse inner::Y;\npub use crate::b::S;\n",
            "a/inner.rs": "pub struct Y;\nfn h() { let _ = super::super::b::S; }\n",
        },
    )
    edges = {(RM.name(u.source), RM.name(u.target)) for u in RM.module_graph(src)}
    assert edges == {("a", "b"), ("a::inner", "b")}
    assert RM.cycles(RM.module_graph(src)) == []


def test_an_inline_test_module_is_a_module_of_its_own(tmp_path: Path) -> None:
    src = _crate(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::b::g;\n    use super::*;\n}\n",
            "b.rs": "pub fn g() { crate::a::f(); }\n",
        },
    )
    edges = {(RM.name(u.source), RM.name(u.target)) for u in RM.module_graph(src)}
    assert edges == {("a::tests", "a"), ("a::tests", "b"), ("b", "a")}
    assert RM.cycles(RM.module_graph(src)) == []


def test_the_script_exits_1_on_a_cycle(tmp_path: Path, capsys: object) -> None:
    src = _crate(tmp_path, {"lib.rs": "mod a;\nmod b;\n", "a.rs": "use super::b::X;\n", "b.rs": "use crate::a::Y;\n"})
    assert RM.main(["--src", str(src)]) == 1
    assert RM.main(["--src", str(ROOT / "rust" / "src")]) == 0
