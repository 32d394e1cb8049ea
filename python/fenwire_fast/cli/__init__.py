"""The ``fenwire`` command line: one module per command, and the parser that dispatches to them.

- :mod:`~fenwire_fast.cli.parser`: the argument parser and :func:`main`, the ``fenwire`` entry point;
- :mod:`~fenwire_fast.cli.check`: ``fenwire check``, a JSONL file validated, of any size;
- :mod:`~fenwire_fast.cli.tail`: ``fenwire tail``, a live file followed;
- :mod:`~fenwire_fast.cli.runs`: ``fenwire runs``, a state dir's runs listed;
- :mod:`~fenwire_fast.cli.demo`: ``fenwire demo``, many mock children supervised on one screen;
- :mod:`~fenwire_fast.cli.progress`: the progress display ``check`` and ``demo`` draw.

``check``, ``tail`` and ``schema`` need only the codec; the other commands import
:mod:`fenwire_fast.live` when they run.
"""

from __future__ import annotations

from .parser import child_main, demo_main, main

__all__ = ["main", "child_main", "demo_main"]
