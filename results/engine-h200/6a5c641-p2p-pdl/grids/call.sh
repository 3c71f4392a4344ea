#!/bin/bash
# carry: [".carry", ".debs", "REVISION"]
set -u
o=$OUT/o; mkdir -p $o
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; cat REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j16 harness/arbench collectives/p2p/arb-p2p.so collectives/noop/arb-noop.so) > $o/build.log 2>&1
echo "build rc $? $(el)" >> $o/time.log
eng() { # NAME IMPL ROUND
  timeout 60 mpirun --allow-run-as-root -np 1 -x NCCL_NVLS_ENABLE build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl "$2" --modes graph --no-noop-replay --out $o/engine-$1-$3.csv > $o/engine-$1-$3.log 2>&1
  echo "engine $1 $3 rc $? $(el)" >> $o/time.log
  grep -E "^# graph  (decode|verify)" $o/engine-$1-$3.log >> $o/time.log
}
ff="p2p:variant=oneshot-flagfree,row_blocks=1"
for r in 1 2; do
  for g in 24x256 8x512 4x1024; do
    b=${g%x*} t=${g#*x}
    eng plain-$g "$ff,blocks=$b,threads=$t" $r
    eng pdl-$g "$ff,blocks=$b,threads=$t,pdl=1" $r
  done
done
echo "all done $(el)" >> $o/time.log
