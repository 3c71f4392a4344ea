#!/bin/sh
# SPDX-License-Identifier: MIT
# MPI tests of `arbench sweep` on the host backend (mpirun -np 2 and 4, no GPU needed).
# usage: sweep_host.sh ARBENCH CHECK_CSV TEST_NAME
set -u
arbench=$1 check=$2 name=$3
tmp=$(mktemp -d /tmp/arbench-mpi-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpirun_args="--oversubscribe"
[ "$(id -u)" = 0 ] && mpirun_args="$mpirun_args --allow-run-as-root"
export OMPI_MCA_btl="^openib" OMPI_MCA_btl_vader_single_copy_mechanism=none
run() { timeout 120 mpirun $mpirun_args "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# expect_error NP PATTERN ARGS...: exit status 2 and PATTERN in the output, no hang.
expect_error() {
    np=$1 pattern=$2; shift 2
    run -np "$np" "$arbench" sweep --host --quiet "$@" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/out"; fail "arbench sweep $* exited $rc, expected 2"; }
    grep -q -- "$pattern" "$tmp/out" || { cat "$tmp/out"; fail "arbench sweep $*: no '$pattern' in the message"; }
    echo "ok: '$*' -> exit 2: $(grep -m1 -- "$pattern" "$tmp/out")"
}

case $name in
bf16|fp32)
    small=2; [ "$name" = fp32 ] && small=4
    run -np 2 "$arbench" sweep --host --impl mpi-host --sizes $small,1K,43008 --modes eager --dtype "$name" \
        --iters 30 --warmup 3 --out "$tmp/r.csv" || fail "sweep exited $?"
    "$check" "$tmp/r.csv" --rows 3 --all check=pass --all ranks=2 --all backend=host --all dtype="$name" \
        --all wrong=0 --positive median_us --positive busbw_gbs --all iters=30 || fail "CSV check"
    ;;
np4)
    run -np 4 "$arbench" sweep --host --impl mpi-host --tokens 1,3 --modes eager --iters 20 --out "$tmp/r.csv" \
        || fail "sweep exited $?"
    "$check" "$tmp/r.csv" --rows 2 --all check=pass --all ranks=4 --all hidden=7168 --positive median_us || fail "CSV check"
    "$check" "$tmp/r.csv" --where tokens=3 --rows 1 --all bytes=43008 || fail "3 tokens must be 43008 bytes"
    ;;
modes)
    # A host plan leaves out the modes the host backend cannot run, said once; a plan of
    # only such modes is refused.
    run -np 2 "$arbench" sweep --host --impl mpi-host --sizes 43008 --iters 10 --out "$tmp/r.csv" >"$tmp/out" 2>&1 \
        || { cat "$tmp/out"; fail "sweep exited $?"; }
    "$check" "$tmp/r.csv" --rows 1 --all mode=eager --all check=pass || fail "one eager row"
    [ "$(grep -c 'left out: graph,context' "$tmp/out")" = 1 ] || { cat "$tmp/out"; fail "the left-out modes are not said once"; }
    grep -q "needs a GPU backend" "$tmp/out" "$tmp/r.csv" && fail "skip rows for modes the host cannot run"
    expect_error 2 "eager mode only" --impl mpi-host --sizes 1K --modes graph,context
    ;;
fused)
    # The fused op on host memory: the composed path (allreduce + our residual + RMSNorm)
    # checked against the float64 reference; mpi-host has no fused kernel (skip, with why).
    run -np 2 "$arbench" sweep --host --impl mpi-host --op allreduce_rmsnorm --tokens 1,3 --hidden 512 --iters 10 \
        --out "$tmp/r.csv" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "sweep exited $?"; }
    "$check" "$tmp/r.csv" --rows 4 --all op=allreduce_rmsnorm || fail "two sizes x (fused, unfused)"
    "$check" "$tmp/r.csv" --where fusion=unfused --rows 2 --all check=pass --all wrong=0 --all tolerance=0.016 \
        --positive median_us || fail "composed rows pass against the reference"
    "$check" "$tmp/r.csv" --where fusion=fused --rows 2 --all check=skip || fail "fused rows skip"
    [ "$(grep -c 'mpi-host has no fused allreduce_rmsnorm' "$tmp/r.csv")" = 2 ] || fail "fused rows without the gate's reason"
    ;;
progress)
    # mpirun's output into a file: rank 0's stdout is a pseudo-terminal all the same, and
    # the log must get no progress escape sequences.
    run -np 2 "$arbench" sweep --host --impl mpi-host --sizes 1K,2K --iters 5 --out "$tmp/r.csv" >"$tmp/out" 2>&1 \
        || fail "sweep exited $?"
    esc=$(printf '\033')
    if grep -q "$esc" "$tmp/out"; then cat -v "$tmp/out"; fail "escape sequences in a log file"; fi
    grep -q "mpi-host" "$tmp/out" || fail "no table lines in the log"
    ;;
