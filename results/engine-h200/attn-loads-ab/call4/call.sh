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
for v in vattend vmerge vwreg; do cp -a .carry/base /tmp/$v; (cd /tmp/$v && patch -p1 < $OLDPWD/.carry/patches/$v.patch && echo "b78492c45206+$v" > REVISION) >> $o/patch.log 2>&1; echo "patch $v rc $?" >> $o/time.log; done
echo "trees $(el)" >> $o/time.log
bash ci/engine-ab.sh $o/ab 2 base=/tmp/base vattend=/tmp/vattend vmerge=/tmp/vmerge vwreg=/tmp/vwreg > $o/ab/run.log 2>&1
echo "ab rc $? $(el)" >> $o/time.log
