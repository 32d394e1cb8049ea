"""Run the benchmark suites and print BENCHMARKS.md's table; with ``--plot DIR``, draw its charts.

    python benches/report.py                          # runs `pytest benches --benchmark-only` and prints
    python benches/report.py run.json                 # formats an existing --benchmark-json file
    python benches/report.py --plot docs/charts       # runs the suites and `hub.py busy`, prints, draws
    python benches/report.py run.json --plot DIR --hub hub.json   # draws from saved runs
    python benches/report.py --plot DIR --quick       # the smoke test: a small run, each SVG checked

Per group: ns per line (or message / event) from the fastest round (min) and the median round,
and the ratio to the group's orjson baseline (or to the pure backend where orjson has no
counterpart) from the same run.

``--plot DIR`` writes ``drain.svg``, ``scan.svg`` and ``hub.svg`` (``charts.py``). The hub's
figures come from ``--hub FILE`` (``python benches/hub.py busy --json FILE``; repeatable, one
panel per busy run); when the suites are run now and no ``--hub`` is given, ``hub.py busy`` is
run too (8 lines per write, then 1), unless ``--no-hub``. A chart without its data is skipped
with a note. ``--keep DIR`` saves the run's JSON files, to redraw them later; ``--rounds N``
caps every benchmark's rounds (a shorter run, for a first look).

``--quick`` runs the suites on 10,000-line streams, one round each, and ``hub.py busy`` on 4
children, then checks that every chart was written, parses as SVG and comes out the same when
drawn again (exit status 1 if not): a check of the code, not of the numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groups import impl_name

ROOT = Path(__file__).resolve().parent.parent
BASELINES = ("orjson.loads per line", "orjson.dumps", "orjson parse-then-discard", "pure")
#: hub.py runs for the hub chart: the full run's, then the quick one's
HUB_RUNS = [["busy"], ["busy", "--per-write", "1"]]
HUB_QUICK = [["busy", "--children", "4", "--per-child", "300"]]
QUICK = ["--bench-lines", "10000", "--bench-rounds", "1", "-k", "drain or scan"]


def run(quick: bool = False, keep: Path | None = None, rounds: int = 0) -> dict[str, Any]:
    """Run the suites (``quick``: small and only the charts' groups; ``rounds``: at most so many
    rounds a benchmark) and return their JSON."""
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
            *(QUICK if quick else []),
            *(["--bench-rounds", str(rounds)] if rounds and not quick else []),
        ]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=sys.stderr)
        if keep is not None:
            shutil.copy(out, keep / "bench.json")
        return json.loads(out.read_text())


def run_hub(quick: bool = False, keep: Path | None = None) -> list[dict[str, Any]]:
    """Run ``hub.py`` for the hub chart and return each run's ``--json`` output."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, argv in enumerate(HUB_QUICK if quick else HUB_RUNS, 1):
            out = Path(tmp) / f"hub-{i}.json"
            cmd = [sys.executable, str(ROOT / "benches" / "hub.py"), *argv, "--json", str(out)]
            subprocess.run(cmd, check=True, cwd=ROOT, stdout=sys.stderr)
            if keep is not None:
                shutil.copy(out, keep / out.name)
            runs.append(json.loads(out.read_text()))
    return runs


def table(data: dict[str, Any]) -> str:
    groups: dict[str, list[dict[str, Any]]] = {}
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
            ratio = f"{mn / base:.2f}x {base_name.split()[0]}" if base_name and base else ""
            lines.append(f"| {group} | {name} | {mn:,.0f} | {med:,.0f} | {ratio} |")
    machine = data.get("machine_info", {})
    lines.append("")
    lines.append(
        f"Python {machine.get('python_version', '?')}, {machine.get('cpu', {}).get('brand_raw', '?')}, "
        f"{data.get('datetime', '?')}"
    )
    return "\n".join(lines)


def plot(data: dict[str, Any], hub_runs: list[dict[str, Any]], out: Path, require_all: bool) -> bool:
    """Draw the charts into ``out``, check each written one parses as SVG, print what was done;
    False if a check failed (or, with ``require_all``, a chart was skipped)."""
    import charts

    ok = True
    written = charts.write_all(data, hub_runs, out)
    for name, status in written.items():
        path = out / name
        if status == "written":
            try:
                charts.check_svg(path)
            except (OSError, ValueError, charts.ET.ParseError) as exc:
                status, ok = f"does not parse as SVG: {exc}", False
        else:
            ok = ok and not require_all
        print(f"{path}: {status}", file=sys.stderr)
    if require_all:  # the same data draws the same bytes
        with tempfile.TemporaryDirectory() as tmp:
            charts.write_all(data, hub_runs, Path(tmp))
            for name in (n for n, status in written.items() if status == "written"):
                if (Path(tmp) / name).read_bytes() != (out / name).read_bytes():
                    print(f"{out / name}: drawn twice from the same data, the files differ", file=sys.stderr)
                    ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="?", type=Path, help="a saved --benchmark-json file (default: run the suites)")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="write the SVG charts into DIR")
    parser.add_argument("--hub", type=Path, action="append", default=[], metavar="FILE", help="hub.py --json output")
    parser.add_argument("--no-hub", action="store_true", help="do not run hub.py for the hub chart")
    parser.add_argument("--quick", action="store_true", help="a small run; every chart must be written and parse")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="save the run's JSON files into DIR")
    parser.add_argument("--rounds", type=int, default=0, help="at most N rounds a benchmark (default: each's own)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    data = json.loads(args.json.read_text()) if args.json else run(args.quick, args.keep, args.rounds)
    print(table(data))
    if args.plot is None:
        return 0
    hub_runs = [json.loads(p.read_text()) for p in args.hub]
    if not hub_runs and args.json is None and not args.no_hub:
        hub_runs = run_hub(args.quick, args.keep)
    ok = plot(data, hub_runs, args.plot, require_all=args.quick)
    print(f"charts {'done' if ok else 'FAILED'} in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
