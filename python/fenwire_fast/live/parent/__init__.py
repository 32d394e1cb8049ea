"""The parent: what a process that supervises children runs.

- :mod:`~fenwire_fast.live.parent.channel`: the channel over one child's two files;
- :mod:`~fenwire_fast.live.parent.spawn`: one child started and supervised (:class:`LiveChild`);
- :mod:`~fenwire_fast.live.parent.hub` and :mod:`~fenwire_fast.live.parent.hub_drivers`: many
  children drained fairly, woken by the kernel;
- :mod:`~fenwire_fast.live.parent.supervision` (the kill backstop, the process's end) and
  :mod:`~fenwire_fast.live.parent.watchdog` (a stalled child noticed): a child supervised;
- :mod:`~fenwire_fast.live.parent.final_text`: a large final text read from its file;
- :mod:`~fenwire_fast.live.parent.durable` and :mod:`~fenwire_fast.live.parent.adopt`: runs that
  survive the parent (a state dir, commits, attach);
- :mod:`~fenwire_fast.live.parent.roots`: the temporary roots children's files live under;
- :mod:`~fenwire_fast.live.parent.tracing` (whether runs are traced) and
  :mod:`~fenwire_fast.live.parent.otel` (the OpenTelemetry spans and metrics, the ``otel`` extra).
"""
