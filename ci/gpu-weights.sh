#!/bin/bash
# SPDX-License-Identifier: MIT
# ci/gpu-weights.sh OUT: on a GPU machine, after the normal build in build-gpu (ARB_BUILD),
# what --weights-dir must show there (logs and CSVs in OUT, ~2 minutes):
#   1. the GPU tests of the checkpoint load: the tiny model written by arb-weights-write
#      (bf16 and INT4, two shards) on the GPU against the CPU reference fed the same tensors,
#      and bit-identical to the generated weights ('engine gpu weights', 'engine gpu load layout');
#   2. kimi-k2 shapes (one TP=8 rank, INT4 experts, nccl on one rank at the sites, --layers 4; --experts 16 and --vocab 32768
#      keep the written checkpoint near 4 GB): the step times from a written checkpoint
#      against the synthetic path of the same seed (the same kernels on the same shapes: the
#      same speed expected), their tokens compared, and the load's GB/s.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUT}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=${CI:-true}
bd=${ARB_BUILD:-build-gpu}
arb=$bd/harness/arbench write=$bd/engine/tools/arb-weights-write
mpi="mpirun --allow-run-as-root --oversubscribe -np 1 -x NCCL_NVLS_ENABLE -x CI"
status=0
note() { echo "== $1"; }
{ date -u; nvidia-smi -L; } >"$out/machine.txt" 2>&1
ninja -C "$bd" harness/arbench engine/tools/arb-weights-write >"$out/build-weights.log" 2>&1 ||
    { note "build: FAILED"; tail -20 "$out/build-weights.log"; exit 1; }

timeout 150 meson test -C "$bd" --no-rebuild "engine gpu weights" "engine gpu load layout" --print-errorlogs \
    >"$out/gpu-weights-tests.log" 2>&1
rc=$?
note "gpu weights tests: rc=$rc $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/gpu-weights-tests.log" | tr -s ' ' | tr '\n' ' ')"
[ $rc = 0 ] || status=1
cp "$bd/meson-logs/testlog.txt" "$out/gpu-weights-testlog.txt" 2>/dev/null
grep -E "^ok:|FAIL" "$out/gpu-weights-testlog.txt" | head -20

shape="--config kimi-k2 --weights int4 --layers 4 --experts 16 --vocab 32768"
ck=${ARB_WEIGHTS_TMP:-/tmp}/arb-kimi-l4-ckpt
rm -rf "$ck"
t0=$(date +%s.%N)
timeout 150 "$write" "$ck" $shape --seed 1 >"$out/write-kimi.log" 2>&1 || { note "write: FAILED"; cat "$out/write-kimi.log"; exit 1; }
note "written in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: $(cat "$out/write-kimi.log")"
run="--backend gpu --tp-shape 8 --context 256 --steps 16 --impl nccl --no-noop-replay --modes graph --seed 1"
timeout 150 $mpi $arb engine $shape $run --out "$out/kimi-l4-synthetic.csv" --dump-tokens "$out/kimi-l4-synthetic.tok" \
    >"$out/kimi-l4-synthetic.log" 2>&1 || { note "synthetic run: FAILED"; grep -m3 "arbench engine" "$out/kimi-l4-synthetic.log"; status=1; }
timeout 150 $mpi $arb engine --weights-dir "$ck" $run --out "$out/kimi-l4-loaded.csv" --dump-tokens "$out/kimi-l4-loaded.tok" \
    >"$out/kimi-l4-loaded.log" 2>&1 || { note "loaded run: FAILED"; grep -m3 "arbench engine" "$out/kimi-l4-loaded.log"; status=1; }
grep -E "^# weights:|model loaded from" "$out/kimi-l4-loaded.log"
times() { # CSV: "decode MEDIAN us, verify MEDIAN us" (a CSV reader: argv and note fields hold commas)
    python3 -c 'import csv, sys
print("  ".join("%s %s us" % (r["phase"], r["median_us"]) for r in csv.DictReader(open(sys.argv[1], newline=""))))' "$1"
}
note "step times, synthetic: $(times "$out/kimi-l4-synthetic.csv")"
note "step times, loaded:    $(times "$out/kimi-l4-loaded.csv")"
if cmp -s "$out/kimi-l4-synthetic.tok" "$out/kimi-l4-loaded.tok"; then
    note "tokens: identical ($(cut -c1-80 "$out/kimi-l4-loaded.tok"))"
else
    note "tokens: DIFFER"; status=1
fi
rm -rf "$ck"
exit $status
