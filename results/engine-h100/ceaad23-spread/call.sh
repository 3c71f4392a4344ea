#!/bin/bash
# Prepared in the twenty-seventh session for the next one (not yet run). Before the call:
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-spread.sh", ".debs", "REVISION"].
# --moe-order spread against the default (auto), four alternated rounds, this tree's engine GPU tests
# (spread's bits at T = 8 in `engine gpu moe`), tokens compared; then ncu of gate/up, down, attend and
# merge (their "Shared Memory Configuration Size" in LaunchStats) on the default (2 layers: one MoE
# layer; per step attend x2, merge x2, gate/up, down; 512 prefill steps skipped as ci/engine-ab.sh does).
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_sp="--moe-order spread --dump-tokens $O/ab/tokens-sp.txt --force"
AB_TESTS= timeout $(lim 280) bash ci/engine-ab.sh "$O/ab" 4 base=. sp=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE " step | moe_gate_up | moe_down " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-sp.txt" && echo "tokens sp: identical" || echo "tokens sp: DIFFER"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_mla >"$O/build-tests.log" 2>&1
timeout $(lim 80) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu kernels" "engine gpu mla" --print-errorlogs >"$O/tests.log" 2>&1
echo "gpu tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout $(lim 120) "$ncu" --clock-control none -k "regex:moe_gate_up|moe_down|mla_attend_pos|mla_merge" \
    --launch-skip $((512 * 6)) --launch-count 12 --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    build-gpu/tests/engine/gpu/engine_gpu_bench --layers 2 --context 4096 --steps 2 >"$O/ncu.log" 2>&1
echo "ncu rc=$? $(el)"; grep -E "^  [a-z_]|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Duration" "$O/ncu.log" | head -80; grep -E "Stall|Warp Cycles|Throughput|Hit Rate" "$O/ncu.log" | head -80
echo "done $(el)"
