#!/bin/bash
# Device call: the default fold (o_proj at T >= 2) against --wave-fit none with the order reversed
# (default first) at T = 3, and at T = 2 and 8 (--spec-k 1, 7); two rounds; tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O/ab"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
lim() { local l=$((565 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
DEBS=.debs ENGINE_ARGS_n3="--wave-fit none" ENGINE_ARGS_d2="--spec-k 1" ENGINE_ARGS_n2="--wave-fit none --spec-k 1" ENGINE_ARGS_d8="--spec-k 7" ENGINE_ARGS_n8="--wave-fit none --spec-k 7" \
    timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 2 d3=. n3=. d2=. n2=. d8=. n8=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
cat "$O/ab/run.log"; echo "ab done $(el)"
