#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-side.sh", ".carry/qbmarks.py", ".debs", "REVISION"].
# Thirtieth session, the last call: (1) --l2-side router,q_b (q_b's and kv_b's weights toward L2 from a
# fork before qkv_a, so they stream during it) against the default (router), four alternated rounds of
# one tree, tokens compared; (2) where the q_b prep's ~2.4 us go: marks 6 (thread 0's cp.async copies
# landed) and 5 (the first barrier passed) beside 0 (the wait) and 1 (the prep done), and mark 0 with the
# q_b pull (does the prep shrink when the weights come from L2).
. ci/device-call.sh 420
set -u
mkdir -p "$O/ab" "$O/tl"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(
    meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" \
        >"$O/tl-build.log" 2>&1 && nice ninja -j4 -C build-tl tests/engine/gpu/engine_gpu_bench >>"$O/tl-build.log" 2>&1
    echo "tl build rc=$? $(el)"
) &
tlb=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_qbp="--l2-side router,q_b --dump-tokens $O/ab/tokens-qbp.txt --force"
AB_TESTS= timeout $(lim 230) bash ci/engine-ab.sh "$O/ab" 4 base=. qbp=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | q_b | attend | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-qbp.txt" && echo "tokens qbp: identical" || echo "tokens qbp: DIFFER"
wait $tlb
for k in 0 6 5 1; do
    ARB_TL_MARK=$k timeout $(lim 45) bash ci/engine-timeline.sh "$O/tl" "m$k=" >>"$O/tl-run.log" 2>&1 || echo "m$k rc=$?"
done
timeout $(lim 45) bash ci/engine-timeline.sh "$O/tl" "p0=--l2-side router,q_b" >>"$O/tl-run.log" 2>&1 || echo "p0 rc=$?"
python3 .carry/qbmarks.py "$O"/tl/m0-T1.csv.gz "$O"/tl/m6-T1.csv.gz "$O"/tl/m5-T1.csv.gz "$O"/tl/m1-T1.csv.gz \
    "$O"/tl/p0-T1.csv.gz "$O"/tl/m0-T3.csv.gz "$O"/tl/m5-T3.csv.gz "$O"/tl/m1-T3.csv.gz "$O"/tl/p0-T3.csv.gz
for n in m0 p0; do echo "== $n"; grep -E "^#   (qkva_prep|qb_absorb|attend) |a layer" "$O/tl/$n-summary.txt"; done
rm -f "$O"/tl/*-T*.csv.gz
echo "done $(el)"
