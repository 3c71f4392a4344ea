#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU test of the fused all-reduce + residual + RMSNorm of arb-p2p.so through the
# harness: mpirun -np N arbench sweep --op allreduce_rmsnorm for the fused variants
# (flag-free, push, pull; auto and forced row_blocks; a grid of one cluster, so 64
# tokens take two launches; flag-free single-CTA launches that fit run its register
# kernel, the others its general kernel, and both kinds are in the list), tokens 1,3,64, hidden 7168, 1000 and 1001 (rows not
# 16-byte aligned: the per-element path), eager and graph (and context at 7168).
# Every p2p row, fused and unfused, must pass its check, and the fused rows must
# exist; twoshot has no fused kernel, so its fused rows must be skipped, not failed.
# Then (N >= 2) the timeout path: with test_hang_rank=1 the fused rows must fail
# naming the spin-wait timeout, not hang. Exit 77 where fewer than N GPUs are visible.
#
# usage: fused_check.sh N MPIRUN ARBENCH [stress]
#   stress: tokens 1,2,3,4,8,64 at hidden 7168, graph mode, 20 calls x 500 replays
#   per point: every point's check runs after the previous point's 10,000 calls.
set -u
n=$1 mpirun=$2 arbench=$3 what=${4:-check}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || gpus=0
if [ "$gpus" -lt "$n" ]; then
    echo "skip: $n ranks need $n GPUs, $gpus visible"
    exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
run() { "$mpirun" --allow-run-as-root --oversubscribe -np "$n" "$arbench" sweep --quiet --op allreduce_rmsnorm "$@"; }
fused='p2p:variant=oneshot-flagfree,blocks=24,threads=256'
fused="$fused,p2p:variant=oneshot-push,blocks=24,threads=256"
fused="$fused,p2p:variant=oneshot-pull,blocks=8,threads=512"
fused="$fused,p2p:variant=oneshot-flagfree,blocks=12,threads=512,row_blocks=1"
fused="$fused,p2p:variant=oneshot-push,blocks=8,threads=128,row_blocks=8"
# flag-free register kernel (single CTAs) with several rows per CTA (hidden 1000: 2
# rows of 250 units at 3 tokens) and with 2 units per thread (64x1024 at 64 tokens;
# its 1-3 token launches are clusters of 2, the general kernel; 12x512 above: 4 units)
fused="$fused,p2p:variant=oneshot-flagfree,blocks=2,threads=256,row_blocks=1"
fused="$fused,p2p:variant=oneshot-flagfree,blocks=64,threads=1024"
# pdl=1: the register kernel (24x256), the general kernel in clusters (push, row_blocks 8)
fused="$fused,p2p:variant=oneshot-flagfree,blocks=24,threads=256,pdl=1"
fused="$fused,p2p:variant=oneshot-push,blocks=8,threads=128,row_blocks=8,pdl=1"
fail=0

# check_csv FILE WANT_SKIPPED_IMPL_PARAMS_SUBSTRING: prints a table, exits non-zero
# when a p2p row failed, no fused row passed, or a twoshot fused row is not a skip.
check_csv() {
    python3 - "$1" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["impl"] == "p2p"]
bad = 0
fused_pass = 0
for r in rows:
    twoshot = "variant=twoshot" in r["params"]
    want = "skip" if (twoshot and r["fusion"] == "fused") else "pass"
    ok = r["check"] == want
    bad += not ok
    fused_pass += r["fusion"] == "fused" and r["check"] == "pass"
    print("%-4s %-62s %-7s h=%-5s t=%-3s %-7s %9s us  %s%s" % ("ok" if ok else "BAD", r["params"], r["fusion"],
          r["hidden"], r["tokens"], r["mode"], r["median_us"], r["check"],
          "" if ok else "  wrong=%s note=%s" % (r["wrong"], r["note"])))
print("%d p2p rows, %d not as expected, %d fused rows passed" % (len(rows), bad, fused_pass))
sys.exit(1 if bad or not fused_pass else 0)
EOF
}

if [ "$what" = stress ]; then
    csv="$dir/stress.csv"
    if ! run --impl "p2p:variant=oneshot-flagfree,blocks=24,threads=256,p2p:variant=oneshot-push,blocks=24,threads=256,p2p:variant=oneshot-flagfree,blocks=24,threads=256,pdl=1" \
        --tokens 1,2,3,4,8,64 --modes graph --graph-ops 20 --graph-replays 500 --out "$csv"; then
        echo "FAIL: the stress sweep exited non-zero"
        fail=1
    fi
    check_csv "$csv" || fail=1
    exit $fail
fi

for hidden in 7168 1000 1001; do
    csv="$dir/fused-$hidden.csv"
    modes=eager,graph
    [ "$hidden" = 7168 ] && modes=eager,graph,context
    if ! run --impl "$fused,p2p:variant=twoshot,blocks=16,threads=512" --hidden "$hidden" --tokens 1,3,64 \
        --modes "$modes" --iters 20 --graph-replays 10 --out "$csv"; then
        # the twoshot fused rows are skips, which must not make the sweep fail
        echo "FAIL: fused sweep at hidden $hidden exited non-zero"
        fail=1
    fi
    check_csv "$csv" || fail=1
done

if [ "$n" -ge 2 ]; then
    csv="$dir/hang.csv"
    # Must finish (meson's timeout catches a hang), exit non-zero, and say why in the fused rows.
    for v in oneshot-flagfree oneshot-push; do
        if run --impl "p2p:variant=$v,timeout_ms=300,test_hang_rank=1" --tokens 3 --modes eager --iters 5 \
            --out "$csv" >"$dir/hang.log" 2>&1; then
            echo "FAIL: the $v test_hang_rank=1 fused sweep passed"
            fail=1
        fi
        if ! python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["fusion"] == "fused"]
sys.exit(0 if rows and all(r["check"] == "fail" and "spin-wait timed out waiting for rank" in r["note"] for r in rows) else 1)' "$csv"; then
            echo "FAIL: $v: the fused rows of the hang sweep do not fail naming 'spin-wait timed out waiting for rank':"
            cat "$dir/hang.log" "$csv"
            fail=1
        fi
    done
fi
exit $fail
