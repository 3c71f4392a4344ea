#!/bin/bash
# carry: [".carry", ".debs", "REVISION"]
set -u
o=$OUT/o; mkdir -p $o/ab $o/chain
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; cat .carry/base/REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
echo "deps $(el)" >> $o/time.log
NCU="base new" bash ci/engine-ab.sh $o/ab 3 base=$PWD/.carry/base new=$PWD > $o/ab/run.log 2>&1
echo "ab rc $? $(el)" >> $o/time.log
ninja -C build-gpu -j16 tests/engine/gpu/engine_chain_bench > $o/chain/build.log 2>&1; echo "bench build rc $? $(el)" >> $o/time.log
B=build-gpu/tests/engine/gpu/engine_chain_bench
for g in 132 264; do for w in 0 16 32; do timeout 60 $B --blocks $g --weights-kb $w --out $o/chain/chain-g$g-w$w.csv >> $o/chain/chain.log 2>&1; echo "rc $?" >> $o/chain/chain.log; done; done
for w in 0 16; do timeout 60 $B --blocks 528 --weights-kb $w --out $o/chain/chain-g528-w$w.csv >> $o/chain/chain.log 2>&1; echo "rc $?" >> $o/chain/chain.log; done
echo "all done $(el)" >> $o/time.log
