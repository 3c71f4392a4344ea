#!/bin/bash
set -u
o=$OUT/o; mkdir -p $o
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; cat REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" && ninja -C build-gpu -j16 harness/arbench collectives/p2p/arb-p2p.so collectives/p2p/arb-ping.so collectives/noop/arb-noop.so tests/collectives/p2p/p2p_selftest tests/collectives/p2p/test_p2p_plugin) > $o/build.log 2>&1
echo "build rc $? $(el)" >> $o/time.log
timeout 150 meson test -C build-gpu --no-rebuild p2p-plugin p2p-check-np1 p2p-stress-np1 p2p-sweep-np1 p2p-fused-check-np1 p2p-fused-stress-np1 --print-errorlogs > $o/p2p-tests.log 2>&1
echo "tests rc $? $(el)" >> $o/time.log
cp build-gpu/meson-logs/testlog.txt $o/p2p-testlog.txt
grep -E "^ *[0-9]+/[0-9]+ " $o/p2p-tests.log >> $o/time.log
ff=p2p:variant=oneshot-flagfree,blocks=24,threads=256
timeout 60 mpirun --allow-run-as-root -np 1 -x NCCL_NVLS_ENABLE build-gpu/harness/arbench sweep --quiet --impl "$ff,$ff,pdl=1" --sizes 43008 --modes graph,context --out $o/sweep-pdl.csv > $o/sweep-pdl.log 2>&1
echo "sweep rc $? $(el)" >> $o/time.log
echo "all done $(el)" >> $o/time.log
