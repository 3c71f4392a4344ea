#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU test through the harness: mpirun -np N arbench sweep --impl p2p (every default
# variant) and --impl ping, bf16 and fp32, odd and unaligned sizes, eager, graph and
# context; then the timeout path (test_hang_rank=1) must give failed rows naming
# the timeout, not a hang. Exit 77 where fewer than N GPUs are visible.
# usage: sweep_check.sh N MPIRUN ARBENCH
set -u
n=$1 mpirun=$2 arbench=$3
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || gpus=0
if [ "$gpus" -lt "$n" ]; then
    echo "skip: $n ranks need $n GPUs, $gpus visible"
    exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
run() { "$mpirun" --allow-run-as-root --oversubscribe -np "$n" "$arbench" sweep --quiet "$@"; }
fail=0
for dtype in bf16 fp32; do
    csv="$dir/p2p-$dtype.csv"
    # odd element counts in both types: 1, 3, 500/250, 21504/10752, 500001/250001 elements
    sizes=2,6,1000,43008,1000002
    [ "$dtype" = fp32 ] && sizes=4,12,1000,43008,1000004
    if ! run --impl p2p,ping --dtype "$dtype" --sizes "$sizes" --modes eager,graph,context \
        --iters 20 --graph-replays 10 --out "$csv"; then
        echo "FAIL: sweep --impl p2p,ping --dtype $dtype exited non-zero"
        fail=1
    fi
    # Every p2p row passed its check (parsed as CSV: params hold commas).
    set -- $(python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["impl"] == "p2p"]
print(len(rows), sum(r["check"] != "pass" for r in rows))' "$csv" 2>/dev/null || echo "0 1")
    rows=$1 bad=$2
    echo "$dtype: $rows p2p rows, $bad not passed"
    if [ "$rows" -eq 0 ] || [ "$bad" -ne 0 ]; then fail=1; fi
done
# pdl=1 (programmatic dependent launch) on every variant, bf16: the same checks
csv="$dir/p2p-pdl.csv"
if ! run --impl "p2p:variant=oneshot-pull,pdl=1,p2p:variant=oneshot-push,pdl=1,p2p:variant=twoshot,pdl=1,p2p:variant=oneshot-flagfree,pdl=1" \
    --dtype bf16 --sizes 2,1000,43008,1000002 --modes eager,graph,context --iters 20 --graph-replays 10 --out "$csv"; then
    echo "FAIL: sweep with pdl=1 exited non-zero"
    fail=1
fi
set -- $(python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["impl"] == "p2p"]
want = {"oneshot-pull", "oneshot-push", "twoshot", "oneshot-flagfree"}
seen = {v for r in rows for v in want if "variant=%s," % v in r["params"] + ","}
print(len(rows), sum(r["check"] != "pass" for r in rows), sum("pdl=1" not in r["params"] for r in rows), len(want - seen))' "$csv" 2>/dev/null || echo "0 1 0 4")
echo "pdl=1: $1 p2p rows, $2 not passed, $3 without pdl=1 in params, $4 variants missing"
if [ "$1" -eq 0 ] || [ "$2" -ne 0 ] || [ "$3" -ne 0 ] || [ "$4" -ne 0 ]; then fail=1; fi
if [ "$n" -ge 2 ]; then
    csv="$dir/hang.csv"
    # Must finish (meson's timeout catches a hang), exit non-zero, and say why.
    if run --impl p2p:variant=oneshot-push,timeout_ms=300,test_hang_rank=1 --sizes 43008 --modes eager \
        --iters 5 --out "$csv" >"$dir/hang.log" 2>&1; then
        echo "FAIL: the test_hang_rank=1 sweep passed"
        fail=1
    fi
    if ! grep -q "spin-wait timed out waiting for rank" "$dir/hang.log" "$csv"; then
        echo "FAIL: no 'spin-wait timed out waiting for rank' in the output or CSV of the hang sweep:"
        cat "$dir/hang.log"
        fail=1
    fi
fi
exit $fail
