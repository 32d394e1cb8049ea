"""The forwarder: a hub's checked lines into a JetStream stream, committed once the stream has them.

:class:`Forwarder` drains a :class:`~fenwire_fast.live.parent.hub.Hub` (durable or not) through
``poll_raw_batches`` (the children's own bytes, checked, no dict made) and publishes each accepted
line to its run's subject with the message id ``<run>:<seq>``, asynchronously, with at most
``max_in_flight`` lines read and not yet stored. Each run is a **lane**: its lines go out in order,
and the stream's acks come back in order.

**Commits follow the acks.** With a durable hub, a run is committed (``Hub.commit_at``) up to the
last line of an unbroken prefix the stream acknowledged, never further. A forwarder killed and
started again (``Hub.attach``) reads every line after the last commit again; before it sends a
run's first line it asks the stream for the run's last stored message and skips every line up to
its seq, and the message id lets the stream drop whatever is sent twice anyway. Each line is then
stored once, in its run's order.

**Order through failures.** On one connection the server stores a prefix of what was sent, in
order. When the connection fails (the server went away, no ack within ``ack_timeout``), the
forwarder closes it, and with it every buffered line, connects again with a backoff (doubling up to
``retry_max`` seconds), asks the stream again for each run's last stored line, and sends the rest
from there, in order. A line the server answered with an error (so not stored) followed by a line
of the same run it stored would leave a hole: it is reported as a refusal, never smoothed over.

**Refusals.** A line the server refuses for good (larger than its limits, the stream gone) stops its
run: the forwarder says which run and seq and why (:attr:`Forwarder.refused`, and ``say``), sends
nothing more of that run, and its commits stop before that line, so a later forwarder meets the
same line again. The other runs go on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import nats.errors
import nats.js.errors

from .lanes import DUP, OK, TRIES, ForwardUnavailable, Lane, LaneViews, Refusal, for_good, stored
from .link import StreamLink
from .names import DEFAULT_PREFIX, DEFAULT_STREAM, MSG_ID, message_id, seq_of_id

if TYPE_CHECKING:
    from ..live.parent.spawn import LiveChild
    from .source import Source

__all__ = ["Forwarder", "ForwardUnavailable", "Refusal", "forward"]


class Forwarder(StreamLink, LaneViews):
    """Forward ``hub``'s lines (a :class:`~fenwire_fast.live.parent.hub.Hub`, durable or not, or
    any :class:`~fenwire_fast.forward.source.Source`) to the JetStream of the NATS server at
    ``url``; see the module docstring. ``stream`` (made with subjects ``<prefix>.>`` when missing, unless
    ``create_stream=False``) keeps them; ``say`` gets one line per event worth telling (a refusal,
    a lost connection, a reconnect); ``on_progress`` is called when lines were taken or settled.
    Run it with ``await forwarder.run()`` (or :func:`forward`)."""

    def __init__(
        self,
        hub: Source,
        url: str,
        *,
        stream: str = DEFAULT_STREAM,
        prefix: str = DEFAULT_PREFIX,
        max_in_flight: int = 4096,
        ack_timeout: float = 5.0,
        commit_every: float = 0.2,
        connect_timeout: float = 5.0,
        retry_max: float = 2.0,
        create_stream: bool = True,
        say: Callable[[str], None] | None = None,
        on_progress: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(url, stream, prefix, max_in_flight, connect_timeout, retry_max, create_stream, say)
        self.hub = hub
        self.ack_timeout = ack_timeout
        self.commit_every = commit_every
        self.on_progress = on_progress
        self._stopping = False
        #: lines taken from the hub, lines the stream acknowledged (duplicates among them), publishes
        #: made (sent again after a failure included), commits made
        self.lines = self.acked = self.duplicates = self.published = self.commits = 0
        #: run -> the line its commits stopped before
        self.refused: dict[str, Refusal] = {}
        self._lanes: dict[LiveChild, Lane] = {}
        self._queued = 0  # lines taken and not settled
        self._last_commit = time.monotonic()

    def _connected(self) -> None:
        for lane in self._lanes.values():
            lane.asked = False  # asked again what the stream holds, before anything is sent

    async def _recover(self) -> None:
        """Connect again (with backoff) and send every unstored line again, from what the stream has."""
        self.say(f"forward: {self._broken}; connecting again to {self.url}")
        await self._close_connection()
        for lane in self._lanes.values():
            if lane.failed is not None and any(stored(e) for e in lane.sent if e[0] > lane.failed):
                self._refuse(lane, lane.failed, "not stored, and a later line of the run was: the stream has a hole")
            for seq, line, _state, _at in reversed(lane.sent):
                if lane.refused is None:
                    lane.waiting.appendleft((seq, line))
                else:
                    self._queued -= 1
            lane.sent.clear()
            lane.failed = None
        await self._reconnect()

    # -- the loop -----------------------------------------------------------------------------

    async def run(self, *, until_finished: bool = True) -> None:
        """Forward until every child has finished and each of its lines is stored or refused (with
        ``until_finished=False``: until :meth:`stop`, for a hub that gets new children as it goes,
        such as a fleet node's). Raises :class:`ForwardUnavailable` when the first connection
        cannot be made."""
        await self.open()
        try:
            while not self._over(until_finished):
                if not await self.step():
                    await self.wait()
            self._commit(due=False)
        finally:
            await self.close()

    async def open(self) -> None:
        """Connect (for a caller that drives :meth:`step` itself); raises :class:`ForwardUnavailable`."""
        await self._open()

    async def close(self) -> None:
        """Commit what is stored and close the connection."""
        try:
            self._commit(due=False)
        finally:
            await self._close_connection()

    async def step(self) -> bool:
        """One turn: take what the hub has (room permitting), send, take the acks, connect again if
        the connection failed, commit when due. Returns whether lines were taken."""
        took = self._take() if self._queued < self.max_in_flight else False
        if self._broken is None:
            await self._send()
        if self._settle() and self.on_progress is not None:
            self.on_progress()
        if self._broken is not None:
            await self._recover()
            return True
        self._commit(due=True)
        return took

    @property
    def idle(self) -> bool:
        """No line is on its way (every line taken is stored or refused)."""
        return not any(lane.busy for lane in self._lanes.values())

    def _over(self, until_finished: bool) -> bool:
        idle = self.idle
        if not until_finished:
            return self._stopping and idle
        return self.hub.finished and idle

    def stop(self) -> None:
        """Let :meth:`run` (``until_finished=False``) end once every line taken is settled."""
        self._stopping = True

    def _take(self) -> bool:
        batches = self.hub.poll_raw_batches()
        for child, batch in batches:
            lane = self._lanes.get(child)
            if lane is None:
                lane = self._lanes[child] = Lane(child, self.prefix)
            if lane.refused is not None or not len(batch):
                continue  # a refused run sends nothing more: its commits stopped at the refusal
            data, start = batch.lines, 0
            waiting = lane.waiting
            for end, seq in zip(batch.ends, batch.seqs, strict=True):
                waiting.append((seq, data[start : end - 1]))
                start = end
            self.lines += len(batch)
            self._queued += len(batch)
        if batches and self.on_progress is not None:
            self.on_progress()
        return bool(batches)

    async def _send(self) -> None:
        for lane in self._lanes.values():
            if not lane.waiting or lane.refused is not None:
                continue
            if not lane.asked:
                if not await self._ask(lane):
                    return
            waiting, sent, run, subj = lane.waiting, lane.sent, lane.run, lane.subject
            publish, monotonic = self._publish, time.monotonic
            while waiting and self._broken is None:
                seq, line = waiting[0]
                entry = [seq, line, None, monotonic()]
                try:
                    await publish(subj, line, message_id(run, seq), entry)
                except nats.errors.MaxPayloadError:
                    self._refuse(lane, seq, f"{len(line)} bytes, over the server's max_payload")
                    break
                except Exception as exc:  # noqa: BLE001 - a connection gone mid-publish
                    self._broken = self._broken or f"publish failed: {exc or type(exc).__name__}"
                    return
                waiting.popleft()
                sent.append(entry)
                self.published += 1

    async def _ask(self, lane: Lane) -> bool:
        """Ask the stream for the run's last stored line; skip every line up to it."""
        try:
            last = await self._jsm.get_last_msg(self.stream, lane.subject)
        except nats.js.errors.NotFoundError:
            seq = 0
        except Exception as exc:  # noqa: BLE001 - the connection failed: recover
            self._broken = self._broken or f"cannot ask the stream about run {lane.run!r}: {exc or type(exc).__name__}"
            return False
        else:
            seq = seq_of_id((last.headers or {}).get(MSG_ID)) or 0
        lane.asked = True
        before = len(lane.waiting)
        lane.drop_stored(seq)
        self._queued -= before - len(lane.waiting)
        return True

    def _settle(self) -> bool:
        """Take the acks that came, in each run's order; note a failed line or a late ack. Returns
        whether any line settled."""
        now = time.monotonic()
        before = self._queued
        self._acked.clear()
        for lane in self._lanes.values():
            sent = lane.sent
            while sent:
                seq, _line, state, at = sent[0]
                if state is None:
                    if now - at > self.ack_timeout:
                        self._broken = self._broken or f"no ack for {self.ack_timeout:g} s (run {lane.run!r} seq {seq})"
                    break
                if state is OK or state is DUP:
                    sent.popleft()
                    self._queued -= 1
                    self.acked += 1
                    self.duplicates += state is DUP
                    if lane.refused is None or seq < lane.refused.seq:
                        lane.stored = seq
                    continue
                why = for_good(state)
                if why is None:  # an error sending again may cure: count the tries
                    times = lane.errors[1] + 1 if lane.errors[0] == seq else 1
                    lane.errors = (seq, times)
                    if times < TRIES:
                        lane.failed = seq  # not stored: sent again from the stream's last line
                        self._broken = self._broken or f"run {lane.run!r} seq {seq} not stored: {state}"
                        break
                    why = f"the server refused it {times} times: {state}"
                sent.popleft()
                self._queued -= 1
                self._refuse(lane, seq, why)
        return self._queued != before

    def _refuse(self, lane: Lane, seq: int, reason: str) -> None:
        if lane.refused is not None:
            return
        lane.refused = self.refused[lane.run] = Refusal(lane.run, seq, reason)
        self._queued -= len(lane.waiting)
        lane.waiting.clear()
        self.say(f"forward: refused {lane.refused}; its commits stop before it")

    def _commit(self, due: bool) -> None:
        """Commit each run of a durable hub up to its last stored line, every ``commit_every`` s."""
        if self.hub.state is None or (due and time.monotonic() - self._last_commit < self.commit_every):
            return
        self._last_commit = time.monotonic()
        lanes = [lane for lane in self._lanes.values() if lane.stored > lane.committed or lane.to_close]
        if not lanes:
            return
        self.hub.commit_at({lane.child: lane.stored for lane in lanes})
        self.commits += 1
        for lane in lanes:
            lane.was_committed()

    async def wait(self) -> None:
        """Sleep until a child writes, an ack comes (when lines are on their way) or a commit is due."""
        if not self._queued:
            await self.hub.sleep_async(min(self.commit_every, 1.0))
            return
        acked = self._acked  # cleared by _settle before it looked: an ack since then has set it
        if self._queued >= self.max_in_flight:  # nothing more may be taken: only an ack helps
            try:
                await asyncio.wait_for(acked.wait(), self.ack_timeout)
            except TimeoutError:
                pass
            return
        waits = [asyncio.ensure_future(self.hub.sleep_async(self.ack_timeout)), asyncio.ensure_future(acked.wait())]
        try:
            await asyncio.wait(waits, timeout=self.ack_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()


def forward(hub: Source, url: str, **kwargs: Any) -> Forwarder:
    """Run a :class:`Forwarder` over ``hub`` to the end (``asyncio.run``); return it, for its counts."""
    forwarder = Forwarder(hub, url, **kwargs)
    asyncio.run(forwarder.run())
    return forwarder
