"""``fenwire child`` / ``python -m fenwire_fast child`` setup errors: a clear message on stderr and
exit code 1, never a traceback; and ``fenwire demo`` end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from live_harness import child_env

ENV_KEYS = ("FEN_WIRE_CONTROL_PATH", "FEN_WIRE_EVENT_PATH", "FEN_WIRE_RUN_ID", "FEN_WIRE_DEADLINE", "FENWIRE_MOCK")


def run_child(args: list[str], env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    full.update(child_env())
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "child", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {"FEN_WIRE_CONTROL_PATH": str(tmp_path / "c.jsonl"), "FEN_WIRE_EVENT_PATH": str(tmp_path / "e.jsonl")}


CASES = [
    (
        "no-variables",
        [],
        {},
        "FEN_WIRE_CONTROL_PATH (the control file to read) and FEN_WIRE_EVENT_PATH (the event file to write)"
        " are not set; the parent that spawns a child sets both (see fenwire child --help)",
    ),
    ("no-event-path", [], {"FEN_WIRE_CONTROL_PATH": "/tmp/x"}, "FEN_WIRE_EVENT_PATH (the event file to write) is not"),
    (
        "blank-control",
        [],
        {"FEN_WIRE_CONTROL_PATH": "", "FEN_WIRE_EVENT_PATH": "/tmp/y"},
        "FEN_WIRE_CONTROL_PATH (the control file to read) is not set",
    ),
    (
        "bad-deadline",
        [],
        {"FEN_WIRE_DEADLINE": "tomorrow"},
        "FEN_WIRE_DEADLINE must be a Unix time in seconds, not 'tomorrow'",
    ),
    ("bad-mock-json", [], {"FENWIRE_MOCK": "{steps"}, "FENWIRE_MOCK is not valid JSON"),
    ("bad-mock-knob", [], {"FENWIRE_MOCK": '{"stepz": 3}'}, "unknown mock knob 'stepz'"),
    ("bad-mock-value", ["--steps", "0"], {}, "mock knob steps must be at least 1"),
    ("no-module", ["--agent", "no_such_module_xyz:make"], {}, "cannot import no_such_module_xyz"),
    ("no-colon", ["--agent", "live_agents"], {}, "--agent must look like module:factory"),
    ("no-attr", ["--agent", "live_agents:nope"], {}, "live_agents has no attribute nope"),
    ("not-agent", ["--agent", "live_agents:not_an_agent"], {}, "which has no turn() method"),
    (
        "factory-fails",
        ["--agent", "live_agents:broken_factory"],
        {},
        "live_agents:broken_factory failed: RuntimeError: no model configured",
    ),
    ("bad-config", ["--agent", "live_agents:echo", "--agent-config", "{"], {}, "--agent-config is not valid JSON"),
    (
        "knobs-with-agent",
        ["--agent", "live_agents:echo", "--steps", "2"],
        {},
        "mock knobs (--steps) cannot be used with --agent",
    ),
    ("print", ["--print"], {}, "--print and --prompt-file cannot be used with a live child"),
    ("prompt-file", ["--prompt-file", "x"], {}, "--print and --prompt-file cannot be used"),
    ("unopenable", [], {"FEN_WIRE_EVENT_PATH": "/nonexistent-dir/e.jsonl"}, "cannot open /nonexistent-dir/e.jsonl"),
]


@pytest.mark.parametrize("name,args,env,message", CASES, ids=[c[0] for c in CASES])
def test_setup_errors_are_clear(
    files: dict[str, str], name: str, args: list[str], env: dict[str, str], message: str
) -> None:
    base = {} if name.startswith(("no-", "blank-")) and not args else dict(files)
    base.update(env)
    proc = run_child(args, base)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert message in proc.stderr, proc.stderr
    assert proc.stderr.startswith("fenwire child: ")
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_no_environment_is_said_once() -> None:
    """Run with none of its variables, the child names each missing one once, in one line."""
    proc = run_child([], {})
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("\n")
    assert proc.stderr.count("FEN_WIRE_CONTROL_PATH") == 1
    assert proc.stderr.count("FEN_WIRE_EVENT_PATH") == 1


@pytest.mark.parametrize("flag", [None, "true", "false"])
def test_announce_flag(files: dict[str, str], flag: str | None) -> None:
    """``--announce true`` is the knob ``announce`` as a flag: ``agent-started`` comes before ``ready``."""
    import orjson

    control = b"".join(
        orjson.dumps(m) + b"\n"
        for m in (
            {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "hi"},
            {"v": 1, "seq": 2, "type": "close", "run": "r"},
        )
    )
    Path(files["FEN_WIRE_CONTROL_PATH"]).write_bytes(control)
    args = ["--steps", "1", "--tools", "0"] + (["--announce", flag] if flag else [])
    proc = run_child(args, {**files, "FEN_WIRE_RUN_ID": "r"})
    assert proc.returncode == 0, proc.stderr
    types = [orjson.loads(x)["type"] for x in Path(files["FEN_WIRE_EVENT_PATH"]).read_bytes().splitlines()]
    want = ["agent-started", "ready"] if flag == "true" else ["ready"]
    assert types[: len(want)] == want and types[-1] == "exit"
    assert types.count("agent-started") == (1 if flag == "true" else 0)


def test_help(files: dict[str, str]) -> None:
    proc = run_child(["--help"], {})
    assert proc.returncode == 0
    assert "FEN_WIRE_CONTROL_PATH" in proc.stdout and "--agent" in proc.stdout


def test_fenwire_demo_end_to_end() -> None:
    env = {k: v for k, v in os.environ.items()}
    env.update(child_env())
    proc = subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "demo", "--children", "4", "--deltas", "20"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.rstrip().endswith("PASS")
    assert "rejections 0" in out
    assert out.count("[ok]") == 4 and "[FAIL]" not in out
    assert "cancelled 1, done 3" in out
    assert "\x1b[" not in out  # not a terminal: plain lines


def test_demo_cleans_up_on_sigterm(tmp_path: Path) -> None:
    """A parent stopped by SIGTERM (a service manager, `kill`) stops its children and removes their
    private directories on the way out."""
    import signal
    import time

    env = {**os.environ, "TMPDIR": str(tmp_path), **child_env()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fenwire_fast.cli", "demo", "--children", "3", "--deltas", "200000", "--plain"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.monotonic() + 60

        def speaking(d: Path) -> bool:  # the directory is made before its files: they may not exist yet
            try:
                return (d / "events.jsonl").stat().st_size > 0
            except FileNotFoundError:
                return False

        while sum(1 for d in tmp_path.glob("fenwire-hub-*/fenwire-*") if speaking(d)) < 3:  # under its hub root
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "terminated" in err and "Traceback" not in err
    assert list(tmp_path.glob("fenwire-*")) == []
