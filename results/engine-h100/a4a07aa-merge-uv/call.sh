#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next9.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twentieth session (2026-12-05): --fuse merge_uv (the attention's merge and W_uv in one launch)
# against the default, one tree, four alternated rounds each, tokens dumped; then the kernels
# test (its merge_uv case) and --check-steps against the float64 CPU reference with merge_uv on
# (the tiny model, and Kimi-K2's shapes at 3 layers).
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_muv="--fuse qb_absorb,merge_uv --dump-tokens $O/ab/tokens-muv.txt --force"
DEBS=.debs timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 base=. muv=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-muv.txt" && echo "tokens muv: identical to base"
(ninja -C build-gpu tests/engine/gpu/test_engine_gpu_kernels >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 60) meson test -C build-gpu --no-rebuild "engine gpu kernels" --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "^not ok|merge_uv" "$O/testlog.txt" | head -20
run_check() { # NAME ARGS...: the engine against its CPU reference
    local n=$1; shift
    timeout $(lim 120) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/check-$n.csv" --force >"$O/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts" "$O/check-$n.log"
}
run_check tiny --config tiny --fuse merge_uv --steps 8 --check-steps 8
run_check kimi3 --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2 \
    --fuse qb_absorb,merge_uv
