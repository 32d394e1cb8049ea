# shellcheck shell=bash
# find_python 3.X: print the path of a working CPython 3.X, or nothing. Looks on PATH (python3.X),
# then under pyenv's versions directory (where a pyenv shim on PATH may refuse to run it).
# Sourced by scripts/build_wheels.sh and .ci/run.
find_python() {
    local v=$1 candidate
    for candidate in "$(command -v "python$v" 2>/dev/null || true)" \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
        [[ -n $candidate && -x $candidate ]] || continue
        if "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$v'.split('.'))))" \
            2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 0
}
