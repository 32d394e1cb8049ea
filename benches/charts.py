"""SVG charts of one benchmark run, for ``report.py --plot DIR`` (README.md, BENCHMARKS.md).

- ``drain.svg``: each realistic stream drained into dicts, ns per line: fenwire_fast's backends
  against ``orjson.loads``, msgspec (untyped and typed), ujson and the standard library's ``json``
  (the ``drain STREAM`` groups of ``test_drain.py``);
- ``scan.svg``: ``Receiver.scan_batch`` and ``scan`` against ``feed`` and the floors (the ``scan
  STREAM`` groups of ``test_scan.py``);
- ``hub.svg``: the hub's CPU per event against a bare ``Receiver.feed`` (the ``busy`` entries of
  ``hub.py --json`` files).

Each carries the machine, Python, backend and date of the run it shows. The output is the same
bytes for the same data (matplotlib's Agg backend, a fixed ``svg.hashsalt``, no date in the SVG's
metadata), so a redraw from saved JSON changes nothing.
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import machine
import matplotlib
import matplotlib.pyplot as plt
from groups import impl_name, parse_group
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from realistic import STREAMS

OURS = "#c0392b"
OURS_PURE = "#e59866"
OTHERS = "#7f8c8d"

#: drain.svg's bars: implementation in test_drain.py -> label (simdjson builds no objects: left out)
DRAIN_LABELS = {
    "rust Receiver.feed": "fenwire_fast Receiver.feed (Rust)",
    "pure Receiver.feed": "fenwire_fast Receiver.feed (pure Python)",
    "orjson.loads per line": "orjson.loads per line",
    "msgspec decode_lines (untyped)": "msgspec decode_lines, untyped",
    "msgspec decode_lines+to_builtins": "msgspec decode_lines, typed + to_builtins",
    "ujson.loads per line": "ujson.loads per line",
    "json.loads per line (stdlib)": "json.loads per line (stdlib)",
}

#: scan.svg's bars: drain in scan.py -> label
SCAN_LABELS = {
    "rust scan_batch": "Receiver.scan_batch: columns",
    "rust scan": "Receiver.scan: a record per line",
    "rust feed": "Receiver.feed: a dict per line",
    "bytes.split": "bytes.split alone (no check)",
    "orjson parse-then-discard": "orjson.loads, result dropped",
}

#: hub.svg's bars: key of a hub.py busy entry -> label
HUB_LABELS = {
    "hub_us_per_event": "Hub.batches (the hub's CPU)",
    "paired_us_per_event": "Receiver.feed, same pieces, alongside",
    "bare_us_per_event": "Receiver.feed, same pieces, after the run",
    "bare64k_us_per_event": "Receiver.feed, 64 KiB pieces",
}


def _style() -> None:
    matplotlib.use("Agg")
    plt.rcParams.update(
        {
            "svg.hashsalt": "fenwire-charts",
            "svg.fonttype": "none",  # text stays text: small files, readable diffs
            "font.family": "DejaVu Sans",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )


def bench_machine(data: dict[str, Any]) -> dict[str, Any]:
    """The run's machine: what ``conftest.py`` recorded, else pytest-benchmark's own fields."""
    if "fenwire_machine" in data:
        return dict(data["fenwire_machine"])
    info = data.get("machine_info", {})
    cpu = info.get("cpu", {})
    return {
        "cpu": cpu.get("brand_raw", "?"),
        "cores": cpu.get("count", "?"),
        "python": info.get("python_version", "?"),
        "backend": "?",
        "date": str(data.get("datetime", "?"))[:16].replace("T", " ") + " UTC",
    }


def _per_stream(data: dict[str, Any], what: str) -> dict[str, dict[str, dict[str, Any]]]:
    """``{stream: {implementation: benchmark}}`` of the realistic streams' ``what`` groups."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for b in data.get("benchmarks", []):
        parsed = parse_group(b.get("group") or "")
        if parsed and parsed[0] == what and parsed[1] in STREAMS:
            out.setdefault(parsed[1], {})[impl_name(b)] = b
    return {s: out[s] for s in STREAMS if s in out}


