#!/bin/bash
# PREPARED IN THE THIRTY-SEVENTH SESSION, NOT RUN (its device time was spent). Before the call, on
# main: mkdir -p .carry/dn; cp results/engine-h100/f74d203-carve/{d14,g100}.patch .carry/dn/;
# cp results/engine-h100/f74d203-carve/next-down.sh .carry/dn/call.sh; git rev-parse --short=12 HEAD
# > REVISION; carry [".carry/dn", ".debs", "REVISION"]; ~450 s of a call. The patches are against
# f74d203's engine/gpu/kernels (ci/overlay-tree.sh refuses one that no longer applies).
# Why (README.md beside this file): m32 (gate/up at T = 1 and down at a 14% carveout preference)
# made verify 0.77% faster and decode 2.49% slower; at T = 3 only down's preference differed.
#   d14   down alone at 14% (32 KiB asked), every T: does verify's gain stay, without T = 1's loss?
#   g100  gate/up at 43% (100 KiB, every T): the cp.async variants' configuration without their code
#         (../11693d8-cpa/: were qkv_a, down and lm_head slowed by the configuration alone?)
# ncu through ci/engine-ab.sh's NCU form (the decode steps' launches, after the prefill's): the
# configuration each tree's gate/up, down and qkva_prep get (LaunchStats) and their durations.
. ci/device-call.sh 480
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/td14 .carry/tg100
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in d14 g100; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/dn/$v.patch || echo "tree t$v: FAILED"; done
for v in base d14 g100; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS="" NCU="base d14 g100" NCU_KERNELS="regex:moe_gate_up|moe_down|qkva_prep" NCU_PER=4
timeout $(lim 460) bash ci/engine-ab.sh "$O/ab" 4 base=. d14=.carry/td14 g100=.carry/tg100 \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|round|ncu)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | attend | moe_| lm_head | step |rows compared" "$O"/ab/diff-*.txt
for v in d14 g100; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
for v in base d14 g100; do
    echo "== ncu $v"
    grep -E "^  [^ ].*\(|^    Duration|Shared Memory Configuration Size" "$O/ab/ncu-$v.log" | sed 's/(const .*) (/(/' | head -30
done
echo "done $(el)"
