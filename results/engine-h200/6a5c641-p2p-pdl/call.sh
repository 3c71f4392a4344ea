#!/bin/bash
# carry: [".carry", ".debs", "REVISION"]
set -u
o=$OUT/o; mkdir -p $o
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; cat REVISION .carry/trig/REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
B=$PWD T=$PWD/.carry/trig
for d in $B $T; do
  n=$(basename $d); [ $d = $B ] && n=base
  (cd $d && meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j8) > $o/build-$n.log 2>&1 &
done
wait; echo "builds $(el)" >> $o/time.log; tail -1 $o/build-base.log $o/build-trig.log >> $o/time.log
for d in $B $T; do
  n=$(basename $d); [ $d = $B ] && n=base
  (cd $d && timeout 90 meson test -C build-gpu --no-rebuild p2p-fused-check-np1 p2p-fused-stress-np1 p2p-check-np1 --print-errorlogs) > $o/p2p-tests-$n.log 2>&1
  echo "p2p tests $n rc $? $(el)" >> $o/time.log
done
cp $B/build-gpu/meson-logs/testlog.txt $o/p2p-testlog-base.txt
ff="p2p:variant=oneshot-flagfree,blocks=24,threads=256,row_blocks=1"
eng() { # NAME TREE IMPL ROUND
  (cd $2 && timeout 120 mpirun --allow-run-as-root -np 1 -x NCCL_NVLS_ENABLE build-gpu/harness/arbench engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl "$3" --modes graph --no-noop-replay --out $o/engine-$1-$4.csv) > $o/engine-$1-$4.log 2>&1
  echo "engine $1 $4 rc $? $(el)" >> $o/time.log
  grep -E "^# graph  (decode|verify)" $o/engine-$1-$4.log >> $o/time.log
}
eng noop $B noop 1
for r in 1 2; do
  eng plain $B "$ff" $r
  eng pdl $B "$ff,pdl=1" $r
  eng trig $T "$ff,pdl=1" $r
done
left=$(( 560 - ($(date +%s) - t0) ))
(cd $B && timeout $left meson test -C build-gpu --no-rebuild --suite gpu --num-processes 4 --print-errorlogs) > $o/gpu-suite-base.log 2>&1; echo "suite base rc $? (limit $left s) $(el)" >> $o/time.log
cp $B/build-gpu/meson-logs/testlog.txt $o/gpu-testlog-base.txt
echo "all done $(el)" >> $o/time.log
