#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next23.sh", ".debs", "REVISION"];
# command "bash .carry/next23.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-fourth session (2026-12-06): --moe-split 3 (each routed gate/up tile as two blocks at T <= 3)
# against the default, one tree, five alternated rounds (ci/engine-ab.sh); engine_stream_bench meanwhile
# (during the A/B's build, the GPU idle: its start and end times are in stream.log, the A/B's in run.log);
# then the MoE GPU tests of this tree (the split against the double reference) and --check-steps with
# the split on tiny and on kimi-k2 (3 layers, 32 experts).
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-sb -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" >/dev/null &&
    ninja -C build-sb -j3 tests/engine/gpu/engine_stream_bench >/dev/null && echo "stream start $(el)" &&
    timeout 60 build-sb/tests/engine/gpu/engine_stream_bench --out "$O/stream.csv"
    echo "stream end rc=$? $(el)") >"$O/stream.log" 2>&1 &
sbpid=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_split="--moe-split 3 --dump-tokens $O/ab/tokens-split.txt --force"
timeout $(lim 260) bash ci/engine-ab.sh "$O/ab" 5 base=. split=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart|^ *[0-9]+/[0-9]+ " "$O/ab/run.log" | grep -v "^    [13] [a-z]"
echo "ab done $(el)"
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-split.txt" && echo "tokens split: identical to base" || echo "tokens split: DIFFER from base"
wait $sbpid; grep -E "stream (start|end)|^rate|^# " "$O/stream.log"; grep -c "^share\|^pipe" "$O/stream.log"
(ninja -C build-gpu -j16 tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_moe_plan tests/engine/gpu/test_engine_gpu_persist &&
    timeout $(lim 150) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu moe plan" "engine gpu persist" --print-errorlogs) \
    >"$O/tests.log" 2>&1
echo "gpu tests: rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |split|not ok" "$O/tests.log" | head -30
run_check() { # NAME ARGS...: the engine against its CPU reference, with the split
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/d/check-$n.csv" --force >"$O/d/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|agree" "$O/d/check-$n.log" | tail -4
}
run_check tiny-split --config tiny --context 64 --steps 8 --check-steps 8 --moe-split 3
run_check kimi3-split --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 \
    --check-steps 2 --moe-split 3
echo "done $(el)"
