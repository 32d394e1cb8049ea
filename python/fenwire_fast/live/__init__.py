"""The live layer: a parent driving live child agents over the Fen wire protocol.

Built on the codec in :mod:`fenwire_fast`, which imports this package only in ``fenwire child`` and
``fenwire demo`` (:mod:`fenwire_fast.cli`):

- :mod:`~fenwire_fast.live.agent`: the agent protocol a child runs;
- :mod:`~fenwire_fast.live.mock_agent`: the deterministic scripted mock agent;
- :mod:`~fenwire_fast.live.child`: the child presenter (``fenwire child``), in parts;
- :mod:`~fenwire_fast.live.channel`: the parent's channel over a child's two files;
- :mod:`~fenwire_fast.live.spawn`: starting and supervising one child;
- :mod:`~fenwire_fast.live.hub`: many children drained fairly, woken by the kernel;
- :mod:`~fenwire_fast.live.hub_drivers`: how the hub learns which children to poll;
- :mod:`~fenwire_fast.live.wakeups`: inotify and pidfds in one epoll, or polling;
- :mod:`~fenwire_fast.live.reaper`: detached children reaped when they end;
- :mod:`~fenwire_fast.live.limits`: room for many children (the open-file limit);
- :mod:`~fenwire_fast.live.backoff`: the sleep between polls that bring nothing;
- :mod:`~fenwire_fast.live.demo`: ``fenwire demo``.
"""
