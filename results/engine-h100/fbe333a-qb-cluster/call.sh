#!/bin/bash
# Thirty-first session. Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-one.sh",
# ".carry/reorder", ".carry/qbcl", ".carry/both", ".debs", "REVISION"]; ~250 s of a call. .carry/next-two.sh's
# two-variant A/B cut to its second variant for the device time left after refused starts.
# Same-bits variants of the fused q_b (mla_qb.cu), A/B'd against main's tree in one run (two trees
# alternated: base, both; four rounds), tokens compared, each variant tree's engine GPU tests:
#   qbcl  a head's 8 nope CTAs a thread-block cluster: their absorption parts summed across the
#         cluster through distributed shared memory instead of global scratch, a per-head ticket and
#         the last CTA's sum (.carry/qbcl/mla_qb.cu; its test adds 3 heads a rank: a part-empty last
#         row of RoPE CTAs)
#   both  qbcl and the reorder prepared in the thirtieth session together (the prep's row copies issued
#         right after the PDL wait, before waiting on the norm weights' copies: .carry/reorder's
#         norm.cuh and mla_ops.cuh; .carry/both/mla_qb.cu the two files merged by git merge-file;
#         qbcl's test)
# (No --check-steps: the device time left after refused starts allowed ~280 s; the GPU tests check the
# fused q_b's bits against the split form's, and the A/B's tokens are compared.)
. ci/device-call.sh 290
set -u
mkdir -p "$O/ab"
rm -rf build-gpu build-tl .carry/tcl .carry/tboth
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
R=engine/gpu/kernels T=tests/engine/gpu/test_engine_gpu_mla.cu
bash ci/overlay-tree.sh .carry/tboth $R/norm.cuh=.carry/reorder/norm.cuh $R/mla_ops.cuh=.carry/reorder/mla_ops.cuh \
    $R/mla_qb.cu=.carry/both/mla_qb.cu $T=.carry/qbcl/test_engine_gpu_mla.cu || echo "tree tboth: FAILED"
for n in base both; do export "ENGINE_ARGS_$n=--dump-tokens $O/ab/tokens-$n.txt --force"; done
timeout $(lim 270) bash ci/engine-ab.sh "$O/ab" 4 base=. both=.carry/tboth \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
for n in both; do grep -hE "^#  *T| qkv_a | q_b | attend | step " "$O/ab/diff-$n.txt"; done
for n in both; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"
    grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O/ab/tests-$n.log" | head -12
done
echo "done $(el)"
