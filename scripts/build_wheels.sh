#!/usr/bin/env bash
# Build a release wheel of fenwire_fast for each CPython found (3.11, 3.12, 3.13 by default), with
# maturin: tagged with the lowest manylinux policy its symbols allow (built on this machine, that is
# this machine's glibc: manylinux_2_34 on Debian 12), and checked by maturin's own auditwheel check
# (a wheel that links a library outside the policy fails the build). For an older tag, build in a
# manylinux container.
#
#   scripts/build_wheels.sh [--out DIR] [VERSION ...]      e.g. scripts/build_wheels.sh 3.12
#
# A version with no interpreter on this machine is reported and skipped (scripts/find_python.sh
# finds them).
set -euo pipefail
out=dist
if [[ ${1:-} == --out ]]; then out=$2; shift 2; fi
out=$(realpath -m "$out")  # relative to where it is run from
cd "$(dirname "$0")/.."
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(3.11 3.12 3.13)

# shellcheck source=scripts/find_python.sh
source scripts/find_python.sh

mkdir -p "$out"
built=0
for v in "${versions[@]}"; do
    py=$(find_python "$v")
    if [[ -z $py ]]; then
        echo "build_wheels: no CPython $v on this machine: skipped"
        continue
    fi
    echo "build_wheels: CPython $v ($py)"
    maturin build --release --interpreter "$py" --auditwheel check --out "$out"
    built=$((built + 1))
done
[[ $built -gt 0 ]] || { echo "build_wheels: no interpreter found" >&2; exit 1; }
ls -1 "$out"/*.whl
