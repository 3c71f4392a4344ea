#!/bin/bash
# Thirty-sixth session, first A/B call. Before the call: the working tree is main;
# .carry/roll/{split.patch,one.patch,call.sh}; git rev-parse --short=12 HEAD > REVISION;
# carry [".carry/roll", ".debs", "REVISION"]; ~420 s of a call.
# Why: Nsight Compute on main's gate/up at T = 1 (results/engine-h100/100aa83-ncu/): DRAM 50% of
# peak, 71.6% of issue slots with no eligible warp, long-scoreboard stalls 5.27 of 10.68 cycles
# between a warp's instructions, 16 warps an SM (126 registers). Main's loop loads UNRQ groups,
# waits for them, adds them, then loads the next UNRQ: four round trips a warp at T = 1 (28 groups
# by 7), seven at T = 2..3 (by 4), with no loads in flight while it adds. roll: each group's slot
# is loaded again with group g + UNRQ as soon as g is added, so UNRQ groups stay in flight; the
# same groups in the same order, the same bits. split: the loop without bounds checks, then the
# tail (sm_90 loop 567 instructions for 7 groups, main 561; 8 bytes spilled outside the loop at
# T = 1, 12 at T = 2..3 with a reload in the loop); one: one loop with a bound a group (728, no
# spill at T = 1..3).
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tsplit .carry/tone
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tsplit --patch .carry/roll/split.patch || echo "tree tsplit: FAILED"
bash ci/overlay-tree.sh .carry/tone --patch .carry/roll/one.patch || echo "tree tone: FAILED"
for v in base split one; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
timeout $(lim 320) bash ci/engine-ab.sh "$O/ab" 4 base=. split=.carry/tsplit one=.carry/tone >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
for v in split one; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
    grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O/ab/tests-$v.log" | head -8
done
for t in base:. split:.carry/tsplit; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 45) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-split
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
