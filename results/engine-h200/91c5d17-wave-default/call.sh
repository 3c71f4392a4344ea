#!/bin/bash
# Device call: the default (o_proj folded at T >= 2) against --wave-fit none, 3 rounds and the
# engine GPU tests (the folded grids bit-identical); everything under $OUT/r, tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O/ab"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
lim() { local l=$((565 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
DEBS=.debs ENGINE_ARGS_none="--wave-fit none" \
    timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 3 none=. dflt=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
cat "$O/ab/run.log"; echo "ab done $(el)"
tb="tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_vs_cpu tests/engine/gpu/test_engine_gpu_profile tests/engine/gpu/test_engine_gpu_persist"
timeout $(lim 120) ninja -C build-gpu $tb >"$O/build-tests.log" 2>&1 && \
timeout $(lim 100) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu moe" "engine gpu vs cpu" "engine gpu profile" "engine gpu persist" --print-errorlogs >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):" "$O/tests.log"
grep -E "^(ok|not ok)|# .*gemv folded|differs" build-gpu/meson-logs/testlog.txt | head -40 > "$O/tap-summary.txt"
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
E2E_K=2 timeout $(lim 200) bash ci/gpu-1gpu.sh engine "$O/e2e" >"$O/e2e.log" 2>&1; echo "e2e rc=$? $(el)"
grep "^==" "$O/e2e.log"
