#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next2.sh", ".carry/place.py", ".debs", "REVISION"].
# Twenty-seventh session, second call: --moe-split (each routed INT4 gate/up tile as two blocks,
# gate and up). This tree built twice side by side (plain; build-tl with the timeline), then
# ci/engine-ab.sh, three alternated rounds of auto (the default), s1 (--moe-split 1: T = 1 split,
# routed first), s1sf (the same, shared first), s3 (--moe-split 3: T <= 3 split) and stg
# (--moe-stage smem under the default order); tokens compared; the engine GPU tests; --check-steps
# (kimi-k2 3 layers / 32 experts, nccl) default and --moe-split 3, logits compared; the timeline of
# s3 read by .carry/place.py.
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-tl -j6 tests/engine/gpu/engine_gpu_bench) >"$O/build-tl.log" 2>&1 &
tlpid=$!
export ENGINE_ARGS_auto="--dump-tokens $O/ab/tokens-auto.txt --force"
export ENGINE_ARGS_s1="--moe-split 1 --dump-tokens $O/ab/tokens-s1.txt --force"
export ENGINE_ARGS_s1sf="--moe-split 1 --moe-order shared-first --dump-tokens $O/ab/tokens-s1sf.txt --force"
export ENGINE_ARGS_s3="--moe-split 3 --dump-tokens $O/ab/tokens-s3.txt --force"
export ENGINE_ARGS_stg="--moe-stage smem --dump-tokens $O/ab/tokens-stg.txt --force"
AB_TESTS= timeout $(lim 310) bash ci/engine-ab.sh "$O/ab" 3 auto=. s1=. s1sf=. s3=. stg=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^# chain| step | moe_gate_up | moe_down " "$O"/ab/diff-*.txt | head -40
for n in s1 s1sf s3 stg; do
    cmp "$O/ab/tokens-auto.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to auto" || echo "tokens $n: DIFFER from auto"
done
echo "ab done $(el)"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_kernels \
    tests/engine/gpu/test_engine_gpu_vs_cpu tests/engine/gpu/test_engine_gpu_persist >"$O/build-tests.log" 2>&1 || echo "test build rc=$?"
timeout $(lim 120) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu kernels" "engine gpu vs cpu" \
    "engine gpu persist" --print-errorlogs >"$O/tests.log" 2>&1; echo "gpu tests rc=$? $(el)"
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail):" "$O/tests.log"
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^not ok|DIFFERS|split" "$O/testlog.txt" | head -20
eng() { # NAME ARGS...: one engine run of this tree
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin" >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-auto $K3
eng k3-s3 $K3 --moe-split 3
}
cmp "$O/d/logits-k3-auto.bin" "$O/d/logits-k3-s3.bin" && echo "logits k3: s3 = auto" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
wait $tlpid; echo "build-tl rc=$? $(el)"
timeout $(lim 60) bash ci/engine-timeline.sh "$O/tl" "s3=--moe-split 3" >"$O/tl-run.log" 2>&1
echo "timeline rc=$? $(el)"
grep -E "gate_up|down|a layer|first start" "$O"/tl/*-summary.txt | grep -v "start \|wait \|end \|run " | head -30
cp .carry/place.py "$O/tl/"
echo "done $(el)"
