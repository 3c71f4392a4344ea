#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next5.sh"; ask for nvidia-h200 (the machine; an H100 also answers).
# Owed from the eighteenth session (2026-12-05): (1) whether the counter's ordering holds a
# p-stream stage behind its copies (--poll relaxed / --arrive relaxed: measurements only);
# (2) the ideal launch chain at a Kimi-K2 layer's bytes on an H200 (the eighteenth session's
# rows are an H100's); (3) the engine's T = 1 / T = 3 chain tables on an H200.
. ci/device-call.sh 540
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j16) \
    >"$O/build.log" 2>&1
echo "build rc=$? $(el)"; tail -2 "$O/build.log"
CB=build-gpu/tests/engine/gpu/engine_chain_bench
L1_264=0,112,18,4,18,0,4,54,0,20,88,44
L3_264=0,112,18,4,18,0,4,54,0,20,211,106
run_cb() { # name, args...
    local n=$1; shift
    [ "$(lim 15)" -lt 15 ] && { echo "chain $n skipped: $(el)"; return; }
    timeout $(lim 40) $CB "$@" --out "$O/cb-$n.csv" >"$O/cb-$n.log" 2>&1
    echo "chain $n rc=$? $(el)"; grep -E "^(pdl |racy |p-counter|p-stream|p-racy)" "$O/cb-$n.log"
}
for pa in acquire:fence relaxed:fence acquire:relaxed relaxed:relaxed; do
    po=${pa%:*} ar=${pa#*:}
    run_cb l1-264-c32-d3-$po-$ar --blocks 264 --weights-kb $L1_264 --chunk-kb 32 --stream-depth 3 --poll $po --arrive $ar
    run_cb g264-w32-d3-$po-$ar --blocks 264 --weights-kb 32 --stream-depth 3 --poll $po --arrive $ar
done
run_cb l3-264-c32-d3 --blocks 264 --weights-kb $L3_264 --chunk-kb 32 --stream-depth 3
timeout $(lim 200) meson test -C build-gpu --no-rebuild --suite gpu --print-errorlogs >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^(Ok|Fail|Skipped):" "$O/tests.log"
for i in 1 2; do
    [ "$(lim 60)" -lt 60 ] && { echo "engine $i skipped: $(el)"; break; }
    timeout $(lim 120) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 --weights int4 \
        --tp-shape 8 --context 4096 --steps 32 --impl noop --modes graph --no-noop-replay --out "$O/engine-$i.csv" \
        >"$O/engine-$i.log" 2>&1
    echo "engine $i rc=$? $(el)"
    grep -E "^#   chain: layer|^# graph  (decode|verify)" "$O/engine-$i.log"
done
