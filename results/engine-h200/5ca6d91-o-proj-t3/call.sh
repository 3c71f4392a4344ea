#!/bin/bash
# Device call: the bounded o_proj kernel at T = 3 with no fold (HEAD) against 5f1349e with its
# default fold (o_proj at T >= 2) and with --wave-fit none (the state before the session), two
# rounds; HEAD's engine GPU tests; everything under $OUT/r, tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O/ab"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
lim() { local l=$((300 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
DEBS=.debs ENGINE_ARGS_oldn="--wave-fit none" \
    timeout $(lim 295) bash ci/engine-ab.sh "$O/ab" 2 oldn=.carry/old old=.carry/old new=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
cat "$O/ab/run.log"; echo "ab done $(el)"
