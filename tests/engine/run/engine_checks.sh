# SPDX-License-Identifier: MIT
# Sourced by engine_mpi.sh and engine_weights.sh (after tests/common/tap.sh, with $arbench and
# $compare set): mpirun with a timeout, a failure, and the two checks of an engine run.
run() { timeout 240 mpirun $mpirun_args "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# same A B: identical greedy tokens and logits within the tolerance of engine/run/run_state.h
same() {
    cmp -s "$tmp/$1.tok" "$tmp/$2.tok" || { cat "$tmp/$1.tok" "$tmp/$2.tok"; fail "$1 and $2: greedy tokens differ"; }
    "$compare" "$tmp/$1.lg" "$tmp/$2.lg" || fail "$1 and $2: logits differ beyond the tolerance"
    echo "ok: $1 == $2: tokens $(cat "$tmp/$1.tok")"
}

# expect_error NP PATTERN ARGS...: exit status 2 and PATTERN in the output, no hang.
expect_error() {
    np=$1 pattern=$2; shift 2
    run -np "$np" "$arbench" engine --quiet "$@" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/out"; fail "arbench engine $* exited $rc, expected 2"; }
    grep -q -- "$pattern" "$tmp/out" || { cat "$tmp/out"; fail "arbench engine $*: no '$pattern' in the message"; }
    echo "ok: '$*' -> exit 2: $(grep -m1 -- "$pattern" "$tmp/out")"
}
