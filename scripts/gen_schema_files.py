"""Write the generated files that describe the protocol, from the tables in ``fenwire_fast._schema``:
``schema/event.schema.json`` and ``schema/control.schema.json`` (what ``fenwire schema
--direction ...`` prints), and ``python/fenwire_fast/messages.py`` (a ``TypedDict`` per message
type). ``tests/test_json_schema.py`` and ``tests/test_messages.py`` fail when they are not current.

    python scripts/gen_schema_files.py           # rewrite them
    python scripts/gen_schema_files.py --check   # exit 1 when one is not current
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from fenwire_fast._json_schema import schema_text  # noqa: E402
from fenwire_fast._typed_messages import messages_source  # noqa: E402

COMMAND = "python scripts/gen_schema_files.py"


def generated() -> dict[Path, str]:
    """Each generated file's path and its current text."""
    files = {ROOT / "schema" / f"{direction}.schema.json": schema_text(direction) for direction in ("event", "control")}
    return files | {ROOT / "python" / "fenwire_fast" / "messages.py": messages_source()}


def stale() -> list[Path]:
    """The generated files whose committed text is not current."""
    return [path for path, text in generated().items() if not path.exists() or path.read_text() != text]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated file is not current")
    args = parser.parse_args()
    if args.check:
        for path in stale():
            print(f"{path.relative_to(ROOT)} is not current: run {COMMAND}", file=sys.stderr)
        return 1 if stale() else 0
    for path, text in generated().items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