def ns_per_item(bench: dict[str, Any]) -> float:
    """ns per line of the fastest round."""
    return float(bench["stats"]["min"]) * 1e9 / bench["extra_info"]["items"]


def _bars(ax: Axes, rows: list[tuple[str, float, str, str]], title: str) -> None:
    """Horizontal bars, top to bottom: ``(label, value, annotation, colour)``."""
    y = list(range(len(rows)))[::-1]
    values = [r[1] for r in rows]
    ax.barh(y, values, color=[r[3] for r in rows], height=0.7)
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_title(title, loc="left", fontsize=10, fontweight="bold")
    top = max(values)
    for yy, (_, value, note, _) in zip(y, rows, strict=True):
        ax.text(value + top * 0.01, yy, note, va="center", fontsize=8)
    # room for the longest note to the right of the longest bar (about 0.95 % of the axes a character)
    ax.set_xlim(0, top / (1 - min(0.6, 0.0095 * max(len(r[2]) for r in rows) + 0.02)))
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _figure(panels: int, bars: int) -> tuple[Figure, list[Axes]]:
    fig, axes = plt.subplots(
        panels, 1, figsize=(9, 0.9 + panels * (0.55 + 0.3 * bars)), layout="constrained", squeeze=False
    )
    return fig, [a for row in axes for a in row]


def _finish(fig: Figure, title: str, note: str, footnote: str, path: Path) -> None:
    fig.suptitle(f"{title}\n{textwrap.fill(note, 100)}", fontsize=10, x=0.01, ha="left")
    fig.supxlabel(footnote, fontsize=7, color="#555555")
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def _rounds(benches: dict[str, dict[str, Any]]) -> str:
    counts = sorted({int(b["stats"]["rounds"]) for b in benches.values()})
    if counts == [1]:
        return "One round"
    return f"Best of {counts[0]} rounds" if len(counts) == 1 else f"Best of {counts[0]}-{counts[-1]} rounds"


def drain_chart(data: dict[str, Any], path: Path) -> bool:
    """drain.svg; False if the run has no ``drain`` group of a realistic stream."""
    per = _per_stream(data, "drain")
    if not per or not all("orjson.loads per line" in b for b in per.values()):
        return False
    fig, axes = _figure(len(per), len(DRAIN_LABELS))
    for ax, (stream, benches) in zip(axes, per.items(), strict=True):
        base = ns_per_item(benches["orjson.loads per line"])
        rows = []
        for impl, label in DRAIN_LABELS.items():
            if impl in benches:
                ns = ns_per_item(benches[impl])
                colour = OURS if impl.startswith("rust") else OURS_PURE if impl.startswith("pure") else OTHERS
                rows.append((label, ns, f"{ns:,.0f} ns  ({ns / base:.2f}x orjson)", colour))
        rows.sort(key=lambda r: r[1])
        lines = next(iter(benches.values()))["extra_info"]["items"]
        _bars(ax, rows, f"{stream} ({lines:,} lines)")
    axes[-1].set_xlabel("ns per line, fastest round (lower is faster)")
    all_benches = {f"{s}/{k}": v for s, b in per.items() for k, v in b.items()}
    _finish(
        fig,
        "Draining a JSONL stream into Python dicts, one call per 64 KiB piece",
        "fenwire_fast also checks each line against its type's schema, the seq and the line cap; "
        f"the others only parse. {_rounds(all_benches)} each, on the same data.",
        machine.footnote(bench_machine(data)),
        path,
    )
    return True


