"""``python -m fenwire_fast ...`` runs the ``fenwire`` command line (``python -m fenwire_fast child``)."""

from __future__ import annotations

import sys


def _main() -> int:
    from .cli.parser import main

    return int(main(sys.argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(_main())