check_csv)
    # The checker refuses what it does not understand instead of dropping an assertion.
    run -np 1 "$arbench" sweep --host --impl mpi-host --sizes 1K --iters 5 --out "$tmp/r.csv" >/dev/null 2>&1 || fail "sweep"
    "$check" "$tmp/r.csv" --rows 1 --all check=pass || fail "a true assertion"
    for bad in "--row 1" "--all check" "--positive" "--rows x" "--where mode" "--frobnicate"; do
        # shellcheck disable=SC2086
        "$check" "$tmp/r.csv" $bad >"$tmp/c" 2>&1; rc=$?
        [ $rc -eq 2 ] || { cat "$tmp/c"; fail "check_csv $bad exited $rc, expected 2"; }
    done
    "$check" "$tmp/r.csv" --where mode=graph --all check=pass >"$tmp/c" 2>&1 && fail "--all over no rows passed"
    "$check" "$tmp/r.csv" --all check=fail >"$tmp/c" 2>&1 && fail "a false assertion passed"
    echo "ok: check_csv refuses unknown options and empty selections"
    ;;
default)
    # No --impl: every implementation that can run here (the host backends, mpi-host and
    # ops-host, on a GPU-less run).
    run -np 2 "$arbench" sweep --host --sizes 43008 --modes eager --iters 10 --out "$tmp/r.csv" || fail "sweep exited $?"
    "$check" "$tmp/r.csv" --rows 2 --all check=pass || fail "CSV check"
    "$check" "$tmp/r.csv" --where impl=mpi-host --rows 1 || fail "CSV check: one mpi-host row"
    "$check" "$tmp/r.csv" --where impl=ops-host --rows 1 || fail "CSV check: one ops-host row"
    ;;
append)
    # An existing --out file is refused unless --append is given; then rows are added.
    run -np 2 "$arbench" sweep --host --impl mpi-host --sizes 1K --modes eager --iters 5 --out "$tmp/r.csv" >/dev/null 2>&1 || fail "first"
    expect_error 2 "exists: give --append" --impl mpi-host --sizes 2K --modes eager --iters 5 --out "$tmp/r.csv"
    "$check" "$tmp/r.csv" --rows 1 || fail "a refused run changed the file"
    run -np 2 "$arbench" sweep --host --impl mpi-host --sizes 2K --modes eager --iters 5 --out "$tmp/r.csv" --append \
        >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "second with --append"; }
    grep -q "appending to" "$tmp/out" || { cat "$tmp/out"; fail "appending is not said"; }
    "$check" "$tmp/r.csv" --rows 2 --all check=pass || fail "--append adds to the same file"
    # a last row cut off (a crash, a full disk) is refused naming its line, the file unchanged
    head -c -20 "$tmp/r.csv" >"$tmp/cut.csv"
    cp "$tmp/cut.csv" "$tmp/cut.orig"
    expect_error 2 "line 3 is an incomplete row" --impl mpi-host --sizes 2K --modes eager --iters 5 \
        --out "$tmp/cut.csv" --append
    cmp -s "$tmp/cut.csv" "$tmp/cut.orig" || fail "a refused append changed the file"
    ;;
bad_input)
    expect_error 2 "nosuch" --impl nosuch --sizes 1K
    expect_error 2 "abc" --impl mpi-host --sizes 1K,abc
    expect_error 2 "warp" --impl mpi-host --modes eager,warp
    expect_error 2 "fp16" --impl mpi-host --dtype fp16
    expect_error 2 "/nonexistent-dir/r.csv" --impl mpi-host --sizes 1K --out /nonexistent-dir/r.csv
    expect_error 2 "iters" --impl mpi-host --iters 0
    expect_error 2 "unknown or incomplete option" --impl mpi-host --bogus
    expect_error 2 "whole number" --impl mpi-host --sizes 3
    # Ranks started with different arguments (MPMD): refused on every rank.
    timeout 120 mpirun $mpirun_args -np 1 "$arbench" sweep --host --impl mpi-host --sizes 1K --iters 10 --out "$tmp/d.csv" : \
        -np 1 "$arbench" sweep --host --impl mpi-host --sizes 1K --iters 20 --out "$tmp/d.csv" >"$tmp/out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/out"; fail "different arguments: exit $rc, expected 2"; }
    grep -q "ranks disagree on --iters: rank 0 has '10', rank 1 has '20'" "$tmp/out" || { cat "$tmp/out"; fail "different arguments: no message naming --iters"; }
    echo "ok: ranks with different arguments refused"
    ;;
interrupt)
    # An interrupted sweep keeps the rows it finished, and the file stays readable.
    mpirun $mpirun_args -np 2 "$arbench" sweep --host --impl mpi-host --sizes 1K:4M:+64K --modes eager --iters 400 \
        --out "$tmp/r.csv" >"$tmp/out" 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 100 ]; do
        lines=$(wc -l <"$tmp/r.csv" 2>/dev/null || echo 0)
        [ "$lines" -ge 3 ] && break
        sleep 0.2
        i=$((i + 1))
    done
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -ne 0 ] || fail "an interrupted sweep exited 0"
    "$check" "$tmp/r.csv" --min-rows 2 --all check=pass || { cat "$tmp/out"; fail "rows lost on interrupt"; }
    echo "ok: interrupted sweep (exit $rc) kept $(($(wc -l <"$tmp/r.csv") - 1)) rows"
    ;;
*)
    fail "unknown test $name"
    ;;
esac
echo "PASS: $name"
