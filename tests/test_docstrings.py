"""The Rust backend's docstrings are the pure backend's, and so are the stub's: ``help()`` shows the
same text whichever backend is in use, and the three copies cannot drift apart."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType

import fenwire_fast
import pytest

STUB = Path(fenwire_fast.__file__).with_name("_native.pyi")
FUNCTIONS = ["decode", "validate", "encode", "message", "rejection_ack", "utf8_prefix", "truncate_line", "scrub"]
#: Every public method and attribute of each class: ``test_every_public_member_has_a_docstring``
#: checks that this lists them all, so the test below compares each across the two backends and
#: the stub.
MEMBERS = {
    "Sender": ["next", "direction", "run", "seq"],
    "Receiver": [
        "receive",
        "feed",
        "scan",
        "scan_rejections",
        "scan_batch",
        "fast_path_counters",
        "buffered",
        "direction",
        "seq",
        "run",
        "plain",
    ],
    "Framer": ["feed", "buffered", "max_line_bytes"],
    "ScanBatch": ["line", "slice", "lines", "ends", "seqs", "types", "rejections", "foreign"],
}
NAMES = FUNCTIONS + list(MEMBERS) + [f"{c}.{m}" for c, ms in MEMBERS.items() for m in ms]


def _get(module: ModuleType, name: str) -> object:
    obj: object = module
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _stub_docs() -> dict[str, str]:
    docs: dict[str, str] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (doc := ast.get_docstring(node)):
            docs[node.name] = doc
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and (doc := ast.get_docstring(sub)):
                    docs[f"{node.name}.{sub.name}"] = doc
    return docs


@pytest.mark.parametrize("name", NAMES)
def test_every_public_name_is_documented_alike(pure: ModuleType, native: ModuleType, name: str) -> None:
    want = inspect.getdoc(_get(pure, name))
    assert want, f"_pure.{name} has no docstring"
    assert inspect.getdoc(_get(native, name)) == want
    assert _stub_docs().get(name) == want


@pytest.mark.parametrize("cls", list(MEMBERS))
def test_every_public_member_has_a_docstring(backend: ModuleType, cls: str) -> None:
    """Each public method and data attribute (a slot, property or PyO3 getter) has a docstring that
    ``help()`` shows, and is listed in ``MEMBERS``, so the test above holds it equal on both backends
    and in the stub."""
    klass = getattr(backend, cls)
    public = [name for name in dir(klass) if not name.startswith("_")]
    undocumented = [name for name in public if not inspect.getdoc(getattr(klass, name))]
    assert not undocumented, f"{backend.__name__}.{cls}: no docstring for {undocumented}"
    assert sorted(public) == sorted(MEMBERS[cls])


def test_help_shows_the_docstring_with_the_package_backend() -> None:
    text = inspect.getdoc(fenwire_fast.Receiver.feed) or ""
    assert "Frame ``data``" in text
    assert (inspect.getdoc(fenwire_fast.decode) or "").startswith("Decode and validate one line")
