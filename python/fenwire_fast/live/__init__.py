"""The live layer: a parent driving live child agents over the Fen wire protocol.

Built on the codec in :mod:`fenwire_fast`, which imports this package only in ``fenwire child`` and
``fenwire demo`` (:mod:`fenwire_fast.cli`):

- :mod:`~fenwire_fast.live.child.agent`: the agent protocol a child runs;
- :mod:`~fenwire_fast.live.child.mock_agent`: the deterministic scripted mock agent;
- :mod:`~fenwire_fast.live.child`: the child presenter (``fenwire child``), in parts;
- :mod:`~fenwire_fast.live.parent.channel`: the parent's channel over a child's two files;
- :mod:`~fenwire_fast.live.parent.spawn`: starting and supervising one child;
- :mod:`~fenwire_fast.live.parent.hub`: many children drained fairly, woken by the kernel;
- :mod:`~fenwire_fast.live.parent.hub_drivers`: how the hub learns which children to poll;
- :mod:`~fenwire_fast.live.proc.wakeups`: inotify and pidfds in one epoll, or polling;
- :mod:`~fenwire_fast.live.proc.reaper`: detached children reaped when they end;
- :mod:`~fenwire_fast.live.proc.limits`: room for many children (the open-file limit);
- :mod:`~fenwire_fast.live.proc.backoff`: the sleep between polls that bring nothing;
- :mod:`~fenwire_fast.cli.demo.driver`: ``fenwire demo``.
"""
