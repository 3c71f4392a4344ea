#!/bin/bash
# SPDX-License-Identifier: MIT
# After ci/gpu.sh built BUILD: the fused-op sweep (every implementation, fused and unfused)
# and compute-sanitizer memcheck/racecheck of the custom kernels through the harness.
#   ci/gpu-verify.sh BUILD OUTDIR TAG
set -uo pipefail
build=${1:?BUILD dir}; out=${2:?OUTDIR}; tag=${3:?TAG}
arbench=$build/harness/arbench
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=${CI:-true}
ngpu=$("$arbench" plugins | sed -n 's/^GPUs visible: \([0-9]*\).*/\1/p')
mpi="mpirun --allow-run-as-root --oversubscribe -np ${ngpu:-1} -x NCCL_NVLS_ENABLE -x CI"
rm -f "$out/$tag-rmsnorm.csv" "$out"/sanitizer-*.csv # fresh files: sweeps refuse to append without --append
timeout 240 $mpi "$arbench" sweep --op allreduce_rmsnorm --out "$out/$tag-rmsnorm.csv" >"$out/$tag-rmsnorm.log" 2>&1
echo "== rmsnorm sweep: exit $? $(tail -1 "$out/$tag-rmsnorm.log")"
# Sanitizers: few iterations (they slow kernels down by orders of magnitude). API errors are
# not reported: NCCL's own init probes (cudaFuncGetAttributes, cuMemCreate) return errors it
# handles, which memcheck would otherwise count (seen on 2 x H200, NCCL 2.28.3).
impls=p2p:variant=oneshot-flagfree,blocks=24,threads=256,p2p:variant=oneshot-push,blocks=24,threads=256,hoststaged,lsa:variant=oneshot-flagfree,blocks=24,threads=256
if command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck; do
        timeout 150 $mpi compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 --print-limit 20 \
            "$arbench" sweep --impl "$impls" --sizes 43008 --modes eager,graph --iters 3 --warmup 1 \
            --graph-ops 2 --graph-replays 2 --out "$out/sanitizer-$tool.csv" >"$out/sanitizer-$tool-$tag.log" 2>&1
        echo "== compute-sanitizer $tool: exit $? $(grep -m1 -E 'ERROR SUMMARY' "$out/sanitizer-$tool-$tag.log")"
    done
else
    echo "== compute-sanitizer: not installed here"
fi
