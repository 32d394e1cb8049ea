"""A child is untrusted input: each attack a hostile child can make on its parent, as a test.

The children here are scripted (plain ``json`` + ``os``, driven by ``HOSTILE`` in their
environment) and run through the real :func:`~fenwire_fast.live.parent.spawn.spawn` and
:class:`~fenwire_fast.live.parent.hub.Hub`; the final-text race also runs many thousands of times against
the parent's own code path (:class:`~fenwire_fast.live.parent.channel.Channel`) with a live process
swapping paths underneath it. Waits are conditions with generous guards against hangs, never
timings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from fenwire_fast.live.parent.channel import Channel, decoded
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import child_env

SECRET = "-----BEGIN SECRET----- do not read me, do not delete me -----END SECRET-----\n"

#: A scripted child: writes ``lines`` (``{run}`` and ``{dir}`` filled in) to its event file, then
#: ``exit``s with code 0, or ``sleep``s (ignoring SIGTERM when ``ignore_term``). ``swap`` runs a
#: thread that keeps swapping symlinks in the private directory while it works.
HOSTILE = r"""
import json, os, signal, sys, threading, time
spec = json.loads(os.environ["HOSTILE"])
run = os.environ["FEN_WIRE_RUN_ID"]
events = os.environ["FEN_WIRE_EVENT_PATH"]
priv = os.path.dirname(events)
if spec.get("ignore_term"):
    signal.signal(signal.SIGTERM, lambda *a: None)
def swapper(outside):
    i = 0
    while True:
        i += 1
        for name, targets in (("sub", [".", outside]), ("link", [os.path.join(outside, "secret"), "decoy"])):
            tmp = os.path.join(priv, f".{name}.{i}")
            os.symlink(targets[i % 2], tmp)
            os.replace(tmp, os.path.join(priv, name))
if spec.get("swap"):
    threading.Thread(target=swapper, args=(spec["swap"],), daemon=True).start()
    time.sleep(0.05)
with open(events, "ab", buffering=0) as f:
    for line in spec["lines"]:
        f.write(line.replace("{run}", run).replace("{dir}", priv).encode("utf-8", "surrogatepass") + b"\n")
if spec.get("then") == "sleep":
    while True:
        time.sleep(1)
