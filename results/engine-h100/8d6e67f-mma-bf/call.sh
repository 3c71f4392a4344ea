#!/bin/bash
# Thirty-fifth session, first call. Before the call: the working tree is main (d605b53);
# .carry/mb/{gemv-mma.patch,bf.patch,next-mb.sh}; git rev-parse --short=12 HEAD > REVISION;
# carry [".carry/mb", ".debs", "REVISION"]; run `bash .carry/mb/next-mb.sh`; ~400 s of a call.
# Two variants against main, alternated in one A/B (four rounds):
#  mma: the skinny dense GEMV on tensor cores from T = 2 (the thirty-fourth session's
#       results/engine-h100/dc994e1-gemv-mma/gemv-mma.patch; q_b keeps the FMA path);
#  bf:  the MoE's INT4 groups with the 136 bias folded: each group's sums start at -136 x the
#       tokens' sums (two mma with a constant A a group, shared by gate, up and every tile) and the
#       dequant drops its hsub2 (gate/up's T = 1 loop 561 -> 479 instructions sm_90, 575 -> 508
#       sm_120; T = 2..3 618 -> 515; down's round 1027 -> 965).
# Both give other bits (the sums' order / rounding): tokens may differ; the variants' engine GPU
# tests (against double; the forms bit-identical) and --check-steps (3 layers) are the judges.
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tmma .carry/tbf
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in mma bf; do
    mkdir -p .carry/t$v && tar -c --exclude=./results --exclude=./.carry --exclude=./.debs --exclude=./.git --exclude='./build*' . | tar -x -C .carry/t$v
done
# git apply inside the repository's tree (.carry/tX is under it) resolves paths from the repository's
# root and skips them all with rc 0: the ceiling keeps it from finding the repository.
ceil=$(pwd)/.carry
(cd .carry/tmma && GIT_CEILING_DIRECTORIES=$ceil git apply ../mb/gemv-mma.patch) && grep -q gemv_mma_tile .carry/tmma/engine/gpu/kernels/gemv_ops.cuh &&
    echo "tree tmma: patched" || echo "tree tmma: PATCH FAILED"
(cd .carry/tbf && GIT_CEILING_DIRECTORIES=$ceil git apply ../mb/bf.patch) && grep -q int4_bias .carry/tbf/engine/gpu/kernels/moe_mma.cuh &&
    echo "tree tbf: patched" || echo "tree tbf: PATCH FAILED"
for v in base mma bf; do export ENGINE_ARGS_$v="--dump-tokens $O/ab/tokens-$v.txt --force"; done
timeout $(lim 380) bash ci/engine-ab.sh "$O/ab" 4 base=. mma=.carry/tmma bf=.carry/tbf >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | o_proj | dense_mlp | lm_head | q_b | moe_| step " "$O"/ab/diff-*.txt
for v in mma bf; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ (other bits: see --check-steps)"
    grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-$v.log | head -12
done
for t in base:. mma:.carry/tmma bf:.carry/tbf; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 45) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
