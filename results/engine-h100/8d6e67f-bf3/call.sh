#!/bin/bash
# Thirty-fifth session, second call. Before the call: the working tree is main (8d6e67f);
# .carry/b3/{bf3.patch,next-b3.sh}; git rev-parse --short=12 HEAD > REVISION;
# carry [".carry/b3", ".debs", "REVISION"]; ~330 s of a call.
# bf3: the INT4 bias folded as in the first call's bf, but added after the tile's two mma
# (acc += s (p + c)) instead of starting them, so the tile's mma chain is two deep as on main
# (bf's was four: the bias's two, then the tile's; bf issued 15% fewer instructions in gate/up's
# loop and ran decode +0.96%, verify +1.0% on an H100). sm_90 loop: gate/up T = 1 561 -> 547,
# T = 2..3 618 -> 579, down 1027 -> 1016. stage: main with --moe-stage smem (same bits), the
# thirty-fourth session's unrun question, as a third name on main's tree.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu .carry/tb3
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
mkdir -p .carry/tb3 && tar -c --exclude=./results --exclude=./.carry --exclude=./.debs --exclude=./.git --exclude='./build*' . | tar -x -C .carry/tb3
# git apply inside the repository's tree resolves paths from its root and skips them with rc 0:
# the ceiling keeps it from the repository; the grep checks the tree.
(cd .carry/tb3 && GIT_CEILING_DIRECTORIES=$(cd .. && pwd) git apply ../b3/bf3.patch) &&
    grep -q int4_bias .carry/tb3/engine/gpu/kernels/moe_mma.cuh && echo "tree tb3: patched" || echo "tree tb3: PATCH FAILED"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_bf3="--dump-tokens $O/ab/tokens-bf3.txt --force"
export ENGINE_ARGS_stage="--moe-stage smem --dump-tokens $O/ab/tokens-stage.txt --force"
timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 base=. bf3=.carry/tb3 stage=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| router | step " "$O"/ab/diff-*.txt
for v in bf3 stage; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
grep -hE "^ *[0-9]+/[0-9]+ |not ok" "$O"/ab/tests-bf3.log | head -12
for t in base:. bf3:.carry/tb3; do
    n=${t%%:*}; tree=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 45) bash ci/engine-check.sh "$O/d" "k3-$n" "$tree"
done
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
