#!/bin/bash
# SPDX-License-Identifier: MIT
# The committed results of a GPU machine, in one go (after ci/gpu.sh built BUILD):
#   ci/gpu-results.sh BUILD OUTDIR TAG      e.g. ci/gpu-results.sh build-gpu $OUT h200x2
# Writes OUTDIR/TAG-*.csv (default plan; fused op; NCCL with P2P disabled vs hoststaged),
# OUTDIR/topo-TAG.{txt,xml}, OUTDIR/tuner-TAG.log, three repeat sweeps and their gate reports,
# and prints a summary.
set -uo pipefail
build=${1:?BUILD dir}; out=${2:?OUTDIR}; tag=${3:?TAG}
arbench=$build/harness/arbench
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=${CI:-true}
ngpu=$("$arbench" plugins | sed -n 's/^GPUs visible: \([0-9]*\).*/\1/p')
mpi="mpirun --allow-run-as-root --oversubscribe -np ${ngpu:-1} -x NCCL_NVLS_ENABLE -x CI"
status=0
step() { echo "== $1: $2"; [ "$2" = ok ] || status=1; }
sweep() { # name, then arbench sweep options
    local name=$1; shift
    rm -f "$out/$tag-$name.csv" # a fresh file: sweeps refuse to append without --append
    if timeout 540 $mpi "$arbench" sweep "$@" --out "$out/$tag-$name.csv" >"$out/$tag-$name.log" 2>&1; then
        step "$name" ok; else step "$name" "FAILED ($(tail -1 "$out/$tag-$name.log"))"; fi
    tail -1 "$out/$tag-$name.log"
}

"$arbench" topo --export-xml "$out/topo-$tag.xml" >"$out/topo-$tag.txt" 2>&1 && step topo ok || step topo FAILED
sweep default
sweep rmsnorm --op allreduce_rmsnorm
# A PCIe fabric without P2P: NCCL through host shared memory vs our host-staged transport.
export NCCL_P2P_DISABLE=1
mpi_p2p=$mpi
mpi="$mpi -x NCCL_P2P_DISABLE"
sweep p2poff --impl nccl,hoststaged,hoststaged:blocks=32,threads=128,hoststaged:blocks=8,threads=256 \
    --sizes 14336,32K:56K:+4K,43008,86016,1M
unset NCCL_P2P_DISABLE
mpi=$mpi_p2p

# The NCCL tuner plugin steering a real NCCL: a profile that picks Tree/Simple at 43008 B
# and Ring/LL at 256 KiB (tests/tuner/steer-check-profile.csv), NCCL's own log as evidence.
rm -f "$out/tuner-$tag.csv" "$out/$tag-repeat-"[abc].csv
NCCL_TUNER_PLUGIN=$PWD/$build/tuner/libnccl-tuner-arbench.so ARBENCH_TUNER_PROFILE=$PWD/tests/tuner/steer-check-profile.csv \
ARBENCH_TUNER_DEBUG=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
    timeout 300 $mpi -x NCCL_TUNER_PLUGIN -x ARBENCH_TUNER_PROFILE -x ARBENCH_TUNER_DEBUG -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS \
    "$arbench" sweep --impl nccl: --sizes 43008,262144 --modes eager,graph --iters 50 --out "$out/tuner-$tag.csv" \
    >"$out/tuner-$tag.log" 2>&1 && step tuner ok || step tuner FAILED
grep -E "TUNER/Plugin|ARBENCH-TUNER|Bytes -> Algo" "$out/tuner-$tag.log" | sort | uniq -c | head -20

# Gate self-check on real noise: three identical sweeps back to back; the third, gated
# against the first two (measured run-to-run noise) and against the first alone (the
# per-mode defaults), must not be called a regression.
for r in a b c; do
    timeout 300 $mpi "$arbench" sweep --impl nccl,p2p --sizes 14336,43008,86016,1M --modes eager,graph \
        --out "$out/$tag-repeat-$r.csv" >/dev/null 2>&1 || step "repeat sweep $r" FAILED
done
"$arbench" gate --baseline "$out/$tag-repeat-a.csv" --baseline "$out/$tag-repeat-b.csv" \
    --candidate "$out/$tag-repeat-c.csv" >"$out/gate-$tag-repeat-ab-vs-c.txt" 2>&1
echo "== gate a+b vs c: exit $? ($(grep -m1 -i "^result" "$out/gate-$tag-repeat-ab-vs-c.txt"))"
"$arbench" gate --baseline "$out/$tag-repeat-a.csv" --candidate "$out/$tag-repeat-c.csv" \
    >"$out/gate-$tag-repeat-a-vs-c.txt" 2>&1
echo "== gate a vs c: exit $? ($(grep -m1 -i "^result" "$out/gate-$tag-repeat-a-vs-c.txt"))"
exit $status
