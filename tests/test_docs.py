"""The docs are true: the README's code runs, and the protocol guide's tables are the schema's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


def test_the_readme_has_its_examples() -> None:
    assert len(python_blocks(README)) >= 2


@pytest.mark.parametrize("index", range(len(python_blocks(README))))
def test_readme_code_block_runs(index: int, tmp_path: Path) -> None:
    """Each block runs as pasted, in a fresh interpreter (with the backend this run tests)."""
    code = python_blocks(README)[index]
    script = tmp_path / "block.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, f"README block {index} failed:\n{code}\n{proc.stdout}\n{proc.stderr}"


def test_the_protocol_tables_are_generated_from_the_schema() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protocol_tables.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
