#!/bin/bash
# Thirty-sixth session, second A/B call. Before the call: the working tree is main;
# .carry/xs/{xs10.patch,xs14.patch,call.sh}; git rev-parse --short=12 HEAD > REVISION;
# carry [".carry/xs", ".debs", "REVISION"]; ~420 s of a call.
# Why: the first call's rolling loads were slower (ptxas puts every load of the loop on one
# scoreboard, so each wait waits for all loads issued before it); main's rounds stand, and what
# binds them is the groups a lane holds in registers: 10 registers a group at T = 1, 4 of them the
# token's B vector (zero in 28 of 32 lanes at T = 1). xs: at T = 1 each warp copies its groups of
# the token vector into shared memory by cp.async (16 KB a CTA, 24.6 KB with the sums; issued with
# the first round's weights, waited for before its first group is added), so a group holds 6
# registers and a round UNRQ of them: xs10 10 (3 rounds of Kimi-K2's 28 groups a warp, not 4;
# sm_90 115 registers, sm_120 116, no spill), xs14 14 (2 rounds; 128, no spill). The same groups
# in the same order: the same bits. T > 1 unchanged.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/txs10 .carry/txs14
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/txs10 --patch .carry/xs/xs10.patch || echo "tree txs10: FAILED"
bash ci/overlay-tree.sh .carry/txs14 --patch .carry/xs/xs14.patch || echo "tree txs14: FAILED"
for v in base xs10 xs14; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export NCU="base xs10 xs14" NCU_KERNELS="regex:moe_gate_up" NCU_PER=1
timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 base=. xs10=.carry/txs10 xs14=.carry/txs14 >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|ncu)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
for v in base xs10 xs14; do
    echo "ncu $v:"; grep -E "^  [^ ].*\(|Duration|DRAM Throughput|No Eligible|Registers Per|Achieved Active|stalled_(long_scoreboard|barrier|wait)" "$O/ab/ncu-$v.log" | sed 's/(moe_weights.*//' | head -9
done
for v in xs10 xs14; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
    grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O/ab/tests-$v.log" | head -8
done
for t in base:. xs10:.carry/txs10; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 45) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-xs10
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
