#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-norm.sh", ".carry/base-norm.cuh",
# ".carry/qbmarks.py", ".debs", "REVISION"].
# Thirtieth session: the fused q_b's prep (warp_rmsnorm_staged) copies qkva's row into shared memory by
# cp.async, all copies issued before any is waited on, instead of a load into registers then a store a
# vector at a time (the PTX had each ld.global.cg followed by the st.shared that waits on it: one L2
# round trip a vector; the marks call put the prep at ~2.7 us of the q_b CTAs' ~4.7 after their wait).
# The same bits. A/B against this tree with the old norm.cuh (ci/overlay-tree.sh), four rounds, tokens
# compared; the engine GPU tests of the new tree (engine-ab.sh: kernels, moe, vs cpu, profile, mla);
# --check-steps kimi-k2 3 layers both (logits compared); the new tree's q_b marks 0 and 1 (timeline).
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d" "$O/tl"
rm -rf build-gpu build-tl .carry/tbase
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tbase engine/gpu/kernels/norm.cuh=.carry/base-norm.cuh || echo "tree tbase: FAILED"
(
    meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" \
        >"$O/tl-build.log" 2>&1 && nice ninja -j4 -C build-tl tests/engine/gpu/engine_gpu_bench >>"$O/tl-build.log" 2>&1
    echo "tl build rc=$? $(el)"
) &
tlb=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_new="--dump-tokens $O/ab/tokens-new.txt --force"
timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 base=.carry/tbase new=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | q_b | attend | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-new.txt" && echo "tokens new: identical" || echo "tokens new: DIFFER"
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-new.log | head -20
for t in base:.carry/tbase new:.; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 70) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-new
rm -f "$O"/d/logits-*.bin
wait $tlb
for k in 0 1; do
    ARB_TL_MARK=$k timeout $(lim 60) bash ci/engine-timeline.sh "$O/tl" "m$k=" >>"$O/tl-run.log" 2>&1 || echo "m$k rc=$?"
done
python3 .carry/qbmarks.py "$O"/tl/m[01]-T1.csv.gz "$O"/tl/m[01]-T3.csv.gz
grep -E "^#   (qkva_prep|qb_absorb|attend) " "$O/tl/m0-summary.txt"
ARB_TL_MARK=9 build-tl/tests/engine/gpu/engine_gpu_bench --steps 1 --timeline "$O/tl/bad" 2>&1 >/dev/null | tail -1
rm -f "$O"/tl/*-T*.csv.gz "$O"/tl/bad*
echo "done $(el)"
