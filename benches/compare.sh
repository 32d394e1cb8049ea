#!/usr/bin/env bash
# benches/compare.sh TREE OUT
#
# Runs fenwire_fast's benchmarks from the source tree TREE (PYTHONPATH=TREE/python,
# PYTHONHASHSEED=0, the extension already built into TREE/python/fenwire_fast) and writes a
# Markdown summary with every figure to OUT; raw stdout/stderr of every step go to
# ${OUT%.md}.logs/. Made to be run unchanged on two trees (before / after a change): it uses only
# the bench scripts' command-line options, which both trees share.
#
#   1. benches/hub.py rounds under callgrind, 64 children, --rounds 100 --pipe-pidfd,
#      --per-write 1 and 8: full, --no-hub, --no-hub --no-bare; instructions per read of the hub
#      (full - no-hub) / reads and of the bare feed (no-hub - no-hub-no-bare) / reads, where
#      reads = 64 x 100 (checked against the full run's own count). CG_REPEAT times (default 3).
#   2. benches/hub.py busy (8 lines per write), BUSY_REPEAT times (default 3); then the same with
#      --per-write 1 (extra, same count).
#   3. benches/interleaved.py --rounds 15 --impl "rust Receiver.feed" (BENCHMARKS.md
#      "Reproduce"), twice; benches/instructions.py --lines 20000 --impl "rust Receiver.feed"
#      --impl "pure Receiver.feed".
#   4. benches/fleet.py, once.
#
# Compare trees checked out at paths of the same length, each with the same extension build:
# the glibc heap's layout follows the strings the interpreter allocates at start-up (the paths
# among them), and libc malloc's cost per call with it. The same commit and build measured
# 50,236 hub instructions per read at 8 lines per write from /work/wt-before and 52,158 from
# /work/before (3.8 %).
#
# Env: PYTHON (interpreter, default python3; resolved to the real binary so that valgrind
# instruments CPython and not a pyenv shim), CG_REPEAT, BUSY_REPEAT, INTERLEAVED_REPEAT,
# INSTR_LINES (default 20000). A failing step is recorded (exit code, stderr tail) and the script
# goes on.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 TREE OUT" >&2
    exit 2
fi
TREE=$(cd "$1" && pwd) || exit 2
OUT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") || exit 2
LOGDIR="${OUT%.md}.logs"
CG_REPEAT=${CG_REPEAT:-3}
BUSY_REPEAT=${BUSY_REPEAT:-3}
INTERLEAVED_REPEAT=${INTERLEAVED_REPEAT:-2}
INSTR_LINES=${INSTR_LINES:-20000}
CHILDREN=64
CG_ROUNDS=100

PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)') || { echo "no python" >&2; exit 2; }
export PYTHONPATH="$TREE/python"
export PYTHONHASHSEED=0
cd "$TREE" || exit 2

rm -rf "$LOGDIR"
mkdir -p "$LOGDIR/cg"
STEPS="$LOGDIR/steps.tsv"
: >"$STEPS"
T_START=$(date +%s)

