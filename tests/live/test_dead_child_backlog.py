"""A child that exited with a large event file unread is read one bounded read per poll, as while
it ran: the parent's peak memory grows by a few reads, not by the file, and every event arrives,
in order, exactly once; the run ends only once the file is read to its end.

Each case runs in a fresh interpreter (:data:`DRIVER`), so that its peak RSS (``ru_maxrss``) is
its own: a child writes ``BACKLOG`` bytes of events and its ``exit`` and ends, and only then does
the parent read, through ``LiveChild.poll`` / ``poll_raw`` or a hub (kernel wake-ups or polling,
dicts or raw batches)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from live_harness import HANG_GUARD, child_env

#: the dead child's backlog
BACKLOG = 250 << 20
#: the parent's read size (the channel's ``max_bytes``)
CHUNK = 1 << 20
#: how much the parent's peak RSS may grow while it reads the whole backlog
ALLOWED = 8 * CHUNK

WRITER = r"""
import os
run, size = os.environ["FEN_WIRE_RUN_ID"], int(os.environ["BACKLOG_BYTES"])
middle = ',"type":"assistant-text-delta","run":"' + run + '","delta":"'
pad = "x" * 4000 + '"}\n'  # each delta its own text (a backend may share equal strings)
seq = written = 0
with open(os.environ["FEN_WIRE_EVENT_PATH"], "a") as events:
    while written < size:
        block = "".join(f'{{"v":1,"seq":{seq + i}{middle}{seq + i}{pad}' for i in range(1, 257))
        events.write(block)
        seq, written = seq + 256, written + len(block)
    if os.environ["BACKLOG_EXIT"] == "1":
        events.write('{"v":1,"seq":%d,"type":"exit","run":"%s","status":"done"}\n' % (seq + 1, run))
"""

DRIVER = r"""
import json, os, resource, sys
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import spawn

mode, directory, size, chunk, writer, with_exit = sys.argv[1:7]
child = spawn(None, command=[sys.executable, "-c", writer], directory=directory, max_bytes=int(chunk), grace=600.0,
              env={"BACKLOG_BYTES": size, "BACKLOG_EXIT": with_exit})
os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # it ended (not reaped): nothing read yet
assert os.path.getsize(child.event_path) > int(size)
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
expected, reads, last = 1, 0, None

def take(seqs, final_type):
    global expected, reads, last
    reads += 1
    seqs = list(seqs)
    assert seqs == list(range(expected, expected + len(seqs))), (expected, seqs[:3])
    expected += len(seqs)
    last = final_type

if mode in ("poll", "poll_raw"):
    while not child.finished:
        if mode == "poll":
            messages, errors = child.poll()
            if messages:
                take((m["seq"] for m in messages), messages[-1]["type"])
        else:
            batches, errors = child.poll_raw()
            for batch in batches:
                take(batch.seqs, json.loads(batch.line(len(batch) - 1))["type"])
        assert errors == [], errors
else:
    hub = Hub(wakeups="poll" if mode.endswith("polling") else "kernel")
    hub.add(child)
    if "raw" in mode:
        for _, batch in hub.raw_batches():
            take(batch.seqs, json.loads(batch.line(len(batch) - 1))["type"])
    else:
        for _, messages in hub.batches():
            take((m["seq"] for m in messages), messages[-1]["type"])
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start) * 1024
print(json.dumps({"grown": grown, "events": expected - 1, "last": last, "reads": reads,
                  "status": child.status, "offset": child.channel.offset, "size": os.path.getsize(child.event_path)}))
child.cleanup()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB, waitid WNOWAIT")
@pytest.mark.parametrize("with_exit", [True, False], ids=["exit", "no-exit"])
@pytest.mark.parametrize("mode", ["poll", "poll_raw", "hub", "hub_raw", "hub_polling", "hub_raw_polling"])
def test_a_dead_childs_backlog_is_read_in_bounded_reads(tmp_path: Path, mode: str, with_exit: bool) -> None:
    """With its ``exit`` line last, or without one (the run then fails, but only once the whole
    file is read: a hub polls such a child every round, though no wake-up comes)."""
    env = {**os.environ, **child_env()}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, mode, str(tmp_path), str(BACKLOG), str(CHUNK), WRITER, str(int(with_exit))],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if with_exit:
        assert out["status"] == "done" and out["last"] == "exit"
    else:
        assert out["status"] == "failed" and out["last"] == "assistant-text-delta"
    assert out["offset"] == out["size"]  # the whole file was read
    assert out["events"] > BACKLOG // 4100  # every event, in order, once (checked by the driver)
    assert out["reads"] >= BACKLOG // CHUNK  # one bounded read at a time
    assert out["grown"] <= ALLOWED, f"the parent's peak RSS grew by {out['grown'] >> 20} MiB reading the backlog"
