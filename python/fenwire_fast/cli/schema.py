"""``fenwire schema``: the protocol's JSON Schema (draft 2020-12), for parents and children in other languages.

One direction's lines (``--direction event|control``), or both in one document
(:func:`fenwire_fast.json_schema`); it needs only the codec.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["schema_command"]


def schema_command(args: argparse.Namespace) -> int:
    """``fenwire schema``: print the schema; exit code 0."""
    from .._json_schema import schema_text

    sys.stdout.write(schema_text(args.direction))
    sys.stdout.flush()
    return 0
