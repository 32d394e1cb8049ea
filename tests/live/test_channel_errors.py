"""``Channel.errors`` is bounded: a child writing bad or foreign lines for its whole life keeps
the run's first and last ``ERRORS_KEPT`` errors in its parent, and ``errors_dropped`` counts the
rest; every poll still returns all of its own errors, and the run's events all arrive."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fenwire_fast.live.parent.channel import ERRORS_KEPT, Channel, decoded

BAD = 2000  # bad lines written: ten times what is kept


def _event_file(tmp_path: Path) -> tuple[str, str]:
    """An event file with ``BAD`` foreign or rejected lines among the run's own events."""
    lines = []
    for i in range(BAD):
        lines.append(json.dumps({"v": 1, "seq": i + 1, "type": "info", "run": "r", "summary": f"own {i}"}))
        if i % 2:
            lines.append(json.dumps({"v": 1, "seq": i + 1, "type": "info", "run": f"other-{i}", "summary": "x"}))
        else:
            lines.append('{"v":1,"seq":' + str(i + 1) + ',"type":"nope-' + str(i) + '","run":"r"}')
    events, control = tmp_path / "events.jsonl", tmp_path / "control.jsonl"
    events.write_text("\n".join(lines) + "\n")
    control.touch(mode=0o600)
    return str(control), str(events)


@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "raw"])
def test_errors_keep_the_first_and_the_last_and_count_the_rest(tmp_path: Path, raw: bool) -> None:
    control, events = _event_file(tmp_path)
    channel = Channel("r", control, events, max_bytes=4096)
    returned = []
    delivered = []
    sizes = []
    while True:
        if raw:
            batches, errors = channel.poll_raw()
            messages = [m for b in batches for m in decoded(b)]
        else:
            messages, errors = channel.poll()
        returned.extend(errors)
        delivered.extend(m["seq"] for m in messages)
        sizes.append(len(channel.errors))
        if not (messages or errors or channel.pending()):
            break
    assert len(returned) == BAD  # each poll hands over all of its own errors
    assert delivered == list(range(1, BAD + 1))  # and every event of the run
    assert max(sizes) == len(channel.errors) == 2 * ERRORS_KEPT  # never more held
    kept = returned[:ERRORS_KEPT] + returned[-ERRORS_KEPT:]
    assert all(a is b for a, b in zip(channel.errors, kept, strict=True))
    assert channel.errors_dropped == BAD - 2 * ERRORS_KEPT


def test_few_errors_are_all_kept(tmp_path: Path) -> None:
    control, events = _event_file(tmp_path)
    channel = Channel("r", control, events, max_bytes=300)
    returned = []
    while len(returned) < 2 * ERRORS_KEPT - 10:  # a read brings at most a few
        returned.extend(channel.poll()[1])
    assert all(a is b for a, b in zip(channel.errors, returned, strict=True))
    assert channel.errors_dropped == 0


def test_error_counts_count_every_error_kept_or_dropped(tmp_path: Path) -> None:
    control, events = _event_file(tmp_path)
    channel = Channel("r", control, events, max_bytes=4096)
    returned = []
    while True:
        messages, errors = channel.poll()
        returned.extend(errors)
        if not (messages or errors or channel.pending()):
            break
    assert channel.errors_dropped > 0
    assert channel.error_counts == Counter(e.kind for e in returned)
    assert channel.error_counts.total() == len(returned) == BAD
