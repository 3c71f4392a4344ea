#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next4.sh", ".debs", "REVISION"].
# Twenty-sixth session, fourth call: --moe-stage x at 12 groups in flight (3 rounds, no spill)
# against this tree's default, four alternated rounds (ci/engine-ab.sh, one tree, no tests there);
# then the engine GPU moe test (x bit-identical at T = 1, 2).
. ci/device-call.sh 400
set -u
mkdir -p "$O/ab"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in new xs; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
ENGINE_ARGS_xs="$ENGINE_ARGS_xs --moe-stage x"
timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 new=. xs=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE " step | router | moe_gate_up | moe_down " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-new.txt" "$O/ab/tokens-xs.txt" && echo "tokens xs: identical to new" || echo "tokens xs: DIFFER"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe >"$O/moe-build.log" 2>&1 && \
    timeout $(lim 60) build-gpu/tests/engine/gpu/test_engine_gpu_moe >"$O/moe-test.log" 2>&1; echo "moe test: rc=$? $(el)"
grep -E "^(not )?ok|DIFFERS|staged" "$O/moe-test.log" | head -20
echo "done $(el)"
