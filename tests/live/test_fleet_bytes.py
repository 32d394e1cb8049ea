"""What a :class:`~fenwire_fast.live.fleet.Fleet` hands over is the children's event files, byte for byte.

Each child's private directory is put under the test's own (``directory=``), so its event file is
still there when the runs have ended (the actor removes it only when the fleet closes). The runs
end on their own (a ``close`` queued behind the prompt), the drain stops on the fleet's
``finished`` (the actors' status snapshots, not any event), and only then is what came through
compared with the files: a line lost or added anywhere is a failed comparison, not a hang.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from fenwire_fast.live.fleet import Fleet  # noqa: E402
from live_harness import HANG_GUARD, ray_cluster, wait_gone  # noqa: E402

#: runs of different lengths, so that answers end at different lines of each
MOCKS: list[dict[str, Any]] = [
    {"steps": 1},
    {"steps": 2, "deltas": 7},
    {"steps": 3, "deltas": 40, "tool_result_bytes": 5000},
    {"steps": 2, "deltas": 3, "thinking": 2},
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head and two nodes on this machine (``test_fleet.py`` checks what the actors leave behind)."""
    with ray_cluster() as c:
        yield c


def _event_file(where: Path) -> bytes:
    (events,) = where.glob("*/events.jsonl")  # the child's private directory, made under ``where``
    return events.read_bytes()


@pytest.mark.parametrize("form", ["raw", "dicts"])
def test_the_fleet_hands_over_each_event_file_whole(cluster: Any, tmp_path: Path, form: str) -> None:
    with Fleet(address=cluster.address) as fleet:
        places = {}
        for i, mock in enumerate(MOCKS * 2):
            where = tmp_path / f"run-{i}"
            where.mkdir(mode=0o700)
            child = fleet.spawn("Do the task.", run=f"r{i}", mock=mock, directory=str(where))
            child.close()  # queued: the turn ends, then the run is closed
            places[child.run] = where
        raw: dict[str, list[bytes]] = {run: [] for run in places}
        dicts: dict[str, list[dict[str, Any]]] = {run: [] for run in places}
        end = time.monotonic() + HANG_GUARD
        while not fleet.finished:  # the actors' snapshots say so; no event is waited for
            assert time.monotonic() < end, f"hung: {[repr(c) for c in fleet.children]}"
            if form == "raw":
                for child, batch in fleet.poll_raw_batches(timeout=0.5):
                    raw[child.run].append(batch.lines)
            else:
                for child, messages in fleet.poll_batches(timeout=0.5):
                    dicts[child.run].extend(messages)
        assert {c.run: c.status for c in fleet.children} == dict.fromkeys(places, "done")
        files = {run: _event_file(where) for run, where in places.items()}
        pids = [c.pid for c in fleet.children]
    for run, data in files.items():
        assert json.loads(data.splitlines()[-1])["type"] == "exit", run  # the whole run is in the file
        if form == "raw":
            got = b"".join(raw[run])
            assert got == data, f"{run}: {len(got)} bytes handed over, the event file has {len(data)}"
        else:
            want = [json.loads(line) for line in data.splitlines()]
            assert dicts[run] == want, f"{run}: {len(dicts[run])} events handed over, the file has {len(want)}"
        child = next(c for c in fleet.children if c.run == run)
        assert child.bytes == len(data), run  # the driver's own count of the run's bytes
    wait_gone(pids)
