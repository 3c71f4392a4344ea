#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next6.sh"; ask for nvidia-h200 (an H100 also answers).
# Nineteenth session (2026-12-05): --fuse qb_absorb against the split q_b + absorb, one tree, the
# engine A/B (3 rounds each, alternated, tokens dumped and compared), then the kernel test of the
# fused kernel (bit identity at T = 1, 3, 8), vs cpu and the profile.
. ci/device-call.sh 470
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_fused="--fuse qb_absorb --dump-tokens $O/ab/tokens-fused.txt --force"
DEBS=.debs timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 3 base=. fused=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-fused.txt" && echo "tokens fused: identical to base ($(wc -l <"$O/ab/tokens-fused.txt") lines)"
(ninja -C build-gpu tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_vs_cpu \
    tests/engine/gpu/test_engine_gpu_profile >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 90) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu vs cpu" "engine gpu profile" \
        --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "qb_absorb|^not ok|DIFFERS" "$O/testlog.txt" | head -20
