"""The live layer: parents driving live child agents over the Fen wire protocol, in rooms by audience.

- :mod:`~fenwire_fast.live.proc`: operating-system pieces (process groups, orphans, reaping,
  kernel wake-ups, the open-file limit, back-off, an agent's stderr tail);
- :mod:`~fenwire_fast.live.child`: what a child process runs: the presenter, the agent protocol and
  the mock agent;
- :mod:`~fenwire_fast.live.acp`: an Agent Client Protocol agent as a child (the ``acp`` extra);
- :mod:`~fenwire_fast.live.parent`: what a supervising process runs: the channel, one child's
  handle and :func:`~fenwire_fast.live.parent.spawn.spawn`, the hub, durable runs, tracing;
- :mod:`~fenwire_fast.live.fleet`: children across the nodes of a Ray cluster (the ``ray`` extra).

Each room imports only the rooms listed above it and the codec (:mod:`fenwire_fast`); the codec
never imports this package. ``docs/architecture.md`` draws the floors.
"""
