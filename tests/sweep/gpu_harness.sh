#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU tests of the harness itself (exit 77 where no GPU is visible).
# usage: gpu_harness.sh ARBENCH CHECK_CSV TEST_NAME
set -u
arbench=$1 check=$2 name=$3
ngpu=$("$arbench" plugins | sed -n 's/^GPUs visible: \([0-9]*\).*/\1/p')
[ "${ngpu:-0}" -gt 0 ] || { echo "SKIP: no CUDA device visible"; exit 77; }
np=$ngpu; [ "$np" -gt 2 ] && np=2
tmp=$(mktemp -d /tmp/arbench-gpu-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
opts="--oversubscribe"; [ "$(id -u)" = 0 ] && opts="$opts --allow-run-as-root"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
run() { timeout 300 mpirun $opts -x NCCL_NVLS_ENABLE "$@"; }
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }

case $name in
noop_modes)
    # The launch floor in every mode, on 1 rank and, where there are two GPUs, on 2
    # (one GPU: one run, not two into the same file).
    ranks=1; [ "$np" -gt 1 ] && ranks="1 $np"
    for n in $ranks; do
        run -np $n "$arbench" sweep --impl noop --sizes 1K,43008 --modes eager,graph,context --iters 100 \
            --out "$tmp/r$n.csv" >"$tmp/out" 2>&1 || fail "sweep -np $n exited $?"
        "$check" "$tmp/r$n.csv" --rows 6 --all check=skip --all backend=cuda --positive median_us \
            --graph-below-eager || fail "noop CSV on $n rank(s)"
        "$check" "$tmp/r$n.csv" --where mode=context --rows 2 --all timing=ops_per_graph=20,replays=50,compute_us=20,compute_subtracted \
            || fail "context timing recorded"
    done ;;
fused_unfused)
    # The fused op on the reference path (NCCL's own choice + our RMSNorm kernel), checked
    # against the float64 reference on every rank.
    run -np $np "$arbench" sweep --impl nccl: --op allreduce_rmsnorm --tokens 1,3,64 --modes eager,graph \
        --iters 50 --out "$tmp/f.csv" >"$tmp/out" 2>&1 || fail "fused sweep exited $?"
    "$check" "$tmp/f.csv" --where fusion=unfused --rows 6 --all check=pass --all op=allreduce_rmsnorm \
        --positive median_us || fail "unfused rows"
    ;;
metadata)
    run -np $np "$arbench" sweep --impl noop --sizes 43008 --modes graph --iters 10 --out "$tmp/m.csv" \
        >"$tmp/out" 2>&1 || fail "sweep exited $?"
    "$check" "$tmp/m.csv" --rows 1 --all ranks=$np --positive ranks || fail "metadata"
    grep -q "H200\|NVIDIA\|RTX" "$tmp/m.csv" || fail "no GPU name recorded"
    ;;
*) fail "unknown test $name" ;;
esac
echo "PASS: $name"
