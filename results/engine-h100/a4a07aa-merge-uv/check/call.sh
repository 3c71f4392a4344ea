#!/bin/bash
# The second command on next9.sh's warm machine: build the nccl plugin (engine-ab.sh builds only
# noop and modeled), then the two --check-steps runs of next9.sh with --fuse merge_uv.
. ci/device-call.sh 300
set -u
ninja -C build-gpu collectives/nccl/arb-nccl.so >"$O/build-nccl.log" 2>&1; echo "build nccl: rc=$? $(el)"
run_check() { # NAME ARGS...: the engine against its CPU reference
    local n=$1; shift
    timeout $(lim 120) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/check-$n.csv" --force >"$O/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|^#   " "$O/check-$n.log" | grep -v "memory\|bytes\|GB" | tail -4
}
run_check tiny --config tiny --fuse merge_uv --steps 8 --check-steps 8
run_check kimi3 --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2 \
    --fuse qb_absorb,merge_uv
