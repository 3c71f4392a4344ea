#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next15.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-first session (2026-12-05), third call: next14 measured --l2-side router,shared at
# decode -0.68% and verify +0.45% (H100); here the branch in decode steps only (--l2-side-upto 1,
# 62b1d56), router and shared together and each alone, against the default; four alternated
# rounds; then the persist test (the branch's T = 1-only capture).
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_rs1="--l2-side router,shared --l2-side-upto 1 --dump-tokens $O/ab/tokens-rs1.txt --force"
export ENGINE_ARGS_r1="--l2-side router --l2-side-upto 1 --dump-tokens $O/ab/tokens-r1.txt --force"
export ENGINE_ARGS_sh1="--l2-side shared --l2-side-upto 1 --dump-tokens $O/ab/tokens-sh1.txt --force"
DEBS=.debs timeout $(lim 420) bash ci/engine-ab.sh "$O/ab" 4 base=. rs1=. r1=. sh1=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log" | grep -v "^    [13] " ; echo "ab done $(el)"
for n in rs1 r1 sh1; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base"; done
(ninja -C build-gpu tests/engine/gpu/test_engine_gpu_persist >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 60) meson test -C build-gpu --no-rebuild "engine gpu persist" --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "^not ok|kernel nodes" "$O/testlog.txt" | head
