"""`fenwire check` and `fenwire --version`, run as a user runs them (a subprocess)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import fenwire_fast as fw
import fenwire_fast.cli.check as check_module
import orjson
import pytest
from conftest import run_cli
from fenwire_fast.cli.check import check_file
from fenwire_fast.text import printable
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import stream_lines


def line(seq: int, type_: str = "ready", **payload: object) -> bytes:
    return orjson.dumps(fw.message(type_, "r", seq, payload))


def test_version_names_the_backend() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert fw.__version__ in proc.stdout
    assert f"({fw.IMPLEMENTATION} backend)" in proc.stdout


def test_valid_file_passes(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_bytes(b"\n".join(line(i, "turn-started", turn=i) for i in range(1, 101)) + b"\n")
    proc = run_cli("check", str(path), "--direction", "event")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{path}: 100 lines, 0 rejected"
    assert proc.stderr == ""


def test_rejections_are_reported_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        line(1)
        + b"\n"
        + b"not json\n"
        + b"\n"  # empty: counted as a line, never rejected
        + line(1)  # out of order
        + b"\n"
        + line(2, "prompt", text="x")  # a control in an event file
        + b"\n"
        + line(3)  # a final line without a newline is checked too
    )
    proc = run_cli("check", str(path))
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert out[0] == f"{path}:2: malformed: line is not valid JSON"
    assert out[1] == f"{path}:4: out-of-order: seq 1 does not follow 1"
    assert out[2] == f"{path}:5: unknown-type: prompt is a control type, not an event type"
    assert out[3] == f"{path}: 6 lines, 3 rejected (malformed 1, out-of-order 1, unknown-type 1)"
    assert len(out) == 4


def test_control_direction(tmp_path: Path) -> None:
    path = tmp_path / "controls.jsonl"
    path.write_bytes(line(1, "prompt", text="hi") + b"\n" + line(2, "cancel") + b"\n")
    assert run_cli("check", str(path), "--direction", "control").returncode == 0
    assert run_cli("check", str(path), "--direction", "event").returncode == 1


def test_the_direction_is_guessed_and_said_when_not_given(tmp_path: Path) -> None:
    path = tmp_path / "controls.jsonl"
    # the first line is valid in neither direction; the second says which file this is
    path.write_bytes(b"not json\n" + line(1, "prompt", text="hi") + b"\n" + line(2, "cancel") + b"\n")
    proc = run_cli("check", str(path))
    assert proc.returncode == 1  # the garbage line, only
    assert proc.stdout.splitlines() == [
        f"{path}:1: malformed: line is not valid JSON",
        f"{path}: 3 lines, 1 rejected (malformed 1)",
    ]
    assert (
        proc.stderr == f"fenwire check: no --direction given; checking {path} as controls (from its first valid line)\n"
    )
    events = tmp_path / "events.jsonl"
    events.write_bytes(line(1, "ready") + b"\n")
    proc = run_cli("check", str(events))
    assert proc.returncode == 0 and "as events" in proc.stderr


@pytest.mark.parametrize("content", [None, b"", b"not json\n{}\n"], ids=["dev-null", "empty", "no-valid-line"])
def test_no_line_telling_the_direction_is_said(tmp_path: Path, content: bytes | None) -> None:
    """With nothing to guess from, the check says it took the default rather than a line it never saw."""
    if content is None:
        path = "/dev/null"
    else:
        path = str(tmp_path / "x.jsonl")
        Path(path).write_bytes(content)
    proc = run_cli("check", path)
    assert proc.stderr == (
        f"fenwire check: no --direction given; no line of {path} tells the direction; "
        "checking it as events (the default)\n"
    )
    assert "first valid line" not in proc.stderr
    assert proc.returncode == (0 if not content else 1)


@pytest.mark.parametrize("command", [["check", "/dev/null"], ["tail", "/dev/null", "--no-follow"], ["runs", "."]])
def test_an_unknown_option_gets_the_commands_own_usage(command: list[str]) -> None:
    proc = run_cli(*command, "--bogus")
    assert proc.returncode == 2 and proc.stdout == ""
    name = command[0]
    assert proc.stderr.startswith(f"usage: fenwire {name} "), proc.stderr
    assert proc.stderr.rstrip().endswith(f"fenwire {name}: error: unrecognized arguments: --bogus")
    top = run_cli("--bogus")
    assert top.returncode == 2
    assert (
        top.stderr.startswith("usage: fenwire [-h]") and "fenwire: error: unrecognized arguments: --bogus" in top.stderr
    )


def test_standard_input_and_json_output(tmp_path: Path) -> None:
    data = line(1, "ready") + b"\n" + b'{"v":2,"seq":2,"type":"ready","run":"r"}\n' + line(3, "nope") + b"\n"
    proc = subprocess.run(
        [sys.executable, "-m", "fenwire_fast.cli", "check", "-", "--json", "--direction", "event"],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    records = [orjson.loads(x) for x in proc.stdout.splitlines()]
    assert [(r.get("line"), r.get("code")) for r in records[:2]] == [(2, "version-mismatch"), (3, "unknown-type")]
    assert records[0]["file"] == "<stdin>" and records[0]["fatal?"] is True
    assert records[2] == {
        "file": "<stdin>",
        "direction": "event",
        "direction-guessed": False,
        "lines": 3,
        "rejected": 2,
        "codes": {"unknown-type": 1, "version-mismatch": 1},
    }


def test_numbers_are_written_one_way(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"x\n" * 1500)
    proc = run_cli("check", "-q", str(path), "--direction", "event")
    assert proc.stdout.strip() == f"{path}: 1,500 lines, 1,500 rejected (malformed 1,500)"


def test_help_documents_the_exit_statuses() -> None:
    proc = run_cli("check", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert (
        "exit status: 0 every line is valid; 1 some lines were rejected; 2 bad usage; 3 the file cannot be read" in text
    )
    assert "default: guessed" in text


def test_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"[]\n{}\n")
    proc = run_cli("check", "-q", str(path))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"{path}: 2 lines, 2 rejected (invalid 1, malformed 1)"]


def test_missing_file_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    proc = run_cli("check", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 3
    assert "cannot read" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_oversized_line_is_one_rejection_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(line(1) + b"\n" + b"x" * 200_000 + b"\n" + line(2) + b"\n")
    out = io.StringIO()
    lines, codes = check_file(str(path), out=out, err=io.StringIO(), progress=False)
    assert lines == 3
    assert dict(codes) == {"too-large": 1}
    assert out.getvalue() == f"{path}:2: too-large: line is 65536 bytes or more; the limit is 65535\n"


def test_line_numbers_survive_chunk_boundaries(tmp_path: Path) -> None:
    # Lines straddle the 1 MiB read size; the bad line's number must still be exact.
    good = [line(i, "user", text="z" * 300) for i in range(1, 5001)]
    good[4321] = b'{"v":1,"seq":4322,"type":"user","run":"r","text":5}'
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"\n".join(good) + b"\n")
    out = io.StringIO()
    lines, codes = check_file(str(path), out=out, err=io.StringIO(), progress=False)
    assert lines == 5000
    assert out.getvalue() == f"{path}:4322: invalid-payload: text must be a string\n"


def test_check_memory_stays_bounded_on_a_large_file(tmp_path: Path) -> None:
    """200 MB of events through `fenwire check` in a child process: its peak RSS stays far under
    100 MB (the file is 2x that), so memory does not grow with the file."""
    block = (
        b"\n".join(line(i, "assistant-text-delta", delta="d" * 250, **{"content-index": 1}) for i in range(1, 1001))
        + b"\n"
    )
    path = tmp_path / "large.jsonl"
    with open(path, "wb") as handle:
        # seq repeats per block, so most lines are out-of-order: also exercises the report path
        # under --quiet without holding anything per line.
        for _ in range(200_000_000 // len(block)):
            handle.write(block)
    # VmHWM is the peak RSS of this process image alone (ru_maxrss would also count the pytest
    # process the child was forked from).
    script = (
        "import sys; from fenwire_fast.cli import main; rc = main(sys.argv[1:]); "
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]; "
        "print('HWM', hwm, file=sys.stderr); sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "check", "-q", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert proc.returncode == 1, proc.stderr
    assert "rejected (out-of-order" in proc.stdout
    peak_mb = int(proc.stderr.split("HWM")[1].split()[0]) / 1024  # kB
    assert peak_mb < 100, f"peak RSS {peak_mb:.0f} MB"


def test_reasons_with_newlines_and_escapes_print_one_line_each(tmp_path: Path) -> None:
    # an unknown type's name is part of its reason: a child chooses it
    forged = "x\ninj.jsonl: 1 lines, 0 rejected"
    lines = [
        orjson.dumps({"v": 1, "seq": 1, "type": forged, "run": "r"}),
        orjson.dumps({"v": 1, "seq": 2, "type": "\u001b[2J\u001b]0;pwned\u0007", "run": "r"}),
        orjson.dumps({"v": 1, "seq": 3, "type": "\u202etxt.exe", "run": "r"}),
    ]
    path = tmp_path / "evil.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    proc = run_cli("check", str(path))
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert len(out) == 4, proc.stdout  # three rejections and the summary
    assert all(line.startswith(f"{path}:") for line in out[:3])
    assert "\\x0ainj.jsonl" in out[0]
    assert "\\x1b[2J" in out[1] and "\\x07" in out[1]
    assert "\\u202e" in out[2]
    assert not any(ch in proc.stdout for ch in "\x1b\x07\u202e")
    assert out[3] == f"{path}: 3 lines, 3 rejected (unknown-type 3)"


def test_a_file_name_that_is_not_utf8_is_escaped(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/bad-\xff\x1b-name.jsonl"
    with open(raw, "wb") as f:
        f.write(b'{"v":1,"seq":1,"type":"nope","run":"r"}\n')
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    proc = subprocess.run(
        [sys.executable, "-m", "fenwire_fast.cli", "check", os.fsdecode(raw)],
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode("utf-8")  # strict: valid UTF-8 all through
    assert "bad-\\xff\\x1b-name.jsonl:1: unknown-type" in out
    assert "bad-\\xff\\x1b-name.jsonl: 1 lines, 1 rejected" in out
    assert b"\x1b" not in proc.stdout and b"Traceback" not in proc.stderr


def test_an_ascii_only_stdout_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "é.jsonl"
    path.write_bytes(b'{"v":1,"seq":1,"type":"caf\xc3\xa9","run":"r"}\n')
    env = {**os.environ, "PYTHONIOENCODING": "ascii:strict"}
    proc = subprocess.run(
        [sys.executable, "-m", "fenwire_fast.cli", "check", str(path)], capture_output=True, timeout=60, env=env
    )
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert b"\\xe9.jsonl:1: unknown-type" in proc.stdout


def reference_check(path: Path, direction: str) -> tuple[str, int, dict[str, int]]:
    """`fenwire check` as it was before it used `Receiver.scan`: a Framer and `receive` per line."""
    rx, framer = fw.Receiver(direction), fw.Framer()
    out, lineno, codes = [], 0, Counter[str]()
    data = path.read_bytes()
    pieces = [data[i : i + 7919] for i in range(0, len(data), 7919)]
    for chunk in pieces:
        lines = framer.feed(chunk)
        if chunk is pieces[-1] and framer.buffered:
            lines += framer.feed(b"\n")  # a final line without a newline is checked too
        for ln in lines:
            lineno += 1
            if ln:
                _, rej = rx.receive(ln)
                if rej is not None:
                    codes[rej.code] += 1
                    out.append(f"{path}:{lineno}: {rej.code}: {printable(rej.reason)}\n")
    return "".join(out), lineno, dict(codes)


@settings(max_examples=60)
@given(stream_lines, st.booleans(), st.sampled_from([1, 5, 64, 4096, 65536, 65537, 1 << 20]))
def test_check_matches_the_line_by_line_reference(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], terminated: bool, chunk: int
) -> None:
    """Line numbers and rejections exactly as a Framer plus `receive` per line gives them, for any
    stream (over-long lines, empty lines, no final newline) and any read size."""
    path = tmp_path_factory.mktemp("check") / "s.jsonl"
    data = b"\n".join(lines) + (b"\n" if terminated else b"")
    path.write_bytes(data)
    old = check_module.CHUNK_BYTES
    check_module.CHUNK_BYTES = chunk
    try:
        out = io.StringIO()
        lineno, codes = check_file(str(path), "control", out=out, err=io.StringIO(), progress=False)
    finally:
        check_module.CHUNK_BYTES = old
    want_out, want_lines, want_codes = reference_check(path, "control")
    assert (out.getvalue(), lineno, dict(codes)) == (want_out, want_lines, want_codes)
