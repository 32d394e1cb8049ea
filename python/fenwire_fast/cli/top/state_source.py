"""``fenwire top PATH``: the runs of a state dir, looked at again and again without touching it.

Each run gets a :class:`RunWatch`: a read-only channel over its files (its control file opened
for reading only, no final-text file opened, no lock taken), read from the start of its event file
once and then only for what was added since. Each look reads at most :data:`READ_BUDGET` bytes of
one run, so a state dir with large files shows at once and fills in over the next looks. The
controls a parent appends after the first look are read from its control file as they come, so
that their acks are matched and the status follows them.

Nothing a child wrote or named can raise here: a file that cannot be read, a damaged manifest or
a line the codec rejects becomes the run's ``problem`` or ``error``, shown in its row.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from typing import Any

import orjson

from ... import EVENT_TYPE_ORDER
from ...lines import Tailer
from ...live.parent.adopt import alive
from ...live.parent.channel import Channel
from ...live.parent.channel_state import SentControl
from ...live.parent.durable import Manifest
from ...live.proc.limits import OpenFileLimit, ensure_open_files
from ..runs import RunReport, look_channel, settle
from .manifests import ManifestCache
from .rows import TopRow

__all__ = ["StateSource", "RunWatch", "READ_BUDGET", "READ_STEP"]

#: at most this many bytes of one run's event file are read per look
READ_BUDGET = 4 << 20
#: in reads of at most this many bytes
READ_STEP = 1 << 20

_TURN = EVENT_TYPE_ORDER.index("turn-started")


class RunWatch:
    """One run of a state dir, read a little more at each :meth:`look`."""

    def __init__(self, path: str, manifest: Manifest) -> None:
        self.path = path
        self.manifest = manifest
        self.turn: int | None = None
        self.problem: str | None = None
        self._sample: tuple[float, int] | None = None  # (when, events) at the previous look
        self._rate: float | None = None
        self._controls: Tailer | None = None
        self.channel: Channel | None = None
        try:
            self.channel = look_channel(
                path, replace(manifest, committed_seq=0, mark=None), READ_STEP
            )  # from the start
            known = max(self.channel.controls, default=0)
            self._known = known
            self._controls = Tailer(self.channel.control_path, "control", follow=False)
        except (OSError, ValueError, TypeError) as exc:
            self.problem = f"cannot read its files: {getattr(exc, 'strerror', None) or exc}"

    def look(self, now: float, stall: float) -> TopRow:
        """The run now (read what it wrote since the last look, within :data:`READ_BUDGET`)."""
        manifest = self.manifest
        report = RunReport(name=manifest.name, run=manifest.run, pid=manifest.pid, problem=self.problem)
        row = TopRow(run=manifest.run, status="starting", pid=manifest.pid)
        channel = self.channel
        caught_up = False
        if channel is not None and self.problem is None:
            try:
                self._read_controls(channel)
                self._read_events(channel)
            except (OSError, ValueError) as exc:
                self.problem = report.problem = f"cannot read its files: {getattr(exc, 'strerror', None) or exc}"
            report.alive = channel.exit is None and alive(manifest)
            caught_up = not channel.pending()
            if caught_up:
                settle(report, manifest, channel)
            else:
                report.status, report.last_seq = channel.status, channel.last_seq
                report.events = channel.earlier_events + channel.events
            row.waiting = len(channel.unacked)
        row.status = report.status or "starting"
        row.alive, row.events, row.last_seq = report.alive, report.events, report.last_seq
        row.error, row.problem, row.turn = report.error, report.problem, self.turn
        self._timing(row, now, stall, caught_up)
        return row

    def _timing(self, row: TopRow, now: float, stall: float, caught_up: bool) -> None:
        """Bytes, the age of the last event, the rate since the last look, and whether it stalled.
        The rate counts the events the run wrote between two looks that each read all it had
        written (none while a look is still catching up: that would count old events as new)."""
        try:
            st = os.lstat(os.path.join(self.path, self.manifest.name, "events.jsonl"))
        except OSError:
            st = None
        if st is not None:
            row.bytes = st.st_size
            row.age = max(0.0, time.time() - st.st_mtime)
        last = self._sample
        if not caught_up:
            self._rate = None
        elif last is not None and now > last[0]:
            self._rate = max(0.0, (row.events - last[1]) / (now - last[0]))
        self._sample = (now, row.events) if caught_up else None
        row.rate = 0.0 if row.finished else self._rate
        row.stalled = not row.finished and row.age is not None and row.age > stall

    def _read_controls(self, channel: Channel) -> None:
        """Controls appended since the channel read the control file: known to the channel, so
        that their acks are matched (the status follows them, and they count as waiting)."""
        tailer = self._controls
        if tailer is None or not tailer.pending():
            return
        for _ in range(16):
            items, _status = tailer.poll()
            if not items:
                return
            for item in items:
                if isinstance(item, dict) and item.get("run") == channel.run and item["seq"] > self._known:
                    sent = SentControl(item["seq"], item["type"])
                    channel.controls[sent.seq] = channel.unacked[sent.seq] = sent
                    self._known = sent.seq

    def _read_events(self, channel: Channel) -> None:
        budget = READ_BUDGET
        while budget > 0:
            batches, errors = channel.poll_raw()
            if not batches and not errors:
                return
            for batch in batches:
                budget -= len(batch.lines)
                self._turns(batch)

    def _turns(self, batch: Any) -> None:
        types = batch.types
        at = types.rfind(_TURN)
        if at < 0:
            return
        start = batch.ends[at - 1] if at else 0
        try:
            turn = orjson.loads(batch.lines[start : batch.ends[at]]).get("turn")
        except orjson.JSONDecodeError:
            return
        if isinstance(turn, int):
            self.turn = turn

    def close(self) -> None:
        """Close the run's files."""
        if self.channel is not None:
            self.channel.close()
        if self._controls is not None:
            self._controls.close()


class StateSource:
    """Every run of state dir ``path``, as rows; see the module docstring. ``stall``: a run with
    no event for longer than this (seconds) is flagged stalled. Raises ``OSError`` when ``path``
    cannot be read at the first look."""

    def __init__(self, path: str | os.PathLike[str], stall: float = 60.0) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.stall = stall
        self.title = self.path
        self._watches: dict[str, RunWatch] = {}
        self._manifests = ManifestCache(self.path)

    def look(self) -> list[TopRow]:
        """Every run now: one row per manifest (a damaged one gives a row with its problem)."""
        now = time.monotonic()
        rows = []
        found = self._manifests.manifests()
        if len(found) > len(self._watches):
            with contextlib.suppress(OpenFileLimit):  # past the limit, a run's row says it cannot be read
                ensure_open_files(len(found))
        for name, manifest in found:
            if isinstance(manifest, str):
                rows.append(TopRow(run=name, status="unknown", problem=f"manifest {manifest}"))
                continue
            watch = self._watches.get(name)
            if watch is None:
                watch = self._watches[name] = RunWatch(self.path, manifest)
            watch.manifest = manifest  # its pid, commits and close come as the hub records them
            rows.append(watch.look(now, self.stall))
        return rows

    def close(self) -> None:
        """Close every run's files."""
        for watch in self._watches.values():
            watch.close()
        self._watches.clear()
