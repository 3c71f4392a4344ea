#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next17.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-first session (2026-12-05), last call: the new default (--l2-side router) against
# --l2-side none, three alternated rounds, as a user runs it (no option = the default); the
# engine GPU tests at this tree; --check-steps with the default on tiny and on Kimi-K2's 3 layers.
. ci/device-call.sh 370
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_def="--dump-tokens $O/ab/tokens-def.txt --force"
export ENGINE_ARGS_none="--l2-side none --dump-tokens $O/ab/tokens-none.txt --force"
DEBS=.debs timeout $(lim 200) bash ci/engine-ab.sh "$O/ab" 3 none=. def=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine)|graph  (decode|verify)" "$O/ab/run.log"; grep -E "^  *1 step|^  *3 step" "$O/ab/diff-def.txt"; echo "ab done $(el)"
cmp "$O/ab/tokens-none.txt" "$O/ab/tokens-def.txt" && echo "tokens def: identical to none"
grep -h "step_form\|l2_side" "$O"/ab/engine-def-1.csv | head -0; python3 -c "
import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print('step_form:', r[0]['step_form'])" "$O/ab/engine-def-1.csv"
tb="tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_persist tests/engine/gpu/test_engine_gpu_vs_cpu tests/engine/gpu/test_engine_gpu_profile"
(ninja -C build-gpu $tb >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 90) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu persist" "engine gpu vs cpu" \
        "engine gpu profile" --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "^not ok" "$O/testlog.txt" | head
run_check() { # NAME ARGS...: the engine against its CPU reference
    local n=$1; shift
    timeout $(lim 70) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/check-$n.csv" --force >"$O/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|^#   " "$O/check-$n.log" | grep -v "memory\|bytes\|GB" | tail -4
}
run_check tiny --config tiny --steps 8 --check-steps 8
run_check kimi3 --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2
