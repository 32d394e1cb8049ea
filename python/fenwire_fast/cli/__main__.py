"""``python -m fenwire_fast.cli ARGS`` runs the ``fenwire`` command line."""

from __future__ import annotations

import sys

from .parser import main

if __name__ == "__main__":
    sys.exit(int(main(sys.argv[1:]) or 0))
