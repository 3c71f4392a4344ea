#!/bin/bash
# Thirty-second session. Before the call: git rev-parse --short=12 HEAD > REVISION; carry
# [".carry/next-s32.sh", ".carry/reorder", ".debs", "REVISION"]; ~540 s of a call.
# 1. A/B, four rounds: base (main), cp (--l2-side router,cache: the layer's latent cache pulled toward
#    L2 from the side branch after qkv_a, so that attend's CTAs that start only as q_b's leave stage
#    their chunk from L2), ro (the thirtieth session's prepared prep reorder, the same bits);
#    ro's engine GPU tests (its tree has this tree's persist test: the side branch with cache).
# 2. The attend and merge marks (attend_ops.cuh: 1 queries staged, 2 scores, 3 softmax pieces; merge
#    1 chunk weights, 2 strands' sums): base's timeline at marks 0..3, and cp's at 0.
# 3. --check-steps kimi-k2 3 layers: base, ro, cp; logits compared.
. ci/device-call.sh 545
set -u
mkdir -p "$O/ab" "$O/d" "$O/tl"
rm -rf build-gpu build-tl .carry/tnew
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tnew engine/gpu/kernels/norm.cuh=.carry/reorder/norm.cuh \
    engine/gpu/kernels/mla_ops.cuh=.carry/reorder/mla_ops.cuh engine/gpu/kernels/mla_qb.cu=.carry/reorder/mla_qb.cu ||
    echo "tree tnew: FAILED"
(
    meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true \
        "-Dgencode=['arch=compute_90,code=sm_90']" >"$O/tl-build.log" 2>&1 &&
        nice ninja -j4 -C build-tl tests/engine/gpu/engine_gpu_bench >>"$O/tl-build.log" 2>&1
    echo "tl build rc=$? $(el)"
) &
tlb=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_cp="--l2-side router,cache --dump-tokens $O/ab/tokens-cp.txt --force"
export ENGINE_ARGS_ro="--dump-tokens $O/ab/tokens-ro.txt --force"
timeout $(lim 320) bash ci/engine-ab.sh "$O/ab" 4 base=. cp=. ro=.carry/tnew >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | q_b | attend | combine | o_proj | router | step " "$O"/ab/diff-*.txt
for n in cp ro; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"
done
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-ro.log | head -20
wait $tlb
for k in 0 1 2 3; do
    ARB_TL_MARK=$k timeout $(lim 40) bash ci/engine-timeline.sh "$O/tl" "m$k=" >>"$O/tl-run.log" 2>&1 || echo "m$k rc=$? $(el)"
done
timeout $(lim 40) bash ci/engine-timeline.sh "$O/tl" "cp0=--l2-side router,cache" >>"$O/tl-run.log" 2>&1 || echo "cp0 rc=$? $(el)"
for f in "$O"/tl/*-summary.txt; do
    echo "== $(basename "$f")"
    grep -E "^#   (q_b|qb_absorb|attend|merge|uv) " "$f" | grep -vE "  (start|wait|end|run) "
    grep -A3 -E "^#   (attend|merge) +start" "$f"
done
rm -f "$O"/tl/*-T*.csv.gz
echo "tl done $(el)"
ENGINE_CHECK_TIMEOUT=$(lim 75) bash ci/engine-check.sh "$O/d" k3-base .
ENGINE_CHECK_TIMEOUT=$(lim 75) bash ci/engine-check.sh "$O/d" k3-ro .carry/tnew
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-ro
ENGINE_CHECK_TIMEOUT=$(lim 75) bash ci/engine-check.sh "$O/d" k3-cp . --l2-side router,cache
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-cp
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
