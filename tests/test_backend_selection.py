"""Backend selection (FENWIRE_NO_EXTENSIONS, IMPLEMENTATION) and the shape of the backend boundary
(docs/backend-boundary.md)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import fenwire_fast
import pytest
from conftest import BOUNDARY_NAMES, no_extensions
from fenwire_fast import _types

#: Public names of each backend module: the boundary plus the ``IMPLEMENTATION`` tag.
SIGNATURES = {
    "decode": ["line", "direction"],
    "validate": ["msg", "direction"],
    "encode": ["msg", "direction"],
    "message": ["type", "run", "seq", "payload"],
    "rejection_ack": ["rejection"],
    "utf8_prefix": ["text", "limit"],
    "truncate_line": ["text", "limit"],
    "scrub": ["text", "max_bytes"],
}


def _run(code: str, **env: str) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "FENWIRE_NO_EXTENSIONS"}
    full_env.update(env)
    out = subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.strip()


@pytest.mark.skipif(no_extensions(), reason="FENWIRE_NO_EXTENSIONS=1 forces the python backend")
def test_implementation_is_rust_when_extensions_allowed() -> None:
    assert fenwire_fast._NATIVE_IMPORT_ERROR is None, (
        f"the extension did not load: {fenwire_fast._NATIVE_IMPORT_ERROR!r}"
    )
    assert fenwire_fast.IMPLEMENTATION == "rust"
    from fenwire_fast import _native

    for name in BOUNDARY_NAMES:
        assert getattr(fenwire_fast, name) is getattr(_native, name), name


def test_implementation_in_a_fresh_interpreter_without_the_switch() -> None:
    got = _run("import fenwire_fast; print(fenwire_fast.IMPLEMENTATION)")
    if no_extensions():
        # This leg does not promise a built extension; the answer must still be one of the two.
        assert got in ("rust", "python")
    else:
        assert got == "rust"


@pytest.mark.parametrize("value", ["1", "yes"])
def test_no_extensions_forces_python(value: str) -> None:
    code = (
        "import fenwire_fast, fenwire_fast._pure as p\n"
        "print(fenwire_fast.IMPLEMENTATION, fenwire_fast.decode is p.decode, fenwire_fast.Receiver is p.Receiver)"
    )
    assert _run(code, FENWIRE_NO_EXTENSIONS=value) == "python True True"


def test_no_extensions_zero_does_not_force_python() -> None:
    got = _run("import fenwire_fast; print(fenwire_fast.IMPLEMENTATION)", FENWIRE_NO_EXTENSIONS="0")
    if not no_extensions():
        assert got == "rust"
    else:
        assert got in ("rust", "python")


def test_package_reexports_the_selected_backend() -> None:
    backend = sys.modules["fenwire_fast._native" if fenwire_fast.IMPLEMENTATION == "rust" else "fenwire_fast._pure"]
    for name in BOUNDARY_NAMES:
        assert getattr(fenwire_fast, name) is getattr(backend, name), name
        assert name in fenwire_fast.__all__
    assert backend.IMPLEMENTATION == fenwire_fast.IMPLEMENTATION


def test_backend_exposes_exactly_the_boundary(backend: ModuleType, pure: ModuleType) -> None:
    for name in BOUNDARY_NAMES:
        assert callable(getattr(backend, name, None)), name
    assert sorted(pure.__all__) == sorted((*BOUNDARY_NAMES, "IMPLEMENTATION"))
    if hasattr(backend, "__all__"):
        assert sorted(backend.__all__) == sorted(pure.__all__)
    # No backend-only API: every public callable of the backend exists in the other one too.
    public = {n for n in dir(backend) if not n.startswith("_") and callable(getattr(backend, n))}
    only_here = {n for n in public if not hasattr(pure, n)}
    assert only_here == set(), f"public callables only this backend has: {sorted(only_here)}"
    for name in ("Sender", "Receiver", "Framer"):
        assert isinstance(getattr(backend, name), type), name


def test_implementation_tags(pure: ModuleType, backend: ModuleType) -> None:
    assert pure.IMPLEMENTATION == "python"
    if backend is not pure:
        assert backend.IMPLEMENTATION == "rust"


def _params(obj: object) -> list[tuple[str, object, object]] | None:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_function_signatures_match(backend: ModuleType, pure: ModuleType, name: str) -> None:
    want = _params(getattr(pure, name))
    assert want is not None
    assert [p[0] for p in want] == SIGNATURES[name]
    got = _params(getattr(backend, name))
    if got is None:
        pytest.fail(f"{name}: no inspectable signature (set #[pyo3(signature = ...)] / text_signature)")
    assert [(n, d) for n, _, d in got] == [(n, d) for n, _, d in want]


CLASS_SIGNATURES = {
    ("Sender", None): [("direction", inspect.Parameter.empty), ("run", inspect.Parameter.empty)],
    ("Sender", "next"): [("type", inspect.Parameter.empty), ("payload", None)],
    ("Receiver", None): [("direction", inspect.Parameter.empty), ("run", None)],
    ("Receiver", "receive"): [("line", inspect.Parameter.empty)],
    ("Receiver", "feed"): [("data", inspect.Parameter.empty)],
    ("Framer", None): [("max_line_bytes", 65536)],
    ("Framer", "feed"): [("data", inspect.Parameter.empty)],
}


@pytest.mark.parametrize("cls,method", list(CLASS_SIGNATURES), ids=lambda x: str(x))
def test_class_signatures_match(backend: ModuleType, cls: str, method: str | None) -> None:
    obj = getattr(backend, cls)
    if method is not None:
        obj = getattr(obj, method)
    got = _params(obj)
    if got is None:
        pytest.fail(f"{cls}.{method}: no inspectable signature")
    got = [(n, d) for n, kind, d in got if n != "self"]
    assert got == CLASS_SIGNATURES[cls, method]


def test_function_signatures_accept_keywords(backend: ModuleType) -> None:
    assert backend.decode(line=b"{}", direction="event")[1].code == "invalid"
    assert backend.validate(msg={}, direction="event")[1].code == "invalid"
    assert backend.encode(msg={}, direction="event")[1].code == "invalid"
    assert backend.message(type="ready", run="r", seq=1) == {"v": 1, "seq": 1, "type": "ready", "run": "r"}
    assert backend.message("prompt", "r", 2, payload={"text": "x"})["text"] == "x"
    assert backend.utf8_prefix(text="abc", limit=2) == "ab"
    assert backend.truncate_line(text="abc", limit=3) == "abc"
    assert backend.scrub(text="abc", max_bytes=10) == ("abc", False)
    rej = backend.decode(b"x", "event")[1]
    assert backend.rejection_ack(rejection=rej) == {"status": "rejected", "reason": rej.reason}


def test_class_shapes(backend: ModuleType) -> None:
    s = backend.Sender("event", "run-1")
    assert (s.direction, s.run, s.seq) == ("event", "run-1", 0)
    assert type(s.seq) is int
    line, rej = s.next("ready")
    assert rej is None and line == b'{"v":1,"seq":1,"type":"ready","run":"run-1"}'
    line, rej = s.next(type="turn-started", payload={"turn": 1})
    assert rej is None and s.seq == 2
    r = backend.Receiver("control")
    assert (r.direction, r.seq, r.buffered) == ("control", 0, 0)
    assert type(r.seq) is int
    assert r.feed(b"") == []
    assert r.feed(data=b"") == []
    f = backend.Framer()
    assert f.buffered == 0
    assert f.feed(b"") == []
    assert backend.Framer(max_line_bytes=4).feed(data=b"abcdef\n") == [b"abcd"]


def test_rejections_are_the_shared_type(backend: ModuleType) -> None:
    _, rej = backend.decode(b"nope", "event")
    assert type(rej) is _types.Rejection
    assert isinstance(rej, fenwire_fast.Rejection)
    with pytest.raises(AttributeError):
        rej.code = "x"  # type: ignore[misc]
    assert rej == _types.Rejection("malformed", rej.reason)
    assert hash(rej) == hash(_types.Rejection("malformed", rej.reason))
    assert repr(rej) == f"Rejection(code='malformed', reason={rej.reason!r})"
    _, rej = backend.decode(b'{"v":1,"seq":3,"type":"prompt","run":"r"}', "control")
    assert type(rej) is _types.Rejection
    assert type(rej.errors) is tuple and all(type(e) is tuple for e in rej.errors)
    assert rej.to_dict() == {
        "code": "invalid-payload",
        "reason": "text is required",
        "fatal?": False,
        "seq": 3,
        "type": "prompt",
        "run": "r",
        "errors": [{"field": "text", "message": "is required"}],
    }


def test_package_exports() -> None:
    assert fenwire_fast.VERSION == 1
    assert fenwire_fast.MAX_LINE_BYTES == 65536
    assert fenwire_fast.DRAIN_BYTE_BUDGET == 65536
    assert fenwire_fast.DRAIN_EVENT_BUDGET == 64
    assert fenwire_fast.MAX_SAFE_INTEGER == 2**53 - 1
    assert fenwire_fast.SUMMARY_BYTES == 160
    assert fenwire_fast.EVENT_PAYLOAD_BYTES == 12288
    assert fenwire_fast.EVENT_STRING_BYTES == 4096
    assert fenwire_fast.EVENT_TABLE_ENTRIES == 64
    assert fenwire_fast.EVENT_MAX_DEPTH == 8
    assert len(fenwire_fast.EVENT_TYPES) == 22
    assert len(fenwire_fast.CONTROL_TYPES) == 6
    assert not (fenwire_fast.EVENT_TYPES & fenwire_fast.CONTROL_TYPES)
    assert fenwire_fast.REJECTION_CODES == (
        "malformed",
        "too-large",
        "invalid",
        "version-mismatch",
        "unknown-type",
        "invalid-payload",
        "out-of-order",
    )
    assert fenwire_fast.LIFECYCLE_EVENT_TYPES == {
        "ready",
        "turn-started",
        "turn-complete",
        "control-ack",
        "result",
        "exit",
    }
    assert fenwire_fast.is_event_type("ready") and not fenwire_fast.is_event_type("prompt")
    assert fenwire_fast.is_control_type("prompt") and not fenwire_fast.is_control_type(["prompt"])
    for name in fenwire_fast.__all__:
        assert hasattr(fenwire_fast, name), name


def test_cli_version_names_the_backend() -> None:
    code = (
        "import runpy, sys; sys.argv = ['fenwire', '--version']; runpy.run_module('fenwire_fast', run_name='__main__')"
    )
    out = _run(code, FENWIRE_NO_EXTENSIONS="1")
    assert out.endswith("(python backend)") and "0.1.0" in out
    out = _run(code)
    if no_extensions():
        assert out.endswith(("(python backend)", "(rust backend)"))
    else:
        assert out.endswith("(rust backend)")


def test_boundary_names_are_the_documented_ones() -> None:
    import re

    doc = (Path(__file__).resolve().parent.parent / "docs" / "backend-boundary.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \|", doc, flags=re.M)
    assert sorted(documented) == sorted(BOUNDARY_NAMES)


# --- the build backend (build_backend/fenwire_build.py) without and with a Rust toolchain -----------


def _build_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, cargo_in: Path | None) -> ModuleType:
    """The build backend, freshly loaded, in an environment whose only cargo (if any) is in ``cargo_in``."""
    import importlib.util

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # restored afterwards, though the hooks may prepend to it
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("CARGO", "CARGO_HOME", "FENWIRE_NO_EXTENSIONS", "MATURIN_NO_INSTALL_RUST"):
        monkeypatch.delenv(name, raising=False)
    if cargo_in is not None:
        cargo_in.mkdir(parents=True, exist_ok=True)
        cargo = cargo_in / "cargo"
        cargo.write_text("#!/bin/sh\necho 'cargo 1.0.0 (fake)'\n")
        cargo.chmod(0o755)
    path = Path(__file__).resolve().parent.parent / "build_backend" / "fenwire_build.py"
    spec = importlib.util.spec_from_file_location("fenwire_build_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_build_without_cargo_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fb = _build_backend(monkeypatch, tmp_path, cargo_in=None)
    assert fb.find_cargo() is None
    hooks = [
        lambda: fb.get_requires_for_build_wheel(),
        lambda: fb.get_requires_for_build_editable(),
        lambda: fb.prepare_metadata_for_build_wheel(str(tmp_path)),
        lambda: fb.build_wheel(str(tmp_path)),
        lambda: fb.build_editable(str(tmp_path)),
    ]
    for hook in hooks:
        with pytest.raises(SystemExit) as exc:
            hook()
        assert exc.value.code == 1
        err = capsys.readouterr().err
        assert "cargo (the Rust toolchain) was not found" in err
        assert "https://rustup.rs" in err
        assert "FENWIRE_NO_EXTENSIONS=1 pip install ." in err
        assert "wheel" in err
        assert "puccinialin" not in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        fb.get_requires_for_build_sdist()
    assert "https://rustup.rs" in capsys.readouterr().err


def test_pure_build_needs_no_cargo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fb = _build_backend(monkeypatch, tmp_path, cargo_in=None)
    monkeypatch.setenv("FENWIRE_NO_EXTENSIONS", "1")
    assert fb.get_requires_for_build_wheel() == [fb.HATCHLING]
    assert fb.get_requires_for_build_editable() == [fb.HATCHLING]


def test_build_with_cargo_asks_maturin_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """cargo found outside PATH (rustup's ~/.cargo/bin) goes on PATH, and maturin's hook adds nothing then."""
    home_bin = tmp_path / "home" / ".cargo" / "bin"
    fb = _build_backend(monkeypatch, tmp_path, cargo_in=home_bin)
    assert fb.find_cargo() == str(home_bin / "cargo")
    maturin = pytest.importorskip("maturin")
    asked: list[str] = []
    real = maturin.get_requires_for_build_wheel

    def spy(config_settings: object = None) -> list[str]:
        asked.append("wheel")
        return list(real(config_settings))

    monkeypatch.setattr(maturin, "get_requires_for_build_wheel", spy)
    assert fb.get_requires_for_build_wheel() == [fb.MATURIN]
    assert asked == ["wheel"]
    assert os.environ["PATH"].split(os.pathsep)[0] == str(home_bin)
    # maturin's hook would have asked for puccinialin (its own Rust installer) had cargo not been on PATH.
    assert "puccinialin" not in real(None)


def test_cargo_env_and_cargo_home_are_looked_at(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fb = _build_backend(monkeypatch, tmp_path, cargo_in=tmp_path / "ch" / "bin")
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "ch"))
    assert fb.find_cargo() == str(tmp_path / "ch" / "bin" / "cargo")
    monkeypatch.delenv("CARGO_HOME")
    assert fb.find_cargo() is None
    monkeypatch.setenv("CARGO", str(tmp_path / "ch" / "bin" / "cargo"))
    assert fb.find_cargo() == str(tmp_path / "ch" / "bin" / "cargo")
