"""A durable hub read through raw batches commits exactly what it handed over, and closes its runs.

``Hub.raw_batches`` and ``Hub.raw_batches_async`` follow the durable rules of ``batches``: each
batch handed over moves the run's delivered position to its last line, a commit records that
position, and a run that finished is closed by the next commit once every event is committed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.cli.runs import inspect
from fenwire_fast.live.parent.hub import Hub

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_durable_hub_read_raw_commits_what_it_handed_over(tmp_path: Path, mode: str) -> None:
    state = tmp_path / "state"
    with Hub(state_dir=state) as hub:
        children = [hub.spawn("go", run=f"r{i}", mock={"steps": 2, "deltas": 20 + 10 * i}) for i in range(2)]
        for child in children:
            child.close()  # queued: the turn ends, then the run is closed
        got = {c.run: b"" for c in children}
        positions: list[tuple[str, int, int]] = []

        def take(child: Any, batch: Any) -> None:
            got[child.run] += batch.lines
            hub.commit()
            positions.append((child.run, batch.seqs[-1], child.durable.manifest.committed_seq))

        if mode == "sync":
            for child, batch in hub.raw_batches():
                take(child, batch)
        else:

            async def main() -> None:
                async for child, batch in hub.raw_batches_async():
                    take(child, batch)

            asyncio.run(main())
        hub.commit()  # the runs finished: closed now
        for child in children:
            assert child.status == "done", (child.run, child.error)
            assert got[child.run] == Path(child.event_path).read_bytes(), child.run
        assert positions and all(seq == committed for _, seq, committed in positions), positions
        last = {c.run: c.channel.last_seq for c in children}
    reports = {r.run: r for r in inspect(state)}
    assert {run: (r.closed, r.status, r.committed_seq) for run, r in reports.items()} == {
        run: (True, "done", seq) for run, seq in last.items()
    }
    with Hub.attach(state) as again:  # closed runs are not taken up again
        assert again.children == [] and again.attach_errors == []
