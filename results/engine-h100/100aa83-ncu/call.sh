#!/bin/bash
# PREPARED IN THE THIRTY-FIFTH SESSION, NOT RUN (261 s of device time left; the tool starts no
# machine under ~300). Before the call, on main: mkdir -p .carry && cp results/engine-h100/8d6e67f-bf3/next-ncu.sh .carry/;
# git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-ncu.sh", ".debs", "REVISION"]; ~200 s.
# Why: cutting the INT4 loops' instructions by 2-15% (bf, bf3) did not make them faster, and two
# more mma a group made them slower. Ask Nsight Compute where main's MoE kernels stall at T = 1
# (engine_gpu_bench's decode steps, 2 layers: one MoE layer, gate/up and down: NCU_PER=2): the
# warp-state and scheduler sections, issue-stall ratios (math pipe / mma, long scoreboard,
# barrier, wait), achieved occupancy and DRAM throughput, for the next change to aim at the cause.
. ci/device-call.sh 300
set -u
mkdir -p "$O/ab"
rm -rf build-gpu
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export NCU="base" NCU_KERNELS="regex:moe_gate_up|moe_down" NCU_PER=2
timeout $(lim 280) bash ci/engine-ab.sh "$O/ab" 1 base=. again=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|ncu|engine)|graph  (decode|verify)" "$O/ab/run.log"
grep -E "^  [^ ].*\(|Duration|Memory Throughput|DRAM Throughput|No Eligible|Achieved Active|Issued Warp|stalled_(long_scoreboard|math_pipe|mio|barrier|wait|short_scoreboard|not_selected|selected|tex|lg)" "$O/ab/ncu-base.log" | head -80
echo "done $(el)"