# --- environment -------------------------------------------------------------------------------
{
    echo "start_epoch	$T_START"
    echo "started_utc	$(date -u '+%Y-%m-%d %H:%M:%S')"
    echo "tree	$TREE"
    echo "commit	$(git -C "$TREE" rev-parse HEAD 2>/dev/null || echo '?') $(git -C "$TREE" log -1 --format=%s 2>/dev/null)"
    echo "dirty	$(git -C "$TREE" status --porcelain --untracked-files=no 2>/dev/null | wc -l) tracked file(s) modified"
    echo "python	$PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
    echo "backend	$("$PY" -c 'import fenwire_fast; print(fenwire_fast.IMPLEMENTATION, "from", fenwire_fast.__file__)' 2>&1 | tail -1)"
    echo "extension	$(sha256sum "$TREE"/python/fenwire_fast/_native*.so 2>/dev/null | awk '{print substr($1,1,16), $2}' | tr '\n' ' ')"
    echo "packages	$("$PY" -c '
import importlib.metadata as m
out = []
for p in ("orjson", "msgspec", "ujson", "pysimdjson", "ray"):
    try: out.append(f"{p} {m.version(p)}")
    except Exception: out.append(f"{p} -")
print(", ".join(out))')"
    echo "valgrind	$(valgrind --version 2>/dev/null || echo none)"
    echo "machine	$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "load_start	$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$LOGDIR/meta.tsv"

quote_cmd() {
    local out="" a
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then
            out+="$a "
        else
            out+="'${a//\'/\'\\\'\'}' "
        fi
    done
    printf '%s' "${out% }"
}

# run_step ID LIMIT_SECONDS CMD...: stdout/stderr to LOGDIR/ID.out/.err, a row in steps.tsv
run_step() {
    local id=$1 limit=$2
    shift 2
    local cmdline la0 la1 t0 t1 rc
    cmdline=$(quote_cmd "$@")
    cmdline=${cmdline//$PY/python}
    la0=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "[$(date -u +%H:%M:%S)] $id: $cmdline" >&2
    t0=$(date +%s.%N)
    timeout --kill-after=30 "$limit" "$@" >"$LOGDIR/$id.out" 2>"$LOGDIR/$id.err"
    rc=$?
    t1=$(date +%s.%N)
    la1=$(cut -d' ' -f1-3 /proc/loadavg)
    printf '%s\t%s\t%.1f\t%s\t%s\t%s\n' "$id" "$rc" "$(echo "$t1 - $t0" | bc)" "$la0" "$la1" "$cmdline" >>"$STEPS"
    [ "$rc" -ne 0 ] && echo "    -> exit $rc (see $LOGDIR/$id.err)" >&2
    summarize
    return 0
}

summarize() {
    local t_start t_now
    t_start=$(awk -F'\t' '$1 == "start_epoch" {print $2}' "$LOGDIR/meta.tsv")
    t_now=$(awk -F'\t' '$1 == "end_epoch" {print $2}' "$LOGDIR/meta.tsv")
    t_now=${t_now:-$(date +%s)}
    "$PY" - "$LOGDIR" "$OUT" "$((t_now - t_start))" "$CHILDREN" "$CG_ROUNDS" "$TREE" <<'PYEOF' || echo "summary failed" >&2
import re, statistics, sys
from pathlib import Path

logdir, out, elapsed, children, cg_rounds, tree = sys.argv[1:7]
logdir = Path(logdir)
elapsed, children, cg_rounds = int(elapsed), int(children), int(cg_rounds)
meta = dict(l.split("\t", 1) for l in (logdir / "meta.tsv").read_text().splitlines() if "\t" in l)
steps = {}
order = []
for line in (logdir / "steps.tsv").read_text().splitlines():
    sid, rc, secs, la0, la1, cmd = line.split("\t", 5)
    steps[sid] = dict(rc=int(rc), secs=float(secs), la0=la0, la1=la1, cmd=cmd)
    order.append(sid)

def text(sid, ext="out"):
    p = logdir / f"{sid}.{ext}"
    return p.read_text(errors="replace") if p.exists() else ""

def ok(sid):
    return sid in steps and steps[sid]["rc"] == 0

def fmt(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"

L = []
L.append(f"# fenwire_fast benchmarks: `{tree}`")
L.append("")
L.append(f"Written by `benches/compare.sh {tree} {out}`; raw output of every step in `{logdir}/`.")
L.append("")
for k in ("started_utc", "commit", "dirty", "python", "backend", "extension", "packages", "valgrind", "machine", "load_start", "load_end"):
    if k in meta:
        L.append(f"- **{k}**: {meta[k]}")
done = len(order)
if "finished_utc" in meta:
    L.append(f"- **finished_utc**: {meta['finished_utc']}")
    L.append(f"- **total run time**: {elapsed // 60} min {elapsed % 60} s ({done} steps)")
else:
    L.append(f"- **run time so far** (still running): {elapsed // 60} min {elapsed % 60} s ({done} steps)")
L.append(f"- every command runs in `{tree}` with `PYTHONPATH={tree}/python PYTHONHASHSEED=0`; "
         f"`python` below is `{meta.get('python', '?').split(' ')[0]}` (resolved, so valgrind instruments CPython itself)")
L.append("")

# ---------------------------------------------------------------- 1. rounds under callgrind
L.append("## 1. `benches/hub.py rounds` under callgrind: user-space instructions per read")
L.append("")
L.append(f"{children} children, `--rounds {cg_rounds} --pipe-pidfd`, `PYTHONHASHSEED=0`, whole-process `Collected` Ir "
         "of the main process. Hub per read = (full - `--no-hub`) / reads; bare feed per read = "
         "(`--no-hub` - `--no-hub --no-bare`) / reads; reads = children x rounds "
         f"= {children * cg_rounds:,} (checked against the full run's printed count). The hub's figure includes the "
         "benchmark's final drain rounds, as in BENCHMARKS.md.")
L.append("")

def collected(sid):
    err = text(sid, "err")
    m = re.search(r"^==(\d+)==", err, re.M)
    if not m:
        return None
    pid = m.group(1)
    c = re.findall(rf"^=={pid}== Collected : (\d+)", err, re.M)
    return int(c[-1]) if c and ok(sid) else None

cg = {}
for sid in order:
    m = re.fullmatch(r"cg-w(\d+)-r(\d+)-(full|nohub|nohub-nobare)", sid)
    if m:
        cg.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = sid
rows, per_w = [], {}
if cg:
    L.append("| lines per write | run | **hub instr./read** | bare feed instr./read | hub on top of bare | hub / bare | Ir full | Ir `--no-hub` | Ir `--no-hub --no-bare` | reads |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (w, r), ids in sorted(cg.items()):
        full, nohub, nn = (collected(ids.get(k, "")) for k in ("full", "nohub", "nohub-nobare"))
        reads = children * cg_rounds
        mr = re.search(r"(\d+) reads;", text(ids.get("full", "")))
        note = ""
        if mr and int(mr.group(1)) != reads:
            note = f" (printed {mr.group(1)}!)"
        hub = (full - nohub) / reads if full is not None and nohub is not None else None
        bare = (nohub - nn) / reads if nohub is not None and nn is not None else None
        top = hub - bare if hub is not None and bare is not None else None
        ratio = f"{hub / bare:.2f}x" if hub is not None and bare else "-"
        per_w.setdefault(w, []).append((hub, bare, top))
        L.append(f"| {w} | {r} | **{fmt(hub)}** | {fmt(bare)} | {fmt(top)} | {ratio} | {fmt(full)} | {fmt(nohub)} | {fmt(nn)} | {reads:,}{note} |")
    L.append("")
    for w, vals in sorted(per_w.items()):
        for i, name in enumerate(("hub", "bare feed", "hub on top of bare")):
            xs = [v[i] for v in vals if v[i] is not None]
            if xs:
                L.append(f"- {w} line(s) per write, {name}: mean **{statistics.mean(xs):,.0f}** instructions per read "
                         f"(runs: {', '.join(f'{x:,.0f}' for x in xs)}; spread {max(xs) - min(xs):,.0f})")
    L.append("")

# ---------------------------------------------------------------- 2. busy
L.append("## 2. `benches/hub.py busy`: the parent's CPU per event against the paired bare feed")
L.append("")
busy_re = re.compile(
    r"busy\s+(\d+) children.*?: (\d+) events in (\d+) reads \(([\d.]+) per read\); hub ([\d.]+) us/event, "
    r"bare feed of the same pieces alongside ([\d.]+) us/event: ([\d.]+)x; after the run ([\d.]+) \(([\d.]+)x\), "
    r"in 64 KiB pieces ([\d.]+) \(([\d.]+)x\)")
for kind, title in (("busy-w8", "8 lines per write (the default)"), ("busy-w1", "`--per-write 1` (extra)")):
    ids = [s for s in order if s.startswith(kind + "-")]
    if not ids:
        continue
    L.append(f"{title}:")
    L.append("")
    L.append("| run | **ratio hub / paired bare** | hub us/event | paired bare us/event | events/read | reads | vs bare after the run | vs 64 KiB pieces | load avg before |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    ratios = []
    for sid in ids:
        m = busy_re.search(text(sid))
        if m and ok(sid):
            ratios.append(float(m.group(7)))
            L.append(f"| {sid.rsplit('-', 1)[1]} | **{m.group(7)}x** | {m.group(5)} | {m.group(6)} | {m.group(4)} | {m.group(3)} | "
                     f"{m.group(9)}x ({m.group(8)} us) | {m.group(11)}x ({m.group(10)} us) | {steps[sid]['la0']} |")
        else:
            L.append(f"| {sid.rsplit('-', 1)[1]} | failed (exit {steps[sid]['rc']}) | | | | | | | {steps[sid]['la0']} |")
    if ratios:
        L.append("")
        L.append(f"Ratios: {', '.join(f'{x:.2f}x' for x in ratios)} (median {statistics.median(ratios):.2f}x).")
    L.append("")

# ---------------------------------------------------------------- 3. drains
L.append("## 3. The drains against `orjson.loads`")
L.append("")
ids = [s for s in order if s.startswith("interleaved-")]
if ids:
    L.append("### `benches/interleaved.py` (wall clock, interleaved rounds)")
    L.append("")
    L.append("Ratio of the fastest round to `orjson.loads`'s fastest (median rounds' ratio in brackets):")
    L.append("")
    table = {}
    for n, sid in enumerate(ids, 1):
        for line in text(sid).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 7 and cells[1] in ("rust Receiver.feed", "pure Receiver.feed", "orjson.loads per line"):
                table.setdefault(cells[0], {}).setdefault(cells[1], {})[n] = cells
    head = "| stream | " + " | ".join(f"**rust, run {n}**" for n in range(1, len(ids) + 1)) + " | " + \
        " | ".join(f"pure, run {n}" for n in range(1, len(ids) + 1)) + " | " + \
        " | ".join(f"ns/line rust / orjson, run {n}" for n in range(1, len(ids) + 1)) + " |"
    L.append(head)
    L.append("|---|" + "---:|" * (3 * len(ids)))
    for stream, impls in table.items():
        rust = impls.get("rust Receiver.feed", {})
        pure = impls.get("pure Receiver.feed", {})
        orj = impls.get("orjson.loads per line", {})
        c1 = [f"**{rust[n][4]}** ({rust[n][5]})" if n in rust else "-" for n in range(1, len(ids) + 1)]
        c2 = [f"{pure[n][4]} ({pure[n][5]})" if n in pure else "-" for n in range(1, len(ids) + 1)]
        c3 = [f"{rust[n][2]} / {orj[n][2]}" if n in rust and n in orj else "-" for n in range(1, len(ids) + 1)]
        L.append(f"| {stream} | " + " | ".join(c1 + c2 + c3) + " |")
    L.append("")
    for n, sid in enumerate(ids, 1):
        L.append(f"<details><summary>run {n}: full output (load average {steps[sid]['la0']} -> {steps[sid]['la1']})</summary>")
        L.append("")
        L += [l for l in text(sid).splitlines() if l.startswith("|")]
        L.append("")
        L.append("</details>")
        L.append("")
sid = "instructions"
if sid in steps:
    L.append("### `benches/instructions.py` (callgrind, instructions per line)")
    L.append("")
    lines = [l for l in text(sid).splitlines() if l.startswith("|")]
    if lines:
        L += lines
    else:
        L.append(f"failed (exit {steps[sid]['rc']})")
    L.append("")

# ---------------------------------------------------------------- 4. fleet
sid = "fleet"
if sid in steps:
    L.append("## 4. `benches/fleet.py`: a Ray cluster on this machine")
    L.append("")
    o = text(sid)
    m = re.search(r"fleet: (\d+) events in ([\d.]+) s = ([\d,]+)/s, driver CPU ([\d.]+) us/event \(([\d.]+)x the local hub; "
                  r"its main thread ([\d.]+)\), busiest actor ([\d.]+) us/event \(([\d.]+)x; its event loop thread ([\d.]+)\), "
                  r"([\d.]+) Ray calls", o)
    h = re.search(r"local hub: (\d+) events in ([\d.]+) s = ([\d,]+)/s, CPU ([\d.]+) us/event", o)
    if m and h:
        L.append("| | events | wall | events/s | CPU per event (main / loop thread) | vs local hub |")
        L.append("|---|---:|---:|---:|---:|---:|")
        L.append(f"| fleet: the driver | {m.group(1)} | {m.group(2)} s | **{m.group(3)}** | **{m.group(4)} us** ({m.group(6)}) | {m.group(5)}x |")
        L.append(f"| fleet: the busiest actor | | | | **{m.group(7)} us** ({m.group(9)}) | {m.group(8)}x |")
        L.append(f"| local hub: the parent | {h.group(1)} | {h.group(2)} s | **{h.group(3)}** | **{h.group(4)} us** | |")
        L.append("")
        L.append(f"Ray calls per 1,000 events: {m.group(10)}.")
        L.append("")
    elif steps[sid]["rc"] == 0:
        L.append("(output not recognised; see below)")
        L.append("")
    L.append("Output:")
    L.append("")
    L.append("```")
    L += [l for l in o.splitlines()
          if l.strip() and not l[0].isspace() and "(raylet)" not in l and "[state-dump]" not in l]
    L.append("```")
    L.append("")
    L.append("(Ray's own log lines, left out above, are in the raw output; among them a `Raylet is terminated` "
             "report: that is the bench's `remove_node(..., allow_graceful=False)` of the node-loss test, not a failure.)")
    L.append("")

# ---------------------------------------------------------------- failures and commands
fails = [s for s in order if steps[s]["rc"] != 0]
L.append("## Failures")
L.append("")
if not fails:
    L.append("None: every step exited 0.")
for s in fails:
    rc = steps[s]["rc"]
    why = " (timed out)" if rc in (124, 137) else ""
    L.append(f"- `{s}`: exit {rc}{why}; last lines of stderr:")
    L.append("")
    L.append("```")
    L += text(s, "err").splitlines()[-25:]
    L.append("```")
L.append("")
L.append("## Exact commands (in order), exit code, seconds, load average before -> after")
L.append("")
L.append(f"All run in `{tree}` with `PYTHONPATH={tree}/python PYTHONHASHSEED=0`; `OUT.logs/cg/` takes "
         "the callgrind output files (deleted after each run).")
L.append("")
L.append("| step | command | exit | s | load avg |")
L.append("|---|---|---:|---:|---|")
for s in order:
    st = steps[s]
    L.append(f"| {s} | `{st['cmd']}` | {st['rc']} | {st['secs']:.0f} | {st['la0']} -> {st['la1']} |")
L.append("")
Path(out).write_text("\n".join(L) + "\n")
PYEOF
}

# --- 1. hub rounds under callgrind -------------------------------------------------------------
HUB="$TREE/benches/hub.py"
for r in $(seq 1 "$CG_REPEAT"); do
    for w in 1 8; do
        for variant in full nohub nohub-nobare; do
            case $variant in
                full) extra=() ;;
                nohub) extra=(--no-hub) ;;
                nohub-nobare) extra=(--no-hub --no-bare) ;;
            esac
            run_step "cg-w$w-r$r-$variant" 900 \
                valgrind --tool=callgrind "--callgrind-out-file=$LOGDIR/cg/cg.%p.out" \
                "$PY" "$HUB" rounds --rounds "$CG_ROUNDS" --pipe-pidfd --per-write "$w" "${extra[@]}"
            rm -f "$LOGDIR"/cg/cg.*.out
        done
    done
done

# --- 2. busy ----------------------------------------------------------------------------------
for r in $(seq 1 "$BUSY_REPEAT"); do
    run_step "busy-w8-$r" 600 "$PY" "$HUB" busy
done
for r in $(seq 1 "$BUSY_REPEAT"); do
    run_step "busy-w1-$r" 600 "$PY" "$HUB" busy --per-write 1
done

# --- 3. drains --------------------------------------------------------------------------------
for r in $(seq 1 "$INTERLEAVED_REPEAT"); do
    run_step "interleaved-$r" 900 "$PY" "$TREE/benches/interleaved.py" --rounds 15 --impl "rust Receiver.feed"
done
run_step instructions 1200 "$PY" "$TREE/benches/instructions.py" --lines "$INSTR_LINES" \
    --impl "rust Receiver.feed" --impl "pure Receiver.feed"

# --- 4. fleet ---------------------------------------------------------------------------------
run_step fleet 900 "$PY" "$TREE/benches/fleet.py"

rmdir "$LOGDIR/cg" 2>/dev/null
T_END=$(date +%s)
printf 'end_epoch\t%s\nfinished_utc\t%s\nload_end\t%s\n' "$T_END" "$(date -u '+%Y-%m-%d %H:%M:%S')" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$LOGDIR/meta.tsv"
summarize
echo "done in $(((T_END - T_START) / 60)) min $(((T_END - T_START) % 60)) s: $OUT (raw output in $LOGDIR/)" >&2
