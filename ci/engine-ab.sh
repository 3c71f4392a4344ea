#!/bin/bash
# SPDX-License-Identifier: MIT
# The engine's compute A/B of two trees in one call on a one-GPU machine:
#   ci/engine-ab.sh OUT NEW OLD [ROUNDS]
# NEW and OLD are source trees (e.g. this branch and main's commit before it, unpacked by
# `git archive`). Both are built for sm_90 (GENCODE overrides), NEW with the engine's GPU
# tests and engine_gpu_bench, OLD with only what the engine run needs (arbench, the noop
# and modeled plugins, engine_gpu_bench), the two builds in parallel. Then, under OUT:
#   build-{new,old}.log, gpu-tests.log   the builds; NEW's engine GPU tests
#   ncu-{new,old}.log                    Nsight Compute (--clock-control none) on the router
#                                        and attention kernels of engine_gpu_bench's first
#                                        decode steps (2 layers, context 4096); NCU=0 skips
#   engine-{old,new}-N.{csv,log}         ROUNDS (default 2) kimi-k2 engine runs each,
#                                        alternated old/new, with their -kernels-*.csv tables
#   machine.txt                          date, GPU, driver
# Needs the machine's NCCL in /usr (ci/deps.sh --debs DEBS first if DEBS is set).
set -u
out=${1:?OUT}; new=${2:?NEW tree}; old=${3:?OLD tree}; rounds=${4:-2}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; } >"$out/machine.txt" 2>&1
[ -n "${DEBS:-}" ] && bash "$new/ci/deps.sh" --debs "$DEBS" >"$out/deps.log" 2>&1
gen=${GENCODE:-"['arch=compute_90,code=sm_90']"}
engine_targets="harness/arbench collectives/noop/arb-noop.so collectives/modeled/arb-modeled.so tests/engine/gpu/engine_gpu_bench"
tests="engine gpu kernels;engine gpu moe;engine gpu vs cpu;engine gpu profile"
test_targets=""
for t in test_engine_gpu_kernels test_engine_gpu_moe test_engine_gpu_vs_cpu test_engine_gpu_profile; do
    test_targets="$test_targets tests/engine/gpu/$t"
done
build() { # tree jobs targets...
    local tree=$1 jobs=$2; shift 2
    (cd "$tree" && meson setup build-gpu -Dnccl_home=/usr "-Dgencode=$gen" && ninja -C build-gpu -j"$jobs" "$@")
}
t0=$(date +%s)
build "$new" 10 $engine_targets $test_targets >"$out/build-new.log" 2>&1 &
pn=$!
build "$old" 6 $engine_targets >"$out/build-old.log" 2>&1 &
po=$!
wait $pn; rn=$?; wait $po; ro=$?
echo "builds: new rc=$rn old rc=$ro ($(($(date +%s) - t0)) s)"
[ $rn -eq 0 ] && [ $ro -eq 0 ] || { tail -30 "$out/build-new.log" "$out/build-old.log"; exit 1; }

IFS=';' read -r -a tlist <<<"$tests"
(cd "$new" && timeout 150 meson test -C build-gpu --no-rebuild "${tlist[@]}" --print-errorlogs) >"$out/gpu-tests.log" 2>&1
echo "gpu tests: rc=$? ($(($(date +%s) - t0)) s)"; grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped):" "$out/gpu-tests.log"

if [ "${NCU:-1}" != 0 ]; then
    ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    # 512 prefill steps of 8 tokens, then decode; per step old: attend x2, merge x2, router;
    # new: the same with the router's two kernels
    for v in old:5 new:6; do
        tag=${v%%:*}; per=${v##*:}; tree=$old; [ "$tag" = new ] && tree=$new
        timeout 90 "$ncu" --clock-control none -k 'regex:router|mla_attend_pos|mla_merge' \
            --launch-skip $((512 * per)) --launch-count $((2 * per)) \
            --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
            --section SchedulerStats --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
            "$tree/build-gpu/tests/engine/gpu/engine_gpu_bench" --layers 2 --context 4096 --steps 2 \
            >"$out/ncu-$tag.log" 2>&1
        echo "ncu $tag: rc=$? ($(($(date +%s) - t0)) s)"
        grep -E "^  [a-z_:<>0-9A-Za-z]+.*\(|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy" "$out/ncu-$tag.log" | head -40
    done
fi

for i in $(seq 1 "$rounds"); do
    for tag in old new; do
        tree=$old; [ "$tag" = new ] && tree=$new
        (cd "$tree" && timeout 150 mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 \
            --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl noop --modes graph --no-noop-replay \
            --out "$out/engine-$tag-$i.csv") >"$out/engine-$tag-$i.log" 2>&1
        echo "engine $tag $i: rc=$? ($(($(date +%s) - t0)) s)"
        grep -E "^# graph  (decode|verify)|^#   (router|attend|combine|moe_gate_up|moe_down|step) " "$out/engine-$tag-$i.log"
    done
done
