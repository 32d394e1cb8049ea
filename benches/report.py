"""Run the benchmark suites and print BENCHMARKS.md's table.

    python benches/report.py            # runs `pytest benches --benchmark-only` and prints
    python benches/report.py run.json   # formats an existing --benchmark-json file

Per group: ns per line (or message / event) from the fastest round (min) and the median round,
and the ratio to the group's orjson baseline (or to the pure backend where orjson has no
counterpart) from the same run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINES = ("orjson.loads per line", "orjson.dumps", "pure")


def run() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "benches"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-only",
            f"--benchmark-json={out}",
        ]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=sys.stderr)
        return json.loads(out.read_text())


def impl_name(bench: dict) -> str:
    return bench["param"] if bench.get("param") else bench["name"]


def table(data: dict) -> str:
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        groups.setdefault(b["group"], []).append(b)
    lines = [
        "| benchmark | implementation | ns/item (min) | ns/item (median) | ratio to baseline (min) |",
        "|---|---|---:|---:|---:|",
    ]
    for group, benches in groups.items():
        per = {
            impl_name(b): (
                b["stats"]["min"] * 1e9 / b["extra_info"]["items"],
                b["stats"]["median"] * 1e9 / b["extra_info"]["items"],
            )
            for b in benches
        }
        base_name = next((n for base in BASELINES for n in per if n.startswith(base)), None)
        base = per[base_name][0] if base_name else None
        for name, (mn, med) in sorted(per.items(), key=lambda kv: kv[1][0]):
            ratio = f"{mn / base:.2f}x {base_name.split()[0]}" if base else ""
            lines.append(f"| {group} | {name} | {mn:,.0f} | {med:,.0f} | {ratio} |")
    machine = data.get("machine_info", {})
    lines.append("")
    lines.append(
        f"Python {machine.get('python_version', '?')}, {machine.get('cpu', {}).get('brand_raw', '?')}, "
        f"{data.get('datetime', '?')}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    data = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else run()
    print(table(data))
