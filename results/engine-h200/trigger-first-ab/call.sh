#!/bin/bash
# carry: [".carry", ".debs"]
set -u
o=$OUT/o; mkdir -p $o/ab
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; } > $o/machine.txt 2>&1
bash .carry/base/ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
t0=$(date +%s)
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/chain .carry/trig/tests/engine/gpu/engine_chain_bench.cu > $o/chain.log 2>&1
B=/tmp/chain
for g in 132 264 528; do for w in 0 16 64; do timeout 60 $B --blocks $g --weights-kb $w --out $o/chain-g$g-w$w.csv >> $o/chain.log 2>&1; echo "rc $?" >> $o/chain.log; done; done
echo "chain done $(( $(date +%s) - t0 )) s" >> $o/chain.log
bash .carry/base/ci/engine-ab.sh $o/ab 3 base=$PWD/.carry/base trig=$PWD/.carry/trig > $o/ab/run.log 2>&1
echo "ab done $(( $(date +%s) - t0 )) s" >> $o/chain.log
(cd .carry/trig && ninja -C build-gpu -j16 > $o/build-trig-all.log 2>&1 && timeout 240 meson test -C build-gpu --no-rebuild --suite gpu --num-processes 4 --print-errorlogs > $o/suite-trig.log 2>&1; echo "suite rc $?" >> $o/suite-trig.log)
cp .carry/trig/build-gpu/meson-logs/testlog.txt $o/testlog-trig.txt 2>/dev/null
echo "all done $(( $(date +%s) - t0 )) s" >> $o/chain.log
