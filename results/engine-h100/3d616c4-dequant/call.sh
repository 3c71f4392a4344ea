#!/bin/bash
# Thirty-fourth session. Before the call: the working tree is dq2 (main + dequant.patch + down's slot
# pointers); .carry/dqbase/ = main's four files, .carry/dq/ = the dequant patch's four files;
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-dq3.sh", ".carry/dq", ".carry/dqbase",
# ".debs", "REVISION"]; ~400 s of a call.
#   dq:  the MoE's INT4 dequant in fewer instructions (one lop3 a nibble pair; down's q / Gi by a
#        multiply-high): routed gate/up round 694 -> 561 instructions (sm_90), down 1540 -> 1126.
#   dq2: dq + down's routed weights addressed from per-slot pointers in shared memory, set once a
#        block with the selection (not ~36 instructions of 64-bit index arithmetic a pair): down's
#        round 1126 -> 1041 (sm_90), 1247 -> 1122 (sm_120).
# The same loads and sums in the same order: the same bits. A/B/C, four rounds, tokens compared; the
# variants' engine GPU tests; --check-steps on base and dq2, logits compared.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tbase .carry/tdq
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
ov=()
for f in moe_mma.cuh moe_down_ops.cuh common.cuh attend_ops.cuh; do ov+=("engine/gpu/kernels/$f=.carry/dqbase/$f"); done
bash ci/overlay-tree.sh .carry/tbase "${ov[@]}" || echo "tree tbase: FAILED"
bash ci/overlay-tree.sh .carry/tdq engine/gpu/kernels/moe_down_ops.cuh=.carry/dq/moe_down_ops.cuh || echo "tree tdq: FAILED"
for f in moe_mma.cuh moe_down_ops.cuh common.cuh attend_ops.cuh; do cmp -s .carry/dq/$f .carry/tdq/engine/gpu/kernels/$f || echo "tree tdq: $f is not the variant's"; done
cmp -s .carry/dq/moe_down_ops.cuh engine/gpu/kernels/moe_down_ops.cuh && echo "tree .: down is dq's, not dq2's"
export AB_TESTS=dq2
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_dq="--dump-tokens $O/ab/tokens-dq.txt --force"
export ENGINE_ARGS_dq2="--dump-tokens $O/ab/tokens-dq2.txt --force"
timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 base=.carry/tbase dq=.carry/tdq dq2=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
for n in dq dq2; do # (tests: dq2 only, which holds dq)
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"
    grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-$n.log | head -20
done
for t in base:.carry/tbase dq2:.; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 50) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-dq2
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
