#!/bin/bash
# PREPARED IN THE THIRTY-FOURTH SESSION, NOT RUN (no device time left). Before the call, on main
# at dc994e1 or later with gemv-mma.patch still applying:
#   mkdir -p .carry/mma && cp results/engine-h100/dc994e1-gemv-mma/{gemv-mma.patch,next-mma.sh} .carry/mma/
#   git rev-parse --short=12 HEAD > REVISION
# carry [".carry/mma", ".debs", "REVISION"]; run `bash .carry/mma/next-mma.sh`; ~330 s of a call.
# The skinny GEMV on tensor cores from T = 2 (gemv-mma.patch: gemv_ops.cuh's gemv_mma_tile; q_b keeps
# the FMA path, GEMV_BF16_FMA, as its fused launch computes it). Other bits at T >= 2 (the sums'
# order): the tokens may differ; --check-steps against the CPU reference is the judge. A/B four
# rounds, the variant's engine GPU tests (kernels: the GEMV against double at T = 1, 3, 8 and the
# folded grid bit-identical; mla: qkva_prep against gemv, fused q_b against gemv's FMA path;
# persist: the forms bit-identical at T = 1, 2, 3, 8), --check-steps on both trees.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tmma
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
mkdir -p .carry/tmma && tar -c --exclude=./results --exclude=./.carry --exclude=./.debs --exclude=./.git --exclude='./build*' . | tar -x -C .carry/tmma
# git apply inside the repository's tree (.carry/tmma is under it) resolves the patch's paths from
# the repository's root and skips them all with rc 0 (found in the thirty-fifth session before
# this ran; it would have timed main against itself): the ceiling keeps it from the repository,
# and the grep checks the tree is the patched one.
(cd .carry/tmma && GIT_CEILING_DIRECTORIES=$(cd .. && pwd) git apply ../mma/gemv-mma.patch) &&
    grep -q gemv_mma_tile .carry/tmma/engine/gpu/kernels/gemv_ops.cuh && echo "tree tmma: patched" || echo "tree tmma: PATCH FAILED"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_mma="--dump-tokens $O/ab/tokens-mma.txt --force"
timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 base=. mma=.carry/tmma >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | o_proj | dense_mlp | lm_head | q_b | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-mma.txt" && echo "tokens mma: identical" || echo "tokens mma: differ (other bits at T >= 2: see --check-steps)"
grep -hE "^ *[0-9]+/[0-9]+ |not ok|# (gemv|moe|persist)" "$O"/ab/tests-mma.log | head -30
for t in base:. mma:.carry/tmma; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 50) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
