#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next2.sh". Eighteenth session (2026-12-05): the seventeenth session's owed
# call (.carry/next.sh) plus engine_chain_bench's chunked p-stream at a Kimi-K2 layer's bytes.
. ci/device-call.sh 560
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j16) \
    >"$O/build.log" 2>&1
echo "build rc=$? $(el)"; tail -3 "$O/build.log"
CB=build-gpu/tests/engine/gpu/engine_chain_bench
# a Kimi-K2 TP = 8 MoE layer's 12 launches (site_a qkv_a q_b absorb attend merge W_uv o_proj site_b
# router gate/up down), KB a block at 264 / 132 blocks, T = 1 and T = 3 (the engine's per-kernel bytes)
L1_264=0,112,18,4,18,0,4,54,0,20,88,44
L3_264=0,112,18,4,18,0,4,54,0,20,211,106
L1_132=0,224,36,8,36,0,8,108,0,40,176,88
run_cb() { # name, args...
    local n=$1; shift
    [ "$(lim 20)" -lt 20 ] && { echo "chain $n skipped: $(el)"; return; }
    timeout $(lim 60) $CB "$@" --out "$O/cb-$n.csv" >"$O/cb-$n.log" 2>&1
    echo "chain $n rc=$? $(el)"; grep -E "^(# the list|pdl |p-counter|p-stream|p-racy|racy )" "$O/cb-$n.log"
}
run_cb l1-264-c16-d4 --blocks 264 --weights-kb $L1_264 --chunk-kb 16 --stream-depth 4
for cd in 8:4 16:2 16:6 32:2 32:3; do
    run_cb l1-264-c${cd%:*}-d${cd#*:} --blocks 264 --weights-kb $L1_264 --chunk-kb ${cd%:*} --stream-depth ${cd#*:}
done
run_cb l3-264-c16-d4 --blocks 264 --weights-kb $L3_264 --chunk-kb 16 --stream-depth 4
run_cb l1-132-c32-d4 --blocks 132 --weights-kb $L1_132 --chunk-kb 32 --stream-depth 4
run_cb l1-132-c16-d8 --blocks 132 --weights-kb $L1_132 --chunk-kb 16 --stream-depth 8
timeout $(lim 200) meson test -C build-gpu --no-rebuild "status gpu" "engine gpu moe" "engine gpu profile" \
    "engine gpu kernels" "engine gpu persist" "engine gpu vs cpu" "gpu harness fused_unfused" --print-errorlogs \
    >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
for i in 1 2; do
    [ "$(lim 60)" -lt 60 ] && { echo "engine $i skipped: $(el)"; break; }
    timeout $(lim 120) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 --weights int4 \
        --tp-shape 8 --context 4096 --steps 32 --impl noop --modes graph --no-noop-replay --out "$O/engine-$i.csv" \
        >"$O/engine-$i.log" 2>&1
    echo "engine $i rc=$? $(el)"
    grep -E "^# (moe bench|per-kernel floors,)|graph  (decode|verify)" "$O/engine-$i.log"
done
[ "$(lim 90)" -ge 90 ] && {
    timeout $(lim 150) build-gpu/tests/engine/gpu/engine_gpu_bench --context 1024 --steps 8 --moe-t 1:8,12,16 \
        >"$O/moe-t.log" 2>&1
    echo "moe-t rc=$? $(el)"; grep -E "^moe_" "$O/moe-t.log"
}
# whole-stage p-stream at the uniform shapes of boundary-persistent (its README), depths 1 .. 3
for g in 132 264; do for wk in 16 32 64; do for d in 1 2 3; do
    run_cb g$g-w$wk-d$d --blocks $g --weights-kb $wk --stream-depth $d
done; done; done
