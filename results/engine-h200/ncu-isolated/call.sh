#!/bin/bash
# carry: [".carry", ".debs", "REVISION"]
set -u
o=$OUT/o; mkdir -p $o/chain
trap 'tar -czf $OUT/x.tgz -C $OUT o' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; cat REVISION; } > $o/machine.txt 2>&1
bash ci/deps.sh --debs .debs > $o/deps.log 2>&1 || echo "deps rc $?" >> $o/deps.log
meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" > $o/build.log 2>&1 && ninja -C build-gpu -j16 tests/engine/gpu/engine_chain_bench tests/engine/gpu/engine_gpu_bench >> $o/build.log 2>&1; echo "build rc $? $(el)" >> $o/time.log
B=build-gpu/tests/engine/gpu/engine_chain_bench
for g in 132 264; do for w in 0 16 32; do timeout 60 $B --blocks $g --weights-kb $w --out $o/chain/chain-g$g-w$w.csv >> $o/chain/chain.log 2>&1; echo "rc $?" >> $o/chain/chain.log; done; done
timeout 60 $B --blocks 528 --weights-kb 16 --out $o/chain/chain-g528-w16.csv >> $o/chain/chain.log 2>&1; echo "rc $?" >> $o/chain/chain.log
echo "chain done $(el)" >> $o/time.log
N=/usr/local/cuda/bin/ncu
G=build-gpu/tests/engine/gpu/engine_gpu_bench
K="qkva_prep_kernel|gemv_kernel|moe_gate_up_kernel|moe_down_kernel|router_kernel|mla_attend_pos_kernel|mla_absorb_kernel|mla_merge_kernel|mla_uv_kernel"
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis"
# every matched launch after the one-chunk prefill: decode (T = 1) and verify (T = 3) steps, the profiles, the MoE benches
timeout 200 $N --clock-control none --kernel-name regex:"$K" --launch-skip 20 --launch-count 130 $S --csv --page details $G --layers 2 --context 8 --steps 1 --spec-k 2 > $o/ncu-ctx8.csv 2> $o/ncu-ctx8.err; echo "ncu ctx8 rc $? $(el)" >> $o/time.log
# the attention at context 4096: the decode step's after 512 prefill chunks of 2 layers
timeout 120 $N --clock-control none --kernel-name regex:"mla_attend_pos_kernel|mla_merge_kernel" --launch-skip 2048 --launch-count 8 $S --csv --page details $G --layers 2 --context 4096 --steps 1 --spec-k 2 > $o/ncu-ctx4096.csv 2> $o/ncu-ctx4096.err; echo "ncu ctx4096 rc $? $(el)" >> $o/time.log
echo "all done $(el)" >> $o/time.log
