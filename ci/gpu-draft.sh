#!/bin/bash
# SPDX-License-Identifier: MIT
# ci/gpu-draft.sh OUT: on a GPU machine, after `meson setup build-gpu` (ARB_BUILD), the
# EAGLE-3 head on the GPU backend (logs and CSVs in OUT, ~3 minutes):
#   1. its GPU test ('engine draft gpu': right / wrong / mixed heads, tokens = plain greedy,
#      a random head's proposals against the CPU head's) and 'engine gpu vs cpu';
#   2. kimi-k2 shapes (one TP=8 rank, INT4 experts, nccl on one rank at the sites, --layers 4,
#      --experts 16, --vocab 32768) with a random head of Kimi's width written here
#      (write_draft wide: 64 heads on 8 kv heads of 128, intermediate 18432, 32000 draft ids),
#      --spec-k 2 and 3, graph mode: the draft's per-cycle time and the verify's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUT}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=${CI:-true}
bd=${ARB_BUILD:-build-gpu}
arb=$bd/harness/arbench write=$bd/tests/engine/draft/write_draft
mpi="mpirun --allow-run-as-root --oversubscribe -np 1 -x NCCL_NVLS_ENABLE -x CI"
status=0
note() { echo "== $1"; }
{ date -u; nvidia-smi -L; cat REVISION 2>/dev/null; } >"$out/machine.txt" 2>&1
t0=$(date +%s)
ninja -C "$bd" harness/arbench tests/engine/draft/write_draft tests/engine/run/spec_rows_check \
    tests/engine/gpu/test_engine_gpu_vs_cpu collectives/mpi-host/arb-mpi-host.so collectives/nccl/arb-nccl.so \
    >"$out/build.log" 2>&1 || { note "build: FAILED"; grep -m5 -B2 -A8 "error" "$out/build.log"; exit 1; }
note "built in $(($(date +%s) - t0)) s"
timeout 200 meson test -C "$bd" --no-rebuild "engine draft gpu" "engine gpu vs cpu" --print-errorlogs \
    >"$out/tests.log" 2>&1
rc=$?
note "tests: rc=$rc $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/tests.log" | tr -s ' ' | tr '\n' ' ')"
[ $rc = 0 ] || status=1
cp "$bd/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
grep -E "^(ok|not ok) " "$out/testlog.txt" | head -30

shape="--config kimi-k2 --weights int4 --layers 4 --experts 16 --vocab 32768"
hd=${ARB_WEIGHTS_TMP:-/tmp}/arb-kimi-draft
rm -rf "$hd" && mkdir -p "$hd"
t0=$(date +%s)
timeout 120 "$write" "$hd" wide 1 7168 32768 4 >"$out/write-draft.log" 2>&1 || { note "write: FAILED"; cat "$out/write-draft.log"; exit 1; }
note "head written in $(($(date +%s) - t0)) s: $(du -sh "$hd" | cut -f1)"
run="--backend gpu --tp-shape 8 --context 256 --steps 16 --impl nccl --no-noop-replay --modes graph --seed 1"
for k in 2 3; do
    timeout 150 $mpi $arb engine $shape $run --draft-dir "$hd" --spec-k $k --out "$out/kimi-draft-k$k.csv" \
        >"$out/kimi-draft-k$k.log" 2>&1 || { note "kimi run k=$k: FAILED"; grep -m3 "arbench engine" "$out/kimi-draft-k$k.log"; status=1; continue; }
    python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    print("  ".join("%s=%s" % (c, r.get(c, "")) for c in ("phase", "tokens", "mode", "median_us", "tok_s", "accepted_per_cycle", "draft_us", "verify_us", "spec_ratio")))' \
        "$out/kimi-draft-k$k.csv" | sed "s/^/== k=$k: /"
done
rm -rf "$hd"
exit $status
