#!/usr/bin/env bash
# Build a release wheel of fenwire_fast for each CPython found (3.11, 3.12, 3.13 by default), with
# maturin, tagged manylinux2014 (manylinux_2_17_x86_64: glibc 2.17 or newer) whatever this
# machine's glibc is: `--zig` links the extension with zig against glibc 2.17's symbols, and
# maturin's own auditwheel check fails the build if the wheel needs anything newer or links a
# library outside the policy. No container needed.
#
#   scripts/build_wheels.sh [--out DIR] [VERSION ...]      e.g. scripts/build_wheels.sh 3.12
#
# A version with no interpreter on this machine is reported and skipped (scripts/find_python.sh
# finds them).
#
# zig comes from PyPI, as the ziglang wheel: it is declared here, pinned below, and installed with
# pip into a venv of its own under target/ (made on the first run, kept with cargo's build cache),
# so that neither the interpreters nor the package's own dependencies get it. maturin is told
# where it is with CARGO_ZIGBUILD_PYTHON_PATH (it runs `python -m ziglang`). auditwheel (PyPI, in
# the same venv) then shows the tag of each wheel built.
set -euo pipefail
ZIGLANG="ziglang>=0.17.1,<0.18"  # checked with 0.17.1 and maturin 1.16
out=dist
if [[ ${1:-} == --out ]]; then out=$2; shift 2; fi
out=$(realpath -m "$out")  # relative to where it is run from
cd "$(dirname "$0")/.."
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(3.11 3.12 3.13)

# shellcheck source=scripts/find_python.sh
source scripts/find_python.sh

zig_venv=$PWD/target/ziglang
if ! "$zig_venv/bin/python" -c '' 2>/dev/null; then  # none yet, or its Python is gone
    echo "build_wheels: a venv for zig ($ZIGLANG, from PyPI) in $zig_venv"
    "${PYTHON:-python3}" -m venv --clear "$zig_venv"
fi
"$zig_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$ZIGLANG" "auditwheel>=6"
export CARGO_ZIGBUILD_PYTHON_PATH=$zig_venv/bin/python
echo "build_wheels: zig $("$zig_venv/bin/python" -m ziglang version)"

mkdir -p "$out"
built=0
for v in "${versions[@]}"; do
    py=$(find_python "$v")
    if [[ -z $py ]]; then
        echo "build_wheels: no CPython $v on this machine: skipped"
        continue
    fi
    echo "build_wheels: CPython $v ($py)"
    before=$(ls "$out"/*.whl 2>/dev/null || true)
    maturin build --release --interpreter "$py" --compatibility manylinux2014 --zig --auditwheel check \
        --out "$out"
    for wheel in "$out"/*.whl; do  # what auditwheel itself says of each new wheel
        grep -qxF "$wheel" <<<"$before" && continue
        "$zig_venv/bin/auditwheel" show "$wheel" | tr '\n' ' ' | sed 's/  */ /g'
        echo
    done
    built=$((built + 1))
done
[[ $built -gt 0 ]] || { echo "build_wheels: no interpreter found" >&2; exit 1; }
ls -1 "$out"/*.whl
