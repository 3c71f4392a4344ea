#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next1.sh", ".carry/place.py", ".debs", "REVISION"].
# Twenty-seventh session, first call: --moe-order (the MoE gate/up grid's order). This tree built
# twice side by side (plain, for ci/engine-ab.sh; build-tl with the timeline), its engine GPU tests,
# then ci/engine-ab.sh, four alternated rounds of sf (--moe-order shared-first: the order before),
# auto (the default) and rf (routed-first); tokens compared; --check-steps (kimi-k2 3 layers /
# 32 experts, nccl) with sf and auto, logits compared; the timeline of sf and auto, read by
# .carry/place.py (routed tiles an SM, the runs by them).
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-tl -j6 tests/engine/gpu/engine_gpu_bench) >"$O/build-tl.log" 2>&1 &
tlpid=$!
export ENGINE_ARGS_sf="--moe-order shared-first --dump-tokens $O/ab/tokens-sf.txt --force"
export ENGINE_ARGS_auto="--dump-tokens $O/ab/tokens-auto.txt --force"
export ENGINE_ARGS_rf="--moe-order routed-first --dump-tokens $O/ab/tokens-rf.txt --force"
AB_TESTS= timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 sf=. auto=. rf=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE " step | moe_gate_up | moe_down |shown" "$O"/ab/diff-*.txt | head -20
for n in auto rf; do
    cmp "$O/ab/tokens-sf.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to sf" || echo "tokens $n: DIFFER from sf"
done
echo "ab done $(el)"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_kernels \
    tests/engine/gpu/test_engine_gpu_vs_cpu >"$O/build-tests.log" 2>&1 || echo "test build rc=$?"
timeout $(lim 120) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu kernels" "engine gpu vs cpu" \
    --print-errorlogs >"$O/tests.log" 2>&1; echo "gpu tests rc=$? $(el)"
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail):" "$O/tests.log"
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^not ok|DIFFERS|shared-first|routed-first" "$O/testlog.txt" | head -20
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
eng k3-sf $K3 --moe-order shared-first
}
cmp "$O/d/logits-k3-auto.bin" "$O/d/logits-k3-sf.bin" && echo "logits k3: auto = sf" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
wait $tlpid; echo "build-tl rc=$? $(el)"
timeout $(lim 80) bash ci/engine-timeline.sh "$O/tl" "sf=--moe-order shared-first" "auto=" >"$O/tl-run.log" 2>&1
echo "timeline rc=$? $(el)"
grep -E "gate_up|down|a layer|first start" "$O"/tl/*-summary.txt | grep -v "start \|wait \|end \|run " | head -30
python3 .carry/place.py shared-first "$O"/tl/sf-T1.csv.gz "$O"/tl/sf-T3.csv.gz >"$O/tl/place-sf.txt" 2>&1
python3 .carry/place.py routed-first "$O"/tl/auto-T1.csv.gz >"$O/tl/place-auto.txt" 2>&1
python3 .carry/place.py shared-first "$O"/tl/auto-T3.csv.gz >>"$O/tl/place-auto.txt" 2>&1
cat "$O"/tl/place-*.txt
cp .carry/place.py "$O/tl/"
mkdir -p "$OUT/raw"; mv "$O"/tl/*-T*.csv.gz "$OUT"/raw/ 2>/dev/null
echo "done $(el)"
