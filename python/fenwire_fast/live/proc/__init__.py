"""Operating-system pieces the parent and the child stand on (Linux first, portable where it can).

- :mod:`~fenwire_fast.live.proc.group`: a child's process group, signalled as one;
- :mod:`~fenwire_fast.live.proc.orphans`: a child that takes its group down when its parent dies;
- :mod:`~fenwire_fast.live.proc.reaper`: detached children reaped when they end;
- :mod:`~fenwire_fast.live.proc.wakeups`: inotify and pidfds in one epoll, or polling;
- :mod:`~fenwire_fast.live.proc.limits`: room for many children (the open-file limit);
- :mod:`~fenwire_fast.live.proc.backoff`: the sleep between polls that bring nothing;
- :mod:`~fenwire_fast.live.proc.stderr_tail`: the last lines an agent process wrote on stderr.

Nothing here imports the rest of :mod:`fenwire_fast.live`.
"""
