"""Tools for testing a parent or a child of the Fen wire protocol.

- :mod:`~fenwire_fast.testing.transcript`: the transcript oracle: :func:`check_stream` (what holds
  for any agent's event stream: nothing lost, repeated or reordered) and :func:`check_transcript`
  (those checks and the scripted mock agent's script received exactly);
- :mod:`~fenwire_fast.testing.wire_form`: the wire form of the mock's events, as the oracle models
  it from the wire contract, independently of the code under test.
"""

from __future__ import annotations

from .transcript import check_stream, check_transcript

__all__ = ["check_stream", "check_transcript"]
