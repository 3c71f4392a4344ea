#!/bin/bash
# Thirty-fourth session, second call. Before the call: the working tree is main (with the dequant
# landed); .carry/r2/moe_ops.cuh = main's with moe_rowt(T) = T <= 1 ? 1 : 2 (was T <= 3);
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-r2.sh", ".carry/r2", ".debs", "REVISION"].
# r2: the MoE gate/up at T = 2..3 with two 16-row tiles a block (as T >= 4 has), not one: at T = 3
# Kimi-K2's 384 routed tiles + 112 shared parts are 496 blocks (about two waves at two an SM), with
# two tiles ~188 + 112 = 300, each token vector loaded once for both tiles, 4 groups a round in
# flight (7 rounds of 28 groups) instead of 7 (4 rounds). The routed sums are the same; the shared
# expert's parts are split differently (14 parts of 2 groups a warp, not 7 of 4), so its sums are
# added in another order: other bits at T = 2..3 (T = 1 the same). Verify only moves.
# A/B four rounds; r2's engine GPU tests; --check-steps both (tokens and logits against the CPU
# reference; the logits compared, expected to differ in the last bits).
. ci/device-call.sh 380
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tr2
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tr2 engine/gpu/kernels/moe_ops.cuh=.carry/r2/moe_ops.cuh || echo "tree tr2: FAILED"
grep -n "constexpr int moe_rowt" engine/gpu/kernels/moe_ops.cuh .carry/tr2/engine/gpu/kernels/moe_ops.cuh
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_r2="--dump-tokens $O/ab/tokens-r2.txt --force"
timeout $(lim 260) bash ci/engine-ab.sh "$O/ab" 4 base=. r2=.carry/tr2 >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-r2.txt" && echo "tokens r2: identical" || echo "tokens r2: DIFFER"
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-r2.log | head -20
for t in base:. r2:.carry/tr2; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 50) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-r2
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
