#!/bin/bash
# Thirty-fourth session, third call. Before the call: the working tree is main (the INT4 dequant and
# two-tile T = 2..3 gate/up landed); git rev-parse --short=12 HEAD > REVISION; carry
# [".carry/next-stage.sh", ".debs", "REVISION"]; ~150 s (three rounds: the budget's last 308 s).
# `--moe-stage smem` (the routed INT4 gate/up tiles at T = 1 stage 3 more groups a round in shared
# memory: 28 groups a warp in 3 round trips, not 4) was measured slower when the kernel issued a
# fifth more instructions (decode +1.53%, results/engine-h100/3744719-stage/); asked again now that
# it issues fewer. The same tree, a run-time option: the same bits (engine gpu moe asserts it).
. ci/device-call.sh 190
set -u
mkdir -p "$O/ab"
rm -rf build-gpu
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_stage="--moe-stage smem --dump-tokens $O/ab/tokens-stage.txt --force"
timeout $(lim 185) bash ci/engine-ab.sh "$O/ab" 3 base=. stage=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-stage.txt" && echo "tokens stage: identical" || echo "tokens stage: DIFFER"
grep -h "step_form" "$O"/ab/engine-stage-1.log | head -2
echo "done $(el)"
