#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next24.sh", ".debs", "REVISION"];
# command "bash .carry/next24.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-fourth session (2026-12-06), third call: --moe-pipe on (the routed INT4 gate/up tiles at T <= 3
# software-pipeline their rounds; the same bits) against the default, one tree, five alternated rounds
# (ci/engine-ab.sh); a timeline build meanwhile (4 cores), then the MoE GPU tests of this tree (the pipe
# bit-identical), --check-steps with the pipe on tiny and on kimi-k2 (3 layers, 32 experts), and the
# step's timeline with and without the pipe.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-tl -j4 tests/engine/gpu/engine_gpu_bench) >"$O/build-tl.log" 2>&1 &
tlpid=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_pipe="--moe-pipe on --dump-tokens $O/ab/tokens-pipe.txt --force"
timeout $(lim 260) bash ci/engine-ab.sh "$O/ab" 5 base=. pipe=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart|^ *[0-9]+/[0-9]+ " "$O/ab/run.log" | grep -v "^    [13] [a-z]"
echo "ab done $(el)"
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-pipe.txt" && echo "tokens pipe: identical to base" || echo "tokens pipe: DIFFER from base"
(ninja -C build-gpu -j16 tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_moe_plan tests/engine/gpu/test_engine_gpu_persist &&
    timeout $(lim 150) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu moe plan" "engine gpu persist" --print-errorlogs) \
    >"$O/tests.log" 2>&1
echo "gpu tests: rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |pipe|not ok" "$O/tests.log" | head -30
run_check() { # NAME ARGS...: the engine against its CPU reference, with the pipe
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/d/check-$n.csv" --force >"$O/d/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|agree" "$O/d/check-$n.log" | tail -4
}
run_check tiny-pipe --config tiny --context 64 --steps 8 --check-steps 8 --moe-pipe on
run_check kimi3-pipe --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 \
    --check-steps 2 --moe-pipe on
wait $tlpid; echo "timeline build: rc=$? $(el)"
timeout $(lim 70) bash ci/engine-timeline.sh "$O/tl" off= pipe="--moe-pipe on" >"$O/tl-run.log" 2>&1
echo "timeline: rc=$? $(el)"; grep -v "^timeline_T\|^build\|layers 3:60" "$O/tl-run.log" | grep -v "^#   [a-z_]* *\(start\|wait\|end\|run\) \|^#  *\(start\|wait\|end\|run\) " | head -40
mv "$O"/tl/*-T*.csv.gz "$OUT"/ 2>/dev/null
echo "done $(el)"
