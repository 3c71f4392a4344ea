#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next8.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Owed from the nineteenth session (2026-12-05): (1) the fused q_b + absorb against the split form
# on this card (--fuse none), (2) the experiment --moe-stage smem against the default, one tree,
# three alternated rounds each, tokens compared; (3) the engine GPU tests that check both
# (kernels: qb_absorb; moe: the staged gate/up; persist: the fused form end to end).
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_split="--fuse none --dump-tokens $O/ab/tokens-split.txt --force"
export ENGINE_ARGS_stage="--moe-stage smem --dump-tokens $O/ab/tokens-stage.txt --force"
DEBS=.debs timeout $(lim 380) bash ci/engine-ab.sh "$O/ab" 3 base=. split=. stage=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
for t in split stage; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$t.txt" && echo "tokens $t: identical to base"; done
(ninja -C build-gpu tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_moe \
    tests/engine/gpu/test_engine_gpu_persist >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 120) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu moe" "engine gpu persist" \
        --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "^not ok|DIFFERS|staged|fused" "$O/testlog.txt" | head -20