def scan_chart(data: dict[str, Any], path: Path) -> bool:
    """scan.svg; False if the run has no ``scan`` group of a realistic stream."""
    per = _per_stream(data, "scan")
    if not per or not all("rust feed" in b and "rust scan_batch" in b for b in per.values()):
        return False
    fig, axes = _figure(len(per), len(SCAN_LABELS))
    for ax, (stream, benches) in zip(axes, per.items(), strict=True):
        base = ns_per_item(benches["rust feed"])
        rows = []
        for impl, label in SCAN_LABELS.items():
            if impl in benches:
                b = benches[impl]
                ns = ns_per_item(b)
                gbs = b["extra_info"].get("bytes", 0) / float(b["stats"]["min"]) / 1e9
                colour = OURS if impl == "rust scan_batch" else OURS_PURE if impl.startswith("rust") else OTHERS
                rows.append((label, ns, f"{ns:,.0f} ns  {gbs:.2f} GB/s  ({ns / base:.2f}x feed)", colour))
        lines = next(iter(benches.values()))["extra_info"]["items"]
        _bars(ax, rows, f"{stream} ({lines:,} lines)")
    axes[-1].set_xlabel("ns per line, fastest round (lower is faster)")
    all_benches = {f"{s}/{k}": v for s, b in per.items() for k, v in b.items()}
    _finish(
        fig,
        "Validate and forward: Receiver.scan_batch against Receiver.feed (Rust backend)",
        "Each Receiver call makes the same checks (schema, seq, line cap) and hands them over differently; "
        f"bytes.split and orjson check nothing. One call per 64 KiB piece; {_rounds(all_benches).lower()} each.",
        machine.footnote(bench_machine(data)),
        path,
    )
    return True


def hub_chart(hub_runs: list[dict[str, Any]], path: Path) -> bool:
    """hub.svg from ``hub.py --json`` files; False if none has a ``busy`` entry."""
    panels = [(run["machine"], m) for run in hub_runs for m in run.get("measures", []) if m.get("what") == "busy"]
    if not panels:
        return False
    fig, axes = _figure(len(panels), len(HUB_LABELS))
    for ax, (_, m) in zip(axes, panels, strict=True):
        base = m["paired_us_per_event"]
        rows = []
        for key, label in HUB_LABELS.items():
            us = m[key]
            note = f"{us:.2f} µs" + (f"  ({us / base:.2f}x the feed alongside)" if key == "hub_us_per_event" else "")
            rows.append((label, us, note, OURS if key == "hub_us_per_event" else OTHERS))
        per_write = m["per_write"]
        extras = " durable," if m.get("durable") else ""
        extras += " traced," if m.get("traced") else ""
        title = (
            f"{m['children']} children,{extras} {per_write} line{'s' if per_write != 1 else ''} per write: "
            f"{m['events_per_read']:.0f} events per read ({m['reads']:,} reads)"
        )
        _bars(ax, rows, title)
    axes[-1].set_xlabel("the parent's CPU time per event, µs (lower is cheaper)")
    footnotes = list(dict.fromkeys(machine.footnote(mach) for mach, _ in panels))
    _finish(
        fig,
        "The hub's CPU per event against a bare Receiver.feed (python benches/hub.py busy)",
        "A writer process appends realistic text deltas to every child's event file as fast as it can; the "
        "parent takes them through Hub.batches, and feeds each piece the hub read to a bare Receiver too.",
        "\n".join(footnotes),
        path,
    )
    return True


CHARTS = ("drain.svg", "scan.svg", "hub.svg")


def write_all(data: dict[str, Any], hub_runs: list[dict[str, Any]], out: Path) -> dict[str, str]:
    """Write the charts into ``out``; ``{file name: "written" or why it was skipped}``."""
    _style()
    out.mkdir(parents=True, exist_ok=True)
    done: dict[str, str] = {}
    for name, draw, missing in (
        ("drain.svg", lambda p: drain_chart(data, p), "no `drain` groups of the realistic streams in the run"),
        ("scan.svg", lambda p: scan_chart(data, p), "no `scan` groups of the realistic streams in the run"),
        ("hub.svg", lambda p: hub_chart(hub_runs, p), "no hub figures (python benches/hub.py busy --json FILE)"),
    ):
        done[name] = "written" if draw(out / name) else f"skipped: {missing}"
    return done


def check_svg(path: Path) -> None:
    """Raise unless ``path`` is a parseable SVG document."""
    root = ET.parse(path).getroot()
    if not root.tag.endswith("svg"):
        raise ValueError(f"{path}: the root element is {root.tag}, not svg")
