#!/bin/bash
# PREPARED IN THE THIRTY-SECOND SESSION, NOT RUN (its device time was spent). Before the call:
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-lean.sh", ".carry/lean", ".debs", "REVISION"];
# ~470 s of a call. The attend kernel's scores and staging with fewer instructions
# (results/engine-h100/689ba2e-attend-ncu/attend-lean.patch; .carry/lean/attend_ops.cuh is the whole file
# against 9d396d3: remake it if attend_ops.cuh changes): the scores' groups run by source (latent, then
# rope) through pointers, compiled per case (row rb in the block or not; whole groups), ~16
# instructions a group against ~38-48; the staging's row by a multiply-high, not a division. The
# same loads and mma.sync in the same order: the same bits. A/B against main, four rounds, tokens
# compared; the lean tree's engine GPU tests (kernels: the attention against double and its grids;
# mla; persist: the persistent form's attention uses the same tile); --check-steps both, logits
# compared; the lean tree's attend and merge marks 0..3 (the main tree's are in
# results/engine-h100/178314e-cache-reorder-marks/: T = 1 scores 1.50 us, queries' staging 1.42).
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d" "$O/tl"
rm -rf build-gpu build-tl .carry/tnew
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tnew engine/gpu/kernels/attend_ops.cuh=.carry/lean/attend_ops.cuh ||
    echo "tree tnew: FAILED"
(
    cd .carry/tnew && meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true \
        "-Dgencode=['arch=compute_90,code=sm_90']" >"$O/tl-build.log" 2>&1 &&
        nice ninja -j4 -C build-tl tests/engine/gpu/engine_gpu_bench >>"$O/tl-build.log" 2>&1
    echo "tl build rc=$? $(el)"
) &
tlb=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_lean="--dump-tokens $O/ab/tokens-lean.txt --force"
timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 base=. lean=.carry/tnew >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| q_b | attend | combine | o_proj | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-lean.txt" && echo "tokens lean: identical" || echo "tokens lean: DIFFER"
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-lean.log | head -20
for t in base:. lean:.carry/tnew; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 70) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-lean
rm -f "$O"/d/logits-*.bin
wait $tlb
for k in 0 1 2 3; do
    (cd .carry/tnew && ARB_TL_MARK=$k timeout $(lim 40) bash ci/engine-timeline.sh "$O/tl" "m$k=") >>"$O/tl-run.log" 2>&1 ||
        echo "m$k rc=$? $(el)"
done
for f in "$O"/tl/m*-summary.txt; do
    echo "== $(basename "$f")"
    grep -A3 -E "^#   (attend|merge) +start" "$f" | grep -E "start|run"
done
rm -f "$O"/tl/*-T*.csv.gz
echo "done $(el)"