"""


def _line(seq: int, type_: str, run: str = "{run}", **payload: Any) -> str:
    if type_ == "result":
        payload = {"stop-reason": "stop", **payload}
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": run, **payload})


def _hostile(spec: dict[str, Any], **kwargs: Any) -> LiveChild:
    env = child_env({"HOSTILE": json.dumps(spec)})
    return spawn(None, command=[sys.executable, "-c", HOSTILE], env=env, **kwargs)


def _drain(child: LiveChild, guard: float = 60.0) -> list[dict[str, Any]]:
    """Every message until the child has finished (a guard only against hangs)."""
    got: list[dict[str, Any]] = []
    end = time.monotonic() + guard
    while not child.finished:
        assert time.monotonic() < end, f"child still running after {guard} s\n{child.log_text()}"
        messages, _ = child.poll()
        got.extend(messages)
        if not messages:
            time.sleep(0.002)
    return got


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    secret = outside / "secret"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, SECRET.encode())
    os.close(fd)
    return outside


# -- final-text-path: directory swaps, symlinks, NUL ------------------------------------------


def test_directory_swap_race_through_spawned_children(tmp_path: Path) -> None:
    """Children that swap a directory component and a last component between a symlink into
    their private directory and one to a secret outside it, while naming them in their result."""
    outside = _outside(tmp_path)
    with Hub() as hub:
        for i in range(24):
            name = "sub/secret" if i % 2 else "link"
            lines = [
                _line(1, "ready"),
                _line(2, "result", **{"final-text": "-----BEGIN", "final-text-path": "{dir}/" + name}),
                _line(3, "exit", status="done"),
            ]
            hub.add(_hostile({"lines": lines, "swap": str(outside), "then": "exit"}, run=f"swap-{i}"))
        results = [(child, event) for child, event in hub if event["type"] == "result"]
        assert len(results) == 24
        for child, _ in results:
            assert child.channel.final_text == "-----BEGIN", child.channel.final_text
            assert child.channel.final_text_note is not None
            assert child.status == "done"
    assert (outside / "secret").read_text() == SECRET
    assert sorted(os.listdir(outside)) == ["secret"]


def test_directory_swap_race_20000_times(tmp_path: Path) -> None:
    """The parent's final-text path followed 20,000 times while another process swaps the
    directory component and the file itself between a symlink inside and one to the secret."""
    outside = _outside(tmp_path)
    priv = tmp_path / "priv"
    priv.mkdir(mode=0o700)
    events, control = priv / "events.jsonl", priv / "control.jsonl"
    control.touch(mode=0o600)
    decoy = priv / "decoy"
    decoy.write_text("-----BEGIN decoy")
    os.chmod(decoy, 0o600)
    swapper = subprocess.Popen(
        [sys.executable, "-c", HOSTILE],
        env={
            **os.environ,
            "HOSTILE": json.dumps({"lines": [], "swap": str(outside), "then": "sleep"}),
            "FEN_WIRE_RUN_ID": "r",
            "FEN_WIRE_EVENT_PATH": str(events),
        },
    )
    try:
        while not (priv / "sub").is_symlink() or not (priv / "link").is_symlink():
            assert swapper.poll() is None
            time.sleep(0.001)
        reads = refused = 0
        for i in range(20_000):
            name = ("sub/secret", "link", "sub/../link", "sub/decoy")[i % 4]
            result = {"final-text": "-----BEGIN", "truncated?": True, "final-text-path": f"{priv}/{name}"}
            lines = [_line(1, "ready", "r"), _line(2, "result", "r", **result), _line(3, "exit", "r", status="done")]
            events.write_text("\n".join(lines) + "\n")
            with Channel("r", str(control), str(events)) as ch:
                ch.poll()
                assert ch.exit is not None
                assert ch.final_text is not None and SECRET not in ch.final_text
                if ch.final_text_note is None:
                    reads += 1
                else:
                    refused += 1
        assert refused == 20_000, f"{reads} paths through a symlink were followed"
    finally:
        swapper.kill()
        swapper.wait()
    assert (outside / "secret").read_text() == SECRET
    assert sorted(os.listdir(outside)) == ["secret"]
    assert decoy.read_text() == "-----BEGIN decoy"


#: argv: an outside file and a name in the private directory: links the file in under that name
#: and removes the link again, forever.
LINKER = r"""
import os, sys
outside, link = sys.argv[1], sys.argv[2]
while True:
    try:
        os.link(outside, link)
    except FileExistsError:
        pass
    try:
        os.unlink(link)
    except FileNotFoundError:
        pass
