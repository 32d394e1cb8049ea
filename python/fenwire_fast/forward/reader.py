"""The reading side: a run's events back out of the stream, every line checked again.

:class:`RunReader` reads the messages of one run's subject from a stream sequence on (``start``,
1 by default: the whole run), through an ephemeral pull consumer, and passes each through a
:class:`~fenwire_fast.Receiver` for the run, as a parent passes its child's lines: the schema, the
run id and the seq order are checked again, whoever wrote the stream. ``async for stream_seq,
event in reader`` yields the accepted events; :attr:`RunReader.rejections` keeps each line the
receiver refused, with its stream sequence. It stops at the run's ``exit`` event or, unless
``follow``, once it has read everything the stream holds; :attr:`RunReader.position` is the stream
sequence to start from next time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import nats.errors
from nats.js import api

from .. import Receiver, Rejection
from .link import connect_once
from .names import DEFAULT_PREFIX, DEFAULT_STREAM, subject

__all__ = ["RunReader", "read_run"]


class RunReader:
    """The events of ``run`` in ``stream`` on the server at ``url``; see the module docstring."""

    def __init__(
        self,
        url: str,
        run: str,
        *,
        stream: str = DEFAULT_STREAM,
        prefix: str = DEFAULT_PREFIX,
        start: int = 1,
        follow: bool = False,
        batch: int = 256,
        wait: float = 1.0,
    ) -> None:
        if start < 1:
            raise ValueError(f"start is a stream sequence, 1 or more, not {start}")
        self.url = url
        self.run = run
        self.stream = stream
        self.subject = subject(prefix, run)
        self.follow = follow
        self.batch = batch
        self.wait = wait
        #: the stream sequence to read from next (one past the last message read)
        self.position = start
        #: ``(stream sequence, rejection)`` for every line the receiver refused
        self.rejections: list[tuple[int, Rejection]] = []
        self._receiver = Receiver("event", run=run)

    async def __aiter__(self) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        nc = await connect_once(self.url)
        try:
            js = nc.jetstream()
            config = api.ConsumerConfig(
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self.position,
                ack_policy=api.AckPolicy.NONE,
                filter_subject=self.subject,
                inactive_threshold=30.0,
            )
            sub = await js.pull_subscribe(self.subject, durable=None, stream=self.stream, config=config)
            receiver = self._receiver
            while True:
                try:
                    messages = await sub.fetch(self.batch, timeout=self.wait)
                except (nats.errors.TimeoutError, TimeoutError):
                    if self.follow:
                        continue
                    return
                for msg in messages:
                    meta = msg.metadata
                    self.position = meta.sequence.stream + 1
                    event, rejection = receiver.receive(msg.data)
                    if rejection is not None:
                        self.rejections.append((meta.sequence.stream, rejection))
                        continue
                    assert event is not None
                    if event.get("run") != self.run:  # the receiver checks lines, not whose they are
                        foreign = Rejection("invalid", f"event for another run: {event.get('run')!r}")
                        self.rejections.append((meta.sequence.stream, foreign))
                        continue
                    yield meta.sequence.stream, event
                    if event["type"] == "exit":
                        return
                if not self.follow and messages and messages[-1].metadata.num_pending == 0:
                    return
        finally:
            await nc.close()


async def read_run(url: str, run: str, **kwargs: Any) -> tuple[list[dict[str, Any]], list[tuple[int, Rejection]]]:
    """Every event of ``run`` the stream holds (see :class:`RunReader`), and the rejected lines."""
    reader = RunReader(url, run, **kwargs)
    events = [event async for _seq, event in reader]
    return events, reader.rejections
