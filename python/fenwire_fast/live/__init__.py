"""The live layer: a parent driving live child agents over the Fen wire protocol.

Built on the codec in :mod:`fenwire_fast` (which never imports this package):

- :mod:`~fenwire_fast.live.agent`: the agent protocol a child runs;
- :mod:`~fenwire_fast.live.mock_agent`: the deterministic scripted mock agent;
- :mod:`~fenwire_fast.live.child`: the child presenter (``fenwire child``);
- :mod:`~fenwire_fast.live.channel`: the parent's channel over a child's two files;
- :mod:`~fenwire_fast.live.spawn`: starting and supervising one child;
- :mod:`~fenwire_fast.live.hub`: many children drained fairly;
- :mod:`~fenwire_fast.live.demo`: ``fenwire demo``.
"""