"""


def test_hard_link_race_never_hands_over_an_outside_file(tmp_path: Path) -> None:
    """A process keeps hard-linking a secret from outside into the private directory and removing
    the link, while the parent follows that name 1,500 times: the link count can drop between the
    parent's ``open`` and its checks, so one link at ``open`` proves nothing. When only ``open``
    was checked, 12 to 91 of the 1,500 reads handed over the secret (every one of 14 runs failed);
    with the name and link count checked again at the end but not after the ``unlink``, 2 runs of
    23 still let one through. Every read must be refused."""
    outside = _outside(tmp_path)
    secret = outside / "secret"
    priv = tmp_path / "priv"
    priv.mkdir(mode=0o700)
    events, control = priv / "events.jsonl", priv / "control.jsonl"
    control.touch(mode=0o600)
    link = priv / "final.txt"
    result = {"final-text": SECRET[:10], "truncated?": True, "final-text-path": str(link)}
    lines = [_line(1, "ready", "r"), _line(2, "result", "r", **result), _line(3, "exit", "r", status="done")]
    linker = subprocess.Popen([sys.executable, "-c", LINKER, str(secret), str(link)])
    try:
        while os.stat(secret).st_nlink < 2:  # the linker is at work
            assert linker.poll() is None
            time.sleep(0.001)
        stolen = refused = 0
        for _ in range(1_500):
            events.write_text("\n".join(lines) + "\n")
            with Channel("r", str(control), str(events)) as ch:
                ch.poll()
                assert ch.exit is not None and ch.result is not None
                assert ch.final_text is not None
                if SECRET in ch.final_text:
                    stolen += 1
                else:
                    assert ch.final_text == SECRET[:10] and ch.final_text_note is not None
                    refused += 1
        assert stolen == 0, f"{stolen} of 1500 reads handed over the outside file"
        assert refused == 1_500
    finally:
        linker.kill()
        linker.wait()
    assert secret.read_text() == SECRET
    assert sorted(os.listdir(outside)) == ["secret"]


def test_a_nul_in_final_text_path_is_a_note_and_the_exit_still_arrives() -> None:
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text": "ans", "final-text-path": "{dir}/final\u0000.txt"}),
        _line(3, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "exit"})
    with child:
        got = _drain(child)
        assert [m["type"] for m in got] == ["ready", "result", "exit"]
        assert child.status == "done" and child.error is None
        assert child.channel.final_text == "ans"
        assert child.channel.final_text_note is not None and "NUL" in child.channel.final_text_note


def test_final_text_path_without_final_text_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text-path": "{dir}/stolen"}),
        _line(3, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "exit"})
    with child:
        os.link(outside / "secret", Path(child.directory) / "stolen")  # same file system, one more link
        os.unlink(outside / "secret")  # so it has one link and looks like the child's own
        got = _drain(child)
        assert [m["type"] for m in got] == ["ready", "result", "exit"]
        assert child.channel.final_text is None
        assert "carries no final-text" in (child.channel.final_text_note or "")
        assert (Path(child.directory) / "stolen").read_text() == SECRET  # neither read nor removed


def test_only_the_first_result_is_followed(tmp_path: Path) -> None:
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text": "a", "final-text-path": "{dir}/one"}),
        _line(3, "result", **{"final-text": "b", "final-text-path": "{dir}/two"}),
        _line(4, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "exit"})
    with child:
        for name, text in (("one", "a whole"), ("two", "b whole")):
            fd = os.open(Path(child.directory) / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, text.encode())
            os.close(fd)
        _drain(child)
        assert child.channel.final_text == "b"
        assert "already followed" in (child.channel.final_text_note or "")
        assert not (Path(child.directory) / "one").exists()
        assert (Path(child.directory) / "two").read_text() == "b whole"


# -- final-text size: capped, bounded steps, memory --------------------------------------------


def _run_dir(tmp_path: Path) -> tuple[Path, Path, Path]:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    events, control = d / "events.jsonl", d / "control.jsonl"
    control.touch(mode=0o600)
    return d, events, control


def test_a_file_that_grows_past_the_cap_during_the_read_is_refused(tmp_path: Path) -> None:
    mib = 1 << 20
    cap = 16 * mib
    d, events, control = _run_dir(tmp_path)
    big = d / "final.txt"
    fd = os.open(big, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"x" * (12 * mib))  # under the cap when the read starts
    result = {"final-text": "xxxx", "truncated?": True, "final-text-path": str(big)}
    events.write_text(_line(1, "result", "r", **result) + "\n" + _line(2, "exit", "r", status="done") + "\n")
    tracemalloc.start()
    try:
        with Channel("r", str(control), str(events), final_text_cap=cap, final_text_step=mib) as ch:
            assert ch.poll() == ([], [])  # one step read; the result waits for the rest
            assert ch.pending()
            os.write(fd, b"x" * (32 * mib))  # the child keeps writing
            messages: list[dict[str, Any]] = []
            polls = 0
            tracemalloc.reset_peak()
            while not messages:
                got, errors = ch.poll()
                messages += got
                assert errors == []
                polls += 1
                assert polls < 100
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        os.close(fd)
    assert [m["type"] for m in messages] == ["result", "exit"]
    assert ch.final_text == "xxxx"
    assert ch.final_text_note is not None and f"grew larger than {cap} bytes" in ch.final_text_note
    assert polls >= 15  # bounded steps of 1 MiB, not one read of everything
    assert peak < 2 * cap, f"peak {peak / mib:.1f} MiB for a cap of {cap / mib:.0f} MiB"
    assert big.exists()


def test_a_large_final_text_is_read_across_polls_and_nothing_overtakes_it(tmp_path: Path) -> None:
    mib = 1 << 20
    d, events, control = _run_dir(tmp_path)
    text = ("Ünïcödé " * (3 * mib // 8))[: 3 * mib]
    big = d / "final.txt"
    big.write_text(text)
    os.chmod(big, 0o600)
    lines = [
        _line(1, "ready", "r"),
        _line(2, "result", "r", **{"final-text": text[:100], "truncated?": True, "final-text-path": str(big)}),
        _line(3, "exit", "r", status="done"),
    ]
    events.write_text("\n".join(lines) + "\n")
    with Channel("r", str(control), str(events), final_text_step=mib // 2) as ch:
        seen: list[str] = []
        for _ in range(50):
            messages, _ = ch.poll()
            for m in messages:
                seen.append(m["type"])
                if m["type"] == "result":
                    assert ch.final_text == text  # complete when the result is seen
        assert seen == ["ready", "result", "exit"]
    assert not big.exists()


def test_a_large_final_text_is_decoded_in_steps_of_bounded_work_and_memory(tmp_path: Path) -> None:
    """Decoding and the prefix check go step by step too, and the text grows in place: no poll
    allocates more than a few steps' worth (a copy of the text so far would show as tens of MiB),
    and the parent's peak extra memory stays within 1.25 times the text."""
    mib = 1 << 20
    size = 64 * mib
    d, events, control = _run_dir(tmp_path)
    line = b"the final answer goes on and on; " * 3 + b"\n"
    big = d / "final.txt"
    fd = os.open(big, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (line * (size // len(line) + 1))[:size])
    os.close(fd)
    result = {"final-text": line.decode()[:50], "truncated?": True, "final-text-path": str(big)}
    events.write_text(_line(1, "result", "r", **result) + "\n" + _line(2, "exit", "r", status="done") + "\n")
    tracemalloc.start()
    try:
        with Channel("r", str(control), str(events), final_text_step=mib) as ch:
            base = tracemalloc.get_traced_memory()[0]
            worst = polls = 0
            messages: list[dict[str, Any]] = []
            while not messages:
                before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                got, errors = ch.poll()
                assert errors == []
                messages += got
                worst = max(worst, tracemalloc.get_traced_memory()[1] - before)
                polls += 1
                assert polls <= 100
            peak = tracemalloc.get_traced_memory()[1] - base
            text = ch.final_text
    finally:
        tracemalloc.stop()
    assert [m["type"] for m in messages] == ["result", "exit"]
    assert text is not None and len(text) == size and text.startswith(line.decode()) and ch.final_text_note is None
    assert polls >= 64
    assert worst <= 4 * mib, f"one poll allocated {worst / mib:.1f} MiB with 1 MiB steps"
    assert peak <= 1.25 * size, f"peak {peak / mib:.1f} MiB for a {size / mib:.0f} MiB text"
    assert not big.exists()


def test_a_dead_childs_final_text_is_still_read_one_step_per_poll() -> None:
    """A child that wrote its result and ended: the parent drains what it left, but the final
    text still goes one bounded step per poll (it used to be read whole in the poll that found
    the child dead, which stalled a hub for as long as the read took)."""
    mib = 1 << 20
    size = 24 * mib
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text": "z" * 10, "final-text-path": "{dir}/big.txt"}),
        _line(3, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "exit"})
    with child:
        fd = os.open(Path(child.directory) / "big.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"z" * size)
        os.close(fd)
        child.process.wait(timeout=60)  # dead before the parent reads a line
        seen: list[str] = []
        polls = 0
        while not child.finished:
            messages, _ = child.poll()
            seen += [m["type"] for m in messages]
            if "result" in seen:
                assert child.channel.final_text == "z" * size
            polls += 1
            assert polls <= 1000
        assert seen == ["ready", "result", "exit"]
        assert polls >= size // (2 * mib), f"{polls} polls for {size // mib} MiB in 2 MiB steps"
        assert child.status == "done" and child.error is None


def test_a_hub_reads_a_dead_childs_final_text_across_rounds() -> None:
    """The same through a hub: the read of a child that has ended takes one round per step, and
    the child is finished (not left waiting for a timer) once its exit line is delivered."""
    mib = 1 << 20
    size = 24 * mib
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text": "w" * 10, "final-text-path": "{dir}/big.txt"}),
        _line(3, "exit", status="done"),
    ]
    with Hub() as hub:
        child = _hostile({"lines": lines, "then": "exit"}, grace=600.0)
        fd = os.open(Path(child.directory) / "big.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"w" * size)
        os.close(fd)
        child.process.wait(timeout=60)  # dead before the hub reads a line
        hub.add(child)
        rounds = reading = 0
        seen: list[str] = []
        started = time.monotonic()
        while not hub.finished:
            assert time.monotonic() - started < 120, "the hub hung"
            batches = hub.poll_batches()
            rounds += 1
            reading += child.channel.reading_final_text
            seen += [m["type"] for _, messages in batches for m in messages]
            if not batches:
                hub.sleep(1.0)
        assert seen == ["ready", "result", "exit"]
        assert child.channel.final_text == "w" * size
        assert reading >= size // (2 * mib) - 1, f"{reading} rounds read {size // mib} MiB in 2 MiB steps"
        assert time.monotonic() - started < 60  # finished with its exit line, not by the 600 s backstop


def test_a_file_over_the_cap_is_refused_through_spawn() -> None:
    lines = [
        _line(1, "ready"),
        _line(2, "result", **{"final-text": "yy", "final-text-path": "{dir}/big.txt"}),
        _line(3, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "exit"}, final_text_cap=1000)
    with child:
        fd = os.open(Path(child.directory) / "big.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"y" * 5000)
        os.close(fd)
        _drain(child)
        assert child.channel.final_text == "yy"
        assert "larger than 1000 bytes" in (child.channel.final_text_note or "")


# -- fatal lines stop the channel; nothing raises ------------------------------------------------


def test_a_version_mismatch_stops_the_channel_and_the_child_is_cancelled_then_killed() -> None:
    lines = [
        _line(1, "ready"),
        json.dumps({"v": 2, "seq": 2, "type": "assistant-text-delta", "run": "{run}", "delta": "x"}),
        _line(3, "assistant-text-delta", delta="after the mismatch"),
        _line(4, "exit", status="done"),
    ]
    child = _hostile({"lines": lines, "then": "sleep", "ignore_term": True}, grace=0.2, term_grace=0.2)
    with child:
        got = _drain(child)
        assert [m["type"] for m in got] == ["ready"]
        assert child.channel.stopped
        assert child.channel.error is not None and "wire version 2" in child.channel.error
        assert child.channel.exit is None and child.channel.ignored_after_exit == 0
        controls = [json.loads(x) for x in Path(child.control_path).read_text().splitlines()]
        assert [c["type"] for c in controls] == ["cancel"]
        assert child.returncode == -signal.SIGKILL  # it ignored SIGTERM
        assert child.status == "cancelled"


def test_error_keeps_the_first_problem(tmp_path: Path) -> None:
    _, events, control = _run_dir(tmp_path)
    lines = [
        _line(1, "ready", "r"),
        _line(2, "assistant-text-delta", "other", delta="x"),
        json.dumps({"v": 2, "seq": 3, "type": "exit", "run": "r", "status": "done"}),
        _line(4, "assistant-text-delta", "another", delta="y"),
    ]
    events.write_text("\n".join(lines) + "\n")
    with Channel("r", str(control), str(events)) as ch:
        messages, errors = ch.poll()
        assert [m["type"] for m in messages] == ["ready"]
        assert ch.error == "event for foreign run other"
        assert [e.error for e in errors][0] == "event for foreign run other"
        assert "wire version 2" in errors[1].error and ch.stopped
        assert ch.poll() == ([], []) and not ch.pending()


HOSTILE_LINES = [
    _line(2, "control-ack", ref=2**53 - 1, status="accepted"),
    _line(3, "control-ack", ref=1, status="applied", reason="\u0000\u001b[2J"),
    _line(4, "result", **{"final-text": "x", "final-text-path": "{dir}/\u0000/x"}),
    _line(5, "assistant-text-delta", delta="\ud800"),
    _line(5, "result", **{"final-text": "", "final-text-path": "/" + "a" * 5000}),
    _line(6, "result", **{"final-text": "x", "final-text-path": "{dir}/" + "b" * 300}),
    _line(7, "turn-complete", turn=2**53 - 1, **{"stop-reason": "\u202e"}),
    _line(8, "assistant-text-delta", delta="ok"),
    "\udcff\udcfe not UTF-8 \u0000",
    "[" * 5000,
    '{"v":1,"seq":9,"type":"exit","run":"{run}","status":"done","v":1}',
    _line(10, "exit", status="done"),
]


def test_hostile_lines_never_raise_out_of_the_hub() -> None:
    with Hub() as hub:
        for i in range(4):
            hub.add(_hostile({"lines": [_line(1, "ready"), *HOSTILE_LINES], "then": "exit"}, run=f"h-{i}"))
        got: dict[str, list[str]] = {}
        for child, event in hub:
            got.setdefault(child.run, []).append(event["type"])
    for run, types in got.items():
        assert types[0] == "ready" and types[-1] == "exit", (run, types)
        assert "assistant-text-delta" in types
    assert all(c.status == "done" for c in hub.children)


def test_a_later_escaped_run_key_is_another_runs_line_through_raw_batches() -> None:
    """A child names its own run first, then another in a later key spelled with escapes (the last
    key wins): through ``Hub.raw_batches`` those lines, of mirrored types too, are another run's:
    reported, never handed over, never mirrored, never raised."""
    escaped = [
        '{"v":1,"seq":2,"type":"turn-started","run":"{run}","turn":1,"\\u0072un":"other"}',
        '{"v":1,"seq":3,"type":"info","run":"{run}","summary":"s","r\\u0075\\u006E":"other"}',
        '{"v":1,"seq":4,"type":"exit","run":"{run}","status":"done","\\u0072\\u0075\\u006e":"other"}',
    ]
    lines = [_line(1, "ready"), *escaped, _line(5, "assistant-text-delta", delta="ok"), _line(6, "exit", status="done")]
    with Hub() as hub:
        child = hub.add(_hostile({"lines": lines, "then": "exit"}, run="esc"))
        seqs: list[int] = []
        for got, batch in hub.raw_batches():
            assert got is child
            assert all(m["run"] == "esc" for m in decoded(batch))
            seqs += batch.seqs
    assert seqs == [1, 5, 6]
    assert [e.error for e in child.channel.errors] == ["event for foreign run other"] * 3
    assert child.channel.exit is not None and child.channel.exit["seq"] == 6


# -- the child side: an over-long control line does not stall the run ---------------------------


def test_a_64_mib_control_line_does_not_hide_the_cancel_behind_it() -> None:
    mock = {"steps": 2, "deltas": 1, "tools": 1, "hang_step": 1, "hang": "yield"}
    child = spawn("work", mock=mock, env=child_env(), grace=30.0)
    with child:
        end = time.monotonic() + 60
        seen: list[str] = []
        while "tool-call" not in seen:  # the turn is hanging in its tool, cooperatively
            assert time.monotonic() < end and not child.finished, child.log_text()
            seen += [m["type"] for m in child.poll()[0]]
            time.sleep(0.005)
        with open(child.control_path, "ab") as f:
            f.write(b"x" * (64 << 20) + b"\n")
        started = time.monotonic()
        child.cancel()
        got = _drain(child, guard=60.0)
        took = time.monotonic() - started
        acks = [m for m in got if m["type"] == "control-ack"]
        assert [a["status"] for a in acks] == ["rejected", "accepted"], acks  # too-large, then cancel
        assert child.status == "cancelled" and child.returncode == 1
        print(f"cancel behind a 64 MiB control line took effect in {took:.2f} s")
