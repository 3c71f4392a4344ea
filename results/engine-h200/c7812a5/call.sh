#!/bin/bash
# carry: [".carry", ".debs"]
set -u
o=$OUT/o; mkdir -p $o/ab
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$(date +%s)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; cat REVISION; } > $o/machine.txt 2>&1
ENGINE_ARGS_pers="--step-form persistent" DEBS=.debs bash ci/engine-ab.sh $o/ab 2 launch=$PWD pers=$PWD > $o/ab/run.log 2>&1
echo "ab done $(( $(date +%s) - t0 )) s" >> $o/time.log
k=$(ls $o/ab/engine-launch-1-kernels-*.csv | head -1)
timeout 120 python3 ci/peer-kernels.py --engine "$k" --out $o/peer-kernels.csv > $o/peer-kernels.log 2>&1; echo "rc $?" >> $o/peer-kernels.log
echo "peers done $(( $(date +%s) - t0 )) s" >> $o/time.log
timeout 60 build-gpu/tests/engine/gpu/engine_gpu_bench --config kimi-k2 --weights int4 --tp-shape 8 --layers 8 --context 1024 --steps 8 --spec-k 7 > $o/bench-t8.log 2>&1; echo "rc $?" >> $o/bench-t8.log
echo "bench done $(( $(date +%s) - t0 )) s" >> $o/time.log
left=$(( 540 - ($(date +%s) - t0) ))
[ $left -gt 30 ] && { timeout $left mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2 --impl noop --modes graph --no-noop-replay --out $o/engine-check.csv > $o/engine-check.log 2>&1; echo "rc $? (limit $left s)" >> $o/engine-check.log; }
echo "all done $(( $(date +%s) - t0 )) s" >> $o/time.log
