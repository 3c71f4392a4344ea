#!/bin/bash
# PREPARED IN THE THIRTY-SIXTH SESSION, NOT RUN (its start was refused; 289 s of device time were
# left; its first variant, stag, then ran alone in a last 180 s call: ../33509f9-stag/, not faster,
# so it is left out here). Before the call, on main: mkdir -p .carry/st; cp results/engine-h100/100aa83-xc/{u5,cpa61,cpa32}.patch
# .carry/st/; cp results/engine-h100/100aa83-xc/next-st.sh .carry/st/call.sh;
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/st", ".debs", "REVISION"]; ~360 s of a call.
# The patches are against 100aa83's engine/gpu/kernels (ci/overlay-tree.sh refuses one that no
# longer applies).
# Why: rounds of 7, 10 and 14 groups at T = 1 cost the same (100aa83-xs, 100aa83-xc), so a warp's
# round count is not what binds gate/up. The reading to test: every routed warp of the GPU starts
# its rounds together after the wait, so the step pays each round's transfer and then its adds
# with the loads stopped (~28 x 80 instructions a warp, ~4 us of issue an SM), whatever the round
# size. Two ways to overlap the two within a warp, the same bits (the same groups in the same order;
# staggering the warps' rounds did not help: ../33509f9-stag/):
#   cpa61  T = 1's routed groups through shared memory by cp.async, 6 stages of 1 group, a counted
#          wait (cp.async.wait_group 4: DEPBAR.LE SB0 in the SASS, no wait on a global load's
#          scoreboard in the loop, ci/sass-loops.py --sb), 5 groups in flight while one is added;
#          48 KB of static shared memory a CTA; sm_90 97 registers, sm_120 112, no spill; its loop
#          ~122 instructions a group (main ~80; ptxas adds three predicated-off LDS around each cp.async);
#   cpa32  the same, 3 stages of 2 groups (4 in flight; ~113 a group);
#   u5     main with rounds of 5 at T = 1 (6 rounds): by the reading, the same as main.
. ci/device-call.sh 450
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tu5 .carry/tcpa61 .carry/tcpa32
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in cpa61 cpa32 u5; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/st/$v.patch || echo "tree t$v: FAILED"; done
for v in base cpa61 cpa32 u5; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS="cpa61 cpa32"
timeout $(lim 430) bash ci/engine-ab.sh "$O/ab" 4 base=. cpa61=.carry/tcpa61 cpa32=.carry/tcpa32 u5=.carry/tu5 \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| step " "$O"/ab/diff-*.txt
for v in cpa61 cpa32 u5; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
for v in cpa61 cpa32; do echo "tests $v: $(grep -hE "^(Ok|Fail):" "$O/ab/tests-$v.log" | tr -s ' ' | tr '\n' ' ')"; done
echo "done $(el)"
