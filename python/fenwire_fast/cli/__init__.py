"""The ``fenwire`` command line: one module per command, and the parser that hands each its arguments.

- :mod:`~fenwire_fast.cli.parser`: the argument parser and :func:`main`, the ``fenwire`` entry point;
- :mod:`~fenwire_fast.cli.check`: ``fenwire check``, a JSONL file validated, of any size;
- :mod:`~fenwire_fast.cli.tail`: ``fenwire tail``, a live file followed;
- :mod:`~fenwire_fast.cli.runs`: ``fenwire runs``, a state dir's runs listed;
- :mod:`~fenwire_fast.cli.schema`: ``fenwire schema``, the protocol's JSON Schema printed;
- :mod:`~fenwire_fast.cli.child`: ``fenwire child`` (:func:`child_main`), an agent run as a live child;
- :mod:`~fenwire_fast.cli.demo`: ``fenwire demo`` (:func:`demo_main`), many mock children supervised
  on one screen;
- :mod:`~fenwire_fast.cli.progress`: the progress display ``check`` and ``demo`` draw.

``check``, ``tail`` and ``schema`` need only the codec; the other commands import
:mod:`fenwire_fast.live` when they run.
"""

from __future__ import annotations

from .child import child_main
from .demo import demo_main
from .parser import main

__all__ = ["main", "child_main", "demo_main"]
