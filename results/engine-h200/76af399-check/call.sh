#!/bin/bash
set -u
o=$OUT/o; mkdir -p $o
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; cat REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" > $o/build.log 2>&1 && ninja -C build-gpu -j16 >> $o/build.log 2>&1; echo "build rc $? $(( $(date +%s) - t0 )) s" >> $o/time.log
tail -3 $o/build.log
m="mpirun --allow-run-as-root -np 1 -x NCCL_NVLS_ENABLE"
# the check at Kimi-K2's shapes (3 layers, 384 experts), nccl on one rank: the reference's arithmetic
timeout 200 $m build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2 --impl nccl --modes graph --no-noop-replay --out $o/engine-check-nccl.csv > $o/engine-check-nccl.log 2>&1; echo "rc $?" >> $o/engine-check-nccl.log
echo "check done $(( $(date +%s) - t0 )) s" >> $o/time.log
timeout 20 $m build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --check-steps 2 --impl noop > $o/engine-check-noop.log 2>&1; echo "rc $?" >> $o/engine-check-noop.log
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left meson test -C build-gpu --no-rebuild --suite gpu --num-processes 4 --print-errorlogs > $o/gpu-suite.log 2>&1; echo "suite rc $? (limit $left s)" >> $o/gpu-suite.log
cp build-gpu/meson-logs/testlog.txt $o/gpu-testlog.txt 2>/dev/null
echo "all done $(( $(date +%s) - t0 )) s" >> $o/time.log
