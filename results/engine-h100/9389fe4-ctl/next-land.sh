#!/bin/bash
# PREPARED IN THE THIRTY-NINTH SESSION, NOT RUN (the device time left, 258 s, was under what a start
# needs). Before it: git rev-parse --short=12 HEAD > REVISION; mkdir -p .carry/land; cp this file
# .carry/land/call.sh; carry [".carry/land", ".debs", "REVISION"]; run `bash .carry/land/call.sh`.
# Add "engine gpu vs cpu" (its target and test name) back where the call has the time.
# Thirty-ninth session's second call: main with down's carveout landed (carveout_once, per kernel
# and device) built for sm_90, `engine gpu moe` (vs cpu dropped for time), then one kimi-k2 run whose
# tokens are compared with the first call's base tokens (9389fe4, the same seed and steps).
. ci/device-call.sh 200
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
rm -rf build-gpu
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-gpu harness/arbench collectives/noop/arb-noop.so tests/engine/gpu/test_engine_gpu_moe) >"$O/build.log" 2>&1
echo "build rc=$? $(el)"
timeout $(lim 60) meson test -C build-gpu --no-rebuild "engine gpu moe" --print-errorlogs \
    >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped):" "$O/tests.log"
timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 --weights int4 \
    --tp-shape 8 --context 4096 --steps 32 --impl noop --modes graph --no-noop-replay \
    --dump-tokens "$O/tokens-land.txt" --force --out "$O/engine-land.csv" >"$O/engine-land.log" 2>&1
echo "engine rc=$? $(el)"; grep -E "^# graph  (decode|verify)" "$O/engine-land.log"
cmp results/engine-h100/9389fe4-ctl/ab/tokens-base.txt "$O/tokens-land.txt" && echo "tokens: identical to 9389fe4's base" || echo "tokens: differ"
echo "done $(el)"
