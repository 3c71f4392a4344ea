#!/bin/bash
# Device call: the --l2-ahead A/B at main (base / o_proj / router, 2 rounds), the engine GPU
# tests, the e2e verdicts (k = 2) and the peers; everything under $OUT/r, tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
# each step's timeout: its own cap, and never past 560 s of the call (the tar must run)
lim() { local l=$((560 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
mkdir -p "$O/ab"
DEBS=.debs ENGINE_ARGS_op="--l2-ahead o_proj" ENGINE_ARGS_rt="--l2-ahead router" timeout $(lim 290) bash ci/engine-ab.sh "$O/ab" 2 base=. op=. rt=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
cat "$O/ab/run.log"; echo "ab done $(el)"
tb="tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_vs_cpu tests/engine/gpu/test_engine_gpu_profile tests/engine/gpu/test_engine_gpu_persist"
timeout $(lim 120) ninja -C build-gpu $tb >"$O/build-tests.log" 2>&1 && \
timeout $(lim 100) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu moe" "engine gpu vs cpu" "engine gpu profile" "engine gpu persist" --print-errorlogs >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):" "$O/tests.log"
E2E_K=2 timeout $(lim 200) bash ci/gpu-1gpu.sh engine "$O/e2e" >"$O/e2e.log" 2>&1; echo "e2e rc=$? $(el)"
grep "^==" "$O/e2e.log"
k=$(ls "$O"/ab/engine-base-1-kernels-*.csv 2>/dev/null | head -1)
[ -n "$k" ] && timeout $(lim 80) python3 ci/peer-kernels.py --engine "$k" --out "$O/peer-kernels.csv" >"$O/peer-kernels.log" 2>&1
echo "peers rc=$? $(el)"; tail -30 "$O/peer-kernels.log"
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
