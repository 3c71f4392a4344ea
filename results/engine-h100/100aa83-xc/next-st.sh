#!/bin/bash
# PREPARED IN THE THIRTY-SIXTH SESSION, NOT RUN (its start was refused; 289 s of device time were
# left). Before the call, on main: mkdir -p .carry/st; cp results/engine-h100/100aa83-xc/{stag,u5}.patch
# .carry/st/; cp results/engine-h100/100aa83-xc/next-st.sh .carry/st/call.sh;
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/st", ".debs", "REVISION"]; ~300 s of a call.
# The patches are against 100aa83's moe_gate_up_ops.cuh and moe_ops.cuh (overlay-tree refuses them
# where they no longer apply).
# Why: rounds of 10 and 14 groups at T = 1 (the second and third calls) were not faster than 7,
# so a warp's round count is not what binds gate/up. Two same-bits probes of the other reading
# (every warp of a CTA waits and adds at the same time, so the loads stop while they add):
# stag: odd warps take a first round of UNRQ / 2 groups, then UNRQ (at T = 1: 3 + 7 + 7 + 7 + 4
# against 7 x 4), so their adds fall in the even warps' waits; u5: main with rounds of 5 at T = 1
# (shorter adds between waits, 6 rounds).
. ci/device-call.sh 330
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tstag .carry/tu5
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in stag u5; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/st/$v.patch || echo "tree t$v: FAILED"; done
for v in base stag u5; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS="stag"
timeout $(lim 310) bash ci/engine-ab.sh "$O/ab" 4 base=. stag=.carry/tstag u5=.carry/tu5 >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| step " "$O"/ab/diff-*.txt
for v in stag u5; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
grep -hE "^(Ok|Fail):|not ok" "$O/ab/tests-stag.log" | tr '\n' ' '; echo
echo "done $(el)"
