#!/bin/bash
# Thirty-third session, second call, the short form (device time was short after refused starts):
# three rounds, no --check-steps. Before the call: the working tree is the variant (main's four
# files in .carry/dqbase/ make the base tree), git rev-parse --short=12 HEAD > REVISION; carry
# [".carry/next-dq-min.sh", ".carry/dq", ".carry/dqbase", ".debs", "REVISION"]; ~235 s of a call.
# The MoE's INT4 dequant in fewer instructions (.carry/dq/dq.patch): each nibble pair's xor, and and
# or as one lop3 (ptxas kept the three the C wrote: 16 instructions a word -> 11), and down's pair
# index q / Gi by a multiply-high (udiv, common.cuh; attend's staging now calls the same helper).
# SASS here (sm_90): the routed gate/up loop at T = 1 694 -> 561 instructions for 7 groups, down's
# 1540 -> 1126 for 8 pairs. The same operations on the same bits: the same sums.
# A/B against main, three rounds, tokens compared; the variant's engine GPU tests.
. ci/device-call.sh 235
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tbase
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
ov=()
for f in moe_mma.cuh moe_down_ops.cuh common.cuh attend_ops.cuh; do ov+=("engine/gpu/kernels/$f=.carry/dqbase/$f"); done
bash ci/overlay-tree.sh .carry/tbase "${ov[@]}" || echo "tree tbase: FAILED"
for f in moe_mma.cuh moe_down_ops.cuh common.cuh attend_ops.cuh; do cmp -s .carry/dq/$f engine/gpu/kernels/$f || echo "tree .: $f is not the variant's"; done
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_dq="--dump-tokens $O/ab/tokens-dq.txt --force"
timeout $(lim 225) bash ci/engine-ab.sh "$O/ab" 3 base=.carry/tbase dq=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-dq.txt" && echo "tokens dq: identical" || echo "tokens dq: DIFFER"
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-dq.log | head -20
echo "done $(el)"
