#!/usr/bin/env bash
# Fuzz the Rust core: every target of fuzz/ for SECONDS each (default 10), the quick path twice
# (on the widest SIMD path the CPU has, then with FENWIRE_FORCE_SSE2=1). Exits 1 if any run
# crashed, failed a property, hung or ran out of memory; the inputs are in fuzz/artifacts/TARGET/
# (docs/fuzzing.md says how to replay and minimize them).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   # e.g. scripts/fuzz.sh 600 quick
#   scripts/fuzz.sh --ci                    # CI: 10 s a run, 6 runs (about 60 s of fuzzing)
#
# Needs only a stable toolchain: cargo-fuzz is installed from crates.io when `cargo fuzz` is
# missing, and RUSTC_BOOTSTRAP=1 lets stable take the nightly flags cargo-fuzz passes
# (-Zsanitizer=address and the coverage options). Corpora grow in fuzz/corpus/TARGET/ and are
# reused by the next run; they, the artifacts and the logs (fuzz/logs/) are not committed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1

seconds=10
if [[ ${1:-} == --ci ]]; then
    shift
    export CARGO_TERM_COLOR=never
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(json escaped ucs quick text)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked --version '^0.13'
fi
cargo fuzz --version

echo "== building the targets"
start=$(date +%s)
for target in "${targets[@]}"; do
    cargo fuzz build "$target"
done
echo "built in $(($(date +%s) - start)) s"

mkdir -p logs
failed=()
# run NAME TARGET [VAR=VALUE...]: one libFuzzer run of TARGET, its log in logs/NAME.log.
run() {
    local name=$1 target=$2
    shift 2
    local log=logs/$name.log dict=()
    case $target in json | escaped | quick) dict=(-dict=dicts/fen.dict) ;; esac
    mkdir -p "corpus/$target"
    local t0=$SECONDS rc=0
    env "$@" cargo fuzz run "$target" -- -max_total_time="$seconds" -timeout=10 \
        -print_final_stats=1 "${dict[@]}" >"$log" 2>&1 || rc=$?
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    printf '%-12s %4d s  %10s execs  corpus %6d  ' "$name" $((SECONDS - t0)) "${execs:-?}" \
        "$(find "corpus/$target" -type f | wc -l)"
    if [[ $rc -eq 0 ]]; then
        echo ok
    else
        echo "FAILED (exit $rc, log fuzz/$log)"
        grep -E '^(==[0-9]+==ERROR|thread .* panicked|SUMMARY|artifact_prefix|Test unit written)' \
            -A 3 "$log" | head -n 40 || tail -n 40 "$log"
        failed+=("$name")
    fi
}

echo "== fuzzing, $seconds s a run"
for target in "${targets[@]}"; do
    if [[ $target == quick ]]; then
        run quick quick FENWIRE_FORCE_SSE2=0
        run quick-sse2 quick FENWIRE_FORCE_SSE2=1
    else
        run "$target" "$target"
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzing failed: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "fuzzing: no crash"
