#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next21.sh", ".carry/t4e",
# ".debs", "REVISION"] (.carry/t4e = git archive 4e44845 without results/, the last tree that accepts
# --moe-early on in arbench engine); command "bash .carry/next21.sh"; ask for nvidia-h200.
# Written in the twenty-third session (2026-12-05) for the next: its second call got no device.
# 1. Is --moe-early the cause of the tiny --check-steps failure (results/engine-h200/6162998-moe-early/)?
#    In t4e: tiny (bf16 experts, nccl sites, context 64) with and without it, with --pdl off, with
#    the noop plugin; kimi-k2 3 layers (INT4): the verify agree counts, the last step's logits and
#    the tokens (cmp), --check-steps.
# 2. The timeline of this tree (launch numbers from each CTA's ordinal; --ctas quantiles).
# 3. engine_stream_bench: how fast a one-wave grid streams the routed gate/up's 14.7 MB.
. ci/device-call.sh 430
set -u
mkdir -p "$O/d" "$O/tl"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
# the stream bench is the same in a timeline build (it has no stamps): built first, run first
(meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-tl -j5 tests/engine/gpu/engine_stream_bench && touch "$O/stream.built" &&
    ninja -C build-tl -j5 tests/engine/gpu/engine_gpu_bench tests/engine/gpu/test_engine_gpu_moe) >"$O/tl/build-bg.log" 2>&1 &
tlpid=$!
(cd .carry/t4e && meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-gpu -j11 harness/arbench collectives/noop/arb-noop.so collectives/nccl/arb-nccl.so) >"$O/build.log" 2>&1
echo "build t4e: rc=$? $(el)"
for i in $(seq 60); do [ -e "$O/stream.built" ] && break; sleep 2; done
timeout $(lim 60) build-tl/tests/engine/gpu/engine_stream_bench --out "$O/stream.csv" >"$O/stream.log" 2>&1
echo "stream bench: rc=$? $(el)"; cat "$O/stream.log"
run_d() { # NAME ARGS...
    local n=$1; shift
    (cd .carry/t4e && timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" \
        --modes graph --no-noop-replay --dump-logits "$O/d/logits-$n.bin" --dump-tokens "$O/d/tokens-$n.txt" \
        --force --out "$O/d/$n.csv") >"$O/d/$n.log" 2>&1
    echo "$n: rc=$? $(el)"; grep -E "^# graph  (decode|verify)|check vs|^arbench" "$O/d/$n.log"
}
tiny="--config tiny --context 64 --steps 8"
run_d t-off $tiny --impl nccl --check-steps 8
run_d t-on $tiny --impl nccl --check-steps 8 --moe-early on
run_d t-on2 $tiny --impl nccl --check-steps 8 --moe-early on
run_d t-on-nopdl $tiny --impl nccl --check-steps 8 --moe-early on --pdl off
run_d t-noop-off $tiny --impl noop
run_d t-noop-on $tiny --impl noop --moe-early on
for p in "t-on t-off" "t-on2 t-off" "t-on-nopdl t-off" "t-noop-on t-noop-off"; do
    set -- $p
    for f in logits tokens; do
        cmp -s "$O/d/$f-$1."* "$O/d/$f-$2."* && echo "$f $1 = $2" || echo "$f $1 != $2"
    done
done
wait $tlpid; echo "timeline build: rc=$? $(el)"
timeout $(lim 120) build-tl/tests/engine/gpu/test_engine_gpu_moe >"$O/test-moe.log" 2>&1
echo "engine gpu moe: rc=$? $(el)"; tail -15 "$O/test-moe.log"
timeout $(lim 70) bash ci/engine-timeline.sh "$O/tl" off= >"$O/tl/run.log" 2>&1
echo "timeline: rc=$? $(el)"; grep -v "^timeline_T\|^build\|^off:\|^on:" "$O/tl/run.log" | grep -v "layers 3:60"
mv "$O"/tl/*-T*.csv.gz "$OUT"/ 2>/dev/null
k3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --impl noop"
run_d k-off $k3
run_d k-on $k3 --moe-early on
for f in logits tokens; do
    cmp -s "$O/d/$f-k-on."* "$O/d/$f-k-off."* && echo "$f k-on = k-off" || echo "$f k-on != k-off"
done
echo "done $(el)"
