#!/usr/bin/env bash
# Build xmask's Cython core with a memory checker in a temporary copy of this checkout and run
# tests against that build, so memory errors in the C code are caught, not guessed.
#
#   scripts/sanitize.sh asan  [pytest args...]   # XMASK_SANITIZE=1: AddressSanitizer
#   scripts/sanitize.sh debug [pytest args...]   # XMASK_DEBUG=1: Cython bounds checks, -O0
#   scripts/sanitize.sh all   [pytest args...]   # both, one after the other
#
# Without pytest args it runs the parts that drive the C core with hostile input:
#   tests/runtime tests/fuzz tests/compiler tests/serialization tests/structural tests/grammar
# (measured on 2 shared cores: ASan 14-21 min, debug 12.5 min, each build ~1-1.5 min of it;
# tests/grammar, whose Cython kernels joined later, adds ~1 min).
# The working tree is copied as it is (tracked and untracked files, not build products), so
# uncommitted changes are checked too; the checkout itself is never rebuilt.  Data comes from
# $XMASK_DATA or ../shared/data beside the checkout, as for the normal tests.
#
# Under ASan, LD_PRELOAD carries libasan (Python itself is not instrumented), leak detection
# is off (CPython keeps objects alive at exit by design) and the first error aborts the run
# with a report.  Tests that cap a child's address space (RLIMIT_AS) lift the cap under ASan
# (its shadow memory needs terabytes of address space; see tests/conftest.py), and RSS-growth
# tests skip (ASan quarantines freed memory).
#
# Exit status: 0 when every requested build passed.  Not part of .ci/run (see README, "Fuzzing
# and memory checks"): one mode fits a 45-minute CI job of its own.
set -euo pipefail

mode="${1:-all}"
shift || true
case "$mode" in asan|debug|all) ;; *) echo "usage: $0 asan|debug|all [pytest args...]" >&2; exit 2;; esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
data="${XMASK_DATA:-$(cd "$repo/.." && pwd)/shared/data}"
if [ "$#" -eq 0 ]; then
    set -- -q -x tests/runtime tests/fuzz tests/compiler tests/serialization tests/structural tests/grammar
fi

run_one() {  # $1 = asan | debug, then the pytest args
    local kind="$1" work
    shift
    work="$(mktemp -d "${TMPDIR:-/tmp}/xmask-$kind.XXXXXX")"
    trap 'rm -rf "$work"' RETURN
    # tracked + untracked (not ignored) files: the tree as it is now, without build products
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
        | tar -cf - --null --no-recursion --ignore-failed-read -T - 2>/dev/null) \
        | (cd "$work" && tar -xf -)
    echo "== $kind: building in $work"
    local env_build=()
    if [ "$kind" = asan ]; then env_build=(XMASK_SANITIZE=1); else env_build=(XMASK_DEBUG=1); fi
    (cd "$work" && env "${env_build[@]}" python setup.py build_ext --inplace -q >build.log 2>&1) \
        || { tail -30 "$work/build.log"; return 1; }
    echo "== $kind: pytest $*"
    local env_run=(PYTHONPATH="$work" XMASK_DATA="$data" PYTHONDONTWRITEBYTECODE=1)
    if [ "$kind" = asan ]; then
        env_run+=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
                  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:print_summary=1:allocator_may_return_null=1")
    fi
    (cd "$work" && env "${env_run[@]}" python -c \
        'import xmask, sys; assert xmask.__file__.startswith(sys.argv[1]), xmask.__file__' "$work" \
        && env "${env_run[@]}" python -m pytest -p no:cacheprovider "$@")
}

status=0
if [ "$mode" = asan ] || [ "$mode" = all ]; then run_one asan "$@" || status=1; fi
if [ "$mode" = debug ] || [ "$mode" = all ]; then run_one debug "$@" || status=1; fi
exit $status
