#!/bin/bash
# Device call 1 (2026-12-05, sixteenth session): HEAD built for sm_90; the GPU tests owed since the
# fifteenth session (noop fused, rmsnorm_gpu, gpu harness noop_modes / fused_unfused) and the
# chain profile's (engine gpu profile); the harness path of noop's fused op; then kimi-k2 engine
# runs whose per-kernel tables carry the new chain column (two if time allows).
. ci/device-call.sh 560
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
tg="harness/arbench tests/sweep/check_csv collectives/noop/arb-noop.so collectives/modeled/arb-modeled.so
 tests/engine/gpu/test_engine_gpu_profile tests/collectives/noop/test_noop_fused tests/rmsnorm/test_rmsnorm_gpu"
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j16 $tg) >"$O/build.log" 2>&1
echo "build rc=$? $(el)"
timeout $(lim 150) meson test -C build-gpu --no-rebuild "engine gpu profile" "noop fused" rmsnorm_gpu \
    "gpu harness noop_modes" "gpu harness fused_unfused" --print-errorlogs >"$O/tests.log" 2>&1
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
grep -E "kinds summed|layer [0-9] \(|^ *(qkv_a|router|lm_head) " "$O/testlog.txt" | head -20
timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench sweep --impl noop:pdl=1 --op allreduce_rmsnorm \
    --tokens 1,3 --modes eager,graph --iters 100 --out "$O/sweep-noop-fused.csv" >"$O/sweep-noop-fused.log" 2>&1
echo "noop fused sweep rc=$? $(el)"; tail -4 "$O/sweep-noop-fused.log"
for i in 1 2; do
    [ "$(lim 200)" -lt 200 ] && { echo "engine run $i skipped: $(el)"; break; }
    timeout $(lim 240) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 \
        --steps 32 --impl noop --modes graph --no-noop-replay --out "$O/engine-$i.csv" >"$O/engine-$i.log" 2>&1
    echo "engine $i rc=$? $(el)"
    grep -E "^#   (chain|family|qkv_a|q_b|absorb|attend|combine|o_proj|site_a|router|moe_|site_b|lm_head|step|families)|graph  (decode|verify)" "$O/engine-$i.log"
done
