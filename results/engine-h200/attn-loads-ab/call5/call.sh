#!/bin/bash
# carry: [".carry", ".debs", "REVISION"]
set -u
o=$OUT/o; mkdir -p $o/ab
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; cat .carry/base/REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
cp -a .carry/base /tmp/base
bash ci/engine-ab.sh $o/ab 3 base=/tmp/base new=$PWD > $o/ab/run.log 2>&1
echo "ab rc $? $(el)" >> $o/time.log
